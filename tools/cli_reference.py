"""Write the man pages and bash completions of `shoe-controller` and `shoectl` from their commands.

The Debian package's build runs it (debian/rules) with the package's own environment, so the
pages and completions always follow the click commands they describe: every option and
subcommand, its help and its default, as `--help` shows them. What `--help` cannot say (the
files, the environment, the exit codes, where the documentation is) is added per program below.

    python tools/cli_reference.py OUTDIR   # OUTDIR/man/*.1 and OUTDIR/completion/*
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from click.shell_completion import BashComplete

from shoe_controller import __version__
from shoe_controller.cli import shoectl as shoectl_package
from shoe_controller.cli.main import main as controller_command
from shoe_controller.cli.shoectl.commands import DEFAULT_SOCKET, SOCKET_ENV
from shoe_controller.cli.shoectl.commands import main as shoectl_command

DOCS = "/usr/share/doc/shoe-controller"
NO_REWRAP = "\b"  # click's marker: the paragraph after it keeps its lines


@dataclass(frozen=True)
class Program:
    """One command line program: its click command and the sections `--help` cannot give."""

    name: str
    command: click.Command
    description: str  # roff, after the command's own help
    sections: tuple[tuple[str, str], ...]  # (title, roff text), after OPTIONS and COMMANDS


def programs() -> tuple[Program, ...]:
    """The package's two programs."""
    files = (
        ".TP\n.I /etc/shoe-controller/shoe-controller.toml\n"
        "The configuration (a conffile; every key is documented in it and in\n"
        f".IR {DOCS}/docs/config.md ).\n"
        ".TP\n.I /etc/shoe-controller/table.key\n"
        "The table's shared secret for the table server, mode 0640, group shoe\\-controller; "
        "never shipped, never logged.\n"
        ".TP\n.I /var/lib/shoe\\-controller/journal.db\n"
        "The journal: every input and event of the table.\n"
        ".TP\n.I /var/lib/shoe\\-controller/journal.db.lock\n"
        "The daemon's lock on the journal (a flock, with its PID written in it): one daemon a "
        "journal. Never delete it; the kernel frees the lock when the daemon ends.\n"
        f".TP\n.I {DEFAULT_SOCKET.replace('-', chr(92) + '-')}\n"
        "The control socket shoectl talks to.\n"
    )
    return (
        Program(
            "shoe-controller",
            controller_command,
            roff_text(
                "The daemon is `shoe-controller run`, started by systemd as shoe-controller.service"
                " (`systemctl status shoe-controller`, `journalctl -u shoe-controller`); the other"
                " commands are the technician's tools and the demonstration."
            ),
            (
                (
                    "EXIT STATUS",
                    "0 on success. \\fBrun\\fR exits 1, with one line naming the key, when the "
                    "configuration or a file it names cannot be used; \\fBrun\\fR and "
                    "\\fBdemo\\fR exit 75, with one line naming the journal and the PID that "
                    "holds it, when another daemon (or demo) runs on the journal.",
                ),
                ("FILES", files),
                (
                    "SEE ALSO",
                    ".BR shoectl (1),\n.BR systemctl (1),\n.BR journalctl (1);\n"
                    f".I {DOCS}/README.md\nand\n.IR {DOCS}/docs/install.md .",
                ),
            ),
        ),
        Program(
            "shoectl",
            shoectl_command,
            description_of(shoectl_package.__doc__ or ""),
            (
                *exit_status_of(shoectl_package.__doc__ or ""),
                (
                    "ENVIRONMENT",
                    f".TP\n.B {SOCKET_ENV}\nThe control socket, instead of "
                    f"{roff_text(DEFAULT_SOCKET)} (\\fB\\-\\-socket\\fR wins).",
                ),
                ("FILES", files),
                (
                    "SEE ALSO",
                    ".BR shoe\\-controller (1);\n"
                    f".I {DOCS}/docs/shoectl.md\nand\n.IR {DOCS}/docs/control.md .",
                ),
            ),
        ),
    )


def description_of(docstring: str) -> str:
    """A docstring's paragraphs after its summary line, but its exit codes, as roff."""
    paragraphs = inspect.cleandoc(docstring).split("\n\n")[1:]
    kept = [" ".join(p.split()) for p in paragraphs if not p.startswith("Exit codes:")]
    return "\n.PP\n".join(roff_text(paragraph) for paragraph in kept)


