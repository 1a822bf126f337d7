"""`python -m shoe_controller.cli.shoectl`: the `shoectl` command."""

from shoe_controller.cli.shoectl.commands import main

main(prog_name="shoectl")
