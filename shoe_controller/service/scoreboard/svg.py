"""The scoreboard drawn as SVG, from the board's JSON (docs/scoreboard.md): one picture per road
for the page, and the whole board as one document (`shoectl road --svg`, `/board.svg`).

Plain text out, no I/O. Colours by custom: on the bead plate and the big road red is Banker,
blue Player, green Tie; on the derived roads red and blue are "regular" and "irregular"
(docs/spec-roads.md), drawn as rings (big eye boy), dots (small road) and slashes (cockroach pig).
Every
drawn cell is one element of class `cell`, so a page or a test can count them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

ROWS = 6
BIG = 24  # SVG units per cell: bead plate and big road
SMALL = 12  # the derived roads, half size as on the boards
BEAD_COLUMNS = 14  # columns drawn at least (a shoe's ~80 rounds fit the bead plate)
ROAD_COLUMNS = 36
COLOURS = {"banker": "#c8102e", "player": "#1a4fc4", "tie": "#12803a", "red": "#c8102e",
           "blue": "#1a4fc4"}  # fmt: skip
LETTERS = {"banker": "B", "player": "P", "tie": "T"}
GRID = "#d5d9e0"
DERIVED = (
    ("big_eye_boy", "Big eye boy"),
    ("small_road", "Small road"),
    ("cockroach_pig", "Cockroach pig"),
)
TITLES = {"bead_plate": "Bead plate", "big_road": "Big road", **dict(DERIVED), "ask": "Ask road"}


FONT = "DejaVu Sans, Arial, sans-serif"


def _svg(kind: str, size: tuple[int, int], label: str, defs: str, body: Iterable[str]) -> str:
    width, height = size
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="road {kind}" viewBox="0 0 {width}'
        f' {height}" width="{width}" height="{height}" font-family="{FONT}" role="img"'
        f' aria-label="{escape(label)}"><defs>{defs}</defs>' + "".join(body) + "</svg>"
    )


def _grid(columns: int, rows: int, size: int) -> str:
    """The board's lines as one path (one element, however long the road)."""
    width, height = columns * size, rows * size
    lines = [f"M{x * size} 0V{height}" for x in range(columns + 1)]
    lines += [f"M0 {y * size}H{width}" for y in range(rows + 1)]
    return (
        f'<rect width="{width}" height="{height}" fill="#fff"/>'
        f'<path d="{"".join(lines)}" stroke="{GRID}" stroke-width="1" fill="none"/>'
    )


def _columns(cells: Sequence[Mapping[str, Any]], least: int) -> int:
    """Columns to draw: at least `least`, and one empty column after the last cell."""
    return max(least, max((int(cell["column"]) for cell in cells), default=-1) + 2)


def _use(symbol: str, x: float, y: float, cls: str | None = None) -> str:
    """A drawn symbol centred on (x, y): each cell costs one short element."""
    klass = f' class="{cls}"' if cls else ""
    return f'<use{klass} href="#{symbol}" x="{x:g}" y="{y:g}"/>'


def _disc(symbol: str, side: str, radius: float = 10.5) -> str:
    """A filled disc lettered B, P or T."""
    return (
        f'<g id="{symbol}"><circle r="{radius:g}" fill="{COLOURS[side]}"/><text y="4.5"'
        f' font-size="13" font-weight="700" text-anchor="middle" fill="#fff">'
        f"{LETTERS[side]}</text></g>"
    )


def _pair_defs(prefix: str) -> str:
    """Pair dots by custom: banker pair top left, player pair bottom right."""
    return "".join(
        f'<circle id="{prefix}-{side}-pair" cx="{offset}" cy="{offset}" r="3.4"'
        f' fill="{COLOURS[side]}" stroke="#fff" stroke-width="1"/>'
        for side, offset in (("banker", -7.5), ("player", 7.5))
    )


def _pairs(prefix: str, cell: Mapping[str, Any], x: float, y: float) -> str:
    return "".join(
        _use(f"{prefix}-{side}-pair", x, y, f"pair {side}-pair")
        for side in ("banker", "player")
        if cell.get(f"{side}_pair")
    )


