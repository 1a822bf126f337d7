"""Every alert code the table emits, and what it means: the list a pit boss and an integrator read.

docs/table.md "Holds and alerts" explains them; a test keeps that page and this list equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Codes marked "hold" stop dealing until the supervisor acts; security codes come as
# security.alert, the others as procedure.alert.
ALERT_CODES: Mapping[str, str] = MappingProxyType(
    {
        # holds: procedure.alert with needs_supervisor, the table stops (indicator stop)
        "missed_card": "hold: the shoe's counter jumped; enter the card (missed card=..) (R10.5)",
        "unreadable_card": "hold: a card passed unread; enter it (confirm card=..)",
        "low_confidence": "hold: an optical read is unsure; confirm it or give the card (confirm)",
        "cover_open": "hold: the shoe's cover opened during play; check, then resume",
        "device_fault": "hold: a device error during play; resume once it is cleared (a fault"
        " the host raised itself is cleared by resume)",
        "double_read_suspected": "hold: a shoe without counters read the same card again at"
        " once; discard (read twice) or confirm (a second copy)",
        "shoe_removed": "hold: the shoe was taken out during play; resume or change_shoe",
        "shoe_empty": "hold: the shoe ran empty before its last round; void or change_shoe",
        "deck_check_failed": "a deck check failed (R10.6); in shuffler-dealer mode a hold",
        "card_lost": "a card was dropped during a shuffle (R10.6); in shuffler-dealer mode a hold",
        "supervisor_hold": "hold: a supervisor stopped the table (hold); resume",
        "early_card": "hold: a round's first card came while its bets were open (R17); void or"
        " accept (with early_card = void: the round is voided at once, an alert)",
        "internal_error": "the controller failed on an input and refused it; call the technician",
        # security holds: security.alert
        "foreign_card": "security hold: an RFID card not in the deck registry; discard or confirm",
        "duplicate_card": "security hold: an RFID tag seen twice in the shoe; discard or confirm",
        "too_many_copies": "security hold: more copies of a card than the decks hold",
        "factory_order": "security hold: cards in new-deck order, the shoe may be unshuffled",
        "tamper": "security hold: a device reports tampering; resume once cleared",
        # information and refusals: procedure.alert
        "command_refused": "a supervisor command was refused; the text says why",
        "no_shoe": "a card or shoe report came with no shoe open; refused",
        "table_held": "refused while the table is held",
        "shoe_already_open": "a shoe was loaded while one is open; refused (change_shoe first)",
        "no_deck_check": "a shoe was loaded with no passing deck check (R2.4, R2.5); refused",
        "deck_blocked": "a shoe was loaded with failed or lost cards (R10.6); refused",
        "shuffle_unfinished": "a shoe was loaded before the shuffler's deck check; refused",
        "reshuffle_needed": "a deck check passed for cards blocked before the shuffle (R10.6)",
        "card_during_hold": "a card was drawn during a hold; it waits and is placed after",
        "card_before_reveal": "a card was drawn before the squeeze reveal; it waits (R15)",
        "multi_draw": "cards were pulled together; says where each card goes (R10.2)",
        "face_up_card": "a card came out face up; it stands, insurance is void (R4, R16.9)",
        "burn_in_round": "the shoe burned a card during a round; it is part of no round",
        "extra_cards": "more extra cards than burns absorb: round cancelled, shoe ended (R10.4)",
        "cut_card_too_late": "fewer cards behind the cut card than required (R2.1)",
        "cut_card_repeated": "a second cut card in one shoe; refused",
        "no_cut_card": "a cut card in shuffler-dealer mode; refused (R2.5)",
        "cards_after_end": "cards drawn but not dealt when the shoe ended are out of play",
        "cards_rearranged": "after a missed card, where every card now lies (R10.5)",
        "nothing_to_reveal": "REVEAL with nothing to reveal or close; refused",
        "supervisor_called": "the dealer pressed CALL_SUPERVISOR",
        "device_lost": "a device disconnected while a shoe is in play",
        "invalid_input": "an input with impossible values; refused",
        "invalid_counter": "a card counter outside 1..cards in the shoe; refused",
        "counter_went_back": "a card counter at or below the last for another card; refused",
        "counter_mismatch": "a missed-cards report that does not follow the last counter; refused",
        "double_read": "the last card again with its counter: a double read, not dealt again",
        "cut_card_counter": "the cut card's counter disagrees with the table's count, which stands",
        "time_went_back": "an input's time is before the last one's (the clock stepped back)",
        "betting_off": "a betting message or NO_MORE_BETS this table's betting does not take;"
        " refused",
        "bets_already_closed": "NO_MORE_BETS (or the server's close) for bets closed already;"
        " refused",
        "wrong_round": "the table server's betting message names another round than the next;"
        " refused",
        "repeated_message": "a betting message taken before (its nonce); refused",
        "bets_closed_late": "the server closed a round's bets after its first card (early_card)",
        "unknown_input": "an object that is no table input; refused",
        "bad_time": "an input without a valid time; refused",
        "bad_settings": "table settings the table cannot take; refused, those in force stay",
    }
)

# The codes that hold the table (their meaning says so): what the pace and the shift report
# count as holds (game/pace.py).
HOLD_CODES: frozenset[str] = frozenset(
    code for code, meaning in ALERT_CODES.items() if meaning.startswith(("hold", "security hold"))
)
