"""Signed history (issue 27 §5): every event signed with its handler's nkey, chain heads
anchored by the notary; `replay --verify` names the signers and fails on a rewritten chain
(recomputed hashes, no valid signatures) and on a key signing another handler's events."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import msgspec
from loop_harness import finish, finish_session, loop, plan_answer, rename_all, start, task

from oopav.bus.streams import EVENTS_STREAM
from oopav.events.chain import GENESIS, event_hash
from oopav.events.codec import REGISTRY
from oopav.history.signing import (
    SIG_HEADER,
    Keyring,
    anchor_of,
    anchor_session,
    keyring_of,
    register_keys,
    trusted_keys,
    verify,
)


async def _session(nats_url: str, repo: Path) -> tuple[str, Any]:
    async with loop(
        nats_url, {"planner": [plan_answer()], "actor": [rename_all(), finish()]}
    ) as bus:
        sid = await start(bus, task(repo))
        await finish_session(bus, sid)
        keyring = keyring_of(bus.nc)
        assert keyring is not None
        signed = await bus.events.read_signed("session", sid)
        await anchor_session(bus.nc.jetstream(), keyring, [(s, e) for s, e, _, _ in signed])
    return sid, keyring


async def test_every_event_is_signed_by_its_handler_and_verify_names_them(
    nc: Any, nats_url: str, data_dir: Path, repo: Path
) -> None:
    from oopav.replay import verify_session

    sid, _ = await _session(nats_url, repo)
    report = await verify_session(nats_url, sid, idle_timeout=10.0, total_timeout=120.0)
    assert report.ok, report.describe()
    sig = report.signatures
    assert sig.ok and sig.unsigned == 0 and sig.anchored
    assert {"intake", "observer", "orient", "planner", "actor", "verifier"} <= set(sig.signers)
    assert sum(sig.signers.values()) == report.recorded
    assert "signatures OK: every event signed by its handler" in sig.describe()
    assert "chain head matches the notary's anchor" in sig.describe()
    # The keys are nkeys under the data dir, private to their owner.
    seed = data_dir / "keys" / "observer.nk"
    assert seed.read_bytes().startswith(b"SU") and seed.stat().st_mode & 0o077 == 0


async def _rewrite(nc: Any, sid: str, change: Any, signer: Keyring | None) -> None:
    """An attacker with write rights to the stream: purge the session, publish a changed
    copy with every prev_hash recomputed (signed with their own key, or unsigned)."""
    from oopav.bus.store import EventStore

    events = await EventStore(nc).read("session", sid)
    js = nc.jetstream()
    await js.purge_stream(EVENTS_STREAM, subject=f"oopav.ev.session.{sid}.>")
    prev = GENESIS
    for _, e in events:
        e = msgspec.structs.replace(change(e), prev_hash=prev)
        payload = REGISTRY.encode(e)
        headers = {}
        if signer is not None:
            headers[SIG_HEADER] = signer.header(e.actor.split("/")[0], e.subject, payload)
        await js.publish(e.subject, payload, headers=headers or None)
        prev = event_hash(e)


def _forge_outcome(e: Any) -> Any:
    if e.type == "session_completed":
        return msgspec.structs.replace(e, summary="approved by the security team")
    return e


async def test_a_rewritten_session_with_recomputed_hashes_is_detected(
    nc: Any, nats_url: str, data_dir: Path, repo: Path, tmp_path: Path
) -> None:
    from oopav.events.chain import check_chain
    from oopav.replay import verify_session

    sid, _ = await _session(nats_url, repo)
    await _rewrite(nc, sid, _forge_outcome, signer=None)
    from oopav.bus.store import EventStore

    stored = await EventStore(nc).read("session", sid)
    assert check_chain(stored) == []  # the hash chain alone cannot tell: it was recomputed
    report = await verify_session(nats_url, sid, idle_timeout=10.0, total_timeout=120.0)
    assert not report.ok
    problems = report.signatures.problems
    assert any("is not signed" in p for p in problems)
    assert any("the history was rewritten" in p for p in problems)
    assert "signatures FAIL" in report.describe()

    # With the attacker's own keys: signatures verify, but the notary never registered them.
    await _rewrite(nc, sid, _forge_outcome, signer=Keyring(tmp_path / "attacker"))
    report = await verify_session(nats_url, sid, idle_timeout=10.0, total_timeout=120.0)
    problems = report.signatures.problems
    assert not report.ok and any("never registered" in p for p in problems), problems


async def test_a_handler_key_signing_another_handlers_event_is_detected(
    nc: Any, nats_url: str, data_dir: Path, repo: Path
) -> None:
    """The observer's (registered, valid) key signs the planner's plan: once as the planner's
    event, once claiming to be the observer's own."""
    sid, keyring = await _session(nats_url, repo)
    from oopav.bus.store import EventStore

    js = nc.jetstream()
    signed = await EventStore(nc).read_signed("session", sid)
    trusted = await trusted_keys(js)
    anchor = await anchor_of(js, sid)
    assert verify(signed, trusted, anchor).ok

    def resign(actor: str) -> list[tuple[int, Any, str | None]]:
        out = []
        for seq, e, header, _ in signed:
            if e.type == "plan_proposed":
                e = msgspec.structs.replace(e, actor=actor)
                header = keyring.header("observer", e.subject, REGISTRY.encode(e))
            out.append((seq, e, header))
        return out

    as_planner = verify(resign("planner/0.1"), trusted, None)
    assert any("signed by observer, not by its actor" in p for p in as_planner.problems)
    as_observer = verify(resign("observer/0.1"), trusted, None)
    assert any("observer may not emit plan_proposed" in p for p in as_observer.problems)
    # A signature over other bytes does not verify.
    seq, e, header, _ = signed[3]
    name, pub, _ = header.split(" ")
    bad = f"{name} {pub} {base64.b64encode(b'x' * 64).decode()}"
    broken = verify([*signed[:3], (seq, e, bad), *signed[4:]], trusted, None)
    assert any("does not verify" in p for p in broken.problems)


