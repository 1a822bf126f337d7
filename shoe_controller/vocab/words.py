"""The words a person reads for every code the controller writes: alert and hold codes, hold
kinds, why a round was voided, why a shoe ended, why an insurance window ended, bet names,
device faults and states, the table's states, the answers' error codes, the shuffle tests and
verdicts.

The codes stay what they are on the wire, in the journal and in `--json` (other programs read
them); a text for a person shows these words instead (`shoectl`, `shoe-controller report`, the
daemon's own messages). One registry, explicit: tests/vocab/test_words.py checks that every
code of the table's registries and enums has its words here, so a new code cannot reach a
person as `snake_case`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Every code of table/alerts.py ALERT_CODES: what happened, in a few words.
ALERTS: Mapping[str, str] = MappingProxyType(
    {
        "missed_card": "missed card",
        "unreadable_card": "unreadable card",
        "low_confidence": "unsure card read",
        "cover_open": "shoe cover open",
        "device_fault": "device fault",
        "double_read_suspected": "card maybe read twice",
        "shoe_removed": "shoe taken out",
        "shoe_empty": "shoe ran empty",
        "deck_check_failed": "deck check failed",
        "card_lost": "card dropped in the shuffler",
        "supervisor_hold": "supervisor's hold",
        "early_card": "card before bets closed",
        "internal_error": "controller error",
        "foreign_card": "card not of these decks",
        "duplicate_card": "card tag seen twice",
        "too_many_copies": "too many copies of a card",
        "factory_order": "cards in new-deck order",
        "tamper": "device tampered with",
        "command_refused": "refused",
        "no_shoe": "no shoe open",
        "table_held": "refused while held",
        "shoe_already_open": "a shoe is already open",
        "no_deck_check": "no passing deck check",
        "deck_blocked": "cards blocked",
        "shuffle_unfinished": "shuffle not finished",
        "reshuffle_needed": "reshuffle needed",
        "card_during_hold": "card drawn during a hold",
        "card_before_reveal": "card drawn before the reveal",
        "multi_draw": "cards pulled together",
        "face_up_card": "card out face up",
        "burn_in_round": "card burned during a round",
        "extra_cards": "too many extra cards",
        "cut_card_too_late": "cut card too late",
        "cut_card_repeated": "second cut card",
        "no_cut_card": "cut card not used here",
        "cards_after_end": "cards out of play",
        "cards_rearranged": "cards moved",
        "nothing_to_reveal": "nothing to reveal",
        "supervisor_called": "supervisor called",
        "device_lost": "device lost",
        "invalid_input": "impossible input",
        "invalid_counter": "impossible card counter",
        "counter_went_back": "card counter went back",
        "counter_mismatch": "card counter does not follow",
        "double_read": "card read twice",
        "cut_card_counter": "cut card counter differs",
        "time_went_back": "clock went back",
        "betting_off": "no betting at this table",
        "bets_already_closed": "bets already closed",
        "wrong_round": "betting for another round",
        "repeated_message": "betting message repeated",
        "bets_closed_late": "bets closed after the first card",
        "unknown_input": "unknown input",
        "bad_time": "input without a time",
        "bad_settings": "settings refused",
    }
)

# table/books.py HoldKind: what the hold waits for.
HOLD_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "plain": "a check by a supervisor",
        "card": "a decision on a doubtful card",
        "placeholder": "the card that passed unseen",
        "reveal": "a decision on a squeezed card",
        "early": "a decision on a round dealt before its bets closed",
    }
)

# round.voided `reason`: why the round was voided.
VOID_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "supervisor": "voided by a supervisor",
        "shoe_changed": "the shoe was changed",
        "extra_cards": "too many extra cards",
        "trial_ended": "the trial rounds were stopped",
        "early_card": "its first card came before bets closed",
    }
)

# shoe.ended `reason` (docs/spec-push-api.md).
SHOE_END_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "cut_card": "the cut card came out",
        "supervisor": "a supervisor changed the shoe",
        "misdeal": "a misdeal",
        "security": "a security hold",
    }
)

# insurance.closed / insurance.voided `reason`.
INSURANCE_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "dealer": "closed by the dealer",
        "supervisor": "closed by a supervisor",
        "dealt_into_window": "a card was dealt while it was open",
        "face_up_card": "a card came out face up",
        "missed_scan": "a card was missed",
        "card_corrected": "a card was corrected",
        "round_voided": "the round was voided",
    }
)

# game/payouts.py Bet and the pay table's keys (R14), and the odds' outcomes (game/odds.py).
BETS: Mapping[str, str] = MappingProxyType(
    {
        "player": "Player",
        "banker": "Banker",
        "banker_no_commission": "Banker, no commission",
        "banker_no_commission_six": "Banker, no commission, winning on 6",
        "tie": "Tie",
        "player_pair": "Player pair",
        "banker_pair": "Banker pair",
        "any_pair": "Any pair",
        "perfect_pair": "Perfect pair",
        "big": "Big",
        "small": "Small",
        "lucky6": "Lucky 6",
        "lucky6_2cards": "Lucky 6 on two cards",
        "lucky6_3cards": "Lucky 6 on three cards",
        "player_dragon": "Player dragon",
        "banker_dragon": "Banker dragon",
        "dragon_natural": "Dragon, natural",
        **{f"dragon_margin_{m}": f"Dragon, by {m}" for m in range(4, 10)},
        **{f"player_dragon_margin_{m}": f"Player dragon, by {m}" for m in range(4, 10)},
        **{f"banker_dragon_margin_{m}": f"Banker dragon, by {m}" for m in range(4, 10)},
        "player_dragon_natural_win": "Player dragon, natural win",
        "banker_dragon_natural_win": "Banker dragon, natural win",
        "natural": "a natural",
        "natural_tie": "a natural tie",
    }
)

# vocab/protocol.py FaultCode, by number (docs/spec-protocol.md), and the host's own.
FAULTS: Mapping[int, str] = MappingProxyType(
    {
        0x0001: "card jam",
        0x0002: "card read failure",
        0x0003: "cover opened while dealing",
        0x0004: "tampering",
        0x0101: "shuffler jam",
        0x0102: "card dropped during the shuffle",
        0x0103: "shuffler door open",
        0xF004: "journal disk nearly full",
    }
)
SEVERITIES: Mapping[int, str] = MappingProxyType({1: "warning", 2: "error", 3: "critical"})

# service/devices.py: a device's link as the status shows it.
DEVICE_STATES: Mapping[str, str] = MappingProxyType(
    {
        "starting": "starting",
        "connected": "connected",
        "silent": "silent",
        "lost": "lost",
        "open_failed": "not opened",
        "stopped": "stopped",
        "unknown": "unknown",
    }
)

# table/lifecycle.py: the table's state, its hold, the deck check.
TABLE_STATES: Mapping[str, str] = MappingProxyType(
    {
        "no_shoe": "no shoe",
        "burning": "burning",
        "ready": "ready",
        "dealing": "dealing",
        "insurance": "insurance open",
        "reveal": "waiting for the reveal",
        "free": "free",
        "held": "held",
    }
)
# table/config.py MODES: how the shoe is filled (R2.4, R2.5).
MODES: Mapping[str, str] = MappingProxyType(
    {
        "manual": "manual",
        "batch_shuffler": "batch shuffler",
        "shuffler_dealer": "shuffler-dealer",
    }
)
DECK_CHECKS: Mapping[str, str] = MappingProxyType(
    {
        "unchecked": "not checked yet",
        "shuffling": "shuffling",
        "checked": "passed",
        "blocked": "blocked",
    }
)

# delivery/sink.py: a sink's state.
SINK_STATES: Mapping[str, str] = MappingProxyType(
    {
        "starting": "starting",
        "idle": "idle, all delivered",
        "sending": "sending",
        "backoff": "waiting to retry",
        "stopped": "stopped",
    }
)

# The shuffle watch's tests and verdicts (game/surveillance/shuffle_watch.py).
SHUFFLE_TESTS: Mapping[str, str] = MappingProxyType(
    {
        "longest_run": "longest run shared with the last shoe",
        "factory_stretch": "longest stretch in new-deck order",
        "successions": "cards followed by the same card as last shoe",
        "rising_sequences": "rising sequences",
    }
)
SHUFFLE_VERDICTS: Mapping[str, str] = MappingProxyType(
    {
        "fair": "fair",
        "suspect": "suspect",
        "unshuffled": "unshuffled",
    }
)


def _said(registry: Mapping[str, str], code: object) -> str:
    """The words for `code`; a code the registry lacks (a vendor's, a newer daemon's) is
    still said in words, never as `snake_case`."""
    text = str(code)
    return registry.get(text) or text.replace("_", " ")


def alert(code: object) -> str:
    return _said(ALERTS, code)


def hold_kind(code: object) -> str:
    return _said(HOLD_KINDS, code)


def void_reason(code: object) -> str:
    return _said(VOID_REASONS, code)


def shoe_end_reason(code: object) -> str:
    return _said(SHOE_END_REASONS, code)


def insurance_reason(code: object) -> str:
    return _said(INSURANCE_REASONS, code)


def bet(code: object) -> str:
    return _said(BETS, code)


def device_state(code: object) -> str:
    return _said(DEVICE_STATES, code)


def table_state(code: object) -> str:
    return _said(TABLE_STATES, code)


def mode(code: object) -> str:
    return _said(MODES, code)


def deck_check(code: object) -> str:
    return _said(DECK_CHECKS, code)


def sink_state(code: object) -> str:
    return _said(SINK_STATES, code)


def shuffle_test(code: object) -> str:
    return _said(SHUFFLE_TESTS, code)


def shuffle_verdict(code: object) -> str:
    return _said(SHUFFLE_VERDICTS, code)


def fault(code: object) -> str:
    """`card jam (fault 0x0001)`; a vendor's code, `vendor fault 0x8001`."""
    if isinstance(code, int) and not isinstance(code, bool):
        named = FAULTS.get(code)
        return f"{named} (fault {code:#06x})" if named else f"device fault {code:#06x}"
    return f"device fault {code}"


def severity(level: object) -> str:
    return SEVERITIES.get(level, str(level)) if isinstance(level, int) else str(level)


def counted(count: int, thing: str, things: str | None = None) -> str:
    """`1 deck`, `8 decks`: a count with its noun, plural right."""
    return f"{count} {thing if count == 1 else (things or thing + 's')}"
