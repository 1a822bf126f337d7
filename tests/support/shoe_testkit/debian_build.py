"""The project's Debian package, built the Debian way from a copy of the repository.

`dpkg-buildpackage -us -uc -b` builds `shoe-controller_<version>_<arch>.deb` from the
repository's git files as the working tree has them (what a clean clone with these changes
holds), twice: the second copy has one changelog entry more, the version to upgrade to.
Nothing is installed on this machine: the package is installed in the table PC's virtual
machine (tests/vm), and judged here only as a file (lintian, its contents).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PACKAGE = "shoe-controller"
# Nothing of the developer's environment: Debian's tools and Debian's python3.
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
BUILD_TIMEOUT_S = 1200  # generous: pip fetches the wheels; nothing here is timed
BUILD_TOOLS = ("dpkg-buildpackage", "dh_virtualenv", "dpkg-architecture", "git")


@dataclass(frozen=True)
class Debs:
    first: Path  # the changelog's version
    second: Path  # one changelog entry more: the upgrade

    @property
    def source(self) -> Path:
        """The copy the first was built from (the repository as it was at the build)."""
        return self.first.parent / PACKAGE

    @property
    def second_version(self) -> str:
        return changelog_version(self.second.parent / PACKAGE / "debian" / "changelog")


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


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


def why_no_build() -> str | None:
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool, path=SYSTEM_PATH) is None]
    if missing:
        return f"{', '.join(missing)} not installed (CI installs them: .ci/run)"
    return None


def copy_of_repo(destination: Path) -> Path:
    """The repository's git files (tracked, and new ones not ignored) as the working tree has
    them: no .venv, no build output, nothing a clean clone would lack."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    )
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
        "  * A rebuild to upgrade to (the package's upgrade test).\n\n"
        " -- Shoe Controller Maintainers <shoe-controller@example.com>"
        "  Tue, 01 Dec 2026 16:00:00 +0000\n\n"
    )
    changelog.write_text(entry + changelog.read_text(encoding="utf-8"), encoding="utf-8")


def build_debs(root: Path) -> Debs:
    """Both packages, built at once (each is mostly pip, unpacking and compression on one core)."""
    first = copy_of_repo(root / "first" / PACKAGE)
    second = copy_of_repo(root / "second" / PACKAGE)
    add_changelog_entry(second, f"{changelog_version(first / 'debian' / 'changelog')}+1")
    builds = [(_start_build(first), first), (_start_build(second), second)]
    try:
        return Debs(*(_finished_deb(build, source) for build, source in builds))
    finally:
        for build, _ in builds:
            if build.poll() is None:
                build.kill()
                build.wait()


def _start_build(source: Path) -> subprocess.Popen[str]:
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


def _finished_deb(build: subprocess.Popen[str], source: Path) -> Path:
    code = build.wait(BUILD_TIMEOUT_S)
    log = (source.parent / "build.log").read_text(errors="replace")
    assert code == 0, f"dpkg-buildpackage exited {code}:\n{log[-4000:]}"
    version = changelog_version(source / "debian" / "changelog")
    arch = subprocess.run(
        ["dpkg-architecture", "-qDEB_HOST_ARCH"],
        capture_output=True,
        text=True,
        check=True,
        env=system_env(),
    ).stdout.strip()
    deb = source.parent / f"{PACKAGE}_{version}_{arch}.deb"
    assert deb.is_file(), f"no {deb.name}: {sorted(p.name for p in source.parent.iterdir())}"
    return deb
