"""Signed history (issue 27 §5): every event is signed by its handler's ed25519 key (an
nkey, as NATS identities are), and chain heads are anchored where no handler can write.

- **Keys.** ``Keyring`` keeps one nkey seed per identity (``observer``, ``planner``, …,
  ``intake``, ``replay``, ``notary``) under ``<data dir>/keys/<name>.nk`` (mode 0600),
  made on first use. A process signs with the key of each event's *actor* (the handler that
  decided it); a deployment gives each handler process only its own seed.
- **Signatures** travel in the message header ``Oopav-Sig: <identity> <public key>
  <signature>`` over ``subject + "\\n" + payload``: the stored bytes (whose ``prev_hash`` links
  the chain) are signed, the event schema and the hash chain are unchanged, so sessions
  recorded before signing still read and chain as they did.
- **Trust** lives in the notary KV bucket ``OOPAV_NOTARY`` (only the ``notary`` identity, and
  admin, may write it: ``bus/accounts.py``): ``key.<identity>`` lists the public keys that
  identity signs with; ``head.<session>`` anchors the session's chain head (sequence, event
  id, hash, count) every ``ANCHOR_EVERY`` events and at its end, signed by the notary.
- **Verification** (``verify``; ``oopav replay --verify``) names the signer of every event and
  fails when an event is unsigned in a session that is signed or anchored, a signature does
  not verify, a key is not registered for its identity, an identity signs an event of
  another actor or a type its contract does not emit (``bus/contracts.EMITS``), or the chain
  head differs from the notary's anchor. An attacker with the stream's write rights can
  recompute every hash; without the handlers' keys and the notary's, that shows.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oopav.events.keys import (  # noqa: F401  (re-exported: the signing API in one place)
    SIG_HEADER,
    Keyring,
    attach,
    identity_of,
    keyring_of,
    public_raw,
    sign_header,
    verify_signature,
)

NOTARY_BUCKET = "OOPAV_NOTARY"
NOTARY_WRITE = (f"$KV.{NOTARY_BUCKET}.>",)
ANCHOR_EVERY = 16
NOTARY = "notary"


# The identities a process may sign as: the handlers of the contracts, and the actors of the
# root events people and commands write (`oopav run` aborts, forks, grants from the CLI).
IDENTITIES = ("cli", "run", "replay", "preview", "client", NOTARY)
_REGISTERED: set[tuple[str, str]] = set()
# A notary still busy after the start-up attempts: how long the background keeps trying.
REGISTER_LATER_S = 120.0
_LATE: set[asyncio.Task[None]] = set()  # held: a bare task may be collected mid-flight


async def open_keyring(nc: Any, js: Any, directory: Path) -> Keyring | None:
    """Attach the data dir's keyring to ``nc`` and register its public keys with the notary
    (once per process and server). None when signing is unavailable (no nkeys, or a
    connection that may not write the notary bucket: it then signs nothing)."""
    from oopav.bus.contracts import EMITS
    from oopav.logging import get_logger

    keyring = Keyring(directory)
    try:
        publics = {n: keyring.public(n) for n in (*EMITS, *IDENTITIES)}
    except Exception as exc:  # signing is evidence, not a precondition: say so and go on
        get_logger("oopav.signing").warning("signing_off", error=f"{type(exc).__name__}: {exc}")
        return None
    attach(nc, keyring)
    # Per server *instance*, not per URL: tests and restarts reuse ports, and a fresh server
    # behind a remembered URL has an empty notary (every key "never registered").
    info = getattr(nc, "_server_info", None) or {}
    key = (str(info.get("server_id") or getattr(nc, "connected_url", "")), str(directory))
    if key not in _REGISTERED:
        for attempt in range(4):
            before = getattr(nc, "last_error", None)
            try:
                await _register_unless_refused(nc, js, publics)
                _REGISTERED.add(key)
                break
            except Exception as exc:  # a least-privilege identity: the notary registers keys
                # A timeout is either a busy server (seen under load: every event then signed
                # by a key "the notary never registered") or a write this account may not
                # make — the server answers that with an asynchronous permissions error on
                # the connection, not a reply, so the request times out too. Only the first
                # is worth another try; retrying the second made every least-privilege
                # handler wait ~50 s at start-up.
                busy = _busy(exc, before, getattr(nc, "last_error", None))
                if attempt < 3 and busy:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                if busy:
                    # Still busy (a fresh cluster electing its leaders under load): start-up
                    # goes on, and the keys are registered later; until then the events
                    # already signed simply wait to be verifiable.
                    task = asyncio.ensure_future(_register_later(nc, js, publics, key))
                    _LATE.add(task)
                    task.add_done_callback(_LATE.discard)
                get_logger("oopav.signing").info(
                    "keys_not_registered",
                    error=f"{type(exc).__name__}: {exc}"[:300],
                    retrying_for_s=REGISTER_LATER_S if busy else 0,
                )
                break
    return keyring


async def _register_later(nc: Any, js: Any, publics: dict[str, str], key: tuple[str, str]) -> None:
    """Keep registering a busy notary's keys in the background, up to ``REGISTER_LATER_S``."""
    from oopav.logging import get_logger

    log = get_logger("oopav.signing")
    deadline = time.monotonic() + REGISTER_LATER_S
    delay = 1.0
    while time.monotonic() < deadline and not getattr(nc, "is_closed", False):
        await asyncio.sleep(delay)
        delay = min(delay * 2, 8.0)
        before = getattr(nc, "last_error", None)
        try:
            await _register_unless_refused(nc, js, publics)
        except Exception as exc:
            if not _busy(exc, before, getattr(nc, "last_error", None)):
                log.warning("keys_not_registered", error=f"{type(exc).__name__}: {exc}"[:300])
                return
            continue
        _REGISTERED.add(key)
        log.info("keys_registered_late")
        return
    log.warning("keys_not_registered", error=f"the notary stayed busy for {REGISTER_LATER_S} s")