def bead_plate_svg(
    cells: Sequence[Mapping[str, Any]], rows: int = ROWS, least: int = BEAD_COLUMNS
) -> str:
    """Filled discs lettered B, P, T; one per round."""
    columns = _columns(cells, least)
    defs = "".join(_disc(f"bp-{side}", side) for side in LETTERS) + _pair_defs("bp")
    body = [_grid(columns, rows, BIG)]
    half = BIG / 2
    for cell in cells:
        winner = str(cell["winner"])
        x, y = cell["column"] * BIG + half, cell["row"] * BIG + half
        body.append(_use(f"bp-{winner}", x, y, f"cell {winner}") + _pairs("bp", cell, x, y))
    label = f"Bead plate, {len(cells)} rounds"
    return _svg("bead-plate", (columns * BIG, rows * BIG), label, defs, body)


def big_road_svg(
    cells: Sequence[Mapping[str, Any]], rows: int = ROWS, least: int = ROAD_COLUMNS
) -> str:
    """Rings in the winner's colour; a green slash for ties after it, with their number past
    one."""
    columns = _columns(cells, least)
    defs = "".join(
        f'<circle id="br-{side}" r="8.6" fill="none" stroke="{COLOURS[side]}" stroke-width="3"/>'
        for side in ("banker", "player")
    )
    defs += (
        f'<path id="br-tie" d="M-7 7L7 -7" stroke="{COLOURS["tie"]}" stroke-width="2.4"'
        f' stroke-linecap="round"/>' + _pair_defs("br")
    )
    body = [_grid(columns, rows, BIG)]
    half = BIG / 2
    for cell in cells:
        winner = cell.get("winner")
        x, y = cell["column"] * BIG + half, cell["row"] * BIG + half
        ties = int(cell.get("ties") or 0)
        if winner:
            body.append(_use(f"br-{winner}", x, y, f"cell {winner}"))
        if ties:
            body.append(_use("br-tie", x, y, "ties" if winner else "cell ties-only"))
        if ties > 1:
            body.append(
                f'<text x="{x:g}" y="{y + 4:g}" font-size="11" font-weight="700"'
                f' text-anchor="middle" fill="{COLOURS["tie"]}">{ties}</text>'
            )
        body.append(_pairs("br", cell, x, y))
    label = f"Big road, {sum(1 for cell in cells if cell.get('winner'))} wins"
    return _svg("big-road", (columns * BIG, rows * BIG), label, defs, body)


PREFIXES = {"big_eye_boy": "be", "small_road": "sr", "cockroach_pig": "cp"}


def _mark(symbol: str, name: str, colour: str, scale: float = 1.0) -> str:
    """The symbol of one derived-road entry: a ring, a dot or a slash in its colour."""
    fill = COLOURS[colour]
    if name == "big_eye_boy":
        return (
            f'<circle id="{symbol}" r="{4.1 * scale:g}" fill="none" stroke="{fill}"'
            f' stroke-width="{1.9 * scale:g}"/>'
        )
    if name == "small_road":
        return f'<circle id="{symbol}" r="{4.4 * scale:g}" fill="{fill}"/>'
    reach = 4.2 * scale
    return (
        f'<path id="{symbol}" d="M{-reach:g} {reach:g}L{reach:g} {-reach:g}" stroke="{fill}"'
        f' stroke-width="{2.3 * scale:g}" stroke-linecap="round"/>'
    )


def derived_road_svg(
    name: str, road: Mapping[str, Any], rows: int = ROWS, least: int = ROAD_COLUMNS
) -> str:
    prefix = PREFIXES[name]
    cells = road["cells"]
    columns = _columns(cells, least)
    defs = "".join(_mark(f"{prefix}-{colour}", name, colour) for colour in ("red", "blue"))
    body = [_grid(columns, rows, SMALL)]
    half = SMALL / 2
    for cell in cells:
        x, y = cell["column"] * SMALL + half, cell["row"] * SMALL + half
        colour = str(cell["colour"])
        body.append(_use(f"{prefix}-{colour}", x, y, f"cell {colour}"))
    label = f"{TITLES[name]}, {len(cells)} entries"
    return _svg(name.replace("_", "-"), (columns * SMALL, rows * SMALL), label, defs, body)


