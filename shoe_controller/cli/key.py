"""`shoe-controller key`: the table's checkpoint signing key made, or its public key printed.

The key signs the journal's checkpoints (docs/journal.md "Checkpoints"): `key --new FILE`
makes one (never over an existing file; the Debian package's postinst makes
/etc/shoe-controller/checkpoint.key so), `key --public` prints its public key as PEM on
standard output, for the table server's operator and the regulator, who check checkpoints
with it (`shoe-controller verify --checkpoints CP --public-key FILE`), and the key's hex on
standard error (the `key` every checkpoint it signs carries).
"""

from __future__ import annotations

from pathlib import Path

import click

from shoe_controller.cli.options import config_option
from shoe_controller.service.config import DEFAULT_PATH, ConfigError, JournalSection, load
from shoe_controller.store.checkpoint import CheckpointError, Signer, public_pem
from shoe_controller.store.checkpoint_keys import load_signer, write_new_key


def _key_path(config_path: Path, key_file: Path | None) -> Path:
    """--key-file, else the configuration's [journal] checkpoint_key (its default without
    the installed file)."""
    if key_file is not None:
        return key_file
    if config_path == DEFAULT_PATH and not config_path.exists():
        return Path(JournalSection().checkpoint_key)
    try:
        return Path(load(config_path).journal.checkpoint_key)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


@click.command("key")
@config_option("The daemon's configuration: its [journal] checkpoint_key.")
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="This key file instead of the configuration's [journal] checkpoint_key.",
)
@click.option("--public", is_flag=True, help="Print the key's public key (PEM).")
@click.option(
    "--new",
    "new_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Make a new signing key in this file (mode 0600), which must not exist.",
)
def key_command(
    config_path: Path, key_file: Path | None, public: bool, new_file: Path | None
) -> None:
    """Make the table's checkpoint signing key, or print its public key."""
    if public == (new_file is not None):
        raise click.UsageError("give --public, or --new FILE")
    try:
        signer: Signer
        if new_file is not None:
            signer = write_new_key(new_file)
            click.echo(f"key: made {new_file}: key {signer.key}", err=True)
            return
        path = _key_path(config_path, key_file)
        signer = load_signer(path)
    except CheckpointError as error:
        raise click.ClickException(str(error)) from None
    click.echo(public_pem(signer.public_key), nl=False)
    click.echo(f"key: {path}: key {signer.key}", err=True)
