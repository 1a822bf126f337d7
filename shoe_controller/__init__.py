"""Shoe controller: baccarat dealing procedures, journal and delivery for a table PC."""

__version__ = "0.1.0"