def ask_svg(ask: Mapping[str, Mapping[str, str | None]]) -> str:
    """Two rows, Banker and Player: a lettered disc, then what each derived road would add."""
    defs = "".join(_disc(f"ak-{side}", side, 10) for side in ("banker", "player"))
    defs += "".join(
        _mark(f"ak-{PREFIXES[name]}-{colour}", name, colour, 1.6)
        for name, _ in DERIVED
        for colour in ("red", "blue")
    )
    body = [f'<rect width="{4 * BIG}" height="{2 * BIG}" fill="#fff"/>']
    half = BIG / 2
    for row, side in enumerate(("banker", "player")):
        y = row * BIG + half
        body.append(_use(f"ak-{side}", half, y, f"ask-side {side}"))
        for index, (name, _) in enumerate(DERIVED, start=1):
            colour = ask.get(side, {}).get(name)
            x = index * BIG + half
            if colour is None:
                body.append(f'<circle class="ask-none" cx="{x:g}" cy="{y:g}" r="2" fill="{GRID}"/>')
            else:
                symbol = f"ak-{PREFIXES[name]}-{colour}"
                body.append(_use(symbol, x, y, f"cell {colour} ask-{name.replace('_', '-')}"))
    return _svg("ask", (4 * BIG, 2 * BIG), "Ask road: Banker, then Player", defs, body)


def road_svgs(board: Mapping[str, Any]) -> dict[str, str]:
    """Each road of the board (and the ask road) as its own picture, for the page."""
    rows = int(board.get("rows", ROWS))
    pictures = {
        "bead_plate": bead_plate_svg(board["bead_plate"], rows),
        "big_road": big_road_svg(board["big_road"], rows),
    }
    for name, _ in DERIVED:
        pictures[name] = derived_road_svg(name, board[name], rows)
    pictures["ask"] = ask_svg(board["ask"])
    return pictures


def _size(picture: str) -> tuple[int, int]:
    head = picture[: picture.index(">")]
    width = int(head.split(' width="', 1)[1].split('"', 1)[0])
    height = int(head.split(' height="', 1)[1].split('"', 1)[0])
    return width, height


def _placed(picture: str, x: int, y: int) -> str:
    return picture.replace("<svg ", f'<svg x="{x}" y="{y}" ', 1)


def _text(x: int, y: int, text: str, size: int = 14, weight: int = 600) -> str:
    return (
        f'<text x="{x}" y="{y}" font-size="{size}" font-weight="{weight}"'
        f' fill="#1d2430">{escape(text)}</text>'
    )


def board_svg(board: Mapping[str, Any], table_id: str | None = None) -> str:
    """The whole board as one SVG document: the five roads, the ask road and the counts."""
    pictures = road_svgs(board)
    pad, gap = 16, 26
    stats = board.get("stats") or board.get("summary") or {}
    heading = f"Shoe {board.get('shoe')}"
    if table_id:
        heading = f"Table {table_id} · {heading}"
    counts = (
        f"{stats.get('rounds', 0)} rounds · Banker {stats.get('banker', 0)} · Player"
        f" {stats.get('player', 0)} · Tie {stats.get('tie', 0)} · banker pairs"
        f" {stats.get('banker_pair', 0)} · player pairs {stats.get('player_pair', 0)}"
    )
    if stats.get("naturals") is not None:
        counts += f" · naturals {stats['naturals']}"
    if stats.get("cards_left") is not None:
        counts += f" · cards dealt {stats['cards_dealt']} · left {stats['cards_left']}"
    body = [_text(pad, pad + 16, heading, 18, 700), _text(pad, pad + 38, counts, 13, 400)]
    top = pad + 38 + gap
    bead_w, bead_h = _size(pictures["bead_plate"])
    big_w, _ = _size(pictures["big_road"])
    body += [_text(pad, top - 6, TITLES["bead_plate"], 12)]
    body += [_placed(pictures["bead_plate"], pad, top)]
    body += [_text(pad + bead_w + gap, top - 6, TITLES["big_road"], 12)]
    body += [_placed(pictures["big_road"], pad + bead_w + gap, top)]
    width = pad + bead_w + gap + big_w + pad
    y = top + bead_h + gap
    x = pad
    row_height = 0
    for name in (*(name for name, _ in DERIVED), "ask"):
        picture_w, picture_h = _size(pictures[name])
        if x > pad and x + picture_w > width - pad:
            x, y = pad, y + row_height + gap
            row_height = 0
        body += [_text(x, y - 6, TITLES[name], 12), _placed(pictures[name], x, y)]
        x += picture_w + gap
        row_height = max(row_height, picture_h)
        width = max(width, x - gap + pad)
    height = y + row_height + pad
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}" font-family="{FONT}">'
        f'<rect width="{width}" height="{height}" fill="#f4f6f9"/>' + "".join(body) + "</svg>"
    )
