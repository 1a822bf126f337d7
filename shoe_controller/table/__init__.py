"""The procedures machine: inputs in, events out, every dealing rule enforced.

`procedures.Table` is the facade; the other modules are its parts (docs/architecture.md)."""
