"""`python -m shoe_controller.cli`: the `shoe-controller` command."""

from shoe_controller.cli.main import main

main()