async def _register_unless_refused(nc: Any, js: Any, publics: dict[str, str]) -> None:
    """register_keys, given up as soon as the server refuses the write. The refusal is an
    asynchronous permissions error on the connection while the request itself waits for its
    timeout (10 s a handler: a per-credential deployment took over a minute to start)."""
    import contextlib

    before = getattr(nc, "last_error", None)
    task = asyncio.ensure_future(register_keys(js, publics))
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=0.05)
            err = getattr(nc, "last_error", None)
            if not task.done() and err is not before and _refusal(err):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                raise PermissionError(f"this credential may not write the notary: {err}")
    finally:
        if not task.done():  # our own caller was cancelled
            task.cancel()
    task.result()


def _refusal(err: object) -> bool:
    return err is not None and "permissions violation" in str(err).lower()


def _busy(exc: BaseException, before: object, after: object) -> bool:
    """A timeout, or JetStream not answering yet, with no new permissions error on the
    connection: the server was busy. A fresh cluster answers its first KV writes with "no
    responders" or 503 while the bucket's stream elects a leader (CI: the notary stayed empty,
    every key "never registered")."""
    import nats.errors
    import nats.js.errors

    transient = (
        asyncio.TimeoutError,
        TimeoutError,
        nats.errors.TimeoutError,
        nats.errors.NoRespondersError,
        nats.js.errors.ServiceUnavailableError,
        nats.js.errors.NoStreamResponseError,
        nats.js.errors.ServerError,
    )
    if not isinstance(exc, transient):
        return False
    return after is before or not _refusal(after)


# -- the notary ---------------------------------------------------------------------------


async def notary_kv(js: Any) -> Any:
    from nats.js.api import KeyValueConfig, StorageType
    from nats.js.errors import BucketNotFoundError, NotFoundError

    from oopav.history.blobs import events_replicas

    try:
        return await js.key_value(NOTARY_BUCKET)
    except (BucketNotFoundError, NotFoundError):
        # As many replicas as the events stream: in a cluster the anchors must survive a node.
        return await js.create_key_value(
            config=KeyValueConfig(
                bucket=NOTARY_BUCKET,
                description="oopav notary: trusted signing keys and anchored chain heads",
                history=64,
                storage=StorageType.FILE,
                replicas=await events_replicas(js),
            )
        )


async def trusted_keys(js: Any) -> dict[str, set[str]]:
    """identity -> its registered public keys (the notary KV).

    The keys are listed from the stream's subjects (one request), not with ``kv.keys()``:
    nats-py's key listing watches the bucket with an ordered consumer and, when the entries
    are delivered before it has read the consumer's info (a loaded machine), reports "no
    keys" — so ``replay --verify`` found every event "signed with a key the notary never
    registered" (bench/chaos.py, the full suite under load)."""
    from nats.js.errors import KeyDeletedError, KeyNotFoundError, NotFoundError

    kv = await notary_kv(js)
    prefix = f"$KV.{NOTARY_BUCKET}."
    info = await js.stream_info(f"KV_{NOTARY_BUCKET}", subjects_filter=f"{prefix}key.>")
    out: dict[str, set[str]] = {}
    for subject in sorted(info.state.subjects or {}):
        key = subject[len(prefix) :]
        try:
            entry = await kv.get(key)
        except (KeyDeletedError, KeyNotFoundError, NotFoundError):
            continue
        out[key[4:]] = set(json.loads(entry.value or b"[]"))
    return out


