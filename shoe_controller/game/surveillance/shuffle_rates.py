"""The shuffle watch's rates, every one per shoe under a fair shuffle (docs/shuffle.md).

Apart from shuffle_watch.py, which loads numpy: `shoectl shuffle` states the alarm rule to a
person with these same numbers, and shoectl loads no numpy.
"""

from __future__ import annotations

LIVE_RATE = 1e-4  # a live slug: a run no longer than fair shuffles show this often
ALARM_RATE = 1e-3  # each test's threshold
UNSHUFFLED_RATE = 1e-6  # a p-value below this: `unshuffled`
