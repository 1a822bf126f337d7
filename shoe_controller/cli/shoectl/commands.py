"""shoectl's click group and its seeing commands (status, check, devices, rounds, round,
road, events, outbox), with one command per supervisor action added from the registry."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import click

from shoe_controller import __version__
from shoe_controller.cli.shoectl.acting import action_command
from shoe_controller.cli.shoectl.checks import EventTypeParam
from shoe_controller.cli.shoectl.client import TIMEOUT_S, AnswerError, UnreachableError
from shoe_controller.cli.shoectl.edge import edge_command
from shoe_controller.cli.shoectl.following import follow_events
from shoe_controller.cli.shoectl.plumbing import (
    EXIT_ATTENTION,
    EXIT_OK,
    JSON_KEY,
    NAGIOS_UNKNOWN,
    TIMEOUT_KEY,
    UTC_KEY,
    ask,
    connect,
    fail,
    json_option,
    out,
    painter,
    print_json,
    print_json_line,
    times,
)
from shoe_controller.cli.shoectl.recall import recall, write_export
from shoe_controller.cli.shoectl.render import (
    BANKER,
    DERIVED_ROADS,
    EVENT_HEADERS,
    PLAYER,
    TIE,
    Cell,
    Painter,
    ask_lines,
    bead_plate_lines,
    big_road_lines,
    card_text,
    derived_road_lines,
    event_row,
    render_pairs,
    render_status,
    render_table,
    result_text,
    round_notes,
    stats_lines,
    through_text,
)
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.wording import in_shoectl_words
from shoe_controller.service.scoreboard.svg import board_svg
from shoe_controller.table.action_specs import ACTIONS

DEFAULT_SOCKET = "/run/shoe-controller/control.sock"
SOCKET_ENV = "SHOECTL_SOCKET"


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
@click.option("--json", "as_json", is_flag=True, help="Every command prints JSON (also after it).")
@click.option(
    "--utc",
    is_flag=True,
    help="Every time in UTC (also after the command); default: this machine's zone (TZ).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the controller's answer before saying it did not come.",
)
@click.version_option(__version__, "--version", prog_name="shoectl")
@click.pass_context
def main(ctx: click.Context, socket_path: str, as_json: bool, utc: bool, timeout: float) -> None:
    """See the table through shoe-controller's control socket, and act on it as supervisor.

    Times are shown in this machine's zone (TZ honoured) with its offset, or in UTC with
    --utc; --json writes them as ISO 8601 with the offset (docs/shoectl.md "Times").
    """
    ctx.obj = socket_path
    ctx.meta[JSON_KEY] = as_json
    ctx.meta[UTC_KEY] = utc
    ctx.meta[TIMEOUT_KEY] = timeout


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
        out(in_shoectl_words(render_status(result, painter(), times())))
    raise SystemExit(EXIT_ATTENTION if level else EXIT_OK)


@main.command(short_help="One Nagios-style line for monitoring.")
@json_option
def check(as_json: bool) -> None:
    """One line for monitoring; exits 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Nagios)."""
    try:
        with connect() as client:
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
        click.echo(times().in_text(result["line"]))
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
    """The rounds with their cards and results: by default the last ten games, from the shoe
    before too when this one has dealt fewer (game recall); `round N` shows every step."""
    if shoe is None and last is None:
        answers = recall(ask)
    else:
        answers = [ask({"cmd": "rounds", "shoe": shoe, "last": last})]
    if as_json:  # the current shoe's answer; the earlier shoes' recalled rounds beside it
        print_json({**answers[-1], "earlier": answers[:-1]} if len(answers) > 1 else answers[0])
        return
    paint, shown = painter(), times()
    for number, result in enumerate(answers):
        if number:
            out()
        print_rounds(result, paint, shown)


def print_rounds(result: Mapping[str, Any], paint: Painter, times: Times) -> None:
    """One shoe's rounds as a table."""
    shown = len(result["rounds"])
    more = f", the last {shown} shown" if shown < result["total"] else ""
    out(paint(f"Shoe {result['shoe']}: {result['total']} round(s){more}", "head"))
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
                times.short(item["started_at"]),
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
@click.option(
    "--export",
    "export_file",
    metavar="FILE",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the dispute file: the shoe through this round with its hash chain, as JSON"
    " lines ('-': standard output); `shoe-controller verify FILE` checks it.",
)
@json_option
def round_command(number: int, shoe: int | None, export_file: str | None, as_json: bool) -> None:
    """One round in full with its procedure events (for disputes)."""
    if export_file is not None:
        write_export(ask({"cmd": "export", "round": number, "shoe": shoe}), export_file)
        return
    result = ask({"cmd": "round", "round": number, "shoe": shoe})
    if as_json:
        print_json(result)
        return
    paint, shown = painter(), times()
    summary = result["summary"]
    pairs = [("Round", f"{result['round']} of shoe {result['shoe']}")]
    if summary["trial"]:
        pairs[0] = ("Round", pairs[0][1] + " (trial)")
    pairs.append(("Started", shown.stamp(summary["started_at"])))
    pairs.append(("Ended", shown.stamp(summary["ended_at"]) or "in progress"))
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
    rows = [event_row(e, paint, shown) for e in result["events"]]
    out(render_table(EVENT_HEADERS, rows, paint))


