"""Surveillance arithmetic, pure: the cards seen in a shoe and the exact edge of every bet on the
cards left (docs/surveillance.md)."""