async def test_keys_registered_at_once_for_one_identity_are_all_trusted(nc: Any) -> None:
    """Processes that start together each register their key for the same identity: every key
    ends up trusted (compare-and-set on the entry), not the last writer's alone."""
    import asyncio

    js = nc.jetstream()
    keys = [f"URACE{i:02d}" for i in range(8)]
    await asyncio.gather(*(register_keys(js, {"racer": k}) for k in keys))
    assert set(keys) <= (await trusted_keys(js))["racer"]


async def test_a_late_reply_from_the_notary_bucket_is_read_again(nc: Any, monkeypatch: Any) -> None:
    """A read and a write of the notary bucket that time out (a busy server) are tried again;
    the write may have landed, so the retry reads first and writes only what is missing."""
    import nats.errors

    from oopav.history import signing

    js = nc.jetstream()
    real_kv = await signing.notary_kv(js)
    late = {"get": 1, "create": 1}

    class Late:
        def __getattr__(self, name: str) -> Any:
            fn = getattr(real_kv, name)
            if name not in late:
                return fn

            async def call(*args: Any, **kw: Any) -> Any:
                if late[name]:
                    late[name] -= 1
                    if name == "create":
                        await fn(*args, **kw)  # it lands; only the reply is lost
                    raise nats.errors.TimeoutError
                return await fn(*args, **kw)

            return call

    async def kv_of(_js: Any) -> Any:
        return Late()

    monkeypatch.setattr(signing, "notary_kv", kv_of)
    await signing.register_keys(js, {"latecomer": "ULATE"})
    assert late == {"get": 0, "create": 0}
    assert (await trusted_keys(js))["latecomer"] == {"ULATE"}


