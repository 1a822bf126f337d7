"""What a text for a person must not hold: a `snake_case` code, a Python repr, `None`, a word
said twice in a row, `1 decks`. Each line found is returned with what was found in it."""

from __future__ import annotations

import re

# A code: words joined by `_`, not part of a dotted event type (`shoe.cut_card`, the name
# `--type` takes), an option (`--since`), a path, a host name or a Nagios label (`rounds=2`).
SNAKE = re.compile(r"(?<![\w./$-])[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9](?![\w/=-])")
REPR = re.compile(r"\['|\{'|\((?:False|True|None)\b|(?<![\w.-])None(?![\w-])|\[Errno")
TWICE = re.compile(r"\b([a-z]{2,}) \1\b", re.IGNORECASE)
ONE_PLURAL = re.compile(r"(?<![\d.])1 (?:decks|cards|rounds|copies|shoes|hours)\b")


def faults(text: str) -> list[str]:
    found = []
    for name, pattern in (("a code", SNAKE), ("a repr", REPR), ("a word twice", TWICE),
                          ("a wrong plural", ONE_PLURAL)):  # fmt: skip
        found += [f"{name} {match[0]!r} in: {line}" for line in text.splitlines()
                  for match in pattern.finditer(line)]  # fmt: skip
    return found
