"""The package for another architecture, built as Debian builds it: by that architecture.

dh-virtualenv makes the package's venv with the target's own /usr/bin/python3, and pip
fetches the wheels that Python takes: so the arm64 package is built in an arm64 Debian 12
(a buildd root by mmdebstrap, cached beside the images and rebuilt when this recipe
changes), its programs run by qemu-user in a namespace of their own (`foreign`), from a
copy of the repository as `debian_build.copy_of_repo` makes it. Nothing is built on, or
installed into, this machine itself.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from shoe_testkit.debian_build import PACKAGE, changelog_version, copy_of_repo
from shoe_testkit.tablepc import foreign
from shoe_testkit.tablepc.cache import cached
from shoe_testkit.tablepc.image import MIRRORS, SUITE

# debian/control's Build-Depends, and what dpkg-buildpackage and pip need beside them
BUILD_PACKAGES = (
    "build-essential",
    "debhelper",
    "dh-virtualenv",
    "python3",
    "python3-venv",
    "ca-certificates",
)
BUILD_TIMEOUT_S = 5400  # every program under qemu-user; nothing here is timed
CERTIFICATES = Path("/etc/ssl/certs/ca-certificates.crt")  # what this host trusts for PyPI


def built_builder(arch: str, *, log: Path) -> Path:
    """The build root of today's recipe (this file) for `arch`, bootstrapped first if the
    cache has none."""

    def bootstrap(work: Path) -> None:
        with log.open("a") as output:
            subprocess.run(
                foreign.mmdebstrap(
                    arch,
                    [
                        "--variant=buildd",
                        "--mode=root",
                        "--format=directory",
                        f"--include={','.join(BUILD_PACKAGES)}",
                        SUITE,
                        str(work / "tree"),
                        *MIRRORS,
                    ],
                ),
                check=True,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S,
            )

    return cached(f"builder-{arch}", Path(__file__), bootstrap) / "tree"


def build_deb(arch: str, root: Path) -> Path:
    """`dpkg-buildpackage -us -uc -b` of a copy of the repository, in `arch`'s build root."""
    source = copy_of_repo(root / PACKAGE)
    log = root / "build.log"
    tree = built_builder(arch, log=log)
    # The build sees the copy at /build and this host's resolver and certificates (pip
    # reaches PyPI as this host does); the mounts end with the namespace, and the cached
    # root keeps nothing of the build but those two files.
    build = (
        "set -e\n"
        f"tree={shlex.quote(str(tree))}\n"
        'mount --rbind /dev "$tree/dev"\n'
        'mount -t proc proc "$tree/proc"\n'
        'mkdir -p "$tree/build"\n'
        f'mount --bind {shlex.quote(str(root))} "$tree/build"\n'
        'cp /etc/resolv.conf "$tree/etc/resolv.conf"\n'
        f'cp {CERTIFICATES} "$tree/etc/ssl/host-certificates.crt"\n'
        'exec chroot "$tree" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin'
        " HOME=/tmp LC_ALL=C.UTF-8 PIP_CERT=/etc/ssl/host-certificates.crt"
        f" /bin/sh -ec 'cd /build/{PACKAGE} && dpkg-buildpackage -us -uc -b'\n"
    )
    with log.open("a") as output:
        done = subprocess.run(
            foreign.command(arch, ["/bin/sh", "-c", build]),
            check=False,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
        )
    assert done.returncode == 0, (
        f"dpkg-buildpackage for {arch} exited {done.returncode}:\n"
        + (log.read_text(errors="replace")[-4000:])
    )
    version = changelog_version(source / "debian" / "changelog")
    deb = root / f"{PACKAGE}_{version}_{arch}.deb"
    assert deb.is_file(), f"no {deb.name}: {sorted(path.name for path in root.iterdir())}"
    return deb
