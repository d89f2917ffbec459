"""The flywheel: a policy trained on the loop's own sessions acts in the loop (issue 25).

    python bench/flywheel.py [--short] [--tasks 200] [--heldout 100] [--steps 300] [--gen2]
        [--families rename_call,rename_method,rename_attr] [--shape small] [--verify 3]
        [--pool N] [--augment N] [--augment-parts all|shared] [--prompt-loss] [--pretok code]
        [--minimal-rules] [--copy-names instruction|prompt] [--gen1-from WORKDIR]
        [--gen0-from WORKDIR] [--gen2-data-from WORKDIR]
        [--explore-iterations N] [--negatives W]
        [--negative-tokens all|structure] [--seed1 N] [--seed2 N] [--failure-positives N] [--replay K]
        [--dpo W] [--dpo-beta B] [--negatives-from all|pairs] [--feedback-positives N]
        [--gen1-b-no-feedback] [--pass-at 1,4,8 [--pass-temperature T] [--pass-on b,pool]
        [--pass-only [--gen1-b]] [--pass-iterations N]] [--expert M] [--pass-from JSON]
        [--pool-b N]

- **Generation 0**: synthetic codemod tasks on the standard library (renames of functions,
  methods, attributes; ``migrate_api`` call-pattern changes with ``--families``), each a
  one-file repository with a test that passes only when the file has the expected code; solved
  by ``synth:`` from the task's example through the real loop (NATS, handlers, sandbox,
  verifier: real sessions, a few at once).
- **Generation 1**: a fresh policy (``--shape``; its tokenizer trained on generation 0's
  records only) trained with SFT for ``--steps`` steps (a step budget, not seconds) on the
  learner's export of those sessions with the compact profile (``--profile compact``: the
  prompts the loop sends a local ``hf:`` policy, answers in the compact form), then run through
  the real loop as ``hf:<checkpoint>`` on held-out tasks (source files never trained on)
  **without examples**: session success (the test passes), valid (the first answer is a
  well-formed action) and exact (its rule gives the expected code), with Wilson 95% intervals.
- **Generation 2** (``--gen2``): generation 1 trained ``--steps`` more steps on generation 0's
  data plus its own verified sessions; the control is generation 1 trained as many steps on
  generation 0's data only; both, and generation 1 again, run on a second held-out set
  (``--heldout-b``); the differences carry Newcombe intervals.
- ``--augment N``: every policy trains with N name-permuted copies of each record (the SFT
  recipe's ``augment: names``; its tokenizer on the copies too). ``--pool N``: generation 1
  also attempts N unlabelled tasks of training files; its verified sessions there join
  generation 2's data (never the control's). ``--minimal-rules``: generation 0's answers are
  cut to the shortest rule that rewrites their own task's files byte-identically before any
  policy trains on them (``oopav.trainer.minrule``). ``--copy-names instruction``: every policy
  session decodes copy-constrained (``policy.copy_names``, ``oopav.models.copying``): the
  action's words are the instruction's or the checkpoint's answer vocabulary.
  ``--gen1-from WORKDIR``: generation 0's data and generation 1's checkpoint come from an
  earlier run's workdir (same task options), so a decoding option is measured on the very
  same policy without retraining; ``--gen0-from WORKDIR`` reuses generation 0's data only and
  trains generation 1 anew on them (more ``--steps``, another ``--shape``). ``--negatives W``: generation 2 also learns to avoid
  generation 1's own refused or undone answers (its sessions on A and the pool) with an
  unlikelihood term of weight W (trainer/negatives.py; ``--negative-tokens structure`` leaves
  the copied names out of it); the control never sees them. ``--seed1 N``: another training
  draw of generation 1 on the same tasks; ``--seed2 N``: another training draw of generation 2
  and the control. ``--failure-positives N``: at each training-file task
  generation 1 failed in every attempt (the pool's; ``--replay K``: also K of generation 0's own
  tasks, attempted without examples), a ``synth:`` session with the task's example gives a
  verified answer from the very state generation 1 failed in (its compact prompt is
  byte-identical); it joins generation 2's data N times and is paired with generation 1's
  refused answers there (trainer/preference.py); ``--dpo W`` adds a DPO term on those pairs
  (reference: generation 1, frozen), ``--negatives W --negatives-from pairs`` an unlikelihood
  term on their rejected answers only. Held-out files are never failure states.
- ``--pass-at 1,4,8``: generation 1's pass@k on held-out B and the pool, each task as a group
  of max(k) independent one-attempt sessions through the loop, sampled at
  ``--pass-temperature`` (the ceiling of self-training from its own samples); ``--expert M``:
  generation 2's own data are those verified samples of the pool, at most M distinct answers
  per task (expert iteration); ``--pass-from`` reuses an earlier run's samples (same workdir).
- ``--pool-b N``: transductive self-training, the flywheel of an agent at work on one
  repository: N unlabelled tasks on **held-out B's own source files** (drawn from a corpus of
  B's files alone; no task shares (file, target name) with a task of B, checked), attempted by
  generation 1 without examples through the loop (``--explore-iterations``); its verified
  sessions (and negatives) join generation 2's data, never the control's. With ``--pass-at``
  and ``--pass-on pool-b`` the pool is sampled as groups instead, and ``--expert M`` distils
  those verified samples. No task of B, no gold answer: the verifier's labels only.
- Every policy's first ``--verify`` sessions are replayed (``replay --verify``).
- Nobody answers a bench: sessions run with ``policy.escalation: abort`` (the loop never waits
  on a person) and the watchdog enforces ``human_deadline_s`` besides.

Targets (2 cores): generation 1 >= 50% success; generation 2 >= generation 1 + 10 points while
the control gains <= 2. Wall time and load are printed. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

FAMILIES = ("rename_call", "rename_method", "rename_attr")
# The test compares a digest of the file's AST with the expected one, never the expected code
# itself: the loop's compact prompt shows the first file where a name of the instruction
# occurs, and a test that spelled out the expected code (the earlier form) was that file for
# some tasks — the answer's new name in the prompt, and a snippet that was not the code.
CHECK = """import ast, hashlib, pathlib, sys
got = ast.dump(ast.parse(pathlib.Path("mod.py").read_text()))
sys.exit(0 if hashlib.sha256(got.encode()).hexdigest() == {digest!r} else 1)
"""


def check_script(post: str) -> str:
    import ast
    import hashlib

    return CHECK.format(digest=hashlib.sha256(ast.dump(ast.parse(post)).encode()).hexdigest())


def rate(k: int, n: int) -> str:
    from oopav.trainer.stats import fmt_rate

    return fmt_rate(k, n)


def split_heldout(held: list[Any], n_a: int, n_b: int) -> tuple[list[Any], list[Any]]:
    """Held-out sets A and B with no source file in both: generation 2 trains on generation
    1's sessions of A, so a file of A in B would be a file generation 2 was trained on."""
    a = held[:n_a]
    seen = {t.source for t in a}
    b = [t for t in held[n_a:] if t.source not in seen][:n_b]
    return a, b


def target_names(task: Any) -> frozenset[str]:
    """The names a task's rule targets: every identifier of its pattern, metavariables left
    out (``$OBJ.update($$$ARGS)`` -> ``{"update"}``, ``len($X)`` -> ``{"len"}``); a task without
    a pattern counts every identifier-like word of its rule (stricter, never looser)."""
    import re

    pattern = task.rule.get("pattern") or json.dumps(task.rule.get("rule"), sort_keys=True)
    return frozenset(re.findall(r"(?<![$\w])[A-Za-z_]\w*", re.sub(r"\$+\w+", "", pattern)))


def pool_on_files(
    held_b: list[Any],
    n: int,
    families: tuple[str, ...],
    seed: int,
    corpus: Path | None = None,
    max_seeds: int = 200,
    per_name: int = 4,
) -> list[Any]:
    """``--pool-b N``: N unlabelled tasks on held-out B's own source files (transductive
    self-training: the files a user's agent works on), never one of B's tasks — no pool task
    shares (file, target name) with a task of B, and at most ``per_name`` pool tasks (other
    snippets, other new names) share one (B's 5 files hold ~40 names B does not use). The
    main draw holds few more tasks on B's files (``generate`` walks each file once), so the
    pool is drawn from a corpus of B's files alone, with seeds ``seed``, ``seed + 1``, … until
    N are found (fewer if the files run out); B itself is never re-drawn."""
    import shutil

    from oopav.trainer.tasks import generate, stdlib_corpus

    if n <= 0 or not held_b:
        return []
    b_keys = {(t.source, name) for t in held_b for name in target_names(t)}
    b_ids = {t.id for t in held_b}
    seen: set[str] = set()
    uses: Counter[tuple[str, str]] = Counter()
    root = corpus or stdlib_corpus()
    out: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="oopav-pool-b-") as tmp:
        for source in sorted({t.source for t in held_b}):
            (Path(tmp) / source).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / source, Path(tmp) / source)
        for i in range(max_seeds):
            got = generate(
                10 * n + 100,
                seed=seed + i,
                holdout=0.5,
                corpus=Path(tmp),
                families=families,
                max_per_snippet=4,
            )
            for t in got.tasks:
                keys = {(t.source, name) for name in target_names(t)}
                if t.id in b_ids or t.id in seen or keys & b_keys:
                    continue
                if any(uses[k] >= per_name for k in keys):
                    continue
                seen.add(t.id)
                uses.update(keys)
                out.append(t)
                if len(out) >= n:
                    break
            if len(out) >= n:
                break
    # The invariant the measurement rests on, checked on the result (not only while drawing).
    for t in out:
        if t.id in b_ids or {(t.source, name) for name in target_names(t)} & b_keys:
            raise AssertionError(f"pool-b task {t.id} is one of held-out B's (file, name)")
        if t.source not in {b.source for b in held_b}:
            raise AssertionError(f"pool-b task {t.id} is not on a file of held-out B")
    return out