async def test_a_notary_that_times_out_once_still_registers_the_keys(
    nc: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """Under load the notary's KV write timed out once and the process signed every event
    with keys nobody registered (replay --verify: "a key the notary never registered"): a
    timeout is retried, and the keys end up trusted."""
    import nats.errors

    from oopav.history import signing

    calls: list[int] = []
    real = signing.register_keys

    async def flaky(js: Any, publics: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise nats.errors.TimeoutError
        await real(js, publics)

    monkeypatch.setattr(signing, "register_keys", flaky)
    keyring = await signing.open_keyring(nc, nc.jetstream(), tmp_path / "keys")
    assert keyring is not None and len(calls) == 2
    trusted = await trusted_keys(nc.jetstream())
    assert keyring.public("intake") in trusted["intake"]


async def test_a_timeout_after_a_permissions_error_is_not_retried(
    nc: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """A write the account may not make ends in a timeout too (the server's refusal is an
    asynchronous error on the connection): that one is final, or every least-privilege
    handler would wait out the retries at start-up."""
    import nats.errors

    from oopav.history import signing

    calls: list[int] = []

    async def refused(js: Any, publics: Any) -> None:
        calls.append(1)
        nc._err = nats.errors.Error(
            'nats: Permissions Violation for Publish to "$KV.OOPAV_NOTARY.key.intake"'
        )
        raise nats.errors.TimeoutError

    monkeypatch.setattr(signing, "register_keys", refused)
    keyring = await signing.open_keyring(nc, nc.jetstream(), tmp_path / "keys")
    assert keyring is not None and len(calls) == 1


async def test_a_handler_on_its_own_machine_is_trusted_once_its_key_is_registered(
    nc: Any, nats_url: str, tmp_path: Path
) -> None:
    """Per-handler deployments: the actor signs with a seed only its machine holds and may not
    write the notary bucket; `oopav notary trust` registers its public key, after which its
    events verify (and before which they are named)."""
    import json

    from helpers.cli import run_oopav
    from oopav.events import catalog as ev
    from oopav.events.factory import root_event

    remote = Keyring(tmp_path / "actor-machine" / "keys")
    e = root_event(ev.TaskSubmitted, handler="actor", instruction="x", repo="/r")
    e = msgspec.structs.replace(e, prev_hash=GENESIS)
    payload = REGISTRY.encode(e)
    signed = [(1, e, remote.header("actor", e.subject, payload), payload)]
    before = verify(signed, await trusted_keys(nc.jetstream()), None)
    assert any("never registered" in p for p in before.problems), before.problems

    data = tmp_path / "admin"
    rc, out, err = await run_oopav(
        "notary", "trust", "actor", "nonsense", url=nats_url, data_dir=data
    )
    assert rc == 2 and "not an nkey public key" in err, (rc, err)
    rc, out, err = await run_oopav(
        "notary", "trust", "actor", remote.public("actor"), url=nats_url, data_dir=data
    )
    assert rc == 0 and f"trusted actor {remote.public('actor')}" in out, err
    after = verify(signed, await trusted_keys(nc.jetstream()), None)
    assert not any("never registered" in p for p in after.problems), after.problems
    rc, out, _ = await run_oopav("notary", "keys", "--json", url=nats_url, data_dir=data)
    assert rc == 0 and remote.public("actor") in json.loads(out)["actor"]
    # A handler machine's whole keys directory at once, each seed under its own name.
    remote.public("planner")
    rc, out, err = await run_oopav(
        "notary", "trust", "-", "--from-keys", str(remote.directory), url=nats_url, data_dir=data
    )
    assert rc == 0 and f"trusted planner {remote.public('planner')}" in out, err


def test_processes_sharing_a_data_dir_agree_on_one_seed(tmp_path: Path) -> None:
    """`oopav up`'s handlers (or a restarted one) make their seeds at the same moment: each
    gets the one seed written whole, none fails and signs nothing."""
    import os
    import threading

    publics: list[str] = []
    errors: list[BaseException] = []

    def make() -> None:
        try:
            publics.append(Keyring(tmp_path / "keys").public("actor"))
        except BaseException as exc:  # the test reports any failure
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and len(publics) == 24 and len(set(publics)) == 1
    assert sorted(os.listdir(tmp_path / "keys")) == ["actor.nk"]  # no temporary file left
    assert (tmp_path / "keys" / "actor.nk").stat().st_mode & 0o077 == 0


async def test_a_notary_still_busy_after_start_up_gets_the_keys_later(
    nc: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """A fresh cluster under load (CI: a stream leader killed mid-session) timed out every
    start-up attempt, and every event stayed signed by a key "the notary never registered":
    start-up goes on, and the keys are registered in the background once the notary answers."""
    import asyncio

    import nats.errors

    from oopav.history import signing

    calls: list[int] = []
    real = signing.register_keys

    async def busy_for_a_while(js: Any, publics: Any) -> None:
        calls.append(1)
        if len(calls) <= 5:  # every start-up attempt, then one of the background ones
            # What a fresh cluster answers while the bucket's stream elects its leader.
            raise nats.errors.NoRespondersError if len(calls) % 2 else nats.errors.TimeoutError
        await real(js, publics)

    monkeypatch.setattr(signing, "register_keys", busy_for_a_while)
    keyring = await signing.open_keyring(nc, nc.jetstream(), tmp_path / "keys")
    assert keyring is not None and len(calls) == 4  # start-up did not wait for the notary
    for _ in range(300):
        trusted = await trusted_keys(nc.jetstream())
        if keyring.public("intake") in trusted.get("intake", set()):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the keys were never registered ({len(calls)} attempts)")
    assert len(calls) == 6
