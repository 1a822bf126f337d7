"""The surveillance companion: a process of its own beside the daemon, reading its events and
reporting the exact edge of every bet on the cards left (docs/surveillance.md)."""
