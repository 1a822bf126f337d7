"""How tests/data/shift-29.jsonl was made: a recorded shift of one table for the pace and the
shift report (tests/cli/test_pace_report.py), the inputs as the journal keeps them.

`python tests/data/shift_29_make.py > tests/data/shift-29.jsonl`. The schedule, in UTC on
2026-11-30, with `[table] betting = "server"` (every round's bets close 10 s before its
first card; its four cards 5 s apart: a natural, 15 s from first card to result):

- 06:58:00 dealer D-1 signs in; 07:00:00 shoe 1 loaded and burned;
- shoe 1: 12 rounds, round k's bets closed at 07:01:00 + (k-1) x 180 s; change_shoe 07:36:00;
- 07:44:00 shoe 2 loaded; rounds at 07:45:00 + (k-1) x 180 s. Round 3's first card comes with
  no bets closed (early_card, held), accepted 30 s later, its other cards after that: 45 s.
  08:00:00 dealer D-2 signs in. Round 13: two cards, voided at 08:21:30; change_shoe 08:23:00;
- 08:33:00 shoe 3 loaded; 10 rounds at 08:34:00 + (k-1) x 180 s; 09:02:00 the supervisor
  holds the table, resumes at 09:03:30; 09:04:00 change_shoe with misdeal; 09:05:00 D-2 out.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

DAY = datetime(2026, 11, 30, tzinfo=UTC)
PLAYER_NINES = ["9S", "9H", "9D", "9C", "8S", "8H", "8D", "8C"]
TENS = ["TS", "JH", "QD", "KC", "TH", "JD", "QC", "KS"]
LOW = ["2S", "3H", "4D", "2C", "3S", "4H", "2D", "3C"]


def at(clock: str, plus: float = 0.0) -> float:
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    moment = DAY + timedelta(hours=hours, minutes=minutes, seconds=seconds + plus)
    return moment.timestamp()


class Shift:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.nonce = 0

    def add(self, kind: str, when: float, **fields: Any) -> None:
        self.lines.append({"type": kind, "at": when, **fields})

    def card(self, when: float, name: str) -> None:
        self.add("card", when, device="scanner", card=name)

    def supervisor(self, when: float, action: str, by: str = "sup7", **args: Any) -> None:
        self.add("supervisor", when, action=action, by=by, reason="per procedure", args=args)

    def closed(self, when: float, shoe: int, number: int) -> None:
        self.nonce += 1
        self.add("betting", when, state="closed", shoe=shoe, round=number,
                 server_round=f"G-{shoe}-{number}", nonce=f"nonce-{self.nonce:06d}",
                 source="studio")  # fmt: skip

    def load(self, when: float) -> None:
        self.add("shoe_state", when, device="scanner", state="loaded")
        self.card(when + 10, "AS")  # the burn (R2.2 b): the ace, then one card
        self.card(when + 20, "4C")

    def natural(self, start: float, k: int, gap: float = 5.0) -> None:
        """A round's four cards from `start` on: Player a natural 8 or 9."""
        for index, name in enumerate(
            (PLAYER_NINES[k % 8], LOW[k % 8], TENS[k % 8], LOW[(k + 3) % 8])
        ):
            self.card(start + index * gap, name)

    def rounds(self, shoe: int, base: str, count: int, *, early: int | None = None) -> None:
        for k in range(1, count + 1):
            bets = at(base, (k - 1) * 180)
            if k == early:
                self.card(bets + 10, PLAYER_NINES[k % 8])  # no bets closed: held
                self.supervisor(bets + 40, "accept")
                for index, name in enumerate((LOW[k % 8], TENS[k % 8], LOW[(k + 3) % 8])):
                    self.card(bets + 45 + index * 5, name)
                continue
            self.closed(bets, shoe, k)
            self.natural(bets + 10, k)


def shift() -> list[dict[str, Any]]:
    made = Shift()
    made.supervisor(at("06:58:00"), "dealer", id="D-1")
    made.load(at("07:00:00"))
    made.rounds(1, "07:01:00", 12)
    made.supervisor(at("07:36:00"), "change_shoe", misdeal=False)
    made.load(at("07:44:00"))
    made.rounds(2, "07:45:00", 5, early=3)
    made.supervisor(at("08:00:00"), "dealer", id="D-2")
    for k in range(6, 13):
        bets = at("07:45:00", (k - 1) * 180)
        made.closed(bets, 2, k)
        made.natural(bets + 10, k)
    made.closed(at("08:21:00"), 2, 13)
    made.card(at("08:21:10"), "5S")
    made.card(at("08:21:15"), "6H")
    made.supervisor(at("08:21:30"), "void")
    made.supervisor(at("08:23:00"), "change_shoe", misdeal=False)
    made.load(at("08:33:00"))
    made.rounds(3, "08:34:00", 10)
    made.supervisor(at("09:02:00"), "hold")
    made.supervisor(at("09:03:30"), "resume")
    made.supervisor(at("09:04:00"), "change_shoe", misdeal=True)
    made.supervisor(at("09:05:00"), "dealer", out=True)
    return made.lines


if __name__ == "__main__":
    for line in shift():
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
