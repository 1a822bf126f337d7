"""The tests' PKI: a CA, a server certificate for 127.0.0.1 and a client certificate."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def make_pki(directory: Path) -> dict[str, Path]:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    for name, usage, alt in (("server", "serverAuth", "IP:127.0.0.1"),
                             ("client", "clientAuth", "DNS:tbl-07-shoe")):  # fmt: skip
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        (directory / f"{name}.ext").write_text(
            f"subjectAltName={alt}\nbasicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n"
        )
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2",
            "-extfile", f"{name}.ext")  # fmt: skip
    return {name: directory / name for name in (
        "ca.pem", "server.pem", "server.key", "client.pem", "client.key")}  # fmt: skip
