"""The Debian package (issue 17): built the Debian way, installed, upgraded and purged here.

`dpkg-buildpackage -us -uc -b` builds `shoe-controller_<version>_<arch>.deb` from a copy of
the repository (its git files as they are in the working tree: what a clean clone with these
changes holds), twice: the second copy has one more changelog entry, for the upgrade. The
package is installed into this machine with `apt-get` and no package index at all, its
commands, man pages, completion, unit and demo are used as installed, lintian judges it, a
locally edited conffile must survive the upgrade while the service is restarted, and purge
must leave only what Debian policy keeps (docs/install.md says what that is).

Needs root, dpkg-buildpackage and dh_virtualenv (CI installs them, .ci/run); skips saying so
otherwise, and when shoe-controller is already installed here (it would be purged). Both
builds run at once, once per run (a module fixture); the package is always purged at the end,
and the system user and groups its sysusers entry made are removed again by the test (policy
keeps them on a real machine, but this machine's other tests must find it as it was).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "shoe-controller"
VENV = Path("/usr/lib/shoe-controller")
CONFFILE = Path("/etc/shoe-controller/shoe-controller.toml")
STATE_DIR = Path("/var/lib/shoe-controller")
UNIT_NAME = "shoe-controller.service"
SYSUSERS = REPO / "systemd" / "shoe-controller.sysusers"
# Nothing of the developer's environment: Debian's tools, Debian's python3, the package's
# commands from /usr/bin.
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
BUILD_TIMEOUT_S = 900  # generous: pip fetches the wheels; nothing here is timed
RUN_TIMEOUT_S = 300


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]["version"]


def changelog_version(changelog: Path) -> str:
    first = changelog.read_text(encoding="utf-8").splitlines()[0]
    found = re.match(rf"{PACKAGE} \(([^)]+)\) ", first)
    assert found is not None, f"not a changelog entry: {first!r}"
    return found.group(1)


def system_env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    }
    return {**env, "PATH": SYSTEM_PATH, "LC_ALL": "C.UTF-8", **extra}


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


def installed_version() -> str | None:
    done = run(["dpkg-query", "-W", "-f=${db:Status-Status} ${Version}", PACKAGE], check=False)
    status, _, version = done.stdout.partition(" ")
    return version if done.returncode == 0 and status == "installed" else None


def why_no_package_test() -> str | None:
    if os.geteuid() != 0:
        return "installing a .deb needs root"
    tools = ("dpkg-buildpackage", "dh_virtualenv", "apt-get", "git")
    missing = [tool for tool in tools if shutil.which(tool, path=SYSTEM_PATH) is None]
    if missing:
        return f"{', '.join(missing)} not installed (CI installs them: .ci/run)"
    if installed_version() is not None:
        return f"{PACKAGE} is installed on this machine: the test would replace and purge it"
    return None


WHY_NOT = why_no_package_test()


def package_test(test: Callable[..., None]) -> Callable[..., None]:
    """A slow test of the built package, skipped (saying why) where it cannot run."""
    return pytest.mark.slow(pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")(test))


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


# ---------------------------------------------------------------------- the build


@dataclass(frozen=True)
class Debs:
    first: Path  # the changelog's version
    second: Path  # one changelog entry more: the upgrade

    @property
    def source(self) -> Path:
        """The copy the first was built from (the repository as it was at the build)."""
        return self.first.parent / PACKAGE


def copy_of_repo(destination: Path) -> Path:
    """The repository's git files (tracked, and new ones not ignored) as the working tree has
    them: no .venv, no build output, nothing a clean clone would lack."""
    listing = [
        "git",
        "-C",
        str(REPO),
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ]
    listed = run(listing)
    for name in sorted(set(filter(None, listed.stdout.split("\0")))):
        source = REPO / name
        if not os.path.lexists(source):  # deleted in the working tree
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)  # debian/* link to systemd/*
    return destination


def add_changelog_entry(source: Path, version: str) -> None:
    changelog = source / "debian" / "changelog"
    entry = (
        f"{PACKAGE} ({version}) bookworm; urgency=medium\n\n"
        "  * A rebuild to upgrade to (tests/system/test_debian_package.py).\n\n"
        " -- Shoe Controller Maintainers <shoe-controller@example.com>"
        "  Tue, 01 Dec 2026 16:00:00 +0000\n\n"
    )
    changelog.write_text(entry + changelog.read_text(encoding="utf-8"), encoding="utf-8")


def start_build(source: Path) -> subprocess.Popen[str]:
    with (source.parent / "build.log").open("w") as log:  # the build writes to its own copy
        return subprocess.Popen(
            ["dpkg-buildpackage", "-us", "-uc", "-b"],
            cwd=source,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=system_env(),
            text=True,
        )


def finished_deb(build: subprocess.Popen[str], source: Path) -> Path:
    code = build.wait(BUILD_TIMEOUT_S)
    log = (source.parent / "build.log").read_text(errors="replace")
    assert code == 0, f"dpkg-buildpackage exited {code}:\n{log[-4000:]}"
    version = changelog_version(source / "debian" / "changelog")
    arch = run(["dpkg-architecture", "-qDEB_HOST_ARCH"]).stdout.strip()
    deb = source.parent / f"{PACKAGE}_{version}_{arch}.deb"
    assert deb.is_file(), f"no {deb.name}: {sorted(p.name for p in source.parent.iterdir())}"
    return deb


@pytest.fixture(scope="module")
def debs(tmp_path_factory: pytest.TempPathFactory) -> Debs:
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    root = tmp_path_factory.mktemp("deb")
    first = copy_of_repo(root / "first" / PACKAGE)
    second = copy_of_repo(root / "second" / PACKAGE)
    add_changelog_entry(second, f"{changelog_version(first / 'debian' / 'changelog')}+1")
    # Both at once: each is mostly pip, unpacking and compression on one core.
    builds = [(start_build(first), first), (start_build(second), second)]
    try:
        return Debs(*(finished_deb(build, source) for build, source in builds))
    finally:
        for build, _ in builds:
            if build.poll() is None:
                build.kill()
                build.wait()


# ---------------------------------------------------------------------- installed


def sysusers_names() -> tuple[set[str], set[str]]:
    """The users and groups the package's sysusers entry declares."""
    users, groups = set(), set()
    for line in SYSUSERS.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] in {"u", "g"}:
            (users if fields[0] == "u" else groups).add(fields[1])
            groups.add(fields[1])  # a user comes with its own group
    return users, groups


