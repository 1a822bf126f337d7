"""`shoe-controller receiver`: the reference table server's command line."""

from __future__ import annotations

import signal
import sqlite3
import ssl
import sys
from pathlib import Path

import click

from shoe_controller.delivery import pushapi
from shoe_controller.kit.receiver.faults import FAULT_MODES, FAULT_TARGETS, FaultPlan
from shoe_controller.kit.receiver.server import Receiver, server_ssl_context
from shoe_controller.kit.receiver.store import ReceiverStore


@click.command(name="receiver")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="TCP port (0: any free port).",
)
@click.option(
    "--db",
    "db_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The receiver's SQLite file (created if missing).",
)
@click.option(
    "--key-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The table's shared secret (file content, white space stripped).",
)
@click.option("--table-id", required=True, help="The table this server accepts events for.")
@click.option("--controller-id", default=None, help="Accept only this controller (else any).")
@click.option(
    "--max-skew",
    type=click.FloatRange(0, 86400),
    default=float(pushapi.MAX_CLOCK_SKEW_S),
    show_default=True,
    help="Seconds a request's timestamp may differ from this clock (else 401).",
)
@click.option("--control/--no-control", default=False, help="Enable the /control endpoints.")
@click.option("--fail-mode", type=click.Choice(FAULT_MODES), default="ok", show_default=True)
@click.option(
    "--fail-status",
    type=click.IntRange(100, 599),
    default=500,
    show_default=True,
    help="Status for --fail-mode status.",
)
@click.option(
    "--fail-count", type=click.IntRange(min=0), default=None, help="Requests to fail, then behave."
)
@click.option(
    "--delay",
    type=click.FloatRange(0, 3600),
    default=0.0,
    show_default=True,
    help="Seconds, for --fail-mode slow.",
)
@click.option(
    "--fail-target",
    type=click.Choice(FAULT_TARGETS),
    default="all",
    show_default=True,
    help="Fail event POSTs, ack GETs or both.",
)
@click.option(
    "--tls-cert",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Serve https with this certificate (PEM).",
)
@click.option(
    "--tls-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The certificate's key (PEM), if not inside --tls-cert.",
)
@click.option(
    "--tls-client-ca",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Require client certificates signed by this CA (mutual TLS).",
)
def receiver_command(
    *,
    host: str,
    port: int,
    db_path: Path,
    key_file: Path,
    table_id: str,
    controller_id: str | None,
    max_skew: float,
    control: bool,
    fail_mode: str,
    fail_status: int,
    fail_count: int | None,
    delay: float,
    fail_target: str,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
) -> None:
    """Run the reference table server (docs/spec-push-api.md). Prints the bound port first."""
    try:
        key = pushapi.SigningKey.from_file(key_file)
        faults = FaultPlan(
            mode=fail_mode, status=fail_status, delay_s=delay, count=fail_count, target=fail_target
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if (tls_key or tls_client_ca) and not tls_cert:
        raise click.UsageError("--tls-key and --tls-client-ca need --tls-cert")
    try:
        context = server_ssl_context(tls_cert, tls_key, tls_client_ca) if tls_cert else None
    except (OSError, ssl.SSLError) as error:
        raise click.ClickException(f"--tls-cert {tls_cert}: {error}") from None
    try:
        store = ReceiverStore(db_path)
    except sqlite3.Error as error:
        raise click.ClickException(f"--db {db_path}: {error}") from None
    try:
        receiver = Receiver(
            store,
            key,
            table_id,
            host=host,
            port=port,
            controller_id=controller_id,
            max_skew_s=max_skew,
            faults=faults,
            control=control,
            ssl_context=context,
        )
    except OSError as error:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {error.strerror or error}"
        ) from None
    signal.signal(signal.SIGTERM, _exit_on_signal)
    click.echo(str(receiver.port))
    click.echo(f"receiver: serving table {table_id} on {receiver.url}", err=True)
    sys.stdout.flush()
    try:
        receiver.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        receiver.close()
        store.close()


def _exit_on_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