def make_repo(root: Path, task: Any) -> Path:
    repo = root / task.id[:12]
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "mod.py").write_text(task.pre)
    (repo / "check_mod.py").write_text(check_script(task.post))
    return repo


def body(
    task: Any,
    repo: Path,
    model: str,
    examples: bool,
    retry_temperature: float | None = None,
    iterations: int = 3,
    retries: int = 1,
    candidates: int = 1,
    feedback: bool = True,
    copy_names: str | None = None,
    group: int = 0,
    group_temperature: float = 0.7,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "instruction": task.instruction,
        "repo": str(repo),
        "model": model,
        "test_command": ["python", "check_mod.py"],
        # A policy gets one retry (with the refusal as feedback): a failing small policy
        # otherwise spends six model calls per session, most of a CPU bench's time.
        # A wait on a grant (``permission_requested``: a policy's action outside the task's
        # scope) ends at the watchdog's wall budget; escalation: abort does not cover it, and
        # the default budget held a whole bench phase for ten minutes on one session.
        "budgets": {
            "retries_per_phase": 2 if examples else retries,
            "iterations": 6 if examples else iterations,
            "wall_seconds_per_phase": 120.0,
        },
        # Nobody answers a bench: where the loop would ask a person the session ends at once
        # (escalation: abort); the deadline and the watchdog stay as a second guard.
        "policy": {"escalation": "abort", "human_deadline_s": 30.0},
    }
    if examples:
        out["examples"] = [{"path": "mod.py", "before": task.pre, "after": task.post}]
    if retry_temperature:
        # The policy's later attempts in a session sample (its first stays greedy): a greedy
        # retry repeats the answer that just failed (policy.retry_temperature, issue 25).
        out["policy"]["retry_temperature"] = retry_temperature
    if not feedback:
        # A retry asks the first prompt again (sampled): the policy never saw a feedback line.
        out["policy"]["compact_feedback"] = False
    if copy_names:
        # Copy-constrained decoding: the action's words are the instruction's (or the
        # prompt's) or the checkpoint's answer vocabulary (policy.copy_names, models/copying.py).
        out["policy"]["copy_names"] = copy_names
    if group:
        # K independent sessions of this one task (a group submission,
        # reflection/groups.py): each its own workspace, every actor call sampled at
        # ``group_temperature`` with the member's own seed 0..K-1 (``--pass-at``).
        out["group"] = {
            "k": group,
            "grid": [{"temperature": group_temperature, "top_p": 1.0, "seed": i}
                     for i in range(group)],
        }  # fmt: skip
    if candidates > 1:
        # Competing candidates per step, each tried on a copy and graded by the task's test
        # (handlers/support/candidates.py); with retry_temperature the later ones sample.
        out["policy"]["candidates"] = candidates
    return out


async def run_sessions(
    url: str, data: Path, bodies: list[dict[str, Any]], concurrency: int = 4
) -> list[Any]:
    """Submit every body to the real loop (all handlers in this process); the final states."""
    from oopav.app import open_bus
    from oopav.config import Settings
    from oopav.handlers.ports import Ports
    from oopav.services import run_handlers, submit_task, wait_session

    settings = Settings(nats_url=url, data_dir=data)
    async with open_bus(settings, name="bench-flywheel") as bus:
        stop, ready = asyncio.Event(), asyncio.Event()
        runner = asyncio.create_task(
            run_handlers(
                bus,
                stop,
                ports=Ports(settings=settings),
                # The projection feeds the watchdog, which enforces every deadline (with
                # projection=False nothing ended a session waiting on a person).
                projection=True,
                ready=ready,
                signals=False,
            )
        )
        await ready.wait()
        # A few sessions at once (the loop keeps each session's events in order): the sandbox
        # and the verifier's test runs overlap on 2 cores; the order of the results is the
        # order of the bodies.
        sem = asyncio.Semaphore(concurrency)

        async def one(b: dict[str, Any]) -> Any:
            async with sem:
                reply = await submit_task(bus, b, timeout=60)
                if "session_id" not in reply:
                    raise SystemExit(f"submission refused: {reply}")
                if "group" in b:
                    # A group: every member's final state, in member order (member i
                    # sampled with seed i).
                    return [
                        await wait_session(bus, sid, 600)
                        for sid in reply.get("session_ids") or [reply["session_id"]]
                    ]
                return await wait_session(bus, reply["session_id"], 600)

        try:
            states = list(await asyncio.gather(*(one(b) for b in bodies)))
        finally:
            stop.set()
            await asyncio.wait_for(runner, 60)
        return states


async def actor_answers(url: str, sids: list[str]) -> list[list[str]]:
    """Every actor answer of each session, in order (the first is the first attempt)."""
    from oopav.bus.store import EventStore, connect

    nc = await connect(url, name="bench-flywheel-read")
    try:
        store = EventStore(nc)
        out = []
        for sid in sids:
            calls = [
                e
                for _, e in await store.read("session", sid)
                if e.type == "model_called" and e.role == "actor"
            ]
            out.append([c.response for c in calls])
        return out
    finally:
        await nc.close()


async def _retrying(call: Any, deadline_s: float = 120.0) -> Any:
    """``call()``, again after a pause while the server refuses a consumer: reading a
    session's prompt blobs opens one ephemeral ordered consumer per blob (nats-py's object
    store), which the server deletes only after 5 s idle, so exporting ~1,000 sessions in a
    row reached JetStream's consumer limit (err_code 10026) and the export crashed."""
    from nats.js.errors import BadRequestError

    t_end = time.monotonic() + deadline_s
    while True:
        try:
            return await call()
        except BadRequestError as e:
            if getattr(e, "err_code", None) != 10026 or time.monotonic() > t_end:
                raise
            await asyncio.sleep(6.0)


async def _export(
    url: str, out: Path, kind: str, filters: Any, sids: set[str] | None, name: str
) -> int:
    """Write the ``kind`` dataset (``sft``, ``negatives``) of the completed sessions in
    ``sids`` (all when None) to ``out``; its record count."""
    from oopav.bus.store import EventStore, connect
    from oopav.trainer.datasets import write_dataset
    from oopav.trainer.stream import completed_sessions, records_of

    nc = await connect(url, name=name)
    try:
        store = EventStore(nc)
        sessions = [
            await _retrying(lambda sid=sid: records_of(store, sid, filters, (kind,)))
            async for _, sid in completed_sessions(store)
            if sids is None or sid in sids
        ]
        return write_dataset(out, kind, sessions, filters, parquet=False).count
    finally:
        await nc.close()


async def export_compact(url: str, out: Path, sids: set[str] | None = None) -> int:
    from oopav.trainer.datasets import Filters, read_records

    filters = Filters(successful_only=True, roles=("actor",), profile="compact")
    count = await _export(url, out, "sft", filters, sids, "bench-flywheel-export")
    # In an order of their content, not of the sessions' completion (see write_records).
    return write_records(out, read_records(out)) if count else count


async def export_negatives(url: str, out: Path, sids: set[str]) -> dict[str, Any]:
    """The actor answers the loop refused or undid in these sessions (the learner's negatives
    format: prompt, rejected answer, status, why), with the compact profile's prompts — what
    the policy was asked when it gave them (``--negatives``)."""
    from oopav.trainer.datasets import Filters, read_records

    filters = Filters(roles=("actor",), profile="compact")
    count = await _export(url, out, "negatives", filters, sids, "bench-flywheel-negatives")
    why = Counter(str(r.get("status")) for r in read_records(out)) if count else Counter()
    return {"records": count, "status": dict(why)}


def merge(out: Path, *dirs: Path) -> int:
    from oopav.trainer.datasets import read_records

    return write_records(out, [r for d in dirs for r in read_records(d)])


