"""shoectl: the pit boss's view of the table and the supervisor's actions, over the control socket.

A thin client of the daemon's control socket (docs/control.md): it sends one JSON request,
draws the answer for a person (aligned tables, colour only on a terminal, suits as symbols)
or prints it as JSON (`--json`). It never reads the journal or the devices itself, and it
proves nothing about who you are: the daemon checks that from the socket (docs/shoectl.md).

Exit codes: 0 fine; 1 something needs a person (status) or the table refused the action;
2 the controller cannot be reached or answered an error; 4 not authorized to act;
`check` uses Nagios's 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

import click

from shoe_controller.table.actions import ACTIONS, POSITION_NAMES, Action, Arg
from shoe_controller.vocab.cards import CardError, parse_card

DEFAULT_SOCKET = "/run/shoe-controller/control.sock"
SOCKET_ENV = "SHOECTL_SOCKET"
TIMEOUT_S = 15.0

EXIT_OK, EXIT_ATTENTION, EXIT_UNREACHABLE, EXIT_NOT_AUTHORIZED = 0, 1, 2, 4
EXIT_REFUSED = 1
NAGIOS_UNKNOWN = 3


class UnreachableError(Exception):
    """The control socket cannot be used (daemon not running, no permission, broken reply)."""


class AnswerError(Exception):
    """The daemon answered with an error."""

    def __init__(self, code: str, text: str, answer: Mapping[str, Any]) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.answer = answer


# ---------------------------------------------------------------------- the socket


class Client:
    """One connection to the control socket; JSON lines both ways."""

    def __init__(self, path: str, timeout: float = TIMEOUT_S) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as error:
            self._sock.close()
            raise UnreachableError(_connect_failure(path, error)) from None
        self._file = self._sock.makefile("rb")

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, request: Mapping[str, Any]) -> None:
        try:
            self._sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
        except OSError as error:
            raise UnreachableError(f"the controller closed the connection: {error}") from None

    def receive(self) -> dict[str, Any]:
        try:
            line = self._file.readline()
        except TimeoutError:
            raise UnreachableError("the controller did not answer in time") from None
        except OSError as error:
            raise UnreachableError(f"the controller closed the connection: {error}") from None
        if not line:
            raise UnreachableError("the controller closed the connection")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            raise UnreachableError(
                f"the controller sent something that is not JSON: {line[:80]!r}"
            ) from None
        if not isinstance(answer, dict):
            raise UnreachableError("the controller's answer is not a JSON object")
        return answer

    def request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request; the answer's result, or AnswerError."""
        self.send(request)
        answer = self.receive()
        if not answer.get("ok"):
            error = answer.get("error") or {}
            raise AnswerError(str(error.get("code")), str(error.get("text")), answer)
        return answer.get("result") or {}

    def stream(self, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """A following request: the first answer, then every event line until closed."""
        self.request(request)
        self._sock.settimeout(None)  # events come when the table deals
        while True:
            answer = self.receive()
            if "event" in answer:
                yield answer["event"]


def _connect_failure(path: str, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return f"cannot reach the controller: no socket at {path} (is shoe-controller running?)"
    if isinstance(error, ConnectionRefusedError):
        return (
            f"cannot reach the controller: nobody listens on {path}"
            " (shoe-controller stopped or restarting?)"
        )
    if isinstance(error, PermissionError):
        return f"cannot reach the controller: permission denied on {path}"
    return f"cannot reach the controller at {path}: {error.strerror or error}"


# ---------------------------------------------------------------------- drawing


BANKER, PLAYER, TIE = "banker", "player", "tie"
STYLES: dict[str, dict[str, Any]] = {
    BANKER: {"fg": "red", "bold": True},
    PLAYER: {"fg": "blue", "bold": True},
    TIE: {"fg": "green", "bold": True},
    "ok": {"fg": "green"},
    "warn": {"fg": "yellow", "bold": True},
    "crit": {"fg": "red", "bold": True},
    "dim": {"dim": True},
    "head": {"bold": True},
    "red_suit": {"fg": "red"},
}
LEVEL_STYLE = {0: "ok", 1: "warn", 2: "crit", 3: "warn"}
HIDDEN = "??"  # a card the table may not show yet (R15) or does not know


class Painter:
    """Colour only when it goes to a terminal and NO_COLOR is not set (no-color.org)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: Any) -> Painter:
        tty = bool(getattr(stream, "isatty", lambda: False)())
        return cls(tty and not os.environ.get("NO_COLOR"))

    def __call__(self, text: str, role: str | None) -> str:
        if not self.enabled or role is None or not text:
            return text
        return click.style(text, **STYLES[role])


Cell = str | tuple[str, str | None]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], paint: Painter) -> str:
    """Columns aligned on the visible text (cells may already hold colour), colour after."""
    cells = [[(cell, None) if isinstance(cell, str) else cell for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, (text, _) in enumerate(row):
            widths[index] = max(widths[index], plain_len(text))
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    lines = [paint(head, "head")]
    for row in cells:
        shown = []
        for index, (text, role) in enumerate(row):
            pad = "" if index == len(row) - 1 else " " * (widths[index] - plain_len(text))
            shown.append(paint(text, role) + pad)
        lines.append("  ".join(shown).rstrip())
    return "\n".join(lines)


def render_pairs(pairs: Sequence[tuple[str, str]], paint: Painter) -> str:
    """`key  value` lines with the keys aligned."""
    width = max((len(key) for key, _ in pairs), default=0)
    return "\n".join(f"{paint(key.ljust(width), 'head')}  {value}" for key, value in pairs)


def card_text(code: str | None, paint: Painter) -> str:
    """`QH` -> `Q♥` (red suits in red); None or "hidden" -> ?? (R15)."""
    if not code or code == "hidden":
        return paint(HIDDEN, "dim")
    try:
        card = parse_card(code)
    except CardError:
        return code
    return paint(card.pretty, "red_suit" if card.suit.name in "HD" else None)


def cards_text(codes: Sequence[str | None] | None, paint: Painter) -> str:
    return " ".join(card_text(code, paint) for code in codes or [])


def plain_len(text: str) -> int:
    return len(click.unstyle(text))


def winner_cell(winner: str | None, paint: Painter) -> str:
    if winner is None:
        return ""
    return paint(winner.capitalize(), winner)


def short_time(at: str | None) -> str:
    """`2027-01-15T08:00:15.123456Z` -> `08:00:15.123`."""
    if not at or "T" not in at:
        return at or ""
    return at.split("T", 1)[1][:12]


def event_details(event: Mapping[str, Any], paint: Painter) -> str:
    """What an event says, for a person."""
    kind, data = event.get("type"), event.get("data") or {}
    if kind in ("card.dealt", "card.revealed"):
        extra = " face up" if data.get("face_up") else ""
        return f"{data.get('position')} {card_text(data.get('card'), paint)}{extra}"
    if kind == "card.extra":
        return f"{card_text(data.get('card'), paint)} becomes the next round's burn"
    if kind == "round.started":
        notes = ["trial" if data.get("trial") else "real"]
        if not data.get("big_small_open", True):
            notes.append("big/small closed")
        return ", ".join(notes)
    if kind == "round.result":
        return result_text(data, paint)
    if kind == "round.voided":
        return f"voided ({data.get('reason')}); cards {cards_text(data.get('cards'), paint)}"
    if kind == "insurance.offered":
        return (
            f"{data.get('side')} insurance stage {data.get('stage')} pays {data.get('odds')}"
            f" (Banker {data.get('banker_total')}, Player {data.get('player_total')})"
        )
    if kind in ("insurance.closed", "insurance.voided"):
        return f"{data.get('side')} stage {data.get('stage')}: {data.get('reason')}"
    if kind == "shoe.burned":
        first = data.get("first_card")
        lead = f"first {card_text(first, paint)}, " if first else ""
        return f"{lead}{data.get('count')} card(s): {cards_text(data.get('cards'), paint)}"
    if kind == "shoe.cut":
        return f"{data.get('cards_behind_cut')} cards behind the cut card"
    if kind == "shoe.cut_card":
        return f"cut card after card {data.get('after_card')}"
    if kind == "shoe.ended":
        return (
            f"{data.get('rounds')} rounds, {data.get('cards_dealt')} cards,"
            f" reason {data.get('reason')}"
        )
    if kind == "shoe.shuffled":
        check = "deck check ok" if data.get("ok") else paint("deck check FAILED", "crit")
        problems = f": {', '.join(data.get('problems') or [])}" if data.get("problems") else ""
        return f"{data.get('decks')} decks, {data.get('total')} cards, {check}{problems}"
    if kind == "procedure.alert":
        role = "warn" if data.get("needs_supervisor") else None
        code = paint(f"[{data.get('code')}]", role)
        return f"{code} {data.get('text')}"
    if kind == "security.alert":
        details = ", ".join(f"{k}={v}" for k, v in (data.get("details") or {}).items())
        code = paint(f"[{data.get('code')}]", "crit")
        return f"{code} {details}".rstrip()
    if kind == "supervisor.action":
        details = ", ".join(f"{k}={v}" for k, v in (data.get("details") or {}).items())
        text = f"{data.get('action')} by {data.get('by')}: {data.get('reason')}"
        return f"{text} ({details})" if details else text
    if kind in ("device.connected", "device.lost"):
        identity = " ".join(
            str(data.get(key)) for key in ("kind", "vendor", "model") if data.get(key)
        )
        serial = f" #{data['serial']}" if data.get("serial") else ""
        firmware = f" fw {data['firmware']}" if data.get("firmware") else ""
        return f"{data.get('device')} {identity}{serial}{firmware}".rstrip()
    if kind in ("device.fault", "device.fault_cleared"):
        code = data.get("code")
        code_text = f"{code:#06x}" if isinstance(code, int) else str(code)
        severity = data.get("severity")
        return f"{data.get('device')} fault {code_text} (severity {severity}): {data.get('text')}"
    if kind == "controller.started":
        recovered = ", recovered from the journal" if data.get("recovered") else ""
        return f"version {data.get('version')}, boot {data.get('boot')}{recovered}"
    return json.dumps(data, ensure_ascii=False)


def result_text(data: Mapping[str, Any], paint: Painter) -> str:
    winner = data.get("winner")
    score = f"{data.get('player_total')}-{data.get('banker_total')}"
    words = [
        winner_cell(winner, paint) + (" wins" if winner != TIE else ""),
        f"P {cards_text(data.get('player'), paint)} = {data.get('player_total')}",
        f"B {cards_text(data.get('banker'), paint)} = {data.get('banker_total')}",
    ]
    notes = round_notes(data)
    text = f"{words[0]} ({score}): {words[1]}, {words[2]}"
    return f"{text}; {', '.join(notes)}" if notes else text


def round_notes(data: Mapping[str, Any]) -> list[str]:
    notes = []
    if data.get("natural"):
        notes.append(f"natural {data['natural']}")
    if data.get("player_pair"):
        notes.append("player pair")
    if data.get("banker_pair"):
        notes.append("banker pair")
    if data.get("perfect_pair"):
        notes.append("perfect pair")
    if data.get("lucky6"):
        notes.append(f"lucky 6 ({data['lucky6']} cards)")
    return notes


def event_row(event: Mapping[str, Any], paint: Painter) -> list[Cell]:
    where = f"{event.get('shoe') if event.get('shoe') is not None else '-'}"
    if event.get("round") is not None:
        where += f"/{event['round']}"
    kind = str(event.get("type"))
    role = {"procedure.alert": "warn", "security.alert": "crit"}.get(kind)
    if kind == "round.result":
        role = (event.get("data") or {}).get("winner")
    return [
        str(event.get("seq")),
        short_time(event.get("at")),
        where,
        (kind, role),
        event_details(event, paint),
    ]


EVENT_HEADERS = ("SEQ", "TIME", "SHOE/RND", "TYPE", "DETAILS")


# ---------------------------------------------------------------------- the roads


def bead_plate_lines(cells: Sequence[Mapping[str, Any]], rows: int, paint: Painter) -> list[str]:
    """Six rows of cells `•B•`: a banker pair marks the left, a player pair the right."""
    columns = max((cell["column"] for cell in cells), default=-1) + 1
    grid = [["   "] * columns for _ in range(rows)]
    for cell in cells:
        letter = cell["winner"][0].upper()
        left = paint("•", BANKER) if cell["banker_pair"] else " "
        right = paint("•", PLAYER) if cell["player_pair"] else " "
        grid[cell["row"]][cell["column"]] = f"{left}{paint(letter, cell['winner'])}{right}"
    return ["|" + "".join(row) + "|" for row in grid] if columns else ["(no rounds yet)"]


def big_road_lines(cells: Sequence[Mapping[str, Any]], rows: int, paint: Painter) -> list[str]:
    """Columns of wins, cells `•B2•`: banker pair, winner, ties after it, player pair."""
    columns = max((cell["column"] for cell in cells), default=-1) + 1
    grid = [["    "] * columns for _ in range(rows)]
    for cell in cells:
        winner = cell["winner"]
        letter = paint(winner[0].upper(), winner) if winner else " "
        ties = cell["ties"]
        tie_mark = paint(str(ties) if ties < 10 else "+", TIE) if ties else " "
        left = paint("•", BANKER) if cell["banker_pair"] else " "
        right = paint("•", PLAYER) if cell["player_pair"] else " "
        grid[cell["row"]][cell["column"]] = f"{left}{letter}{tie_mark}{right}"
    return ["|" + "".join(row) + "|" for row in grid] if columns else ["(no rounds yet)"]


# ---------------------------------------------------------------------- plumbing


class _Shoectl(click.Group):
    """The command group; output cut short by a closed pipe (`| head`) ends quietly."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # Python would complain again when flushing stdout at exit: point it elsewhere.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(EXIT_OK) from None


@click.group(cls=_Shoectl, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--socket",
    "socket_path",
    envvar=SOCKET_ENV,
    default=DEFAULT_SOCKET,
    show_default=True,
    metavar="PATH",
    help=f"The controller's control socket (or ${SOCKET_ENV}).",
)
@click.pass_context
def main(ctx: click.Context, socket_path: str) -> None:
    """See the table through shoe-controller's control socket, and act on it as supervisor."""
    ctx.obj = socket_path


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")


def fail(text: str, code: int = EXIT_UNREACHABLE) -> NoReturn:
    click.echo(f"shoectl: {text}", err=True)
    raise SystemExit(code)


def ask(request: Mapping[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection; exits 2 with one line when it cannot be answered."""
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
            return client.request(request)
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        fail(f"{error.text} ({error.code})")


def out(text: str = "") -> None:
    click.echo(text, color=True)


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def painter() -> Painter:
    return Painter.for_stream(sys.stdout)


# ---------------------------------------------------------------------- seeing


@main.command(short_help="Devices, shoe, round, holds, faults, backlog.")
@json_option
def status(as_json: bool) -> None:
    """Devices, shoe, round, backlog, holds and faults; exits 1 when something needs a person."""
    result = ask({"cmd": "status"})
    level = result["health"]["level"]
    if as_json:
        print_json(result)
    else:
        out(render_status(result, painter()))
    raise SystemExit(EXIT_ATTENTION if level else EXIT_OK)


def render_status(result: Mapping[str, Any], paint: Painter) -> str:
    controller, table = result["controller"], result["table"]
    health, outbox = result["health"], result["outbox"]
    pairs: list[tuple[str, str]] = []
    pairs.append(
        (
            "Table",
            f"{controller['table_id']} ({controller['controller_id']}),"
            f" shoe-controller {controller['version']}, {controller['now']}",
        )
    )
    pairs.append(("Health", paint(health["status"], LEVEL_STYLE[health["level"]])))
    state = table["state"]
    if table.get("resumes_to"):
        state += f" (resumes to {table['resumes_to']})"
    mode = table["mode"] + (", squeeze" if table.get("squeeze") else "")
    pairs.append(("State", f"{paint(state, 'crit' if table.get('holds') else None)}  [{mode}]"))
    pairs.append(("Shoe", shoe_text(table, paint)))
    pairs.append(("Round", round_text(table, paint)))
    if table.get("insurance"):
        offers = [f"{o['side']} stage {o['stage']} pays {o['odds']}" for o in table["insurance"]]
        pairs.append(("Insurance", paint("open: " + "; ".join(offers), "warn")))
    holds = table.get("holds") or []
    pairs.append(
        (
            "Holds",
            "; ".join(paint(f"{h['code']}: {h['text']}", "crit") for h in holds) or "none",
        )
    )
    devices = result.get("devices") or []
    pairs.append(("Devices", "; ".join(device_text(d, paint) for d in devices) or "none"))
    pairs.append(
        (
            "Outbox",
            f"backlog {outbox['backlog']} (acked through {outbox['acked_through']}"
            f" of {outbox['last_seq']}): {outbox['why']}",
        )
    )
    lag = controller.get("loop_lag") or {}
    if "recent_worst_ms" in lag:
        pairs.append(
            (
                "Loop",
                f"worst stall {lag['recent_worst_ms']:g} ms in the last minute,"
                f" {lag['worst_ms']:g} ms since start",
            )
        )
    lines = [render_pairs(pairs, paint)]
    if health["problems"]:
        lines += ["", paint("Needs a person:", "head")]
        lines += [
            f"  {paint(p['status'], LEVEL_STYLE[p['level']])}  {p['text']}"
            for p in health["problems"]
        ]
    alerts = result.get("alerts") or []
    if alerts:
        lines += ["", paint("Recent alerts:", "head")]
        rows = [
            [
                str(a["seq"]),
                short_time(a["at"]),
                f"{a['shoe']}/{a['round']}" if a.get("round") is not None else str(a["shoe"]),
                (a["code"] or "", "warn" if a["needs_supervisor"] else None),
                a["text"] or "",
            ]
            for a in alerts
        ]
        lines.append(render_table(("SEQ", "TIME", "SHOE/RND", "CODE", "TEXT"), rows, paint))
    return "\n".join(lines)


def shoe_text(table: Mapping[str, Any], paint: Painter) -> str:
    if not table.get("shoe_open"):
        return f"no shoe open (next: shoe {table['shoe']}, deck check {table.get('deck_check')})"
    parts = [f"{table['shoe']} open", f"{table['cards_dealt']} cards dealt"]
    if table.get("cards_left") is not None:
        parts.append(f"{table['cards_left']} left")
    if table.get("cut_card_seen"):
        last = table.get("last_round")
        parts.append(
            paint(f"cut card seen after card {table.get('cut_card_after')}", "warn")
            + (f", last round {last}" if last is not None else "")
        )
    else:
        parts.append("cut card not seen")
    burn = table.get("burn") or {}
    if burn.get("in_progress"):
        first = burn.get("first_card")
        lead = f"first {card_text(first, paint)}, " if first else ""
        parts.append(
            paint(f"burning: {lead}{burn['burned']} burned, {burn['to_burn']} to go", "warn")
        )
    else:
        parts.append(f"{table.get('cards_burned', 0)} burned")
    parts.append(f"{table.get('real_rounds', 0)} round(s)")
    trials = table.get("trial_rounds") or {}
    if trials.get("dealt") or trials.get("pending"):
        parts.append(f"trials {trials.get('dealt')} dealt, {trials.get('pending')} pending")
    return ", ".join(parts)


def round_text(table: Mapping[str, Any], paint: Painter) -> str:
    current = table.get("round")
    due = table.get("next_position")
    if current is None:
        last = table.get("last_result")
        tail = f"; last result {winner_cell(last, paint)}" if last else ""
        return f"none in progress{'; next card ' + due if due else ''}{tail}"
    cards = " ".join(
        f"{position} {card_text(card, paint)}" for position, card in current["cards"].items()
    )
    parts = [f"{current['number']}{' (trial)' if current.get('trial') else ''}"]
    parts.append(cards or "no card yet")
    if table.get("state") == "reveal":
        parts.append("waiting for the reveal (R15)")
    else:
        parts.append(f"next {due}" if due else "no card due")
    if current.get("insurance_void"):
        parts.append("insurance void")
    if table.get("queued_cards"):
        parts.append(f"{table['queued_cards']} card(s) waiting")
    return ", ".join(parts)


def device_text(device: Mapping[str, Any], paint: Painter) -> str:
    state = device.get("status") or "unknown"
    role = "ok" if state == "connected" else "crit"
    identity = device.get("identity") or {}
    who = " ".join(str(identity[k]) for k in ("vendor", "model") if identity.get(k))
    return f"{device['device']} {paint(state, role)}" + (f" ({who})" if who else "")


@main.command(short_help="One Nagios-style line for monitoring.")
@json_option
def check(as_json: bool) -> None:
    """One line for monitoring; exits 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Nagios)."""
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
            result = client.request({"cmd": "check"})
    except (UnreachableError, AnswerError) as error:
        text = error.text if isinstance(error, AnswerError) else str(error)
        if as_json:
            print_json({"level": NAGIOS_UNKNOWN, "status": "UNKNOWN", "line": text})
        else:
            click.echo(f"SHOE UNKNOWN - {text}")
        raise SystemExit(NAGIOS_UNKNOWN) from None
    if as_json:
        print_json(result)
    else:
        click.echo(result["line"])
    raise SystemExit(int(result["level"]))


@main.command()
@json_option
def devices(as_json: bool) -> None:
    """Link statistics and identity of every device."""
    result = ask({"cmd": "devices"})
    if as_json:
        print_json(result)
        return
    paint = painter()
    rows = []
    for device in result["devices"]:
        identity = device.get("identity") or {}
        link = device.get("link") or device.get("adapter") or {}
        connection = device.get("connection") or {}
        state = device.get("status") or "unknown"
        last_error = link.get("last_error") or connection.get("last_error") or ""
        faults = ", ".join(f"{f['code']:#06x} {f['text']}" for f in device.get("faults") or [])
        rows.append(
            [
                device["device"],
                (state, "ok" if state == "connected" else "crit"),
                identity.get("kind", ""),
                identity.get("vendor", ""),
                identity.get("model", ""),
                identity.get("serial", ""),
                identity.get("firmware", ""),
                str(link.get("frames_in", "")),
                str(link.get("crc_errors", "")),
                str(link.get("retransmits", "")),
                str(connection.get("reconnects", "")),
                "; ".join(part for part in (faults, last_error) if part),
            ]
        )
    if not rows:
        out("no devices configured or seen")
        return
    headers = ("DEVICE", "STATUS", "KIND", "VENDOR", "MODEL", "SERIAL", "FIRMWARE")
    headers += ("FRAMES", "CRC_ERR", "RETRANS", "RECONN", "FAULTS/LAST ERROR")
    out(render_table(headers, rows, paint))


@main.command()
@click.option("--shoe", type=click.IntRange(min=0), help="Which shoe (default: the current).")
@click.option("--last", type=click.IntRange(min=1), help="Only the last K rounds.")
@json_option
def rounds(shoe: int | None, last: int | None, as_json: bool) -> None:
    """The shoe's rounds with their cards and results."""
    result = ask({"cmd": "rounds", "shoe": shoe, "last": last})
    if as_json:
        print_json(result)
        return
    paint = painter()
    out(paint(f"Shoe {result['shoe']}: {result['total']} round(s)", "head"))
    if not result["rounds"]:
        return
    rows = []
    for item in result["rounds"]:
        cards = item["cards"]
        player = " ".join(card_text(cards[p], paint) for p in ("P1", "P2", "P3") if p in cards)
        banker = " ".join(card_text(cards[p], paint) for p in ("B1", "B2", "B3") if p in cards)
        if item["status"] == "result":
            outcome: Cell = (item["winner"].capitalize(), item["winner"])
            score = f"{item['player_total']}-{item['banker_total']}"
        elif item["status"] == "voided":
            outcome, score = ("void", "warn"), ""
        else:
            outcome, score = ("dealing", "dim"), ""
        notes = round_notes(item)
        if item["trial"]:
            notes.insert(0, "trial")
        if item["voided_reason"]:
            notes.append(item["voided_reason"])
        if item["insurance_offers"]:
            notes.append(f"insurance x{item['insurance_offers']}")
        if item["supervisor_actions"]:
            notes.append("supervisor: " + ",".join(item["supervisor_actions"]))
        if item["alerts"]:
            notes.append(f"{item['alerts']} alert(s)")
        rows.append(
            [
                str(item["round"]),
                short_time(item["started_at"]),
                outcome,
                score,
                player,
                banker,
                ", ".join(notes),
            ]
        )
    out(
        render_table(
            ("ROUND", "STARTED", "RESULT", "P-B", "PLAYER", "BANKER", "NOTES"), rows, paint
        )
    )


@main.command("round", short_help="One round in full, for disputes.")
@click.argument("number", type=click.IntRange(min=0))
@click.option("--shoe", type=click.IntRange(min=0), help="Which shoe (default: the current).")
@json_option
def round_command(number: int, shoe: int | None, as_json: bool) -> None:
    """One round in full with its procedure events (for disputes)."""
    result = ask({"cmd": "round", "round": number, "shoe": shoe})
    if as_json:
        print_json(result)
        return
    paint = painter()
    summary = result["summary"]
    pairs = [("Round", f"{result['round']} of shoe {result['shoe']}")]
    if summary["trial"]:
        pairs[0] = ("Round", pairs[0][1] + " (trial)")
    pairs.append(("Started", summary["started_at"] or ""))
    pairs.append(("Ended", summary["ended_at"] or "in progress"))
    if summary["status"] == "result":
        pairs.append(("Result", result_text(summary, paint)))
    elif summary["status"] == "voided":
        pairs.append(("Result", paint(f"void ({summary['voided_reason']})", "warn")))
    cards = summary["cards"]
    pairs.append(
        ("Cards", " ".join(f"{p} {card_text(c, paint)}" for p, c in cards.items()) or "none")
    )
    out(render_pairs(pairs, paint))
    out()
    out(render_table(EVENT_HEADERS, [event_row(e, paint) for e in result["events"]], paint))


@main.command(short_help="The shoe's bead plate and big road.")
@click.option("--shoe", type=click.IntRange(min=0), help="Which shoe (default: the current).")
@json_option
def road(shoe: int | None, as_json: bool) -> None:
    """The shoe's bead plate and big road, as the display board draws them."""
    result = ask({"cmd": "road", "shoe": shoe})
    if as_json:
        print_json(result)
        return
    paint = painter()
    counts = result["summary"]
    rows = result["rows"]
    out(
        paint(f"Shoe {result['shoe']}", "head")
        + f"  {counts['rounds']} rounds: "
        + paint(f"Banker {counts['banker']}", BANKER)
        + "  "
        + paint(f"Player {counts['player']}", PLAYER)
        + "  "
        + paint(f"Tie {counts['tie']}", TIE)
        + f"  banker pairs {counts['banker_pair']}  player pairs {counts['player_pair']}"
    )
    out()
    out(paint("Bead plate", "head") + paint("  (•B: banker pair, B•: player pair)", "dim"))
    for line in bead_plate_lines(result["bead_plate"], rows, paint):
        out(line)
    out()
    legend = "  (•B: banker pair, B•: player pair, B2: two ties after it)"
    out(paint("Big road", "head") + paint(legend, "dim"))
    for line in big_road_lines(result["big_road"], rows, paint):
        out(line)


@main.command(short_help="The event stream; --follow for live.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they happen.")
@click.option(
    "--type",
    "-t",
    "types",
    multiple=True,
    metavar="TYPE",
    help="Only this type (card.dealt) or family (card); repeatable.",
)
@click.option(
    "--last",
    "-n",
    type=click.IntRange(0, 1000),
    default=20,
    show_default=True,
    help="How many past events to show first.",
)
@json_option
def events(follow: bool, types: tuple[str, ...], last: int, as_json: bool) -> None:
    """The journal's events, newest last; --follow streams them live (JSON: one per line)."""
    paint = painter()
    request = {"cmd": "events", "types": list(types), "limit": last}
    if not follow:
        if last == 0:
            return
        for event in ask(request)["events"]:
            print_event(event, as_json, paint)
        return
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
            for event in client.stream({**request, "follow": True}):
                print_event(event, as_json, paint)
    except KeyboardInterrupt:
        raise SystemExit(EXIT_OK) from None
    except UnreachableError as error:
        fail(str(error))
    except AnswerError as error:
        fail(f"{error.text} ({error.code})")


def print_event(event: Mapping[str, Any], as_json: bool, paint: Painter) -> None:
    """One event a line (a stream cannot align on what comes later: fixed widths)."""
    if as_json:
        click.echo(json.dumps(event, ensure_ascii=False))
    else:
        seq, at, where, (kind, role), details = event_row(event, paint)
        out(f"{seq:>6}  {at:<12}  {where:<8}  {paint(kind.ljust(20), role)}  {details}")
    sys.stdout.flush()


@main.command()
@json_option
def outbox(as_json: bool) -> None:
    """What waits for the table server, and why."""
    result = ask({"cmd": "outbox"})
    if as_json:
        print_json(result)
        return
    paint = painter()
    publisher = result.get("publisher") or {}
    pairs = [
        ("Backlog", f"{result['backlog']} event(s)"),
        ("Stored", f"through seq {result['last_seq']}"),
        ("Acked", f"through seq {result['acked_through']} (the table server has these)"),
        ("Why", result["why"]),
        ("Publisher", str(publisher.get("state", "not running"))),
    ]
    if result.get("oldest_waiting_at"):
        pairs.append(
            (
                "Oldest",
                f"{result['oldest_waiting_at']} ({result['oldest_waiting_age_s']:.0f} s ago)",
            )
        )
    if publisher.get("last_error"):
        pairs.append(
            (
                "Last error",
                paint(publisher["last_error"], "warn")
                + f" ({publisher.get('consecutive_failures')} failure(s) in a row)",
            )
        )
    if publisher.get("fault"):
        fault = publisher["fault"]
        pairs.append(("Fault", paint(f"{fault['code']}: {fault['text']}", "crit")))
    out(render_pairs(pairs, paint))
    waiting = result.get("waiting") or []
    if waiting:
        out()
        rows = [
            [
                str(e["seq"]),
                e["at"],
                str(e["shoe"] if e["shoe"] is not None else "-")
                + (f"/{e['round']}" if e["round"] is not None else ""),
                e["type"],
            ]
            for e in waiting
        ]
        more = result["backlog"] - len(waiting)
        out(render_table(("SEQ", "AT", "SHOE/RND", "TYPE"), rows, paint))
        if more > 0:
            out(paint(f"... and {more} more", "dim"))


# ---------------------------------------------------------------------- acting


def _arg_option(arg: Arg) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    name = "--" + arg.name.replace("_", "-")
    if arg.kind == "bool":
        return click.option(name, arg.name, is_flag=True, default=None, help=arg.help)
    if arg.kind == "position":
        kind: Any = click.Choice(POSITION_NAMES, case_sensitive=False)
        metavar = "[" + "|".join(POSITION_NAMES) + "]"
        text = "the position, R7 dealing order"
    elif arg.kind == "int":
        kind, metavar, text = click.IntRange(arg.low, arg.high), "N", arg.help
    else:
        kind, metavar, text = str, "CARD", f"{arg.help}: rank then suit, e.g. QH, TD, 10D"
    return click.option(
        name, arg.name, type=kind, metavar=metavar, required=arg.required, help=text
    )


# One line for `shoectl --help`; the command's own --help gives supervisor.py's full text.


def _action_command(action: Action) -> click.Command:
    def run(by: str, reason: str, as_json: bool, **values: Any) -> None:
        args = {name: value for name, value in values.items() if value is not None}
        if "position" in args:
            args["position"] = str(args["position"]).upper()
        request = {"cmd": "act", "action": action.name, "by": by, "reason": reason, "args": args}
        carry_out(request, as_json)

    run.__doc__ = f"{action.summary} ({action.rules})"
    command: Callable[..., Any] = run
    for arg in reversed(action.args):
        command = _arg_option(arg)(command)
    command = json_option(command)
    command = click.option(
        "--reason", required=True, help="Why: journaled and sent to the table server."
    )(command)
    command = click.option(
        "--by", required=True, metavar="ID", help="Your supervisor id (journaled, sent)."
    )(command)
    return click.command(action.name.replace("_", "-"), short_help=action.short)(command)


def carry_out(request: Mapping[str, Any], as_json: bool) -> None:
    """Send an action; exit 0 accepted, 1 refused by the table, 4 not authorized, 2 error."""
    socket_path = click.get_current_context().obj
    try:
        with Client(socket_path) as client:
            client.send(request)
            answer = client.receive()
    except UnreachableError as error:
        fail(str(error))
    if as_json:
        print_json(answer)
    paint = painter()
    if answer.get("ok"):
        result = answer["result"]
        if not as_json:
            out(
                paint("accepted", "ok")
                + f": {result['action']} by {result['by']} (as {result['os_user']}),"
                " journaled and sent as supervisor.action"
            )
        raise SystemExit(EXIT_OK)
    error = answer.get("error") or {}
    code, text = error.get("code"), error.get("text")
    if not as_json:
        warn = Painter.for_stream(sys.stderr)
        click.echo(f"{warn('refused', 'crit')}: {text}", err=True, color=warn.enabled)
    if code == "not_authorized":
        raise SystemExit(EXIT_NOT_AUTHORIZED)
    raise SystemExit(EXIT_REFUSED if code == "refused" else EXIT_UNREACHABLE)


for _action in ACTIONS.values():
    main.add_command(_action_command(_action))


if __name__ == "__main__":
    main(prog_name="shoectl")