@main.command(short_help="The shoe's five roads, the ask road and its statistics.")
@click.option("--shoe", type=click.IntRange(min=0), help="Which shoe (default: the current).")
@click.option(
    "--svg",
    "svg_file",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    help="Write the board as an SVG picture to this file ('-': standard output).",
)
@json_option
def road(shoe: int | None, svg_file: str | None, as_json: bool) -> None:
    """The shoe's roads as the display board draws them: bead plate, big road, big eye boy,
    small road, cockroach pig, and the ask road (docs/scoreboard.md)."""
    result = ask({"cmd": "road", "shoe": shoe})
    if svg_file is not None:
        picture = board_svg(result, result.get("table"))
        try:
            with click.open_file(svg_file, "w", encoding="utf-8", atomic=svg_file != "-") as file:
                file.write(picture + "\n")
        except OSError as error:
            fail(f"cannot write {svg_file}: {error.strerror or error}")
        return
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
    for name, title in DERIVED_ROADS:
        out()
        out(paint(title, "head") + paint("  (R red, B blue: regular, irregular)", "dim"))
        for line in derived_road_lines(result[name], rows, paint):
            out(line)
    out()
    out(paint("Ask road", "head"))
    for line in ask_lines(result["ask"], paint):
        out(line)
    out()
    for line in stats_lines(result["stats"], paint):
        out(line)


@main.command(short_help="The event stream; --follow for live.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they happen.")
@click.option(
    "--type",
    "-t",
    "types",
    multiple=True,
    metavar="TYPE",
    type=EventTypeParam(),
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
    paint, shown = painter(), times()
    request = {"cmd": "events", "types": list(types), "limit": last}
    if not follow:
        if last == 0:
            return
        for event in ask(request)["events"]:
            print_event(event, as_json, paint, shown)
        return
    try:
        follow_events(request, lambda event: print_event(event, as_json, paint, shown))
    except KeyboardInterrupt:
        raise SystemExit(EXIT_OK) from None
    except AnswerError as error:
        fail(f"{error.text} ({error.code})")


def print_event(event: Mapping[str, Any], as_json: bool, paint: Painter, times: Times) -> None:
    """One event a line (a stream cannot align on what comes later: fixed widths)."""
    if as_json:
        print_json_line(event)
    else:
        seq, at, where, (kind, role), details = event_row(event, paint, times)
        out(f"{seq:>6}  {at:<12}  {where:<8}  {paint(kind.ljust(20), role)}  {details}")
    sys.stdout.flush()


@main.command()
@json_option
def outbox(as_json: bool) -> None:
    """What waits for each sink (the table server, a broker ...), and why."""
    result = ask({"cmd": "outbox"})
    if as_json:
        print_json(result)
        return
    paint, when = painter(), times()
    out(f"Stored: through seq {result['last_seq']} (the first held: {result['first_seq_held']})")
    for sink in result["sinks"]:
        out()
        pairs = [
            ("Sink", f"{sink['name']} ({sink['kind']}) {sink['target']}"),
            ("Backlog", f"{sink['backlog']} event(s)"),
            ("Delivered", f"through its seq {through_text(sink)} of {sink['last_seq']}"),
            ("Why", sink["why"]),
            ("State", str(sink["state"])),
        ]
        if sink.get("oldest_waiting_at"):
            age = sink["oldest_waiting_age_s"]
            pairs.append(("Oldest", f"{when.stamp(sink['oldest_waiting_at'])} ({age:.0f} s ago)"))
        if sink.get("last_delivered_at"):
            pairs.append(("Last delivered", when.stamp(sink["last_delivered_at"])))
        if sink.get("last_error"):
            pairs.append(
                (
                    "Last error",
                    paint(sink["last_error"], "warn")
                    + f" ({sink.get('consecutive_failures')} failure(s) in a row,"
                    f" {when.stamp(sink['last_error_at'])})",
                )
            )
        if sink.get("fault"):
            fault = sink["fault"]
            pairs.append(("Fault", paint(f"{fault['code']}: {fault['text']}", "crit")))
        out(render_pairs(pairs, paint))
        waiting = sink.get("waiting") or []
        if waiting:
            rows = [
                [
                    str(e["seq"]),
                    str(e["event_seq"]),
                    when.short(e["at"]),
                    str(e["shoe"] if e["shoe"] is not None else "-")
                    + (f"/{e['round']}" if e["round"] is not None else ""),
                    e["type"],
                ]
                for e in waiting
            ]
            more = sink["backlog"] - len(waiting)
            out(render_table(("SEQ", "EVENT", "AT", "SHOE/RND", "TYPE"), rows, paint))
            if more > 0:
                out(paint(f"... and {more} more", "dim"))


main.add_command(edge_command)  # the surveillance group's (issue 15)
for _action in ACTIONS.values():
    main.add_command(action_command(_action))
