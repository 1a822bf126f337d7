"""shoectl's click group and its seeing commands (status, check, devices, rounds, round,
road, outbox; events in event_log.py), with one command per supervisor action from the registry."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import click

from shoe_controller import __version__
from shoe_controller.cli.output_file import OutputFile
from shoe_controller.cli.program import Program
from shoe_controller.cli.shoectl.acting import action_command
from shoe_controller.cli.shoectl.checks import shoe_option
from shoe_controller.cli.shoectl.client import TIMEOUT_S, AnswerError, UnreachableError
from shoe_controller.cli.shoectl.edge import edge_command
from shoe_controller.cli.shoectl.event_log import events_command
from shoe_controller.cli.shoectl.pace import pace_command
from shoe_controller.cli.shoectl.plumbing import (
    EXIT_ATTENTION,
    EXIT_OK,
    JSON_KEY,
    NAGIOS_UNKNOWN,
    TIMEOUT_KEY,
    UTC_KEY,
    ask,
    connect,
    json_option,
    out,
    painter,
    print_json,
    times,
)
from shoe_controller.cli.shoectl.recall import recall, require_shoe, write_export
from shoe_controller.cli.shoectl.render import (
    Cell,
    Painter,
    card_text,
    event_headers,
    event_row,
    node_pairs,
    render_pairs,
    render_status,
    render_table,
    result_text,
    round_notes,
    through_text,
)
from shoe_controller.cli.shoectl.road_view import road_command
from shoe_controller.cli.shoectl.shuffle import shuffle_command
from shoe_controller.cli.shoectl.times import Times
from shoe_controller.cli.shoectl.watching import watch
from shoe_controller.cli.shoectl.wording import in_shoectl_words
from shoe_controller.table.action_specs import ACTIONS
from shoe_controller.vocab import words

DEFAULT_SOCKET = "/run/shoe-controller/control.sock"
SOCKET_ENV = "SHOECTL_SOCKET"


class _Shoectl(Program):
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
    type=click.FloatRange(0.1, 3600),
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
    --utc; --json writes every time in UTC, as ISO 8601 ending in Z (docs/shoectl.md
    "Times"). A time you type (events --since, --until) is read in the zone shown, or with
    its offset; one the clocks pass twice (daylight saving) is refused.
    """
    ctx.obj = socket_path
    ctx.meta[JSON_KEY] = as_json
    ctx.meta[UTC_KEY] = utc
    ctx.meta[TIMEOUT_KEY] = timeout


# ---------------------------------------------------------------------- seeing


@main.command(short_help="Devices, shoe, round, holds, faults, backlog; --watch for live.")
@click.option(
    "--watch",
    "-w",
    "watching",
    is_flag=True,
    help="Redraw the status in place every --interval seconds, as `watch` does, until Ctrl-C.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 3600),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="With --watch: seconds between two frames.",
)
@json_option
def status(watching: bool, interval: float, as_json: bool) -> None:
    """Devices, shoe, round, backlog, holds and faults; exits 1 when something needs a person.

    With --watch the status is redrawn in place until Ctrl-C (exit 0), without flicker.
    """
    if watching:
        if as_json:
            raise click.UsageError("--watch draws for a person: leave out --json")
        paint, shown = painter(), times()
        watch(lambda: _status_frame(paint, shown), interval, shown)
    result = ask({"cmd": "status"})
    level = result["health"]["level"]
    if as_json:
        print_json(result)
    else:
        out(in_shoectl_words(render_status(result, painter(), times())))
    raise SystemExit(EXIT_ATTENTION if level else EXIT_OK)


