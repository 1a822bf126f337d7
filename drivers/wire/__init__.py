"""docs/spec-protocol.md on the wire: the messages, the byte framing and the sans-I/O reliable
link."""
