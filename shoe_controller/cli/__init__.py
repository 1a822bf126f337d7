"""The command lines: `shoe-controller` and its subcommands, and `shoectl`."""