def _content_key(rec: dict[str, Any]) -> str:
    import hashlib

    text = json.dumps([rec.get("prompt"), rec.get("completion"), rec.get("rejected")], default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def write_records(out: Path, recs: list[dict[str, Any]], fmt: str = "sft") -> int:
    """``recs`` as a dataset directory, in an order of their content (wave 3p): the stream
    holds them in the order the sessions completed, which varies from run to run, and the
    SFT sampler's seeded shuffle permutes that order — the same 406 records of generation 0
    in two completion orders trained generation 1 to 52% and 42% on A. Sorted by a hash of
    prompt and answer, the same records train the same weights."""
    from oopav.trainer.datasets import encode_jsonl

    recs = sorted(recs, key=_content_key)
    out.mkdir(parents=True, exist_ok=True)
    data = encode_jsonl(recs)
    (out / f"{fmt}-00000.jsonl").write_bytes(data)
    import hashlib

    manifest = {
        "format": fmt,
        "count": len(recs),
        "duplicates": 0,
        "sessions": [],
        "filters": {},
        "shards": [{"path": f"{fmt}-00000.jsonl", "count": len(recs)}],
        "content_hash": hashlib.sha256(data).hexdigest(),
        "stream_sequences": {},
        "version": 1,
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return len(recs)


def minimal(src: Path, out: Path, tasks_by_sid: dict[str, Any]) -> dict[str, Any]:
    """Generation 0's records with each answer's rule at its shortest that rewrites its own
    task's files byte-identically (``--minimal-rules``, trainer/minrule.py): the task's files
    are its repository's, ``mod.py`` and the test; no held-out task is looked at."""
    from oopav.trainer.datasets import read_records
    from oopav.trainer.minrule import minimize_records

    def files_of(sid: str) -> dict[str, str] | None:
        t = tasks_by_sid.get(sid)
        return None if t is None else {"mod.py": t.pre, "check_mod.py": check_script(t.post)}

    t0 = time.perf_counter()
    recs, counts = minimize_records(read_records(src), files_of)
    write_records(out, recs)
    return counts | {"seconds": round(time.perf_counter() - t0, 1)}


def star(src: Path, out: Path, weight: int, retried: set[str]) -> dict[str, int]:
    from oopav.trainer.datasets import read_records
    from oopav.trainer.star import star_records

    recs, counts = star_records(read_records(src), weight, retried)
    write_records(out, recs)
    return counts


async def failure_states(
    url: str,
    work: Path,
    failed: list[tuple[str, Any]],
    weight: int,
    minimal_rules: bool,
    held_sources: set[str],
) -> tuple[Path, Path, dict[str, Any]]:
    """Verified answers at generation 1's failure states, and preference pairs there
    (``--failure-positives``): for each task generation 1 failed in every attempt (``failed``:
    its session id and the task; training files only), a generation-0 style session
    (``synth:`` from the task's example) on a fresh copy of the task; its compact export,
    rendered from its first attempt's state (trainer/star.py), is the positive, and each of
    generation 1's refused answers whose prompt is byte-identical to it is paired with it
    (trainer/preference.py). Returns (the positives, ``weight`` copies each, as an SFT
    dataset; the pairs dataset; counts)."""
    from oopav.trainer.datasets import read_records
    from oopav.trainer.preference import failure_pairs
    from oopav.trainer.star import star_records

    # The held-out sets are never touched: a failure state on a held-out file is refused here,
    # whatever the caller passed.
    bad = [t.id for _, t in failed if t.source in held_sources]
    if bad:
        raise SystemExit(f"failure states on held-out files: {bad[:3]}")
    t0 = time.perf_counter()
    tasks = [t for _, t in failed]
    bodies = [body(t, make_repo(work / "repos-fail-synth", t), "synth:", True) for t in tasks]
    states = await run_sessions(url, work / "data", bodies)
    solved = {s.session_id for s in states if s.outcome == "success"}
    raw = work / "data-fail-synth"
    count = await export_compact(url, raw, solved) if solved else 0
    recs = read_records(raw) if count else []
    if minimal_rules and recs:
        by_sid = {s.session_id: t for s, t in zip(states, tasks, strict=True)}
        minimal(raw, work / "data-fail-synth-min", by_sid)
        recs = read_records(work / "data-fail-synth-min")
    firsts, _ = star_records(recs, 1)
    negatives = work / "data-fail-neg"
    failed_sids = {sid for sid, _ in failed}
    neg = await export_negatives(url, negatives, failed_sids)
    rejected = read_records(negatives) if neg["records"] else []
    pairs, counts = failure_pairs(firsts, rejected, failed_sids)
    pos = work / "data-fail-pos"
    write_records(pos, [r for r in firsts for _ in range(weight)])
    # The teacher's verified answers themselves (once each, with their recorded states): the
    # targets of --feedback-positives at generation 1's retry states on these tasks.
    write_records(work / "data-fail-firsts", recs)
    pairs_dir = work / "data-fail-pairs"
    write_records(pairs_dir, pairs, "pairs")
    out = {
        "failed_tasks": len(tasks),
        "synth_success": len(solved),
        "positives": len(firsts),
        "positive_rows": len(firsts) * weight,
        "firsts": str(work / "data-fail-firsts"),
        "weight": weight,
        "negatives": neg,
        "pairs": counts,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    return pos, pairs_dir, out


async def feedback_positives(
    url: str,
    work: Path,
    weight: int,
    tried: dict[str, Any],
    won: set[str],
    teacher: Path | None,
    held_sources: set[str],
) -> tuple[Path, dict[str, Any]]:
    """Verified answers at generation 1's **retry states** on training files
    (``--feedback-positives``, trainer/feedback.py): every prompt of generation 1's second or
    later attempts in its sessions of ``tried`` (session id -> task: the pool's and
    ``--replay``'s; never a held-out file), which carries the loop's feedback on the refused
    attempt before, paired with a verified answer for that task — generation 1's own winning
    attempt of the session (``won``) or, where it failed in every attempt, the ``synth:``
    teacher's answer (``teacher``: the failure states' sessions). ``weight`` copies each."""
    from oopav.trainer.datasets import read_records
    from oopav.trainer.feedback import feedback_rows

    bad = [t.id for t in tried.values() if t.source in held_sources]
    if bad:
        raise SystemExit(f"feedback states on held-out files: {bad[:3]}")
    t0 = time.perf_counter()
    own = work / "data-fb-own"
    n_own = await export_compact(url, own, won) if won else 0
    own_recs = read_records(own) if n_own else []
    refused = work / "data-fb-neg"
    neg = await export_negatives(url, refused, set(tried))
    neg_recs = read_records(refused) if neg["records"] else []
    teacher_recs = read_records(teacher) if teacher is not None else []
    # Generation 1's own winning answer first (its own form), the teacher's where it had none.
    rows, counts = feedback_rows(own_recs + teacher_recs, neg_recs + own_recs, set(tried), weight)
    out = work / "data-fb-pos"
    write_records(out, rows)
    counts |= {"own_verified": n_own, "teacher": len(teacher_recs), "negatives": neg,
               "weight": weight, "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    return out, counts


SHAPES = {
    # The smallest policy that learned the renames on CPU (bench notes in docs/benchmarks.md).
    "small": {
        "vocab_size": 512,
        "hidden_size": 128,
        "intermediate_size": 256,
        "layers": 2,
        "heads": 4,
        "kv_heads": 2,
    },
    "default": {},
}


def build(
    out: Path,
    dataset: Path,
    shape: str,
    seed: int,
    pretok: str = "gpt2",
    augment: int = 0,
    parts: str = "all",
) -> str:
    """A fresh policy whose tokenizer is trained on generation 0's training records only
    (prompts and answers of the tasks it is trained on: no held-out text) and, with
    ``augment``, their name-permuted copies (the recipe's: made-up names split into generic
    pieces, as an unseen task's names will)."""
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.sft import corpus_texts

    texts = corpus_texts(recipe(out, dataset, 1, "new", 0.0, seed, augment=augment, parts=parts))
    return str(
        build_policy(
            out, texts, shape=PolicyShape(**SHAPES[shape]), seed=seed, pre_tokenizer=pretok
        )
    )


def recipe(
    out: Path,
    dataset: Path,
    steps: int,
    model: str,
    lr: float,
    seed: int = 0,
    prompt_loss: bool = False,
    augment: int = 0,
    parts: str = "all",
    negatives: Path | None = None,
    negative_weight: float = 0.0,
    negative_copy: bool = False,
    negative_tokens: str = "all",
    preferences: Path | None = None,
    preference_weight: float = 0.0,
    preference_beta: float = 0.1,
) -> Any:
    from oopav.trainer.sft import SFTRecipe

    return SFTRecipe(
        output_dir=str(out),
        model=model,
        dataset=str(dataset),
        max_steps=steps,
        batch_size=8,
        learning_rate=lr,
        max_length=768,  # a compact prompt (<= 512 tokens) and its answer
        eval_n=0,
        threads=1,
        seed=seed,
        logging_steps=max(1, steps // 5),
        prompt_loss=prompt_loss,
        augment="names" if augment else "",
        augment_copies=augment,
        augment_parts=parts,
        negatives=str(negatives) if negatives else None,
        negative_weight=negative_weight if negatives else 0.0,
        negative_copy=negative_copy and bool(negatives),
        negative_tokens=negative_tokens,
        preferences=str(preferences) if preferences else None,
        preference_weight=preference_weight if preferences else 0.0,
        preference_beta=preference_beta,
        # Scored where the policy answers: under copy-constrained decoding when it is on.
        preference_copy=negative_copy and bool(preferences),
    )


def train(
    out: Path,
    dataset: Path,
    steps: int,
    model: str,
    lr: float,
    seed: int = 0,
    prompt_loss: bool = False,
    augment: int = 0,
    parts: str = "all",
    negatives: Path | None = None,
    negative_weight: float = 0.0,
    negative_copy: bool = False,
    negative_tokens: str = "all",
    preferences: Path | None = None,
    preference_weight: float = 0.0,
    preference_beta: float = 0.1,
    record: dict[str, Any] | None = None,
    on_error: Any = None,
) -> str:
    """Train; ``record`` (when given) gets the run's ``training_started`` data order (the
    negatives' and preferences' records) and its last logged metrics; ``on_error`` runs
    when training raises (stops the other arm's process)."""
    from oopav.trainer.sft import train_sft

    def emit(kind: str, fields: dict[str, Any]) -> None:
        if record is None:
            return
        if kind == "started":
            record["data_order"] = {
                k: v for k, v in fields.get("data_order", {}).items() if k != "order"
            }
        elif kind == "step":
            record["last_metrics"] = fields

    cfg = recipe(
        out, dataset, steps, model, lr, seed, prompt_loss, augment, parts, negatives,
        negative_weight, negative_copy, negative_tokens, preferences, preference_weight,
        preference_beta,
    )  # fmt: skip
    try:
        return str(train_sft(cfg, emit)["checkpoint"])
    except BaseException:
        if on_error is not None:
            on_error()
        raise


def training_process(cfg: Any) -> Any:
    from oopav.trainer.sft import TrainingProcess

    return TrainingProcess(cfg)


def control_checkpoint(side: Any, steps: int) -> str:
    """The control arm's checkpoint from its process; one line and exit when it failed.
    The deadline is generous (2 s a step, an hour at least): one thread here trains ~5
    steps a second."""
    try:
        return str(side.result(max(3600.0, 2.0 * steps)))
    except RuntimeError as exc:
        raise SystemExit(f"the control arm: {exc}") from None


async def verify(url: str, sids: list[str]) -> dict[str, int]:
    """``replay --verify`` of these sessions: the handlers re-run on a fresh server with the
    recorded answers and executions reproduce every event."""
    from oopav.replay import verify_session

    ok = 0
    for sid in sids:
        report = await verify_session(url, sid, idle_timeout=15.0, total_timeout=300.0)
        ok += bool(report.ok and report.replayed == report.recorded)
    return {"verified": ok, "of": len(sids)}


async def evaluate(
    url: str,
    work: Path,
    name: str,
    tasks: list[Any],
    checkpoint: str,
    replays: int,
    args: argparse.Namespace | None = None,
    iterations: int | None = None,
) -> dict[str, Any]:
    from oopav.trainer.rewards import score_env

    repos = work / f"repos-{name}"
    opts: dict[str, Any] = {}
    if args is not None:
        opts = {
            "retry_temperature": args.retry_temperature,
            "iterations": iterations or args.policy_iterations,
            "retries": args.policy_retries,
            "candidates": args.candidates,
            "feedback": not args.no_feedback,
            "copy_names": args.copy_names,
        }
    bodies = [body(t, make_repo(repos, t), f"hf:{checkpoint}", False, **opts) for t in tasks]
    t0 = time.perf_counter()
    states = await run_sessions(url, work / "data", bodies)
    calls = await actor_answers(url, [s.session_id for s in states])
    answers = [c[0] if c else "" for c in calls]
    scores = [score_env(a, t.pre, t.post) for a, t in zip(answers, tasks, strict=True)]
    # Sessions that succeeded only after a failed first attempt: what the session's later
    # (sampled) attempts add over the first answer.
    later = sum(
        s.outcome == "success" and not sc.exact for s, sc in zip(states, scores, strict=True)
    )
    n = len(tasks)
    res: dict[str, Any] = {
        "n": n,
        "success": sum(s.outcome == "success" for s in states),
        "valid": sum(s.valid for s in scores),
        "exact": sum(s.exact for s in scores),
        "seconds": time.perf_counter() - t0,
        "load": load(),
        "outcomes": dict(Counter(f"{s.outcome}:{s.end_reason}" for s in states)),
        "success_after_retry": later,
        "actor_calls": sum(len(c) for c in calls),
        "sids": [s.session_id for s in states if s.outcome == "success"],
        "session_ids": [s.session_id for s in states],
        "retried_sids": [
            s.session_id
            for s, c in zip(states, calls, strict=True)
            if s.outcome == "success" and len(c) > 1
        ],
    }
    res["replay"] = await verify(url, [s.session_id for s in states][:replays])
    print(
        f"{name:8} success {rate(res['success'], n)}  valid {rate(res['valid'], n)}  "
        f"exact {rate(res['exact'], n)}  {res['seconds']:.0f} s (load {res['load']}); "
        f"success after a failed first answer {later}; actor calls {res['actor_calls']}; "
        f"replay --verify {res['replay']['verified']}/{res['replay']['of']}; "
        f"outcomes {res['outcomes']}",
        flush=True,
    )
    return res


def solved_by_task(r: dict[str, Any]) -> list[bool]:
    """Whether each task of an evaluation was solved, in the order its sessions were
    submitted (``session_ids``: one per task, in the tasks' order; ``sids``: the verified)."""
    won = set(r.get("sids", ()))
    return [sid in won for sid in r.get("session_ids", [])]


def pass_at_rates(solved: list[list[bool]], ks: list[int]) -> dict[str, Any]:
    """pass@k of each task's independent sessions (``solved[t][i]``: session i of task t passed
    its test): for each k, the tasks that any of their first k sessions solved (a count, with
    its Wilson interval) and the unbiased estimate from all n sessions, the mean over tasks of
    1 - C(n - c, k) / C(n, k) (Chen et al. 2021; c solved of n)."""
    from math import comb

    from oopav.trainer.stats import rate as stat_rate

    out: dict[str, Any] = {}
    for k in ks:
        if any(len(s) < k for s in solved):
            raise ValueError(f"pass@{k} needs {k} sessions per task")
        hits = sum(any(s[:k]) for s in solved)
        est = [1.0 - comb(len(s) - sum(s), k) / comb(len(s), k) for s in solved]
        out[str(k)] = stat_rate(hits, len(solved)) | {"unbiased": sum(est) / max(1, len(est))}
    return out


async def pass_at(
    url: str,
    work: Path,
    name: str,
    tasks: list[Any],
    checkpoint: str,
    ks: list[int],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """pass@k through the real loop (``--pass-at``): each task submitted once as a group of
    max(ks) independent sessions (reflection/groups.py; each its own workspace), every actor
    call sampled at ``--pass-temperature`` with the member's seed, one attempt per session
    (``--pass-iterations``, no retry); a session counts when it ends ``success`` (its test
    passed in the verifier). The decoding is the evaluation's (``--copy-names``)."""
    k_max = max(ks)
    repos = work / f"repos-pass-{name}"
    bodies = [
        body(
            t,
            make_repo(repos, t),
            f"hf:{checkpoint}",
            False,
            iterations=args.pass_iterations,
            retries=0,
            copy_names=args.copy_names,
            group=k_max,
            group_temperature=args.pass_temperature,
        )
        for t in tasks
    ]
    t0, load0 = time.perf_counter(), load()
    groups = await run_sessions(url, work / "data", bodies, concurrency=max(1, 8 // k_max))
    solved = [[s.outcome == "success" for s in g] for g in groups]
    res: dict[str, Any] = {
        "n": len(tasks),
        "sessions": sum(len(g) for g in groups),
        "temperature": args.pass_temperature,
        "iterations": args.pass_iterations,
        "pass_at": pass_at_rates(solved, ks),
        "solved_per_task": dict(sorted(Counter(sum(s) for s in solved).items())),
        "outcomes": dict(Counter(f"{s.outcome}:{s.end_reason}" for g in groups for s in g)),
        "seconds": round(time.perf_counter() - t0, 1),
        "load": [load0, load()],
        # Each task's verified sessions (member order): expert iteration's candidates.
        "verified": [[s.session_id for s in g if s.outcome == "success"] for g in groups],
    }
    rates = "  ".join(
        f"pass@{k} {rate(res['pass_at'][str(k)]['k'], len(tasks))} "
        f"(unbiased {100 * res['pass_at'][str(k)]['unbiased']:.1f}%)"
        for k in ks
    )
    print(
        f"pass@k   {name}: {rates}  T {args.pass_temperature}, {res['sessions']} sessions "
        f"in {res['seconds']:.0f} s (load {load0} -> {load()}); tasks by sessions solved "
        f"{res['solved_per_task']}",
        flush=True,
    )
    return res


def expert_records(
    records: list[dict[str, Any]], verified: list[list[str]], per_task: int
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Expert iteration's data from ``--pass-at`` samples (``--expert M``): ``verified[t]`` the
    verified sessions of task t (member order), ``records`` their compact SFT records; per task
    its distinct answers (the completion's text; a task's sampled sessions share the first
    prompt), at most ``per_task``, in member order, each from its first-attempt prompt."""
    from oopav.trainer.star import first_attempt

    by_sid: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_sid.setdefault(str(rec.get("session_id")), []).append(rec)
    out: list[dict[str, Any]] = []
    tasks = 0
    for sids in verified:
        seen: set[str] = set()
        for sid in sids:
            for rec in by_sid.get(sid, []):
                first = first_attempt(rec)
                if first is None or len(seen) >= per_task:
                    continue
                text = json.dumps(first["completion"], sort_keys=True)
                if text in seen:
                    continue
                seen.add(text)
                out.append(first)
        tasks += bool(seen)
    counts = {"tasks_with_verified": sum(bool(v) for v in verified), "tasks": tasks,
              "verified_sessions": sum(len(v) for v in verified), "records": len(records),
              "rows": len(out), "per_task": per_task}  # fmt: skip
    return out, counts


def reuse_gen0(src: Path, minimal_rules: bool) -> tuple[Path, int]:
    """(generation 0's data, records) of an earlier run's workdir (``--gen0-from``: generation 1
    is trained anew on the very same records, e.g. for more steps)."""
    from oopav.trainer.datasets import read_manifest

    data = src / ("data-gen0-min" if minimal_rules else "data-gen0")
    if not (data / "manifest.json").is_file():
        raise SystemExit(f"--gen0-from {src}: no {data.name}/manifest.json there")
    return data, int(read_manifest(data)["count"])


def reuse(src: Path, minimal_rules: bool, f: dict[str, Any]) -> tuple[Path, str, int]:
    """(generation 0's data, generation 1's checkpoint, records) of an earlier run's workdir;
    a checkpoint trained before answer vocabularies were written gets its own, from the data it
    was trained on (trainer/sft.py save_answer_words)."""
    from oopav.models.copying import read_answer_words
    from oopav.trainer.datasets import read_manifest
    from oopav.trainer.sft import save_answer_words

    data = src / ("data-gen0-min" if minimal_rules else "data-gen0")
    ck = src / "gen1" / "final"
    if not (data / "manifest.json").is_file() or not (ck / "config.json").is_file():
        raise SystemExit(f"--gen1-from {src}: no {data.name}/manifest.json or gen1/final there")
    if read_answer_words(ck) is None:
        save_answer_words(recipe(ck.parent, data, 1, str(ck), 0.0), str(ck))
    count = int(read_manifest(data)["count"])
    f["gen0"] = {"reused": str(src), "records": count}
    print(f"gen0/1   reused from {src}: {count} records, checkpoint {ck}", flush=True)
    return data, str(ck), count


def same_vocabulary(source: str, targets: list[str]) -> dict[str, Any]:
    """Give each checkpoint of ``targets`` the answer vocabulary of ``source`` (the copy
    constraint's constant words, models/copying.py); what each had of its own."""
    import shutil

    from oopav.models.copying import ANSWER_WORDS_FILE, read_answer_words

    words = read_answer_words(source)
    if words is None:
        raise SystemExit(f"{source} has no answer vocabulary")
    out: dict[str, Any] = {"source": sorted(words)}
    for ck in targets:
        own = read_answer_words(ck) or set()
        out[Path(ck).parent.name] = {"own_extra": sorted(own - words),
                                     "own_missing": sorted(words - own)}  # fmt: skip
        shutil.copyfile(Path(source) / ANSWER_WORDS_FILE, Path(ck) / ANSWER_WORDS_FILE)
    return out


def load() -> float:
    return round(os.getloadavg()[0], 2)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from oopav.bus.server import EmbeddedServer
    from oopav.trainer.stats import fmt_diff, fmt_paired, paired, sign_test
    from oopav.trainer.tasks import generate

    families = tuple(f for f in args.families.split(",") if f)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="oopav-flywheel-"))
    t_start, load0 = time.perf_counter(), load()
    n_b = args.heldout_b or args.heldout
    got = generate(
        (args.tasks + args.pool + args.heldout + n_b) * 3,
        seed=args.seed,
        holdout=0.5,
        families=families,
    )
    train_split = [t for t in got.tasks if t.split == "train"]
    train_tasks = train_split[: args.tasks]
    # The pool: more tasks on training files, which generation 1 attempts without examples
    # (its verified sessions there are generation 2's new data); never a held-out file.
    pool = train_split[args.tasks : args.tasks + args.pool]
    held_a, held_b = split_heldout([t for t in got.tasks if t.split == "test"], args.heldout, n_b)
    # --pool-b: unlabelled tasks on held-out B's own files, none of B's (file, name) pairs.
    pool_b = pool_on_files(held_b, getattr(args, "pool_b", 0), families, args.seed)
    f: dict[str, Any] = {
        "families": list(families),
        "shape": args.shape,
        "steps": args.steps,
        "pre_tokenizer": args.pretok,
        "prompt_loss": args.prompt_loss,
        "augment": args.augment,
        "augment_parts": args.augment_parts,
        "minimal_rules_option": args.minimal_rules,
        "copy_names": args.copy_names,
        "gen1_from": args.gen1_from,
        "tasks": {
            "gen0": len(train_tasks),
            "pool": len(pool),
            "held_a": len(held_a),
            "held_b": len(held_b),
            "pool_b": len(pool_b),
        },
        # B's task ids: a run is compared with an earlier one only on the very same B.
        "held_b_ids": [t.id for t in held_b],
    }
    print(
        f"tasks: gen0 {len(train_tasks)}  pool {len(pool)}  held-out {len(held_a)} + "
        f"{len(held_b)} (no file in both)  families {','.join(families)}  policy {args.shape} "
        f"(pre-tokenizer {args.pretok}, prompt loss {args.prompt_loss}, augment names x"
        f"{args.augment} {args.augment_parts})  work {work}",
        flush=True,
    )
    if pool_b:
        f["pool_b_files"] = dict(Counter(t.source for t in pool_b))
        f["pool_b_families"] = dict(Counter(t.family for t in pool_b))
        print(
            f"pool-B   {len(pool_b)} unlabelled tasks on held-out B's {len(f['pool_b_files'])} "
            f"files (no (file, name) pair of B's): {f['pool_b_files']} {f['pool_b_families']}",
            flush=True,
        )
    server = EmbeddedServer(work / "nats", write_info=False)
    url = server.start()
    try:
        if args.gen1_from:
            # Generation 0's data and generation 1's checkpoint of an earlier run with the same
            # task options (the tasks are drawn again, identically): a decoding-time option
            # (--copy-names) is then measured on the very same policy, without retraining.
            gen0_data, ck1, count = reuse(Path(args.gen1_from), args.minimal_rules, f)
        elif args.gen0_from:
            # Generation 0's data of an earlier run with the same task options (its minimal
            # rules too); generation 1 is trained anew on them (--steps, --shape, --seed).
            gen0_data, count = reuse_gen0(Path(args.gen0_from), args.minimal_rules)
            f["gen0"] = {"reused": args.gen0_from, "records": count}
            print(f"gen0     reused from {args.gen0_from}: {count} records", flush=True)
        else:
            t0 = time.perf_counter()
            bodies = [
                body(t, make_repo(work / "repos-gen0", t), "synth:", True) for t in train_tasks
            ]
            states = await run_sessions(url, work / "data", bodies)
            ok = sum(s.outcome == "success" for s in states)
            f["gen0"] = {"success": ok, "n": len(states), "seconds": time.perf_counter() - t0}
            print(
                f"gen0     synth: success {rate(ok, len(states))}  {time.perf_counter() - t0:.0f} s"
            )
            gen0_data = work / "data-gen0"
            count = await export_compact(url, gen0_data, {s.session_id for s in states})
            f["gen0"]["records"] = count
            print(f"gen0     compact SFT records: {count}", flush=True)
            if args.minimal_rules:
                # Every later policy (generation 1, 2, the control) trains on the shortest rules.
                by_sid = {s.session_id: t for s, t in zip(states, train_tasks, strict=True)}
                f["minimal_rules"] = minimal(gen0_data, work / "data-gen0-min", by_sid)
                gen0_data = work / "data-gen0-min"
                print(f"gen0     minimal rules: {f['minimal_rules']}", flush=True)
        if not args.gen1_from:
            t0 = time.perf_counter()
            seed1 = args.seed if args.seed1 is None else args.seed1
            f["seed1"] = seed1
            base = build(
                work / "gen1-base",
                gen0_data,
                args.shape,
                seed1,
                args.pretok,
                args.augment,
                args.augment_parts,
            )
            ck1 = train(
                work / "gen1",
                gen0_data,
                args.steps,
                base,
                args.lr,
                seed1,
                args.prompt_loss,
                args.augment,
                args.augment_parts,
            )
            f["gen1_train"] = {"seconds": time.perf_counter() - t0, "load": load()}
            print(f"gen1     trained {args.steps} steps in {time.perf_counter() - t0:.0f} s")
        if args.pass_from:
            # An earlier --pass-at run in this same --workdir (its sessions are in this
            # store): its figures and verified sessions, not measured again.
            f["pass_at"] = json.loads(Path(args.pass_from).read_text())["pass_at"]
            f["pass_at"]["from"] = args.pass_from
        elif args.pass_at:
            # Headroom: generation 1's pass@k on held-out B and on the pool (its own sample
            # diversity, the ceiling of self-training from its verified samples).
            ks = sorted({int(k) for k in args.pass_at.split(",") if k})
            sets = {x for x in args.pass_on.split(",") if x}
            f["pass_at"] = {}
            if "b" in sets:
                f["pass_at"]["b"] = await pass_at(url, work, "B", held_b, ck1, ks, args)
            if pool and "pool" in sets:
                f["pass_at"]["pool"] = await pass_at(url, work, "pool", pool, ck1, ks, args)
            if pool_b and "pool-b" in sets:
                f["pass_at"]["pool_b"] = await pass_at(url, work, "pool-B", pool_b, ck1, ks, args)
        if args.pass_only:
            # Only generation 1's pass@k: no held-out A evaluation, no generation 2 (the
            # server stops in the finally below). ``--gen1-b``: also generation 1's own
            # sessions on B (greedy first answer, sampled retries), what pass@k is compared to.
            if args.gen1_b:
                f["gen1_b"] = await evaluate(url, work, "gen1-B", held_b, ck1, args.verify, args)
                rates = f.get("pass_at", {}).get("b", {}).get("pass_at", {})
                if rates:
                    top = max(rates, key=int)
                    k, n = rates[top]["k"], f["gen1_b"]["n"]
                    f["headroom_b"] = 100 * (k - f["gen1_b"]["success"]) / max(1, n)
                    print(
                        f"headroom on B: pass@{top} - gen1-B "
                        f"{fmt_diff(k, n, f['gen1_b']['success'], n)}",
                        flush=True,
                    )
            f["wall_seconds"] = time.perf_counter() - t_start
            f["load"] = [load0, load()]
            print(f"wall {f['wall_seconds']:.0f} s  load {load0:.1f} -> {load():.1f}")
            return f
        r1 = await evaluate(url, work, "gen1", held_a, ck1, args.verify, args)
        f["gen1"] = r1
        if args.gen2:
            negatives = pairs_dir = None
            if getattr(args, "gen2_data_from", None):
                # Another draw of the generation-2 step on the data an earlier run built from
                # the same generation 1 (its pool sessions, expert iteration, no negatives):
                # the pool is not run again.
                mixed = Path(args.gen2_data_from) / "data-gen2"
                if not (mixed / "manifest.json").is_file():
                    raise SystemExit(f"--gen2-data-from: no {mixed / 'manifest.json'}")
                if args.negatives or args.dpo or args.failure_positives:
                    raise SystemExit(
                        "--gen2-data-from reuses generation 2's records only: no --negatives, "
                        "--dpo or --failure-positives"
                    )
                from oopav.trainer.datasets import read_manifest

                f["gen2_records"] = int(read_manifest(mixed)["count"])
                f["gen2_data_from"] = str(mixed)
                print(f"gen2     data: {f['gen2_records']} records reused from {mixed}", flush=True)
            else:
                own_sids = set(r1["sids"])
                retried = set(r1["retried_sids"])
                tried = set(r1["session_ids"])
                if pool and not args.expert:
                    # Exploration: the pool's sessions feed generation 2 only, so they may try
                    # more often than the held-out evaluations (``--explore-iterations``).
                    rp = await evaluate(
                        url, work, "gen1-pool", pool, ck1, 0, args, args.explore_iterations
                    )
                    f["gen1_pool"] = {
                        k: v for k, v in rp.items() if k not in ("sids", "session_ids")
                    }
                    own_sids |= set(rp["sids"])
                    retried |= set(rp["retried_sids"])
                    tried |= set(rp["session_ids"])
                if pool_b and not args.expert:
                    # Transductive self-training: generation 1's sessions on B's own files (never a
                    # task of B; no example, no gold answer: the verifier's labels only). Its
                    # verified sessions (and, with --negatives, its refused answers) join
                    # generation 2's data; never failure states (held-out files).
                    rpb = await evaluate(
                        url, work, "gen1-poolB", pool_b, ck1, 0, args, args.explore_iterations
                    )
                    f["gen1_pool_b"] = {
                        k: v for k, v in rpb.items() if k not in ("sids", "session_ids")
                    }
                    own_sids |= set(rpb["sids"])
                    retried |= set(rpb["retried_sids"])
                    tried |= set(rpb["session_ids"])
                # Generation 1's failure states on training files (the pool's failed tasks and,
                # with --replay K, the failed ones of K of generation 0's own tasks).
                failed: list[tuple[str, Any]] = []
                # Every session of generation 1 on training files (session id -> task) and the
                # verified ones: the retry states of --feedback-positives.
                train_tried: dict[str, Any] = {}
                train_won: set[str] = set()
                if pool and not args.expert:
                    train_tried |= dict(zip(rp["session_ids"], pool, strict=True))
                    train_won |= set(rp["sids"])
                if pool and not args.expert:
                    failed += [
                        (sid, t)
                        for sid, t in zip(rp["session_ids"], pool, strict=True)
                        if sid not in set(rp["sids"])
                    ]
                if args.replay:
                    # Generation 0's own tasks, without examples: where generation 1 fails on a
                    # task it was trained on, generation 0's answer is the positive (the same
                    # teacher, the same task: selection, no new label). Its verified sessions
                    # there are not added (generation 0's data already holds those tasks).
                    rr = await evaluate(
                        url, work, "gen1-replay", train_tasks[: args.replay], ck1, 0, args
                    )
                    f["gen1_replay"] = {
                        k: v for k, v in rr.items() if k not in ("sids", "session_ids")
                    }
                    failed += [
                        (sid, t)
                        for sid, t in zip(rr["session_ids"], train_tasks, strict=False)
                        if sid not in set(rr["sids"])
                    ]
                    train_tried |= dict(zip(rr["session_ids"], train_tasks, strict=False))
                    train_won |= set(rr["sids"])
                pairs_dir = positives = fb_positives = None
                held_sources = {t.source for t in held_a} | {t.source for t in held_b}
                if args.failure_positives or args.feedback_positives:
                    # With --feedback-positives alone the teacher's sessions run for their answers
                    # (the retry states' targets) and its first-state rows are not added.
                    positives, pairs_dir, fs = await failure_states(
                        url, work, failed, args.failure_positives, args.minimal_rules, held_sources
                    )
                    f["failure_states"] = fs
                    print(f"gen2     failure states: {fs}", flush=True)
                    if not args.failure_positives:
                        positives = None
                if args.feedback_positives:
                    fb_positives, f["feedback_positives"] = await feedback_positives(
                        url,
                        work,
                        args.feedback_positives,
                        train_tried,
                        train_won,
                        Path(f["failure_states"]["firsts"]),
                        held_sources,
                    )
                    print(f"gen2     feedback positives: {f['feedback_positives']}", flush=True)
                own = work / "data-gen1"
                if args.expert:
                    # Expert iteration: generation 2's own data are generation 1's verified
                    # samples on the pool (--pass-at's one-attempt sessions, the loop's test
                    # passed), at most M distinct answers per task; nothing of held-out A.
                    sampled = [s for s in ("pool", "pool_b") if s in f.get("pass_at", {})]
                    if not sampled:
                        raise SystemExit(
                            "--expert needs --pass-at (or --pass-from) and --pool or --pool-b"
                        )
                    verified = [v for s in sampled for v in f["pass_at"][s]["verified"]]
                    raw = work / "data-gen1-samples"
                    n_raw = await export_compact(url, raw, {s for v in verified for s in v})
                    from oopav.trainer.datasets import read_records

                    recs, f["expert"] = expert_records(
                        read_records(raw) if n_raw else [], verified, args.expert
                    )
                    if not recs:
                        raise SystemExit(f"--expert: no verified sample exported ({f['expert']})")
                    f["gen1_own_records"] = write_records(own, recs)
                    print(
                        f"gen2     expert iteration from pass@k samples: {f['expert']}", flush=True
                    )
                else:
                    f["gen1_own_records"] = await export_compact(url, own, own_sids)
                if args.star:
                    # Expert iteration: each verified answer from its session's first-attempt
                    # prompt, the ones that needed a retry repeated (trainer/star.py).
                    f["star"] = star(own, work / "data-gen1-star", args.star, retried)
                    own = work / "data-gen1-star"
                    print(f"gen2     expert iteration: {f['star']}", flush=True)
                negatives = None
                if args.negatives and args.negatives_from == "pairs":
                    # Only the refused answers that have a verified answer at the same state
                    # (--failure-positives): the unlikelihood term next to its positive.
                    if pairs_dir is None:
                        raise SystemExit("--negatives-from pairs needs --failure-positives")
                    negatives = pairs_dir
                    f["negatives"] = {"from": "pairs", "weight": args.negatives,
                                      "tokens": args.negative_tokens}  # fmt: skip
                elif args.negatives:
                    # What generation 1 did wrong, in its own sessions (A and the pool; failed
                    # sessions and the failed attempts of won ones): generation 2 learns to avoid
                    # these answers (trainer/negatives.py); the control never sees them.
                    negatives = work / "data-gen1-neg"
                    f["negatives"] = await export_negatives(url, negatives, tried)
                    f["negatives"] |= {"weight": args.negatives, "tokens": args.negative_tokens}
                    print(f"gen2     negatives: {f['negatives']}", flush=True)
                if args.dpo and pairs_dir is None:
                    raise SystemExit("--dpo needs --failure-positives (its pairs)")
                mixed = work / "data-gen2"
                extra = [p for p in (positives, fb_positives) if p is not None]
                f["gen2_records"] = merge(mixed, gen0_data, own, *extra)
                print(
                    f"gen2     data: {count} gen0 + {f['gen1_own_records']} of gen1's own"
                    + (
                        " verified pass@k samples ("
                        + " and ".join(s for s in ("pool", "pool_b") if s in f.get("pass_at", {}))
                        if args.expert
                        else " verified sessions (held-out A and pool"
                        + (" and pool-B" if pool_b else "")
                    )
                    + (
                        "; on B's files, never a task of B)"
                        if pool_b
                        else "; never a file of held-out B)"
                    )
                    + (
                        f" + {f['failure_states']['positive_rows']} failure-state positive rows"
                        if positives is not None
                        else ""
                    )
                    + (
                        f" + {f['feedback_positives']['rows']} retry-state (feedback) rows"
                        if fb_positives is not None
                        else ""
                    ),
                    flush=True,
                )
            # Generation 2's and the control's training draw (the same for both: a second draw
            # of the generation-2 step re-runs both arms).
            seed2 = args.seed if args.seed2 is None else args.seed2
            f["seed2"] = seed2
            t0 = time.perf_counter()
            # The two arms are independent and each trains on one thread (recipe: threads=1):
            # the control trains in a second process while generation 2 trains here, which
            # halves the phase on a 2-core machine (the same seeds, data and steps: the same
            # weights as one after the other). --serial-arms: one after the other.
            control_cfg = recipe(
                work / "control", gen0_data, args.steps2, ck1, args.lr2, seed2,
                args.prompt_loss, args.augment, args.augment_parts,
            )  # fmt: skip
            side = None if getattr(args, "serial_arms", False) else training_process(control_cfg)
            ck2 = train(
                work / "gen2",
                mixed,
                args.steps2,
                ck1,
                args.lr2,
                seed2,
                args.prompt_loss,
                args.augment,
                args.augment_parts,
                negatives,
                args.negatives,
                # The policy gave its negatives under copy-constrained decoding: score them
                # there (trainer/negatives.py).
                bool(args.copy_names),
                args.negative_tokens,
                pairs_dir if args.dpo else None,
                args.dpo,
                args.dpo_beta,
                f.setdefault("gen2_training", {}),
                on_error=side.stop if side else None,
            )
            if side:
                ckc = control_checkpoint(side, args.steps2)
            else:
                ckc = train(
                    work / "control", gen0_data, args.steps2, ck1, args.lr2, seed2,
                    args.prompt_loss, args.augment, args.augment_parts,
                )  # fmt: skip
            if args.copy_names:
                # One decoding lever for all three policies: generation 2 and the control
                # decode under generation 1's answer vocabulary, so that only their weights
                # differ (their own, from data with more or other answers, may hold other
                # words: wave 3h's first run gave generation 2 seven more).
                f["answer_words"] = same_vocabulary(ck1, [ck2, ckc])
            f["gen2_train"] = {"seconds": time.perf_counter() - t0, "load": load()}
            print(
                f"gen2     gen2 and control trained {args.steps2} steps each in "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            base_b = await evaluate(url, work, "gen1-B", held_b, ck1, args.verify, args)
            if args.gen1_b_no_feedback and not args.no_feedback:
                # The same generation 1 on B with retries that re-send the first prompt
                # (policy.compact_feedback: false, the configuration before wave 3i).
                nf = argparse.Namespace(**{**vars(args), "no_feedback": True})
                f["gen1_b_no_feedback"] = await evaluate(
                    url, work, "gen1-B-nofb", held_b, ck1, args.verify, nf
                )
            r2 = await evaluate(url, work, "gen2", held_b, ck2, args.verify, args)
            rc = await evaluate(url, work, "control", held_b, ckc, args.verify, args)
            f |= {"gen1_b": base_b, "gen2": r2, "control": rc}
            n = base_b["n"]
            d2 = 100 * (r2["success"] - base_b["success"]) / max(1, n)
            dc = 100 * (rc["success"] - base_b["success"]) / max(1, n)
            f["gen2_gain"], f["control_gain"] = d2, dc
            # Task by task on the same B: the tasks each arm wins from generation 1 and loses
            # to it, and the exact sign test on them.
            b1 = solved_by_task(base_b)
            pairs = {
                arm: paired(b1, solved_by_task(r)) for arm, r in (("gen2", r2), ("control", rc))
            }
            for arm, (won, lost) in pairs.items():
                f[f"{arm}_paired"] = {"won": won, "lost": lost, "p": sign_test(won, lost)}
            print(
                f"gen2 - gen1 {fmt_diff(r2['success'], n, base_b['success'], n)} "
                f"({fmt_paired(b1, solved_by_task(r2))}) (target >= +10); "
                f"control {fmt_diff(rc['success'], n, base_b['success'], n)} "
                f"({fmt_paired(b1, solved_by_task(rc))}) (<= +2): "
                f"{'PASS' if d2 >= 10 and dc <= 2 else 'MISS'}"
            )
        n1 = r1["n"]
        verdict = "PASS" if r1["success"] >= 0.5 * n1 else "MISS"
        print(f"gen1 success {100 * r1['success'] / max(1, n1):.1f}% target >= 50%: {verdict}")
    finally:
        server.stop()
    f["wall_seconds"] = time.perf_counter() - t_start
    f["load"] = [load0, load()]
    print(
        f"wall {f['wall_seconds']:.0f} s  load {load0:.1f} -> {load():.1f} (cores {os.cpu_count()})"
    )
    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true", help="CI form: 24 tasks, 12 held out")
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--heldout", type=int, default=100)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument(
        "--steps2", type=int, default=0, help="generation 2's and the control's steps (0: --steps)"
    )
    ap.add_argument("--lr", type=float, default=2e-3, help="generation 1's learning rate")
    ap.add_argument("--lr2", type=float, default=5e-4, help="generation 2's and the control's")
    ap.add_argument(
        "--pool",
        type=int,
        default=0,
        help="more tasks (training files) generation 1 attempts without examples for gen 2",
    )
    ap.add_argument(
        "--pool-b",
        type=int,
        default=0,
        metavar="N",
        help="N unlabelled tasks on held-out B's own source files (never a (file, name) pair "
        "of B's): generation 1 attempts them without examples and its verified sessions join "
        "generation 2's data (transductive self-training; with --pass-at, --pass-on pool-b "
        "samples them and --expert distils those samples)",
    )
    ap.add_argument("--pretok", choices=("code", "gpt2"), default="gpt2")
    ap.add_argument("--prompt-loss", action="store_true", help="SFT loss on prompt tokens too")
    ap.add_argument(
        "--augment",
        type=int,
        default=0,
        help="name-permuted copies per record (SFT augment: names; 0: none)",
    )
    ap.add_argument(
        "--augment-parts",
        choices=("all", "shared"),
        default="all",
        help="which parts of a copied name are made up (all, or the stem names share)",
    )
    ap.add_argument(
        "--retry-temperature",
        type=float,
        default=None,
        help="policy sessions: later attempts sample at this temperature (policy."
        "retry_temperature; default: greedy, a retry repeats the failed answer)",
    )
    ap.add_argument(
        "--policy-iterations", type=int, default=3, help="policy sessions' iteration budget"
    )
    ap.add_argument(
        "--policy-retries", type=int, default=1, help="policy sessions' retries per phase"
    )
    ap.add_argument(
        "--no-feedback",
        action="store_true",
        help="policy sessions: a retry sends the first prompt again (policy.compact_feedback: "
        "false), not the refusal as a feedback line the policy never trained on",
    )
    ap.add_argument(
        "--candidates",
        type=int,
        default=1,
        help="policy sessions: competing actions per step graded by the test (policy.candidates)",
    )
    ap.add_argument(
        "--star",
        type=int,
        default=0,
        help="generation 2 learns its own verified answers from the first-attempt prompt, "
        "those that needed a retry repeated N times (expert iteration; 0: as recorded)",
    )
    ap.add_argument(
        "--negatives",
        type=float,
        default=0.0,
        metavar="W",
        help="generation 2 also learns to avoid generation 1's own refused or undone answers "
        "(its sessions on held-out A and the pool): an unlikelihood term of weight W on them "
        "(SFT recipe negatives / negative_weight, trainer/negatives.py); the control never "
        "sees them (0: off)",
    )
    ap.add_argument(
        "--negative-tokens",
        choices=("all", "structure"),
        default="all",
        help="which tokens of a negative count (SFT negative_tokens): all, or the structure "
        "only — every token but the names copied from the instruction",
    )
    ap.add_argument(
        "--negatives-from",
        choices=("all", "pairs"),
        default="all",
        help="the unlikelihood term's refused answers: all of generation 1's (A and the pool), "
        "or only those paired with a verified answer at the same state (--failure-positives)",
    )
    ap.add_argument(
        "--failure-positives",
        type=int,
        default=0,
        metavar="N",
        help="for each training-file task generation 1 failed (the pool's, --replay's), a "
        "synth: session with the task's example; its answer, rendered from the same state, "
        "joins generation 2's data N times and is paired with generation 1's refused answers "
        "there (0: off)",
    )
    ap.add_argument(
        "--feedback-positives",
        type=int,
        default=0,
        metavar="N",
        help="generation 2 also learns generation 1's retry states on training files (the "
        "pool's, --replay's: a second or later attempt's prompt, with the loop's feedback on "
        "the refused attempt) with a verified answer for the task (its own late win, else a "
        "synth: session's), N copies each (trainer/feedback.py; 0: off)",
    )
    ap.add_argument(
        "--gen1-b-no-feedback",
        action="store_true",
        help="also evaluate generation 1 on held-out B with --no-feedback (the earlier "
        "configuration), for comparison",
    )
    ap.add_argument(
        "--replay",
        type=int,
        default=0,
        metavar="K",
        help="generation 1 also attempts K of generation 0's own tasks without examples; its "
        "failures there are failure states too (with --failure-positives)",
    )
    ap.add_argument(
        "--dpo",
        type=float,
        default=0.0,
        metavar="W",
        help="generation 2 adds a DPO term of weight W on the failure pairs, reference "
        "generation 1 frozen (SFT preferences / preference_weight, trainer/preference.py)",
    )
    ap.add_argument("--dpo-beta", type=float, default=0.1, help="DPO's beta (preference_beta)")
    ap.add_argument(
        "--minimal-rules",
        action="store_true",
        help="train on generation 0's answers with each rule cut to the shortest that rewrites "
        "its own task's files byte-identically (trainer/minrule.py)",
    )
    ap.add_argument(
        "--copy-names",
        choices=("instruction", "prompt"),
        default=None,
        help="policy sessions: copy-constrained decoding (policy.copy_names): the action's "
        "words come from the instruction (or the prompt) or the checkpoint's answer vocabulary",
    )
    ap.add_argument(
        "--gen1-from",
        default=None,
        help="an earlier run's --workdir: reuse its generation 0 data and generation 1 "
        "checkpoint (same task options) instead of running generation 0 and training",
    )
    ap.add_argument(
        "--gen0-from",
        default=None,
        help="an earlier run's --workdir: reuse its generation 0 data (same task options) and "
        "train generation 1 anew on them (e.g. more --steps or another --shape)",
    )
    ap.add_argument(
        "--pass-at",
        default="",
        metavar="K,K",
        help="generation 1's pass@k on held-out B and the pool (e.g. 1,4,8): each task as "
        "max(K) independent one-attempt sessions through the loop, sampled (--pass-temperature)",
    )
    ap.add_argument(
        "--pass-only",
        action="store_true",
        help="with --pass-at: measure generation 1's pass@k and stop (no held-out A, no gen 2)",
    )
    ap.add_argument(
        "--pass-on",
        default="b,pool",
        help="where --pass-at samples: b (held-out B), pool (the pool's training files), pool-b "
        "(--pool-b's tasks on B's files); comma-separated",
    )
    ap.add_argument(
        "--gen1-b",
        action="store_true",
        help="with --pass-only: also run generation 1's own sessions on held-out B (greedy "
        "first answer, sampled retries), the figure pass@k's headroom is measured against",
    )
    ap.add_argument(
        "--pass-from",
        default=None,
        metavar="JSON",
        help="the --json of an earlier --pass-at run with the same --workdir (its sessions are "
        "in that store): reuse its pass@k figures and verified samples instead of sampling again",
    )
    ap.add_argument(
        "--expert",
        type=int,
        default=0,
        metavar="M",
        help="with --gen2: generation 2's own data are generation 1's verified --pass-at samples "
        "on the pool, at most M distinct answers per task (expert iteration; 0: off)",
    )
    ap.add_argument(
        "--pass-temperature",
        type=float,
        default=0.7,
        help="--pass-at sessions' sampling temperature (the loop's group default and the "
        "bench's --retry-temperature: 0.7)",
    )
    ap.add_argument(
        "--pass-iterations",
        type=int,
        default=1,
        help="--pass-at sessions' iteration budget (1: one attempt each, no retry)",
    )
    ap.add_argument("--gen2", action="store_true")
    ap.add_argument(
        "--explore-iterations",
        type=int,
        default=None,
        help="generation 1's sessions on the pool (generation 2's own data, never evaluated "
        "as a headline) get this iteration budget instead of --policy-iterations: more "
        "sampled attempts find answers it gives only sometimes (expert iteration's search)",
    )
    ap.add_argument(
        "--heldout-b",
        type=int,
        default=0,
        help="second held-out set (gen 2, control; 0: --heldout)",
    )
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small")
    ap.add_argument("--verify", type=int, default=3, help="replay --verify this many per policy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--seed1",
        type=int,
        default=None,
        help="generation 1's training seed (default: --seed; the tasks stay --seed's): another "
        "draw of generation 1 on the same data, e.g. with --gen0-from",
    )
    ap.add_argument(
        "--gen2-data-from",
        default=None,
        metavar="WORKDIR",
        help="with --gen1-from the same run: reuse WORKDIR/data-gen2 (generation 2's records "
        "an earlier run built) instead of running the pool again: another draw of the "
        "generation-2 step (--seed2) at the cost of training and evaluation only",
    )
    ap.add_argument(
        "--seed2",
        type=int,
        default=None,
        help="generation 2's and the control's training seed (default: --seed): another draw "
        "of the generation-2 step on the same tasks and generation 1",
    )
    ap.add_argument(
        "--serial-arms",
        action="store_true",
        help="train generation 2 and the control one after the other (default: side by side, "
        "the control in a second process; each trains on one thread)",
    )
    ap.add_argument("--workdir")
    ap.add_argument("--json", dest="json_out", type=Path)
    args = ap.parse_args()
    if args.short:
        args.tasks, args.heldout, args.steps, args.verify = 24, 12, 60, 1
    args.steps2 = args.steps2 or args.steps
    if args.gen0_from and args.gen1_from:
        ap.error("--gen0-from and --gen1-from exclude each other (--gen1-from reuses both)")
    sys.setrecursionlimit(10000)
    f = asyncio.run(main_async(args))
    if args.json_out:
        args.json_out.write_text(json.dumps(f, indent=1, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
