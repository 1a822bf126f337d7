"""What a peer outside the surveillance group is shown of the surveillance events: nothing, in
every answer that lists events, the outbox's waiting lists included (docs/surveillance.md)."""

from __future__ import annotations

from shoe_controller.service.control.surveillance import without_surveillance


def waiting(*types: str) -> list[dict[str, object]]:
    return [{"seq": n, "event_seq": n, "type": kind} for n, kind in enumerate(types, 1)]


def test_the_outbox_hides_surveillance_events_in_every_sinks_waiting_list() -> None:
    answer = {
        "backlog": 3,
        "sinks": [
            {"name": "server", "waiting": waiting("card.dealt")},
            {"name": "room", "waiting": waiting("surveillance.slug", "card.dealt")},
            {"name": "broker"},  # the status answer's sinks carry no list
        ],
    }
    shown = without_surveillance("outbox", answer)
    assert [[e["type"] for e in sink.get("waiting", [])] for sink in shown["sinks"]] == [
        ["card.dealt"],
        ["card.dealt"],
        [],
    ]
    assert shown["backlog"] == 3
    assert answer["sinks"][1]["waiting"][0]["type"] == "surveillance.slug"  # not changed in place


def test_events_and_round_answers_hide_them_too() -> None:
    for command in ("events", "round"):
        shown = without_surveillance(command, {"events": waiting("surveillance.edge", "x.y")})
        assert [e["type"] for e in shown["events"]] == ["x.y"]