def exit_status_of(docstring: str) -> Iterator[tuple[str, str]]:
    """The docstring's "Exit codes:" paragraph as an EXIT STATUS section, when it has one."""
    for paragraph in inspect.cleandoc(docstring).split("\n\n"):
        if paragraph.startswith("Exit codes:"):
            text = paragraph.removeprefix("Exit codes:").strip()
            yield "EXIT STATUS", roff_text(" ".join(text.split()))


# ---------------------------------------------------------------------- roff


def roff_text(text: str) -> str:
    """Text safe in roff: backslashes and minus signs escaped, no line read as a request,
    `code` in bold."""
    escaped = text.replace("\\", "\\e").replace("-", "\\-")
    escaped = re.sub(r"`([^`\n]+)`", r"\\fB\1\\fR", escaped)
    return "\n".join(
        "\\&" + line if line.startswith((".", "'")) else line for line in escaped.split("\n")
    )


def roff_help(help_text: str) -> str:
    """A click help text as roff paragraphs (click's \\b paragraphs keep their lines)."""
    text = inspect.cleandoc(help_text.partition("\f")[0])  # click hides what follows \f
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.startswith(NO_REWRAP):
            kept = paragraph.removeprefix(NO_REWRAP).strip("\n")
            paragraphs.append(f".nf\n{roff_text(kept)}\n.fi")
        else:
            paragraphs.append(roff_text(" ".join(paragraph.split())))
    return "\n.PP\n".join(paragraphs)


def roff_options(command: click.Command, ctx: click.Context) -> str:
    """Each option as a tagged paragraph, worded and defaulted as `--help` shows it."""
    entries = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:  # arguments and hidden options
            continue
        names, help_text = record
        entries.append(f".TP\n\\fB{roff_text(names)}\\fR\n{roff_text(help_text)}")
    return "\n".join(entries)


def synopsis(command: click.Command, ctx: click.Context) -> str:
    pieces = " ".join(command.collect_usage_pieces(ctx))
    return f".B {roff_text(ctx.command_path)}\n{roff_text(pieces)}"


def man_page(program: Program, date: datetime.date) -> str:
    """The whole man page (section 1) of a program."""
    command = program.command
    # make_context applies the command's context_settings (`-h` besides `--help`)
    ctx = command.make_context(program.name, [], resilient_parsing=True)
    summary = (command.help or "").strip().splitlines()[0].rstrip(".")
    lines = [
        f'.TH {program.name.upper().replace("-", chr(92) + "-")} 1 "{date.isoformat()}" '
        f'"shoe-controller {__version__}" "User Commands"',
        ".nh",  # no hyphenation: names and paths stay whole
        ".SH NAME",
        f"{roff_text(program.name)} \\- {roff_text(summary[0].lower() + summary[1:])}",
        ".SH SYNOPSIS",
        synopsis(command, ctx),
        ".SH DESCRIPTION",
        roff_help(command.help or ""),
        *([".PP", program.description] if program.description else []),
        ".SH OPTIONS",
        roff_options(command, ctx),
    ]
    if isinstance(command, click.Group):
        lines.append(".SH COMMANDS")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            sub_ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True)
            usage = f"{ctx.command_path} {name} {' '.join(sub.collect_usage_pieces(sub_ctx))}"
            lines += [f'.SS "{roff_text(usage.strip())}"', roff_help(sub.help or "")]
            options = roff_options(sub, sub_ctx)
            if options:
                lines += [".PP\nOptions:", ".RS", options, ".RE"]
    for title, text in program.sections:
        lines += [f".SH {title}", text]
    return "\n".join(lines) + "\n"


def completion_script(program: Program) -> str:
    """The bash completion click generates (`_SHOECTL_COMPLETE=bash_source shoectl`)."""
    variable = f"_{program.name.replace('-', '_').upper()}_COMPLETE"
    return BashComplete(program.command, {}, program.name, variable).source()


def build_date() -> datetime.date:
    """The changelog's date when dpkg-buildpackage gives it (reproducible builds), else today."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        return datetime.datetime.now(datetime.UTC).date()
    return datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).date()


def write_all(out: Path) -> list[Path]:
    """Write every program's man page and completion under `out`; return the files written."""
    (out / "man").mkdir(parents=True, exist_ok=True)
    (out / "completion").mkdir(parents=True, exist_ok=True)
    written = []
    for program in programs():
        page = out / "man" / f"{program.name}.1"
        page.write_text(man_page(program, build_date()), encoding="utf-8")
        completion = out / "completion" / program.name
        completion.write_text(completion_script(program), encoding="utf-8")
        written += [page, completion]
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for man/ and completion/")
    for path in write_all(parser.parse_args(argv).out):
        print(path)


if __name__ == "__main__":
    main()
