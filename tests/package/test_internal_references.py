"""The repository speaks of the product only: no tracked file cites a tracker's issue, a work
session by number, or a path of the machine it was written on.

The history of a change is in git (its commit says what and why); a file says what is true
now. So a tracker's number or a work session's in a comment, a page or debian/ is a
reference no reader of a clone can follow, and `/home/<user>/...` names a machine no reader
has. Every tracked text file is read, the changelog included: its entries may describe a
change, never cite an internal number.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Written in pieces so that this file does not match itself.
FORBIDDEN = (
    ("an issue number", re.compile(r"\b" + "issues?" + r"\s+#?\d+", re.I)),
    ("a session number", re.compile(r"\b" + "sessions?" + r"\s+\d+", re.I)),
    ("a path of a machine", re.compile(r"(?<![\w.])/(?:" + "work|home|Users" + r")/\w")),
)


def tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    files = []
    for name in names:
        path = ROOT / name
        if path.is_file() and b"\0" not in path.read_bytes()[:8192]:
            files.append(path)
    return files


def references(text: str) -> list[tuple[int, str, str]]:
    """(line, what, the text) for each internal reference in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN:
            for match in pattern.finditer(line):
                found.append((number, what, match.group(0)))
    return found


def test_no_tracked_file_cites_an_issue_a_session_or_a_machine() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what} ({text})"
        for path in tracked_text_files()
        for line, what, text in references(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, "\n".join(found)


def test_the_checker_finds_each_kind() -> None:
    sample = (
        "# kept apart (Issue " + "31): the ACK first\n"
        "Since session " + "3 the answer is the board.\n"
        "the copies of " + "/work" + "/shared/RULES.md\n"
        "a link session, 3 sessions, the issue a person reads, 12 issues, /tmp/x\n"
    )
    assert [(line, what) for line, what, _ in references(sample)] == [
        (1, "an issue number"),
        (2, "a session number"),
        (3, "a path of a machine"),
    ]
