"""Least-privilege NATS users, one per handler, cut from the handler contracts.

Each handler may publish only the event types it emits (``oopav.ev.session.*.<type>``), its
own dead letters, and the JetStream API calls a consumer needs (create/read consumers, direct
gets, acks) — never stream creation, deletion, purge or update. ``client`` may submit tasks and
grants and read; ``learner`` only reads; ``trainer`` records training runs; ``admin`` creates the streams. ``oopav ops accounts
--out DIR`` writes ``accounts.conf`` (to ``include`` in every node's config) and one
``creds/<user>.json`` per user (``OOPAV_NATS_CREDS``).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from oopav.bus.contracts import EMITS, PUBLISHES, SERVES
from oopav.bus.streams import DLQ_PREFIX, GRANT_SUBJECT, INTAKE_SUBJECT

BLOB_PUBLISH = ("$O.OOPAV_BLOBS.>",)  # history.blobs.PUBLISH_SUBJECTS (kept import-light)

ACCOUNT = "OOPAV"

# What reading the stream takes: stream/consumer info, ordered and durable consumers, direct
# gets, acks and flow control. None of these can change or delete a stored event.
READ_API = [
    "$JS.API.INFO",
    "$JS.API.STREAM.INFO.>",
    "$JS.API.STREAM.NAMES",
    "$JS.API.STREAM.LIST",
    "$JS.API.STREAM.MSG.GET.>",
    "$JS.API.DIRECT.GET.>",
    "$JS.API.CONSUMER.CREATE.>",
    "$JS.API.CONSUMER.DURABLE.CREATE.>",
    "$JS.API.CONSUMER.INFO.>",
    "$JS.API.CONSUMER.NAMES.>",
    "$JS.API.CONSUMER.LIST.>",
    "$JS.API.CONSUMER.MSG.NEXT.>",
    "$JS.API.CONSUMER.DELETE.>",
    "$JS.ACK.>",
    "$JS.FC.>",
]
# Inboxes receive API answers and request replies.
INBOX = "_INBOX.>"


def event_subject(entry: str) -> str:
    """``plan_proposed`` → a session event subject; ``mission.guidance_op_applied`` → that
    aggregate's."""
    if "." in entry:
        aggregate, event_type = entry.split(".", 1)
        return f"oopav.ev.{aggregate}.*.{event_type}"
    return f"oopav.ev.session.*.{entry}"


def handler_permissions(name: str) -> dict[str, Any]:
    publish = [event_subject(t) for t in EMITS[name]]
    publish += [f"{DLQ_PREFIX}.{name}", *PUBLISHES.get(name, ()), *READ_API]
    # Content-addressed blobs (history/blobs.py): a handler may add content named by its
    # hash (starting trees, prompts); every read checks the hash against the name.
    publish += list(BLOB_PUBLISH)
    subscribe = [INBOX]
    if name in SERVES:
        subscribe += list(SERVES[name])
        publish.append(INBOX)  # replies to `nats req`
    return {"publish": {"allow": publish}, "subscribe": {"allow": subscribe}}


def user_permissions() -> dict[str, dict[str, Any]]:
    users = {name: handler_permissions(name) for name in EMITS}
    users["client"] = {
        "publish": {"allow": [INTAKE_SUBJECT, GRANT_SUBJECT, *READ_API]},
        "subscribe": {"allow": [INBOX, "oopav.ev.>", f"{DLQ_PREFIX}.>"]},
    }
    users["learner"] = {
        "publish": {"allow": list(READ_API)},
        "subscribe": {"allow": [INBOX, "oopav.ev.>"]},
    }
    # `oopav train` / `oopav eval` record runs (``oopav.ev.run.<id>.<type>``) and read sessions.
    users["trainer"] = {
        "publish": {"allow": ["oopav.ev.run.>", *READ_API]},
        "subscribe": {"allow": [INBOX, "oopav.ev.>"]},
    }
    # The notary (history/signing.py) is the only identity besides admin that may write the
    # notary bucket: trusted signing keys and anchored chain heads. It reads the events.
    users["notary"] = {
        "publish": {"allow": ["$KV.OOPAV_NOTARY.>", *READ_API]},
        "subscribe": {"allow": [INBOX, "oopav.ev.>"]},
    }
    users["admin"] = {"publish": {"allow": [">"]}, "subscribe": {"allow": [">"]}}
    return users


def accounts_config(passwords: dict[str, str]) -> str:
    """The ``accounts`` block of a nats-server configuration (JSON is valid NATS config)."""
    users = [
        {"user": user, "password": passwords[user], "permissions": perms}
        for user, perms in user_permissions().items()
    ]
    block = {ACCOUNT: {"jetstream": "enabled", "users": users}}
    return "accounts: " + json.dumps(block, indent=2) + "\n"


def generate(out_dir: Path, passwords: dict[str, str] | None = None) -> list[Path]:
    """Write ``accounts.conf`` and ``creds/<user>.json`` (mode 0600). Existing passwords are
    kept, so regenerating after a contract change does not lock running handlers out."""
    out_dir = Path(out_dir)
    creds_dir = out_dir / "creds"
    creds_dir.mkdir(parents=True, exist_ok=True)
    passwords = dict(passwords or {})
    for user in user_permissions():
        if user in passwords:
            continue
        existing = creds_dir / f"{user}.json"
        try:
            passwords[user] = json.loads(existing.read_text())["password"]
        except (OSError, ValueError, KeyError):
            passwords[user] = secrets.token_urlsafe(24)
    written = []
    conf = out_dir / "accounts.conf"
    _write_private(conf, accounts_config(passwords))
    written.append(conf)
    for user, password in sorted(passwords.items()):
        path = creds_dir / f"{user}.json"
        _write_private(path, json.dumps({"user": user, "password": password}) + "\n")
        written.append(path)
    return written


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def credential_user() -> str | None:
    """The NATS user this process will connect as, if credentials are configured."""
    from oopav.bus.security import credentials

    return credentials().get("user")


def check_credential(handlers: tuple[str, ...] | list[str]) -> str | None:
    """Why the configured credential cannot run ``handlers`` (None when it can). Checked
    before connecting, so a mix-up is one clear line instead of a stream of permission
    violations and timeouts."""
    user = credential_user()
    if user is None or user == "admin":
        return None
    wrong = [h for h in handlers if h != user]
    if not wrong:
        return None
    return (
        f"the NATS credential is for user {user!r}, which may not act as "
        f"{', '.join(repr(h) for h in wrong)}: run each handler with its own credential "
        f"(OOPAV_NATS_CREDS=<dir>/creds/<handler>.json, from `oopav ops accounts`) or use admin"
    )
