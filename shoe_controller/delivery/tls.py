"""The TLS context a sink connects with: the CA to trust and, for mutual TLS, our certificate."""

from __future__ import annotations

import ssl
from pathlib import Path


class TlsConfigError(ValueError):
    """A CA file, client certificate or key that cannot be used; the message names it."""


def client_context(
    ca_file: Path | None, client_cert: Path | None, client_key: Path | None
) -> ssl.SSLContext:
    """A verifying client context (the system's CAs when `ca_file` is None); TlsConfigError
    names the file at fault, so the daemon refuses to start instead of failing every retry."""
    try:
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(f"ca_file {ca_file}: {error}") from None
    if client_cert is not None:
        key = str(client_key) if client_key else None
        try:
            context.load_cert_chain(str(client_cert), key)
        except (OSError, ssl.SSLError) as error:
            raise TlsConfigError(
                f"client_cert {client_cert} / client_key {client_key}: {error}"
            ) from None
    return context
