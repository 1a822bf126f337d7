"""The game itself, pure: the round's rules, payouts, exact odds, roads. No I/O, no clock."""