async def register_keys(js: Any, publics: dict[str, str] | dict[str, set[str]]) -> None:
    """Add public keys to the trusted ones (the notary's act: its connection writes).

    Each identity's set is updated with compare-and-set on the entry's revision (create when
    absent), retried on a conflict: two processes registering keys for one identity at once
    must both end up trusted, not the last writer alone."""
    import nats.errors
    from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError

    kv = await notary_kv(js)
    for name, pubs in publics.items():
        wanted = {pubs} if isinstance(pubs, str) else set(pubs)
        key = f"key.{name}"
        timeouts = 0
        for _attempt in range(20):
            try:
                entry = await kv.get(key)
            except (KeyNotFoundError, NotFoundError):
                entry = None
            except nats.errors.TimeoutError:
                # A busy server (the full suite under load): read again, a few times. A
                # refused write is not retried here: open_keyring sees the refusal and stops.
                timeouts += 1
                if timeouts > 3:
                    raise
                continue
            current = set(json.loads(entry.value or b"[]")) if entry is not None else set()
            if wanted <= current:
                break
            value = json.dumps(sorted(current | wanted)).encode()
            try:
                if entry is None:
                    await kv.create(key, value)
                else:
                    await kv.update(key, value, last=entry.revision)
                break
            except (KeyWrongLastSequenceError, Exception) as exc:
                # A concurrent writer won the revision (or created the key first), or the
                # write's reply was late (it may have landed: the read shows it): read again.
                if isinstance(exc, nats.errors.TimeoutError) and timeouts < 3:
                    timeouts += 1
                    continue
                if (
                    not isinstance(exc, KeyWrongLastSequenceError)
                    and "wrong last" not in str(exc).lower()
                    and "exists" not in str(exc).lower()
                ):
                    raise
                await asyncio.sleep(0.01 * (_attempt + 1))
        else:
            raise RuntimeError(
                f"could not register the keys of {name}: too many concurrent writers"
            )


@dataclass
class Anchor:
    session_id: str
    sequence: int
    event_id: str
    hash: str
    count: int
    notary: str = ""
    signature: str = ""

    def body(self) -> bytes:
        return json.dumps(
            {
                "session_id": self.session_id,
                "sequence": self.sequence,
                "event_id": self.event_id,
                "hash": self.hash,
                "count": self.count,
            },
            sort_keys=True,
        ).encode()


async def anchor_session(js: Any, keyring: Keyring, events: list[tuple[int, Any]]) -> Anchor:
    """Anchor the chain head of a session (its events as stored, in order)."""
    from oopav.events.chain import event_hash

    seq, last = events[-1]
    anchor = Anchor(last.aggregate_id, seq, last.id, event_hash(last), len(events))
    pair = keyring.pair(NOTARY)
    anchor.notary = pair.public_key.decode()
    anchor.signature = base64.b64encode(pair.sign(anchor.body())).decode()
    kv = await notary_kv(js)
    payload = json.loads(anchor.body())
    payload.update(notary=anchor.notary, signature=anchor.signature)
    await kv.put(f"head.{anchor.session_id}", json.dumps(payload).encode())
    return anchor


async def anchor_of(js: Any, session_id: str) -> Anchor | None:
    from nats.js.errors import KeyNotFoundError, NotFoundError

    kv = await notary_kv(js)
    try:
        entry = await kv.get(f"head.{session_id}")
    except (KeyNotFoundError, NotFoundError):
        return None
    d = json.loads(entry.value or b"{}")
    return Anchor(
        d["session_id"],
        d["sequence"],
        d["event_id"],
        d["hash"],
        d["count"],
        d.get("notary", ""),
        d.get("signature", ""),
    )


# -- verification -------------------------------------------------------------------------


@dataclass
class SignatureReport:
    signers: dict[str, int] = field(default_factory=dict)  # identity -> events signed
    unsigned: int = 0
    problems: list[str] = field(default_factory=list)
    anchored: bool = False
    required: bool = False  # the session is signed or anchored: every event must be signed

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "signers": self.signers,
            "unsigned": self.unsigned,
            "anchored": self.anchored,
            "problems": self.problems,
        }

    def describe(self) -> str:
        who = ", ".join(f"{n} x{c}" for n, c in sorted(self.signers.items())) or "nobody"
        if self.problems:
            more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return f"signatures FAIL: {self.problems[0]}{more}; signed by {who}"
        if not self.required:
            return "signatures: none (recorded before signing; nothing anchored)"
        anchored = ", chain head matches the notary's anchor" if self.anchored else ""
        return f"signatures OK: every event signed by its handler ({who}){anchored}"