def _status_frame(paint: Painter, shown: Times) -> str:
    """One frame of `status --watch`: the status, or why the controller cannot say it."""
    try:
        with connect() as client:
            result = client.request({"cmd": "status"})
    except UnreachableError as error:
        return f"shoectl: {error}"
    except AnswerError as error:
        return f"shoectl: {error.text}"
    return in_shoectl_words(render_status(result, paint, shown))


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
        faults = ", ".join(
            f"{words.fault(f['code'])}: {f['text']}" for f in device.get("faults") or []
        )
        rows.append(
            [
                device["device"],
                (words.device_state(state), "ok" if state == "connected" else "crit"),
                identity.get("kind") or device.get("kind") or "",  # HELLO's, else configured
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
    headers += ("FRAMES", "CRC ERRORS", "RESENT", "RECONNECTS", "FAULTS, LAST ERROR")
    out(render_table(headers, rows, paint))


@main.command(short_help="The last ten games, or a shoe's rounds, with cards and results.")
@shoe_option
@click.option("--last", type=click.IntRange(min=1), help="Only the last K rounds.")
@json_option
def rounds(shoe: int | None, last: int | None, as_json: bool) -> None:
    """The rounds with their cards and results: by default the last ten games, from the shoe
    before too when this one has dealt fewer (game recall); `round N` shows every step."""
    if shoe is None and last is None:
        answers = recall(ask)
    else:
        answers = [ask({"cmd": "rounds", "shoe": shoe, "last": last})]
        require_shoe(shoe, answers[0]["total"])
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
            notes.append(words.void_reason(item["voided_reason"]))
        if item["insurance_offers"]:
            notes.append(f"insurance x{item['insurance_offers']}")
        if item["supervisor_actions"]:
            actions = ", ".join(name.replace("_", "-") for name in item["supervisor_actions"])
            notes.append(f"supervisor: {actions}")
        if item["alerts"]:
            notes.append(f"{item['alerts']} alert(s)")
        if item.get("refused_commands"):
            notes.append(f"{item['refused_commands']} refused command(s)")
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
            ("ROUND", times.column("STARTED"), "RESULT", "P-B", "PLAYER", "BANKER", "NOTES"),
            rows,
            paint,
        )
    )


@main.command("round", short_help="One round in full, for disputes.")
@click.argument("number", type=click.IntRange(min=1))
@shoe_option
@click.option(
    "--export",
    "export_file",
    metavar="FILE",
    type=OutputFile(),
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
        pairs.append(
            ("Result", paint(f"void: {words.void_reason(summary['voided_reason'])}", "warn"))
        )
    cards = summary["cards"]
    pairs.append(
        ("Cards", " ".join(f"{p} {card_text(c, paint)}" for p, c in cards.items()) or "none")
    )
    out(render_pairs(pairs, paint))
    out()
    rows = [event_row(e, paint, shown) for e in result["events"]]
    out(render_table(event_headers(shown), rows, paint))


@main.command(short_help="What waits for each sink (the table server, a broker), and why.")
@json_option
def outbox(as_json: bool) -> None:
    """What waits for each sink (the table server, a broker ...), and why."""
    result = ask({"cmd": "outbox"})
    if as_json:
        print_json(result)
        return
    paint, when = painter(), times()
    first = result["first_seq_held"]
    kept = f"the journal keeps seq {first} on" if first else "the journal keeps none"
    pruned = "; the ones before were pruned" if first and first > 1 else ""
    out(f"Stored: through seq {result['last_seq']} ({kept}{pruned})")
    for sink in result["sinks"]:
        out()
        pairs = [
            ("Sink", f"{sink['name']} ({sink['kind']}) {sink['target']}"),
            ("Backlog", f"{sink['backlog']} event(s)"),
            ("Delivered", through_text(sink)),
            ("Why", sink["why"]),
            ("State", words.sink_state(sink["state"])),
            *node_pairs(sink, when),
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
            pairs.append(("Fault", paint(str(fault["text"]), "crit")))
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
            out(render_table(("SEQ", "EVENT", when.column("AT"), "SHOE/RND", "TYPE"), rows, paint))
            if more > 0:
                out(paint(f"... and {more} more", "dim"))


main.add_command(events_command)
main.add_command(road_command)
main.add_command(edge_command)  # the surveillance group's
main.add_command(shuffle_command)  # the surveillance group's
main.add_command(pace_command)
for _action in ACTIONS.values():
    main.add_command(action_command(_action))
