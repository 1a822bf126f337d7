"""`python -m shoe_controller.kit.receiver [options]`: the reference table server."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from shoe_controller.kit.receiver.command import receiver_command


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: `python -m shoe_controller.kit.receiver [options]`."""
    try:
        receiver_command.main(
            args=list(argv) if argv is not None else None,
            prog_name="shoe-controller receiver",
            standalone_mode=False,
        )
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
