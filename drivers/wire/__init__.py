"""PROTOCOL.md on the wire: the messages and the sans-I/O reliable link."""
