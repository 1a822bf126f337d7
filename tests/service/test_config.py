"""Configuration: the documented file is complete and right; bad keys stop start-up clearly."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.service.config import (
    AmqpSinkSection,
    Config,
    ConfigError,
    ControlSection,
    DeviceSection,
    JournalSection,
    LogSection,
    ServerSection,
    TableSection,
    from_mapping,
    load,
)
from shoe_controller.table.config import TableConfig

DOCUMENTED = Path(__file__).parents[2] / "config" / "shoe-controller.toml"


def test_documented_file_lists_every_key_with_its_default() -> None:
    raw = tomllib.loads(DOCUMENTED.read_text())
    sections = {
        "table": [TableSection, TableConfig],
        "scanner": [DeviceSection],
        "server": [ServerSection],
        "journal": [JournalSection],
        "control": [ControlSection],
        "log": [LogSection],
    }
    # [[sink]] is documented commented out (a broker the table PC may not have)
    text = DOCUMENTED.read_text()
    sink = text[text.index("\n# [[sink]]\n") : text.index("[journal]")]
    raw["sink"] = tomllib.loads(
        "\n".join(line.removeprefix("# ") for line in sink.splitlines() if line.strip())
    )["sink"][0]
    sections["sink"] = [AmqpSinkSection]
    fixed = {("server", "name")}  # [server] is the sink named "server"
    for section, classes in sections.items():
        names = {spec.name for cls in classes for spec in dataclasses.fields(cls)}
        names -= {key for where, key in fixed if where == section}
        extra = {"kind"} if section == "sink" else set()
        assert set(raw[section]) == names | extra, section
    for section, classes in sections.items():
        if section == "scanner":
            continue  # the device sections name example ports, not defaults
        for cls in classes:
            for spec in dataclasses.fields(cls):
                if (section, spec.name) in fixed or (section, spec.name) == ("sink", "url"):
                    continue  # the example broker names its user
                value = raw[section][spec.name]
                value = tuple(value) if isinstance(value, list) else value
                assert value == spec.default, f"[{section}] {spec.name}"


def test_documented_file_loads() -> None:
    config = load(DOCUMENTED)
    assert isinstance(config, Config)
    assert config.procedures == TableConfig()
    assert config.scanner is not None
    assert config.scanner.baud_rate == 115200
    assert config.controller_id == "tbl-01-shoe"
    assert config.shuffler is not None
    assert config.shuffler.kind == "shuffler"


def test_minimal_config_takes_defaults() -> None:
    config = from_mapping({"table": {"id": "07"}})
    assert config.scanner is None
    assert config.shuffler is None
    assert config.procedures.decks == 8
    assert config.journal.path == "/var/lib/shoe-controller/journal.db"
    assert config.controller_id == "tbl-07-shoe"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"tabel": {}}, "unknown section [tabel]"),
        ({"table": {"deck": 8}}, "unknown key 'deck'"),
        ({"table": {"decks": "8"}}, "decks"),
        ({"table": {"decks": 20}}, "decks must be a whole number from 6 to 12"),
        ({"table": {"burn": "all"}}, "burn must be one of"),
        ({"table": {"squeeze": "yes"}}, "squeeze"),
        ({"table": {"id": "seven/7"}}, "letters, digits"),
        ({"scanner": {"protocol": "xml", "port": "/dev/x"}}, "allowed values are 'slp'"),
        ({"scanner": {"kind": "optical"}}, "exactly one of port"),
        ({"scanner": {"usb": "1234"}}, "VID:PID"),
        ({"scanner": {"usb": "1d50:6018", "protocol": "beetek"}}, "slp"),
        ({"scanner": {"port": "/dev/x", "kind": "rfid"}}, "registry"),
        ({"scanner": "/dev/x"}, "must be a table of keys"),
        ({"server": {"url": "ftp://x"}}, "http:// or https://"),
        ({"server": {"timeout": "10"}}, "timeout = '10': must be a number"),
        ({"server": {"client_cert": "/c.pem"}}, "go together"),
        ({"server": {"timeout": float("nan")}}, "timeout must be a finite number"),
        ({"server": {"timeout": float("inf")}}, "timeout must be a finite number"),
        ({"table": {"controller_id": "tbl 07\nshoe"}}, "controller_id = 'tbl 07\\nshoe'"),
        ({"table": {"controller_id": "tbl:07"}}, "controller_id must be"),
        ({"journal": {"retention_days": 0}}, "retention_days"),
        ({"journal": {"checkpoint_every_s": 9.5}}, "checkpoint_every_s must be 10 to 3600 seconds"),
        ({"journal": {"checkpoint_every_s": 3601}}, "checkpoint_every_s must be 10 to 3600"),
        ({"journal": {"checkpoint_key": ""}}, "[journal] checkpoint_key = '': must not be empty"),
        ({"log": {"level": "loud"}}, "allowed values are"),
        ({"payouts": {"tie": 8.5}}, "[payouts]"),
        # Values that passed this check and crashed the daemon later
        ({"server": {"url": "http://127.0.0.1:99999"}}, "port must be a number from 1 to 65535"),
        ({"server": {"url": "http://127.0.0.1:abc"}}, "port must be a number from 1 to 65535"),
        ({"server": {"url": "http://127.0.0.1:0"}}, "port must be a number from 1 to 65535"),
        ({"server": {"url": "http://[::1"}}, "[server] url 'http://[::1': is not a URL"),
        ({"server": {"url": "http://:8700"}}, "names no host"),
        ({"server": {"url": "http://user:pw@host"}}, "not hold a user or password"),
        ({"server": {"url": "http://host/push?x=1"}}, "no ?query or #fragment"),
        ({"server": {"url": "http://host/#top"}}, "no ?query or #fragment"),
        ({"server": {"url": "http://host/?"}}, "no ?query or #fragment"),
        ({"server": {"url": "http://ho st"}}, "http:// or https://"),
        ({"server": {"timeout": 3601}}, "at most 3600"),
        ({"server": {"key_file": ""}}, "[server] key_file = '': must not be empty"),
        ({"server": {"key_file": "/etc/k\ney"}}, "control characters"),
        ({"journal": {"path": ""}}, "[journal] path = '': must not be empty"),
        ({"control": {"socket": ""}}, "[control] socket = '': must not be empty"),
        ({"control": {"socket": "/run/" + "s" * 103}}, "has 108 bytes"),
        ({"control": {"socket": "/run/" + "\u00e9" * 52}}, "has 109 bytes"),  # bytes, not letters
        ({"control": {"supervisor_group": ""}}, "supervisor_group = '': must not be empty"),
        ({"scanner": {"port": "/dev/x", "baud": 49}}, "baud must be 0"),
        ({"scanner": {"port": "/dev/x", "baud": 2**31}}, "baud must be 0"),
        ({"scanner": {"port": "/dev/x\u0000"}}, "control characters"),
    ],
)
def test_bad_config_names_the_key(raw: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        from_mapping(raw)
    message = str(caught.value)
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8700",
        "https://tables.example/push/",
        "http://[::1]:8700",
        "HTTPS://Tables.Example:65535",
        "http://host:1",
    ],
)
def test_usable_urls_are_accepted(url: str) -> None:
    assert from_mapping({"server": {"url": url}}).sinks[0].url == url


def test_the_longest_socket_path_and_the_rates_at_the_ends_are_accepted() -> None:
    socket = "/run/" + "s" * 102  # 107 bytes: sun_path's 108 with the closing NUL
    assert from_mapping({"control": {"socket": socket}}).control.socket == socket
    for baud in (0, 50, 12_000_000):
        scanner = from_mapping({"scanner": {"port": "/dev/x", "baud": baud}}).scanner
        assert scanner is not None
        assert scanner.baud == baud


def test_keys_that_default_to_empty_may_stay_empty() -> None:
    config = from_mapping(
        {
            "table": {"controller_id": ""},
            "scanner": {"port": "/dev/x", "usb": "", "usb_serial": "", "registry": ""},
            "server": {"ca_file": "", "client_cert": "", "client_key": ""},
        }
    )
    assert config.controller_id == "tbl-01-shoe"


def test_broken_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="no such file"):
        load(missing)
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\nid = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(broken)


def refusal_line(config: Path) -> str:
    """`shoe-controller run` refusing to start: non-zero exit, and one line saying why."""
    result = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.main", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_daemon_refuses_a_bad_config_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[table]\ndecks = 5\n[journal]\npath = "j.db"\n')
    line = refusal_line(config)
    assert "decks must be a whole number from 6 to 12" in line
    assert str(config) in line


def test_daemon_refuses_an_unusable_ca_file_with_one_line(tmp_path: Path) -> None:
    key = tmp_path / "table.key"
    key.write_text("secret\n")
    key.chmod(0o640)
    bad_ca = tmp_path / "ca.pem"
    bad_ca.write_text("not a certificate\n")
    config = tmp_path / "tls.toml"
    config.write_text(
        f'[server]\nurl = "https://127.0.0.1:8700"\nkey_file = "{key}"\nca_file = "{bad_ca}"\n'
        f'[journal]\npath = "{tmp_path / "j.db"}"\n'
    )
    line = refusal_line(config)
    assert "[server] ca_file" in line
    assert not (tmp_path / "j.db").exists()  # refused before anything was opened


# ---- [server] and [[sink]]: every consumer with its own outbox ----------------


def test_server_alone_is_the_one_sink_named_server_without_surveillance() -> None:
    (server,) = from_mapping({}).sinks
    assert (server.name, server.url) == ("server", "http://127.0.0.1:8700")
    taken = server.event_filter()
    assert taken("card.dealt")
    assert taken("round.result")
    assert not taken("surveillance.edge")  # surveillance's own events stay off the table server


def test_sinks_are_the_server_and_each_sink_in_the_files_order() -> None:
    config = from_mapping(
        {
            "server": {"url": "http://tables:8700"},
            "sink": [
                {"kind": "amqp", "name": "studio", "url": "amqp://shoe@mq:5672/floor"},
                {
                    "kind": "http",
                    "name": "overlay",
                    "url": "http://overlay:80",
                    "events": ["round.*"],
                    "exclude": [],
                },
            ],
        }
    )
    assert [(type(s).__name__, s.name) for s in config.sinks] == [
        ("ServerSection", "server"),
        ("AmqpSinkSection", "studio"),
        ("ServerSection", "overlay"),
    ]
    overlay = config.sinks[2].event_filter()
    assert overlay("round.result")
    assert not overlay("card.dealt")
    assert config.sinks[1].event_filter()("surveillance.edge")  # a broker gets all by default


def test_sinks_without_server_send_to_the_sinks_only() -> None:
    config = from_mapping({"sink": [{"kind": "amqp", "name": "studio"}]})
    assert [sink.name for sink in config.sinks] == ["studio"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"sink": [{"name": "x"}]}, r"^\[sink x\] kind = None: allowed values are 'http', 'amqp'"),
        ({"sink": [{"kind": "kafka", "name": "x"}]}, r"^\[sink x\] kind = 'kafka'"),
        ({"sink": [{"kind": "amqp"}]}, r"^\[sink 1\] needs a name"),
        ({"sink": {"kind": "amqp"}}, r"^\[\[sink\]\] must be an array of tables"),
        ({"server": {"name": "main"}}, r"^\[server\] has no name: it is the sink named 'server'"),
        (
            {"sink": [{"kind": "http", "name": "server"}], "server": {}},
            r"^\[sink server\] name 'server' is used by two sinks",
        ),
        ({"sink": [{"kind": "amqp", "name": "a b"}]}, r"^\[sink a b\] name must be 1-64"),
        ({"sink": [{"kind": "amqp", "name": "b", "url": "http://mq"}]}, r"url must be amqp://"),
        ({"sink": [{"kind": "amqp", "name": "b", "events": "round.*"}]}, r"must be a list of str"),
        ({"sink": [{"kind": "amqp", "name": "b", "events": [3]}]}, r"must be a string in quotes"),
        ({"sink": [{"kind": "amqp", "name": "b", "exclude": ["Round.*"]}]}, r"pattern 'Round\.\*'"),
        ({"sink": [{"kind": "amqp", "name": "b", "window": 0}]}, r"window must be 1 to 10000"),
        ({"sink": [{"kind": "amqp", "name": "b", "key": "x"}]}, r"^\[sink b\] unknown key 'key'"),
        ({"sink": [{"kind": "http", "name": "h", "exchange": "x"}]}, r"unknown key 'exchange'"),
    ],
)
def test_a_sink_that_cannot_be_used_is_refused_by_name(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_mapping(raw)