def verify(
    events: list[tuple[Any, ...]],
    trusted: dict[str, set[str]],
    anchor: Anchor | None,
) -> SignatureReport:
    """Check ``(seq, event, Oopav-Sig header[, stored bytes])`` of one session, in stream
    order. The signature covers the stored bytes (a re-encoding may differ: a float field
    holding an int reads back as a float); without them, the event's encoding."""
    from oopav.bus.contracts import EMITS
    from oopav.events.chain import event_hashes
    from oopav.events.codec import REGISTRY

    report = SignatureReport(anchored=anchor is not None)
    signers: Counter[str] = Counter()
    report.required = anchor is not None or any(item[2] for item in events)
    for item in events:
        seq, event, header = item[0], item[1], item[2]
        stored = item[3] if len(item) > 3 else None
        where = f"seq {seq} ({event.type} by {event.actor})"
        if not header:
            report.unsigned += 1
            if report.required:
                report.problems.append(f"{where} is not signed")
            continue
        try:
            name, pub, sig_text = header.split(" ", 2)
            sig = base64.b64decode(sig_text)
        except ValueError:
            report.problems.append(f"{where}: unreadable signature header")
            continue
        data = event.subject.encode() + b"\n" + (stored or REGISTRY.encode(event))
        if not verify_signature(pub, data, sig):
            report.problems.append(f"{where}: the signature by {name} does not verify")
            continue
        if pub not in trusted.get(name, set()):
            report.problems.append(
                f"{where}: signed by {name} with a key the notary never registered ({pub[:10]}…)"
            )
            continue
        if name != identity_of(event.actor):
            report.problems.append(f"{where}: signed by {name}, not by its actor")
            continue
        if name in EMITS and event.type not in EMITS[name]:
            report.problems.append(f"{where}: {name} may not emit {event.type} (its contract)")
            continue
        signers[name] += 1
    report.signers = dict(signers)
    if anchor is not None:
        body = Anchor(
            anchor.session_id, anchor.sequence, anchor.event_id, anchor.hash, anchor.count
        ).body()
        if anchor.notary not in trusted.get(NOTARY, set()) or not verify_signature(
            anchor.notary, body, base64.b64decode(anchor.signature or "")
        ):
            report.problems.append("the chain head's anchor is not signed by the notary")
        else:
            pos = next((i for i, it in enumerate(events) if it[1].id == anchor.event_id), None)
            at = events[pos][1] if pos is not None else None
            if at is None or anchor.hash not in event_hashes(at) or pos + 1 != anchor.count:  # type: ignore[operator]
                report.problems.append(
                    f"the chain differs from the notary's anchor at event {anchor.event_id} "
                    f"(seq {anchor.sequence}, {anchor.count} events): the history was rewritten"
                )
    return report


class Notary:
    """Anchors chain heads: every ``every`` events of a session and at its end, the head
    (sequence, event id, hash, count) goes to the notary KV, signed by the notary key. Runs
    beside the handlers (``oopav up`` / ``oopav run``); a missed checkpoint (a restart) only
    means fewer anchors, the next one covers the chain up to there."""

    name = NOTARY

    def __init__(self, nc: Any, keyring: Keyring, every: int = ANCHOR_EVERY) -> None:
        self.nc = nc
        self.keyring = keyring
        self.every = every
        import asyncio

        # Made here, not in run(): a stop that comes before run() starts still counts.
        self._stop = asyncio.Event()
        self.anchored = 0

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        import asyncio

        from oopav.bus.store import EventStore
        from oopav.events.chain import TERMINAL_TYPES

        counts: Counter[str] = Counter()
        due: asyncio.Queue[str] = asyncio.Queue()

        async def on_msg(msg: Any) -> None:
            parts = msg.subject.split(".")
            if len(parts) < 5:
                return
            sid, kind = parts[3], parts[4]
            counts[sid] += 1
            if counts[sid] % self.every == 0 or kind in TERMINAL_TYPES:
                due.put_nowait(sid)

        js = self.nc.jetstream()
        store = EventStore(self.nc)
        sub = await self.nc.subscribe("oopav.ev.session.*.*", cb=on_msg)
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            while not self._stop.is_set():
                getting = asyncio.ensure_future(due.get())
                done, _ = await asyncio.wait(
                    {getting, stopping}, return_when=asyncio.FIRST_COMPLETED
                )
                if getting not in done:
                    getting.cancel()
                    break
                sid = getting.result()
                try:
                    events = await store.read("session", sid, skip_undecodable=True)
                    if events:
                        await anchor_session(js, self.keyring, events)
                        self.anchored += 1
                except Exception as exc:  # one anchor missed; the next one covers it
                    from oopav.logging import get_logger

                    get_logger("oopav.notary").warning(
                        "anchor_failed", session_id=sid, error=f"{type(exc).__name__}: {exc}"
                    )
        finally:
            stopping.cancel()
            with __import__("contextlib").suppress(Exception):
                await sub.unsubscribe()
