"""The checkpoint key's files: the table's signing key read or made, a public key read.

The signing key is a file of its own, `[journal] checkpoint_key`
(/etc/shoe-controller/checkpoint.key, made by the package's postinst: root:shoe-controller,
mode 0640, readable by the daemon alone), not the table's push API secret (table.key, a
shared HMAC secret the table server holds too: a key the server holds could sign checkpoints
the table never made). The formats are store/checkpoint.py's.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from shoe_controller.store.checkpoint import (
    CheckpointError,
    Signer,
    new_private_pem,
    private_key_from_pem,
    public_key_from_text,
)

NEW_KEY_MODE = 0o600  # the file as made; postinst gives it to the daemon's group (0640)


def load_signer(path: str | Path) -> Signer:
    """The signing key in `path`; CheckpointError naming the file when it cannot be used."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise CheckpointError(f"cannot read {path}: {error.strerror}") from None
    try:
        return Signer(private_key_from_pem(data))
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error}") from None


def write_new_key(path: str | Path) -> Signer:
    """Make a new signing key in `path`, which must not exist: a key in use is never
    overwritten (its checkpoints are checked with its public key for as long as they are
    kept; a new key is a rotation, docs/journal.md "Checkpoints")."""
    data = new_private_pem()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_KEY_MODE)
    except FileExistsError:
        raise CheckpointError(f"{path} exists: a key in use is never overwritten") from None
    except OSError as error:
        raise CheckpointError(f"cannot make {path}: {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
    except OSError as error:
        Path(path).unlink(missing_ok=True)
        raise CheckpointError(f"cannot write {path}: {error.strerror}") from None
    return Signer(private_key_from_pem(data))


def read_public_key(path: str | Path) -> Ed25519PublicKey:
    """A public key from a file (PEM, or the 64 hex digits); CheckpointError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CheckpointError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise CheckpointError(f"{path}: not a public key (not text)") from None
    try:
        return public_key_from_text(text)
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error}") from None
