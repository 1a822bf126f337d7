"""The states of a table as `transitions` machines: its lifecycle, its holds, its next shoe's cards.

Three small machines, each with its own job:
- the lifecycle of the shoe and its rounds: no shoe, burning, ready, dealing, insurance window,
  squeeze reveal;
- the holds: free, or held until a supervisor acts. Kept apart from the lifecycle (the way h11
  keeps keep-alive apart from its main states), so a hold never has to remember where to go
  back to: the lifecycle stays where it was while the table is held;
- the preparation of the next shoe's cards by a shuffler (unchecked, shuffling, checked,
  blocked: R2.4, R10.6).

The table's parts validate everything before they fire a trigger and check that it was taken
(docs/architecture.md "The procedures machine on `transitions`"); the machines make an
impossible step an error instead of a silent state change.
`mermaid()` draws all three from the machines themselves; `python -m
shoe_controller.table.lifecycle` rewrites docs/state-diagram.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from transitions import Machine

NO_SHOE = "no_shoe"
BURNING = "burning"
READY = "ready"
DEALING = "dealing"
INSURANCE = "insurance"
REVEAL = "reveal"

LIFECYCLE_STATES = (NO_SHOE, BURNING, READY, DEALING, INSURANCE, REVEAL)
_SHOE_OPEN = (BURNING, READY, DEALING, INSURANCE, REVEAL)
_IN_ROUND = (DEALING, INSURANCE, REVEAL)


def _lifecycle_transitions() -> list[dict[str, object]]:
    return [
        {"trigger": "load", "source": NO_SHOE, "dest": BURNING},  # R2.1, R2.2, R2.4
        {"trigger": "load_continuous", "source": NO_SHOE, "dest": READY},  # R2.5: no burn
        {"trigger": "burn_done", "source": BURNING, "dest": READY},
        {"trigger": "start_burn", "source": READY, "dest": BURNING},  # R8, R10.3
        {"trigger": "open_round", "source": READY, "dest": DEALING},
        {"trigger": "offer_insurance", "source": DEALING, "dest": INSURANCE},  # R16.2
        {"trigger": "close_insurance", "source": INSURANCE, "dest": DEALING},  # R16.8
        {"trigger": "await_reveal", "source": DEALING, "dest": REVEAL},  # R15
        {"trigger": "revealed", "source": REVEAL, "dest": DEALING},
        {"trigger": "finish_round", "source": DEALING, "dest": READY},
        {"trigger": "void_round", "source": list(_IN_ROUND), "dest": READY},  # R10.1
        {"trigger": "end_shoe", "source": list(_SHOE_OPEN), "dest": NO_SHOE},  # R3
    ]


FREE = "free"
HELD = "held"

HOLD_STATES = (FREE, HELD)


def _hold_transitions() -> list[dict[str, object]]:
    return [
        {"trigger": "hold", "source": FREE, "dest": HELD},
        # Every hold was resolved: dealing goes on where the lifecycle stands.
        {"trigger": "release", "source": HELD, "dest": FREE},
        # A supervisor acts beneath the holds (void, change shoe, a squeezed card confirmed):
        # the lifecycle may move; the holds left hold the table again once that is done.
        {"trigger": "lift", "source": HELD, "dest": FREE},
        # The shoe ended: its holds end with it.
        {"trigger": "end_shoe", "source": HELD, "dest": FREE},
    ]


UNCHECKED = "unchecked"
SHUFFLING = "shuffling"
CHECKED = "checked"
BLOCKED = "blocked"

PREPARATION_STATES = (UNCHECKED, SHUFFLING, CHECKED, BLOCKED)


def _preparation_transitions() -> list[dict[str, object]]:
    return [
        {"trigger": "shuffle_started", "source": list(PREPARATION_STATES), "dest": SHUFFLING},
        # A passing deck check lifts a block only after a new shuffle started (R10.6).
        {"trigger": "check_passed", "source": [UNCHECKED, SHUFFLING, CHECKED], "dest": CHECKED},
        {"trigger": "check_failed", "source": list(PREPARATION_STATES), "dest": BLOCKED},
        # Opening a shoe uses up whatever preparation was recorded for it.
        {"trigger": "shoe_opened", "source": [UNCHECKED, SHUFFLING, CHECKED], "dest": UNCHECKED},
        # A shuffler-dealer's next set of cards is judged by its own next deck check (R2.5).
        {"trigger": "forget", "source": [SHUFFLING, CHECKED, BLOCKED], "dest": UNCHECKED},
    ]


class MachineModel:
    """The object a machine drives: the machine gives it `state` and `trigger(name, **kw)`.

    Nothing may be defined here under those names: `transitions` leaves existing attributes
    alone, so a placeholder would shadow the machine's own method.
    """

    state: str
    trigger: Callable[..., bool]


def _machine(
    model: MachineModel, states: tuple[str, ...], transitions: list[dict[str, object]], initial: str
) -> Machine:
    # No auto transitions (docs/architecture.md "Design notes"): a state is reached only by a
    # named, validated trigger.
    return Machine(
        model=model,
        states=list(states),
        transitions=transitions,
        initial=initial,
        auto_transitions=False,
    )


def build_lifecycle(model: MachineModel) -> Machine:
    """The table's lifecycle machine on `model`."""
    return _machine(model, LIFECYCLE_STATES, _lifecycle_transitions(), NO_SHOE)


def build_holds(model: MachineModel) -> Machine:
    """The machine of the table's holds: free, or held until the supervisor acts."""
    return _machine(model, HOLD_STATES, _hold_transitions(), FREE)


def build_preparation(model: MachineModel) -> Machine:
    """The machine of the next shoe's cards (batch shuffler and shuffler-dealer modes)."""
    return _machine(model, PREPARATION_STATES, _preparation_transitions(), UNCHECKED)


def _mermaid_of(machine: Machine, initial: str) -> list[str]:
    lines = ["stateDiagram-v2", f"    [*] --> {initial}"]
    for name, event in machine.events.items():
        for source, transitions in event.transitions.items():
            for transition in transitions:
                lines.append(f"    {source} --> {transition.dest}: {name}")
    return lines


def mermaid() -> str:
    """docs/state-diagram.md, drawn from freshly built machines."""
    lifecycle = build_lifecycle(MachineModel())
    holds = build_holds(MachineModel())
    preparation = build_preparation(MachineModel())
    parts = [
        "# Table state diagram",
        "",
        "Generated from the machines in `shoe_controller/table/lifecycle.py` by",
        "`python -m shoe_controller.table.lifecycle`; a test fails when this file is stale.",
        "Transitions are fired by `shoe_controller/table/` only after it validated the input;",
        "the table is `held` while the holds machine is held, and the lifecycle stays where",
        "it was meanwhile. See docs/table.md.",
        "",
        "## Lifecycle",
        "",
        "```mermaid",
        *_mermaid_of(lifecycle, NO_SHOE),
        "```",
        "",
        "## Holds",
        "",
        "```mermaid",
        *_mermaid_of(holds, FREE),
        "```",
        "",
        "## The next shoe's cards (shuffler deck check, R2.4, R10.6)",
        "",
        "```mermaid",
        *_mermaid_of(preparation, UNCHECKED),
        "```",
        "",
    ]
    return "\n".join(parts)


DIAGRAM_PATH = Path(__file__).resolve().parents[2] / "docs" / "state-diagram.md"


def main(argv: list[str] | None = None) -> int:
    """Write docs/state-diagram.md (or the path given)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DIAGRAM_PATH
    path.write_text(mermaid(), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
