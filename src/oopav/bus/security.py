"""How a client proves who it is and protects the wire: several server URLs for failover,
TLS, and per-handler credentials.

Everything comes from the environment (which the global CLI options set), so every command
and handler process connects the same way without threading options through each call:

- ``OOPAV_NATS_URL``: one URL or several, comma-separated (``nats://a:4222,nats://b:4222``);
  the client picks one and fails over to the others;
- ``OOPAV_TLS_CA`` / ``OOPAV_TLS_CERT`` / ``OOPAV_TLS_KEY``: verify the server against a CA,
  and present a client certificate (mutual TLS) when cert and key are given;
- ``OOPAV_NATS_CREDS``: a JSON file ``{"user": ..., "password": ...}`` as written by
  ``oopav ops accounts`` (one per handler); ``OOPAV_NATS_USER`` / ``OOPAV_NATS_PASSWORD``
  do the same without a file.
"""

from __future__ import annotations

import json
import os
import ssl
from pathlib import Path
from typing import Any


class CredentialsError(ValueError):
    pass


def split_urls(url: str) -> list[str]:
    """``a,b,c`` → ``[a, b, c]``; a bare ``host:port`` gets the ``nats://`` scheme."""
    out = []
    for part in url.split(","):
        part = part.strip()
        if not part:
            continue
        out.append(part if "://" in part else f"nats://{part}")
    if not out:
        raise CredentialsError(f"no server URL in {url!r}")
    return out


def tls_context(
    ca: str | None = None, cert: str | None = None, key: str | None = None
) -> ssl.SSLContext | None:
    ca = ca or os.environ.get("OOPAV_TLS_CA") or None
    cert = cert or os.environ.get("OOPAV_TLS_CERT") or None
    key = key or os.environ.get("OOPAV_TLS_KEY") or None
    if not (ca or cert or key):
        return None
    if bool(cert) != bool(key):
        raise CredentialsError("a client certificate needs both --tls-cert and --tls-key")
    for label, path in (("--tls-ca", ca), ("--tls-cert", cert), ("--tls-key", key)):
        if path and not Path(path).is_file():
            raise CredentialsError(f"{label}: no such file: {path}")
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    except (ssl.SSLError, OSError) as exc:
        raise CredentialsError(
            f"--tls-ca {ca} is not a usable CA certificate (PEM): {exc}"
        ) from None
    if cert and key:
        try:
            ctx.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as exc:
            raise CredentialsError(
                f"--tls-cert {cert} / --tls-key {key} are not a usable certificate and key "
                f"(PEM, the key matching the certificate): {exc}"
            ) from None
    return ctx


def credentials(path: str | None = None) -> dict[str, str]:
    """``user``/``password`` for ``nats.connect``, from a creds file or the environment."""
    path = path or os.environ.get("OOPAV_NATS_CREDS") or None
    if path:
        try:
            data = json.loads(Path(path).read_text())
            return {"user": str(data["user"]), "password": str(data["password"])}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CredentialsError(
                f"cannot read NATS credentials from {path}: {type(exc).__name__}: {exc} "
                '(expected JSON {"user": ..., "password": ...}, as `oopav ops accounts` writes)'
            ) from None
    user = os.environ.get("OOPAV_NATS_USER")
    if user:
        return {"user": user, "password": os.environ.get("OOPAV_NATS_PASSWORD", "")}
    return {}


def connect_options(url: str) -> dict[str, Any]:
    """Keyword arguments for ``nats.aio.client.Client.connect``."""
    opts: dict[str, Any] = {"servers": split_urls(url)}
    ctx = tls_context()
    if ctx is not None:
        opts["tls"] = ctx
        # The URLs may say nats://; the TLS context is what turns TLS on.
        opts["servers"] = [u.replace("nats://", "tls://", 1) for u in opts["servers"]]
    opts.update(credentials())
    return opts


def is_permission_error(exc: BaseException | str) -> bool:
    text = str(exc).lower()
    return "permissions violation" in text or "authorization violation" in text
