"""The vocabulary every layer may import: cards, inputs, events, protocol codes, and the one
backoff."""
