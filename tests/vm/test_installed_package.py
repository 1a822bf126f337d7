"""The package as apt installed it on the table PC: commands, pages, completion, unit, users.

Runs on the folder's one machine (tests/vm/conftest.py) before the table's scenarios, which
leave the purge for last (test_table_pc.py).
"""

from __future__ import annotations

import re

import pytest
from shoe_testkit.debian_build import project_version
from shoe_testkit.tablepc.station import UNIT, TableStation

pytestmark = pytest.mark.slow

VENV = "/usr/lib/shoe-controller"


def test_apt_installed_it_with_no_package_index(station: TableStation) -> None:
    """The guest has no index at all (the image's lists are cleaned): the .deb needed
    nothing but what a bookworm table PC has."""
    assert "Setting up shoe-controller" in station.install_log
    lists = station.pc.sh("ls /var/lib/apt/lists | grep -c _Packages || true").stdout.strip()
    assert lists == "0"


def test_the_commands_are_the_venv_of_debians_python(station: TableStation) -> None:
    version = station.pc.run(["shoe-controller", "--version"]).check()
    assert project_version() in version.stdout
    for command in ("shoe-controller", "shoectl"):
        resolved = station.pc.run(["readlink", "-f", f"/usr/bin/{command}"]).check().stdout.strip()
        assert resolved == f"{VENV}/bin/{command}"
        first = station.pc.run(["head", "-1", resolved]).check().stdout.strip()
        assert first == f"#!{VENV}/bin/python"
    python = station.pc.run(["readlink", "-f", f"{VENV}/bin/python"]).check().stdout.strip()
    assert python == station.pc.run(["readlink", "-f", "/usr/bin/python3"]).check().stdout.strip()
    assert station.pc.run(["test", "-e", f"{VENV}/bin/pip"]).exit_code == 1  # dpkg owns the venv
    compiled = station.pc.sh(
        f"ls {VENV}/lib/python3*/site-packages/shoe_controller/__pycache__ | grep -c pyc"
    )
    assert int(compiled.stdout.strip()) > 0  # postinst compiled it: /usr is read-only to it


def test_man_pages_and_completion_work(station: TableStation) -> None:
    for program, word in (("shoectl", "shoectl status"), ("shoe-controller", "demo")):
        shown = station.pc.run(["man", "-P", "cat", program]).check()
        assert shown.stdout.startswith(f"{program.upper()}(1)")
        assert word in shown.stdout
    script = (
        "source /usr/share/bash-completion/completions/shoectl; COMP_WORDS=(shoectl sta);"
        ' COMP_CWORD=1; _shoectl_completion shoectl; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = station.pc.run(["bash", "--norc", "-c", script]).check()
    assert set(done.stdout.split()) == {"status", "start-shoe"}


def test_sysusers_tmpfiles_and_the_unit_are_applied(station: TableStation) -> None:
    for name in ("shoe-controller", "shoe-viewers", "shoe-supervisors", "shoe-surveillance"):
        assert station.pc.run(["getent", "group", name]).exit_code == 0, name
    assert station.pc.run(["getent", "passwd", "shoe-controller"]).exit_code == 0
    state = station.pc.run(["stat", "-c", "%U %a", "/var/lib/shoe-controller"]).check()
    assert state.stdout.split() == ["shoe-controller", "750"]
    key = "/etc/shoe-controller/checkpoint.key"  # made by postinst: the daemon reads, never writes
    owned = station.pc.run(["stat", "-c", "%U %G %a", key]).check()
    assert owned.stdout.split() == ["root", "shoe-controller", "640"]
    verify = station.pc.run(
        ["systemd-analyze", "verify", "--man=no", f"/lib/systemd/system/{UNIT}"]
    )
    assert verify.exit_code == 0, verify.text
    assert not [line for line in verify.stderr.splitlines() if UNIT in line]
    conffiles = station.pc.run(["dpkg-query", "-W", "-f=${Conffiles}", "shoe-controller"]).check()
    assert "/etc/shoe-controller/shoe-controller.toml" in conffiles.stdout


def test_the_installed_demo_deals_a_shoe(station: TableStation) -> None:
    done = station.pc.sh(
        "cd /tmp && shoe-controller demo --fast --dir /tmp/demo >/tmp/demo.out 2>&1"
        " || { cat /tmp/demo.out; exit 1; }; tail -1 /tmp/demo.out",
        timeout=900,
    )
    dealt = re.fullmatch(r"(\d+) rounds dealt", done.stdout.strip())
    assert dealt is not None, done.text[-3000:]
    assert int(dealt.group(1)) > 0
