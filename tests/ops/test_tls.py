"""TLS: the client verifies the server against a CA made in the test, and presents a client
certificate when the server asks for one (mutual TLS)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from oopav.bus.cluster import LocalCluster
from oopav.bus.errors import NatsUnavailable
from oopav.bus.store import connect
from oopav.bus.streams import ensure_streams


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(d: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, signed by the CA."""
    d.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=oopav-test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN=oopav-{name}",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            cwd=d,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            f"{name}.pem",
            cwd=d,
        )
    return {n: d / n for n in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[LocalCluster, dict[str, Path]]]:
    pki = make_pki(tmp_path / "pki")
    tls = (
        "tls {\n"
        f'  cert_file: "{pki["server.pem"]}"\n'
        f'  key_file: "{pki["server.key"]}"\n'
        f'  ca_file: "{pki["ca.pem"]}"\n'
        "  verify: true\n"
        "}\n"
    )
    server = LocalCluster(tmp_path / "srv", 1, extra_config=tls)
    server.start()
    try:
        yield server, pki
    finally:
        server.stop()


async def test_mutual_tls(
    tls_server: tuple[LocalCluster, dict[str, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, pki = tls_server
    monkeypatch.setenv("OOPAV_TLS_CA", str(pki["ca.pem"]))
    monkeypatch.setenv("OOPAV_TLS_CERT", str(pki["client.pem"]))
    monkeypatch.setenv("OOPAV_TLS_KEY", str(pki["client.key"]))
    nc = await connect(server.url, name="test-tls")
    try:
        assert await ensure_streams(nc.jetstream())
        ack = await nc.jetstream().publish("oopav.ev.session.s1.task_submitted", b"{}")
        assert ack.seq == 1
    finally:
        await nc.close()


async def test_without_a_client_certificate_the_server_refuses(
    tls_server: tuple[LocalCluster, dict[str, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, pki = tls_server
    monkeypatch.setenv("OOPAV_TLS_CA", str(pki["ca.pem"]))
    with pytest.raises(NatsUnavailable):
        nc = await connect(server.url, name="test-tls-nocert")
        await nc.close()


async def test_half_a_client_certificate_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OOPAV_TLS_CERT", "/nonexistent/client.pem")
    with pytest.raises(NatsUnavailable, match="needs both --tls-cert and --tls-key"):
        await connect("nats://127.0.0.1:1", name="test-tls-half")


def test_the_cli_takes_tls_files_as_options_before_or_after_the_command(
    tls_server: tuple[LocalCluster, dict[str, Path]],
) -> None:
    """`--tls-ca/--tls-cert/--tls-key` reach every connection the command opens; without
    them the same command is refused by the server."""
    import os
    import sys

    server, pki = tls_server
    env = {k: v for k, v in os.environ.items() if not k.startswith("OOPAV_TLS_")}
    base = [sys.executable, "-m", "oopav.cli", "--nats-url", server.url]
    ok = subprocess.run(
        [
            *base,
            "--tls-ca",
            str(pki["ca.pem"]),
            "streams",
            "init",
            "--tls-cert",
            str(pki["client.pem"]),
            "--tls-key",
            str(pki["client.key"]),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert "OOPAV_EVENTS" in ok.stdout
    # Without the CA the handshake fails verification: one line naming TLS, not a hang
    # (nats-py on its own waits forever here).
    refused = subprocess.run(
        [*base, "streams", "init"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "TLS with the server failed" in lines[0], refused.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in lines[0] and "--tls-ca" in lines[0]


async def test_a_file_that_is_not_a_certificate_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate\n")
    monkeypatch.setenv("OOPAV_TLS_CA", str(bogus))
    with pytest.raises(NatsUnavailable, match="is not a usable CA certificate"):
        await connect("nats://127.0.0.1:1", name="test-tls-bogus")
    monkeypatch.delenv("OOPAV_TLS_CA")
    monkeypatch.setenv("OOPAV_TLS_CERT", str(bogus))
    monkeypatch.setenv("OOPAV_TLS_KEY", str(bogus))
    with pytest.raises(NatsUnavailable, match="not a usable certificate and key"):
        await connect("nats://127.0.0.1:1", name="test-tls-bogus")
