"""The Debian package as a file: its version, its man pages, lintian's verdict, its contents.

The package is built once a run from a copy of the repository (the `debs` fixture,
shoe_testkit/debian_build.py) and never installed on this machine: tests/vm installs,
upgrades and purges it on the virtual table PC, where systemd is PID 1. Needs
dpkg-buildpackage and dh_virtualenv (CI installs them, .ci/run); skips saying so otherwise.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shoe_testkit.debian_build import REPO, Debs, changelog_version, project_version, system_env

RUN_TIMEOUT_S = 300


def run(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = RUN_TIMEOUT_S,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,  # a question from dpkg fails instead of waiting
        env=env or system_env(),
        cwd=cwd,
    )
    if check:
        assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


# ---------------------------------------------------------------------- version and pages


def test_changelog_version_is_the_projects() -> None:
    """debian/changelog and pyproject.toml give the same version (debian/rules refuses to
    build otherwise; the package is native, so the versions are equal)."""
    assert changelog_version(REPO / "debian" / "changelog") == project_version()


@pytest.mark.skipif(shutil.which("man") is None, reason="man-db is not installed here")
def test_man_pages_and_completions_are_written_from_the_commands(tmp_path: Path) -> None:
    """tools/cli_reference.py, as debian/rules runs it: every subcommand and option is in its
    man page, the pages render without a groff warning, the completion registers itself."""
    done = run(
        [sys.executable, "-B", str(REPO / "tools" / "cli_reference.py"), str(tmp_path)],
        env={**system_env(), "PYTHONPATH": str(REPO)},
    )
    assert len(done.stdout.split()) == 4
    expected = {
        "shoe-controller": ["demo", "run", "odds", "verify", "--version", "--fast", "--config"],
        "shoectl": ["status", "void", "--socket", "--by", "SHOECTL_SOCKET", "EXIT STATUS"],
    }
    for program, words in expected.items():
        page = tmp_path / "man" / f"{program}.1"
        shown = run(["man", "--warnings", "-l", "-P", "cat", str(page)], env=system_env())
        assert shown.stderr == ""  # groff's warnings (a stray request, a bad escape)
        assert shown.stdout.startswith(f"{program.upper()}(1)")
        for word in words:
            assert word in shown.stdout, f"{word} missing from {program}(1)"
        completion = (tmp_path / "completion" / program).read_text()
        assert re.search(rf"^\s*complete .* {re.escape(program)}$", completion, re.MULTILINE)


# ---------------------------------------------------------------------- the built file


def contents(deb: Path) -> set[str]:
    listed = run(["dpkg-deb", "--contents", str(deb)]).stdout.splitlines()
    return {line.split()[-1].removeprefix(".") for line in listed if line.split()}


@pytest.mark.slow
def test_the_package_holds_what_a_table_pc_needs_and_no_more(debs: Debs) -> None:
    files = contents(debs.first)
    assert {
        "/usr/lib/tmpfiles.d/shoe-controller.conf",
        "/usr/lib/sysusers.d/shoe-controller.conf",
        "/usr/share/doc/shoe-controller/README.md",
        "/usr/share/doc/shoe-controller/docs/install.md",
        "/usr/share/man/man1/shoectl.1.gz",
        "/usr/share/man/man1/shoe-controller.1.gz",
        "/usr/share/bash-completion/completions/shoectl",
        "/usr/share/bash-completion/completions/shoe-controller",
        "/lib/udev/rules.d/99-shoe-controller.rules",
        "/lib/systemd/system/shoe-controller.service",
        "/lib/systemd/system/shoe-surveillance.service",
    } <= files
    assert not [name for name in files if name.endswith("/table.key")]  # never shipped
    assert not [name for name in files if "HELPERS_BRIEF" in name]
    # no bytecode: postinst compiles it on the table PC
    assert not [name for name in files if name.endswith(".pyc") or "__pycache__" in name]
    fields = run(["dpkg-deb", "--field", str(debs.first), "Depends", "Version"]).stdout
    assert "libusb-1.0-0" in fields
    assert re.search(r"python3 \(>= 3\.1\d\)", fields)
    assert f"Version: {changelog_version(REPO / 'debian' / 'changelog')}" in fields


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("lintian") is None, reason="lintian is not installed here")
def test_lintian_finds_no_errors(debs: Debs) -> None:
    done = run(["lintian", "--tag-display-limit", "0", str(debs.first)], check=False)
    errors = [line for line in done.stdout.splitlines() if line.startswith("E:")]
    assert errors == []
    assert done.returncode == 0, done.stdout + done.stderr
