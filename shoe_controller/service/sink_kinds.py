"""The configured delivery sinks: [server] and each [[sink]] as a delivery Sink of its kind.

One registry from a section's class to how its sink is built (docs/delivery.md): a new
kind is one entry here and one module in delivery/. The broker's module (and aio-pika with
it) is imported only when a broker sink is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from shoe_controller.delivery.push import PushConfig, PushSink, tls_context
from shoe_controller.delivery.pushapi import SigningKey
from shoe_controller.delivery.routing import EventFilter
from shoe_controller.delivery.sink import Sink
from shoe_controller.delivery.sink_backlog import SinkBacklog
from shoe_controller.service.config import AmqpSinkSection, Config, ServerSection, SinkSection
from shoe_controller.service.config_sections import BrokerKeys, StreamSinkSection
from shoe_controller.store.journal import Journal


def routes(config: Config) -> dict[str, EventFilter]:
    """Each sink's name and the event types it takes, for the journal to number."""
    return {sink.name: sink.event_filter() for sink in config.sinks}


def push_config(section: ServerSection, config: Config) -> PushConfig:
    return PushConfig(
        base_url=section.url,
        table_id=config.table.id,
        controller_id=config.controller_id,
        key_file=Path(section.key_file),
        ca_file=_path(section.ca_file),
        client_cert=_path(section.client_cert),
        client_key=_path(section.client_key),
        timeout_s=section.timeout,
    )


def _broker_keywords(section: BrokerKeys, config: Config) -> dict[str, Any]:
    """What a broker sink's configuration takes alike for an exchange and a stream."""
    return {
        "url": section.url,
        "urls": section.urls,
        "table_id": config.table.id,
        "controller_id": config.controller_id,
        "key_file": Path(section.key_file),
        "password_file": _path(section.password_file),
        "ca_file": _path(section.ca_file),
        "client_cert": _path(section.client_cert),
        "client_key": _path(section.client_key),
        "timeout_s": section.timeout,
        "window": section.window,
    }


def amqp_config(section: AmqpSinkSection, config: Config) -> Any:
    from shoe_controller.delivery.amqp import AmqpConfig  # noqa: PLC0415 - only when configured

    return AmqpConfig(exchange=section.exchange, **_broker_keywords(section, config))


def stream_config(section: StreamSinkSection, config: Config) -> Any:
    try:
        from shoe_controller.delivery.amqp_stream import StreamConfig  # noqa: PLC0415
    except ImportError as error:  # rstream: a dependency of this kind only
        raise ValueError(f"kind amqp-stream needs the rstream package: {error}") from None
    return StreamConfig(stream=section.stream, **_broker_keywords(section, config))


def _push_sink(section: Any, config: Config, backlog: SinkBacklog, **options: Any) -> Sink:
    return PushSink(section.name, backlog, push_config(section, config), **options)


def _amqp_sink(section: Any, config: Config, backlog: SinkBacklog, **options: Any) -> Sink:
    from shoe_controller.delivery.amqp import AmqpSink  # noqa: PLC0415 - only when configured

    return AmqpSink(section.name, backlog, amqp_config(section, config), **options)


def _stream_sink(section: Any, config: Config, backlog: SinkBacklog, **options: Any) -> Sink:
    from shoe_controller.delivery.amqp_stream import StreamSink  # noqa: PLC0415 - when configured

    return StreamSink(section.name, backlog, stream_config(section, config), **options)


_BUILDERS: dict[type, Callable[..., Sink]] = {
    ServerSection: _push_sink,
    AmqpSinkSection: _amqp_sink,
    StreamSinkSection: _stream_sink,
}


def build(config: Config, journal: Journal, **options: Any) -> list[Sink]:
    """A Sink for each configured sink, in the file's order; `options` go to each (Sink's
    on_fault, clock ...)."""
    return [_build_one(section, config, journal, **options) for section in config.sinks]


def _build_one(section: SinkSection, config: Config, journal: Journal, **options: Any) -> Sink:
    return _BUILDERS[type(section)](section, config, SinkBacklog(journal, section.name), **options)


def check_secrets(config: Config) -> None:
    """What building the sinks reads, read once now: ValueError naming the sink and the
    file (a key file, a password file, a TLS file) that cannot be used."""
    for section in config.sinks:
        try:
            SigningKey.from_file(section.key_file)
            if isinstance(section, ServerSection):
                tls_context(push_config(section, config))
            elif isinstance(section, StreamSinkSection):
                stream_config(section, config).producer_options()
            else:
                amqp_config(section, config).connect_options()
        except ValueError as error:  # KeyFileError, TlsConfigError, AmqpConfigError
            raise ValueError(f"[{section.label}] {error}") from None


def _path(value: str) -> Path | None:
    return Path(value) if value else None