def existing(names: set[str], lookup: Callable[[str], object]) -> set[str]:
    found = set()
    for name in names:
        try:
            lookup(name)
        except KeyError:
            continue
        found.add(name)
    return found


def apt_install(deb: Path, tmp_path: Path, prefix: tuple[str, ...] = ()) -> str:
    """apt-get with no package index at all: the .deb must need nothing but itself."""
    no_index = tmp_path / "no-index"
    (no_index / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (no_index / "sources.list.d").mkdir(exist_ok=True)
    done = run(
        [
            *prefix,
            "apt-get",
            "install",
            "--yes",
            f"-oDir::State::Lists={no_index / 'lists'}",
            "-oDir::Etc::SourceList=/dev/null",
            f"-oDir::Etc::SourceParts={no_index / 'sources.list.d'}",
            "-oDir::Cache::pkgcache=",  # nor the index cached from earlier
            "-oDir::Cache::srcpkgcache=",
            str(deb),
        ],
        env=system_env(DEBIAN_FRONTEND="noninteractive"),
    )
    return done.stdout + done.stderr


def purge() -> str:
    done = run(["dpkg", "--purge", PACKAGE], check=False)
    assert installed_version() is None, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(debs: Debs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Debs]:
    users, groups = sysusers_names()
    users_before, groups_before = existing(users, pwd.getpwnam), existing(groups, grp.getgrnam)
    state_before = STATE_DIR.exists()
    try:
        apt_install(debs.first, tmp_path_factory.mktemp("apt"))
        yield debs
    finally:
        purge()
        if not state_before:
            shutil.rmtree(STATE_DIR, ignore_errors=True)  # the journal purge keeps
        for user in sorted(users - users_before):
            run(["userdel", user], check=False)
        for group in sorted(existing(groups - groups_before, grp.getgrnam)):
            run(["groupdel", group], check=False)


def package_files() -> list[Path]:
    return [Path(line) for line in run(["dpkg", "-L", PACKAGE]).stdout.splitlines() if line]


def unit_path() -> Path:
    units = [path for path in package_files() if path.name == UNIT_NAME]
    assert len(units) == 1, units
    return units[0]


@package_test
def test_installed_commands_are_the_venv_of_debians_python(installed: Debs) -> None:
    version = run(["shoe-controller", "--version"])
    assert project_version() in version.stdout
    helped = run(["shoectl", "--help"])
    assert "status" in helped.stdout
    assert "--socket" in helped.stdout
    for command in ("shoe-controller", "shoectl"):
        on_path = Path(shutil.which(command, path=SYSTEM_PATH) or "")
        assert on_path == Path("/usr/bin") / command
        assert on_path.resolve() == VENV / "bin" / command
        assert on_path.read_text().splitlines()[0] == f"#!{VENV}/bin/python"
    assert (VENV / "bin" / "python").resolve() == Path("/usr/bin/python3").resolve()
    assert not (VENV / "bin" / "pip").exists()  # dpkg owns the venv


@package_test
def test_man_pages_render(installed: Debs) -> None:
    for program, word in (("shoectl", "shoectl status"), ("shoe-controller", "demo")):
        shown = run(["man", "-P", "cat", program])
        assert shown.stdout.startswith(f"{program.upper()}(1)")
        assert word in shown.stdout


@package_test
def test_bash_completion_completes_the_subcommands(installed: Debs) -> None:
    for program, typed, offered in (
        ("shoectl", "sta", {"status", "start-shoe"}),
        ("shoe-controller", "de", {"demo"}),
    ):
        completion = Path("/usr/share/bash-completion/completions") / program
        function = f"_{program.replace('-', '_')}_completion"
        script = (
            f"source {completion}; COMP_WORDS=({program} {typed}); COMP_CWORD=1; "
            f'{function} {program}; printf "%s\\n" "${{COMPREPLY[@]}}"'
        )
        done = run(["bash", "--norc", "-c", script])
        assert set(done.stdout.split()) == offered


@package_test
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_installed_unit_verifies(installed: Debs) -> None:
    unit = unit_path()
    assert unit.read_text() == (installed.source / "systemd" / UNIT_NAME).read_text()
    exec_start = re.search(r"^ExecStart=(\S+)", unit.read_text(), re.MULTILINE)
    assert exec_start is not None
    assert Path(exec_start.group(1)) == VENV / "bin" / "shoe-controller"
    assert os.access(exec_start.group(1), os.X_OK)
    done = run(["systemd-analyze", "verify", "--man=no", str(unit)], check=False)
    complaints = [line for line in done.stderr.splitlines() if UNIT_NAME in line]
    assert done.returncode == 0, done.stderr
    assert complaints == []


@package_test
def test_installed_demo_deals_a_shoe(installed: Debs, tmp_path: Path) -> None:
    done = run(["shoe-controller", "demo", "--fast", "--dir", str(tmp_path / "demo")], cwd=tmp_path)
    dealt = re.fullmatch(r"(\d+) rounds dealt", done.stdout.splitlines()[-1])
    assert dealt is not None, done.stdout[-2000:]
    assert int(dealt.group(1)) > 0


@package_test
def test_package_holds_and_applies_what_the_table_pc_needs(installed: Debs) -> None:
    files = package_files()
    names = {str(path) for path in files}
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", PACKAGE]).stdout
    assert str(CONFFILE) in conffiles.split()
    assert (
        CONFFILE.read_text() == (installed.source / "config" / "shoe-controller.toml").read_text()
    )
    assert not [path for path in files if path.name == "table.key"]  # never shipped
    assert {
        "/usr/lib/tmpfiles.d/shoe-controller.conf",
        "/usr/lib/sysusers.d/shoe-controller.conf",
        "/usr/share/doc/shoe-controller/README.md",
        "/usr/share/doc/shoe-controller/docs/install.md",
        "/usr/share/man/man1/shoectl.1.gz",
        "/usr/share/man/man1/shoe-controller.1.gz",
        "/usr/share/bash-completion/completions/shoectl",
        "/usr/share/bash-completion/completions/shoe-controller",
    } <= names
    assert [path.parent.name for path in files if path.name == "99-shoe-controller.rules"] == [
        "rules.d"
    ]
    assert not [path for path in files if "HELPERS_BRIEF" in path.name]
    # No bytecode in the package; postinst compiled it (prerm removes it again).
    assert not [path for path in files if path.suffix == ".pyc" or path.name == "__pycache__"]
    assert list(VENV.glob("lib/python3*/site-packages/shoe_controller/__pycache__/*.pyc"))
    depends = run(["dpkg-query", "-W", "-f=${Depends}", PACKAGE]).stdout
    assert "libusb-1.0-0" in depends
    assert re.search(r"python3 \(>= 3\.1\d\)", depends)
    # sysusers and tmpfiles applied by postinst: the user, its groups, its state directory
    users, groups = sysusers_names()
    assert existing(users, pwd.getpwnam) == users
    assert existing(groups, grp.getgrnam) == groups
    state = STATE_DIR.stat()
    assert pwd.getpwuid(state.st_uid).pw_name == "shoe-controller"
    assert state.st_mode & 0o777 == 0o750


@package_test
@pytest.mark.skipif(shutil.which("lintian") is None, reason="lintian is not installed here")
def test_lintian_finds_no_errors(debs: Debs) -> None:
    done = run(["lintian", "--tag-display-limit", "0", str(debs.first)], check=False)
    errors = [line for line in done.stdout.splitlines() if line.startswith("E:")]
    assert errors == []
    assert done.returncode == 0, done.stdout + done.stderr


FAKE_SYSTEMCTL = """#!/bin/sh
# systemctl for the upgrade: says the unit is enabled and active, and notes what it was asked.
echo "$*" >> {log}
case " $* " in *" is-enabled "*) echo enabled ;; esac
exit 0
"""


def as_if_systemd_ran(tmp_path: Path) -> tuple[tuple[str, ...], Path] | None:
    """A command prefix that runs the rest in a mount namespace where systemd seems to be
    PID 1 (/run/systemd/system), policy-rc.d allows actions and systemctl only notes its
    arguments; None where no mount namespace can be made."""
    if shutil.which("unshare", path=SYSTEM_PATH) is None or not Path("/run/systemd").is_dir():
        return None
    if run(["unshare", "--mount", "true"], check=False).returncode != 0:
        return None
    log = tmp_path / "systemctl.log"
    systemctl = tmp_path / "systemctl"
    systemctl.write_text(FAKE_SYSTEMCTL.format(log=log))
    allow = tmp_path / "policy-rc.d"
    allow.write_text("#!/bin/sh\nexit 0\n")
    for script in (systemctl, allow):
        script.chmod(0o755)
    setup = (
        "mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system"
        f' && mount --bind {systemctl} "$(command -v systemctl)"'
        f" && {{ [ ! -e /usr/sbin/policy-rc.d ] || mount --bind {allow} /usr/sbin/policy-rc.d; }}"
        ' && exec "$@"'
    )
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c", setup, "sh"), log


@package_test
def test_upgrade_keeps_the_edited_conffile_and_restarts_the_service(
    installed: Debs, tmp_path: Path
) -> None:
    edited = CONFFILE.read_text() + '\n# the technician was here\n[scoreboard]\nlisten = ""\n'
    CONFFILE.write_text(edited)
    systemd = as_if_systemd_ran(tmp_path)
    apt_install(installed.second, tmp_path, systemd[0] if systemd else ())
    assert installed_version() == changelog_version(
        installed.second.parent / PACKAGE / "debian" / "changelog"
    )
    assert CONFFILE.read_text() == edited
    assert run(["shoe-controller", "--version"]).returncode == 0
    if systemd is None:
        pytest.skip("no mount namespace here: the service's restart cannot be watched")
    calls = systemd[1].read_text().splitlines()
    assert [call for call in calls if call.endswith(f"restart {UNIT_NAME}")], calls
    assert not [call for call in calls if f"stop {UNIT_NAME}" in call], calls


GONE_AFTER_PURGE = (
    VENV,
    CONFFILE.parent,
    Path("/usr/share/doc/shoe-controller"),
    Path("/run/shoe-controller"),
    Path("/var/log/shoe-controller"),
    Path("/etc/systemd/system/multi-user.target.wants") / UNIT_NAME,
)


@package_test
def test_purge_leaves_only_what_policy_keeps(installed: Debs, tmp_path: Path) -> None:
    """Everything of the package goes, the configuration with the key too; the journal (data
    in the state directory) stays, the empty state directory does not; the user stays."""
    for with_journal in (True, False):
        if installed_version() is None:
            apt_install(installed.first, tmp_path)
        (CONFFILE.parent / "table.key").write_text("secret\n")  # the technician's, not ours
        if with_journal:
            (STATE_DIR / "journal.db").write_bytes(b"the table's record")
        files = package_files()
        said = purge()
        left = [path for path in files if os.path.lexists(path) and path != Path("/")]
        # What stays of the list is directories other packages own too (/usr/bin, ...).
        assert all(path.is_dir() for path in left), left
        if left:
            run(["dpkg", "-S", *map(str, left)])
        for gone in GONE_AFTER_PURGE:
            assert not os.path.lexists(gone), gone
        if with_journal:
            assert (STATE_DIR / "journal.db").read_bytes() == b"the table's record"
            assert "journal in /var/lib/shoe-controller is kept" in said
            shutil.rmtree(STATE_DIR)
        else:
            assert not STATE_DIR.exists()
        assert existing({"shoe-controller"}, pwd.getpwnam) == {"shoe-controller"}
