"""Training datasets as projections of the stream: finished sessions → SFT, SRL and GRPO records.

Everything here is pure: a session's ``(sequence, event)`` list in, records out; records and
their sources in, shard bytes and a manifest out. The same stream therefore gives the same
bytes (records ordered by the stream sequence of the session's completion, then of the source
event; JSON with sorted keys; no build timestamps), which is what lets a dataset be deleted and
rebuilt, and a training run name the exact data it saw by the manifest's content hash.

- **SFT**: the exact prompt messages of a ``model_called`` → its answer text; by default only
  answers that parsed with the strict prompt-contract parser and whose action was applied
  (actor) or whose plan was proposed (planner).
- **SRL** (step-wise, seed 002): the state before a step (task, context and history), the
  teacher's action as JSON, and its outcome (applied, rejected, failed) with the diff.
- **GRPO**: prompts to sample against — the first actor prompt of a session, its instruction,
  test command, pre/post code where the task carried examples, and the verified diff.
- **negatives**: every answer the loop refused or undid — an action rejected before it ran,
  denied, failed, rolled back by the observer (a negative example) or by the verifier after a
  failed gate, a finish whose verification failed, an answer that did not parse: the state
  (the prompt), the rejected answer and why.
- **pairs**: preference pairs (DPO form: ``prompt``, ``chosen``, ``rejected``) where a later
  attempt at the same plan step was applied and kept: the earlier, refused answer is
  ``rejected``, the later one ``chosen``, both under the refused attempt's prompt.

Labels tell the truth: an action counts as ``applied`` only when it ran, succeeded and was never
undone (``workspace_rolled_back`` names it → ``rolled_back``), and a finish only when the
verification it triggered passed and the session succeeded. Only ``applied`` answers are SFT
targets by default.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

from oopav.events import catalog as ev
from oopav.events.catalog import Event

Format = Literal["sft", "srl", "grpo", "negatives", "pairs"]
FORMATS: tuple[Format, ...] = ("sft", "srl", "grpo", "negatives", "pairs")
# Action statuses that make an answer a negative example (never an SFT target).
NEGATIVE = frozenset({"rejected", "denied", "failed", "rolled_back", "failed_gate", "unparsed"})
SHARD_RECORDS = 50_000
DATASET_VERSION = 1

SeqEvent = tuple[int, Event]


@dataclass(frozen=True)
class Filters:
    """Which sessions and calls become records. Defaults keep only clean demonstrations."""

    successful_only: bool = False
    require_parsed: bool = True
    require_applied: bool = True
    roles: tuple[str, ...] = ("actor", "planner")
    mission: str | None = None
    since: datetime | None = None
    # Render prompts with this profile (models/profiles.py) from each call's recorded
    # prompt_state instead of the recorded messages; calls without one are left out.
    profile: str | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["roles"] = list(self.roles)
        d["since"] = self.since.isoformat() if self.since else None
        return d

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Filters:
        since = data.get("since")
        return cls(
            successful_only=bool(data.get("successful_only", cls.successful_only)),
            require_parsed=bool(data.get("require_parsed", cls.require_parsed)),
            require_applied=bool(data.get("require_applied", cls.require_applied)),
            roles=tuple(data.get("roles") or cls.roles),
            mission=data.get("mission"),
            since=datetime.fromisoformat(since) if since else None,
            profile=data.get("profile"),
        )


@dataclass(frozen=True)
class SessionSource:
    """Where a session's records came from on the stream."""

    session_id: str
    first_seq: int
    last_seq: int
    completed_seq: int
    outcome: str
    mission: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SessionRecords:
    source: SessionSource | None
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


# --- one session → records ---------------------------------------------------------------


def session_records(
    events: Sequence[SeqEvent], filters: Filters = Filters(), formats: Iterable[str] = FORMATS
) -> SessionRecords:
    """Records of one session (its events with their stream sequences). A session that has not
    completed, or that the filters exclude, gives no records and ``source`` None."""
    if not events:
        return SessionRecords(None)
    task = next((e for _, e in events if isinstance(e, ev.TaskSubmitted)), None)
    done = [(s, e) for s, e in events if isinstance(e, ev.SessionCompleted)]
    if task is None or not done:
        return SessionRecords(None)
    # The first terminal event wins (DESIGN: tamper evidence).
    completed_seq, completed = done[0]
    assert isinstance(completed, ev.SessionCompleted)
    if filters.successful_only and completed.outcome != "success":
        return SessionRecords(None)
    if filters.mission is not None and task.mission != filters.mission:
        return SessionRecords(None)
    if filters.since is not None and _aware(completed.ts) < _aware(filters.since):
        return SessionRecords(None)
    source = SessionSource(
        session_id=task.aggregate_id,
        first_seq=events[0][0],
        last_seq=events[-1][0],
        completed_seq=completed_seq,
        outcome=completed.outcome,
        mission=task.mission,
    )
    ctx = _SessionIndex(events, task, completed)
    builders = {
        "sft": _sft,
        "srl": _srl,
        "grpo": _grpo,
        "negatives": _negatives,
        "pairs": _pairs,
    }
    out = SessionRecords(source)
    for fmt in formats:
        out.records[fmt] = builders[fmt](ctx, filters)
    return out


def _aware(ts: datetime) -> datetime:
    from datetime import UTC

    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


class _SessionIndex:
    def __init__(
        self, events: Sequence[SeqEvent], task: ev.TaskSubmitted, done: ev.SessionCompleted
    ) -> None:
        self.events = events
        self.task = task
        self.done = done
        self.calls: dict[str, tuple[int, ev.ModelCalled]] = {}
        self.proposals: dict[str, tuple[int, ev.ActionProposed]] = {}
        self.by_call: dict[str, str] = {}  # model_call_id -> action_proposed id
        self.plans_by_call: set[str] = set()
        self.results: dict[str, Event] = {}  # action id -> applied / rejected
        # action id -> the workspace_rolled_back that undid it (observer or verifier).
        self.undone: dict[str, ev.WorkspaceRolledBack] = {}
        # (seq, passed, failed gate) of every verification, to judge the finish before it.
        self.verifications: list[tuple[int, bool, str | None]] = []
        for seq, e in events:
            if isinstance(e, ev.ModelCalled):
                self.calls[e.id] = (seq, e)
            elif isinstance(e, ev.ActionProposed):
                self.proposals[e.id] = (seq, e)
                if e.model_call_id:
                    self.by_call[e.model_call_id] = e.id
            elif isinstance(e, ev.PlanProposed) and e.model_call_id:
                self.plans_by_call.add(e.model_call_id)
            elif isinstance(e, ev.ActionApplied | ev.ActionRejected):
                self.results.setdefault(e.action_id, e)
            elif isinstance(e, ev.PermissionDenied) and e.action_id:
                self.results.setdefault(e.action_id, e)
            elif isinstance(e, ev.WorkspaceRolledBack):
                for a in e.actions:
                    self.undone.setdefault(a, e)
            elif isinstance(e, ev.VerificationCompleted):
                self.verifications.append((seq, e.passed, e.failed_gate))

    def base(self, seq: int, event_id: str) -> dict[str, Any]:
        return {
            "session_id": self.task.aggregate_id,
            "seq": seq,
            "event_id": event_id,
            "mission": self.task.mission,
            "outcome": self.done.outcome,
        }

    def action_status(self, action_id: str) -> str:
        """``applied`` only for an action that ran, succeeded and was never undone; a finish
        only when the verification after it passed (or none ran) and the session succeeded."""
        result = self.results.get(action_id)
        proposal = self.proposals.get(action_id)
        if proposal is not None and proposal[1].action.type == "finish":
            verdict = self._verification_after(proposal[0])
            if verdict is not None and not verdict[1]:
                return "failed_gate"
            return "applied" if self.done.outcome == "success" else "failed"
        if action_id in self.undone:
            return "rolled_back"
        if isinstance(result, ev.ActionApplied):
            return "applied" if result.ok else "failed"
        if isinstance(result, ev.ActionRejected):
            return "rejected"
        if isinstance(result, ev.PermissionDenied):
            return "denied"
        return "pending"

    def is_finish(self, action_id: str) -> bool:
        proposal = self.proposals.get(action_id)
        return proposal is not None and proposal[1].action.type == "finish"

    def why(self, action_id: str) -> str:
        """Why an action is a negative, in a line: the rejection, the rollback's reason, the
        failed gate, the command's error."""
        status = self.action_status(action_id)
        result = self.results.get(action_id)
        if status == "rolled_back":
            return f"rolled back: {self.undone[action_id].reason}"[:500]
        if status == "failed_gate":
            seq = self.proposals[action_id][0]
            verdict = self._verification_after(seq)
            return f"verification failed at gate {verdict[2] if verdict else '?'}"
        if isinstance(result, ev.ActionRejected):
            return f"rejected ({result.reason}): {result.message}"[:500]
        if isinstance(result, ev.PermissionDenied):
            return f"permission denied: {result.scope} {result.reason}".strip()[:500]
        if isinstance(result, ev.ActionApplied):
            tail = (result.stderr_tail or result.stdout_tail)[-400:]
            return f"failed (exit {result.exit_code}): {tail}".strip()
        return status

    def _verification_after(self, seq: int) -> tuple[int, bool, str | None] | None:
        return next((v for v in self.verifications if v[0] > seq), None)


def _parses(role: str, text: str, finish_reason: str) -> bool:
    from oopav.models.prompt import AnswerError, parse_role_answer

    try:
        parse_role_answer(role, text, finish_reason=finish_reason)
    except (AnswerError, ValueError):
        return False
    return True


def _prompt_for(call: ev.ModelCalled, f: Filters) -> list[dict[str, str]] | None:
    """The prompt of a record: the recorded messages, or (with ``f.profile``) the profile's
    rendering of the recorded prompt state — byte-identical to what the loop sends a policy
    under that profile. None: the call cannot be rendered so (it is left out)."""
    if f.profile is None:
        return _prompt(call)
    if f.profile == "full":
        return _prompt(call) if (call.profile or "full") == "full" else None
    if call.prompt_state is None:
        return None
    from oopav.models.profiles import from_builtins, render

    try:
        messages = render(f.profile, from_builtins(call.prompt_state))  # type: ignore[arg-type]
    except ValueError:
        return None
    return [{"role": m.role, "content": m.content} for m in messages]


def _sft(ctx: _SessionIndex, f: Filters) -> list[dict[str, Any]]:
    out = []
    for call_id, (seq, call) in ctx.calls.items():
        if call.role not in f.roles or call.error is not None or not call.response:
            continue
        prompt = _prompt_for(call, f)
        if prompt is None:
            continue
        parsed = _parses(call.role, call.response, call.finish_reason)
        if f.require_parsed and not parsed:
            continue
        status = "answered"
        response = call.response
        if call.role == "actor":
            proposal = ctx.by_call.get(call_id)
            status = ctx.action_status(proposal) if proposal else "unparsed"
            if f.profile == "compact" and proposal and ctx.is_finish(proposal):
                continue  # a compact policy is never asked to finish (a one-step plan)
            if f.profile == "compact" and proposal:
                # The compact answer form: what the proposal did, without the teacher's think
                # text and notes (models/profiles.py compact_answer).
                from oopav.models.profiles import compact_answer

                action = msgspec.to_builtins(ctx.proposals[proposal][1].action)
                response = compact_answer(action)
        elif call.role == "planner":
            status = "proposed" if call_id in ctx.plans_by_call else "unparsed"
        if f.require_applied and status not in ("applied", "proposed", "answered"):
            continue
        rec = ctx.base(seq, call_id)
        rec.update(
            role=call.role,
            prompt=prompt,
            completion=[{"role": "assistant", "content": response}],
            parsed=parsed,
            status=status,
        )
        if call.prompt_state is not None:
            rec["prompt_state"] = call.prompt_state
        out.append(rec)
    return out


def _srl(ctx: _SessionIndex, f: Filters) -> list[dict[str, Any]]:
    out = []
    history: list[dict[str, Any]] = []
    for action_id, (seq, proposal) in ctx.proposals.items():
        action = msgspec.to_builtins(proposal.action)
        status = ctx.action_status(action_id)
        result = ctx.results.get(action_id)
        call = ctx.calls.get(proposal.model_call_id or "")
        context = ""
        if call is not None:
            msgs = call[1].request.get("messages") or []
            context = next((m["content"] for m in msgs if m.get("role") == "user"), "")
        if status == "applied" or not f.require_applied:
            rec = ctx.base(seq, action_id)
            rec.update(
                instruction=ctx.task.instruction,
                step=proposal.step,
                context=context,
                history=list(history),
                action=action,
                action_type=proposal.action.type,
                status=status,
                diff=result.diff if isinstance(result, ev.ActionApplied) else "",
                reason=(
                    result.reason
                    if isinstance(result, ev.ActionRejected)
                    else (result.stderr_tail[-500:] if isinstance(result, ev.ActionApplied) else "")
                ),
            )
            out.append(rec)
        history.append({"action_type": proposal.action.type, "status": status})
    return out


def _grpo(ctx: _SessionIndex, f: Filters) -> list[dict[str, Any]]:
    task = ctx.task
    first_actor = next(
        ((seq, c) for seq, c in ctx.calls.values() if c.role == "actor" and c.error is None), None
    )
    seq, eid = (first_actor[0], first_actor[1].id) if first_actor else (ctx.events[0][0], task.id)
    prompt = (
        [
            {"role": m["role"], "content": m["content"]}
            for m in first_actor[1].request.get("messages") or []
        ]
        if first_actor
        else []
    )
    rec = ctx.base(seq, eid)
    rec.update(
        instruction=task.instruction,
        prompt=prompt,
        test_command=task.test_command,
        examples=[msgspec.to_builtins(x) for x in task.examples],
        pre=task.examples[0].before if task.examples else None,
        post=task.examples[0].after if task.examples else None,
        path=task.examples[0].path if task.examples else None,
        reference_diff=ctx.done.diff if ctx.done.outcome == "success" else "",
    )
    return [rec]


def _prompt(call: ev.ModelCalled) -> list[dict[str, str]]:
    return [
        {"role": m["role"], "content": m["content"]} for m in call.request.get("messages") or []
    ]


def _negatives(ctx: _SessionIndex, f: Filters) -> list[dict[str, Any]]:
    """Refused or undone answers: the state (prompt), the rejected answer and why."""
    out = []
    for call_id, (seq, call) in ctx.calls.items():
        if call.role not in f.roles or call.error is not None or not call.response:
            continue
        if call.role == "actor":
            proposal = ctx.by_call.get(call_id)
            status = ctx.action_status(proposal) if proposal else "unparsed"
            why = ctx.why(proposal) if proposal else "the answer did not parse"
        elif call.role == "planner":
            if call_id in ctx.plans_by_call:
                continue
            status, why = "unparsed", "the plan did not parse"
        else:
            continue
        if status not in NEGATIVE:
            continue
        prompt = _prompt_for(call, f)
        if prompt is None:
            continue
        rec = ctx.base(seq, call_id)
        rec.update(
            role=call.role,
            prompt=prompt,
            rejected=call.response,
            status=status,
            why=why,
            step=ctx.proposals[proposal][1].step if call.role == "actor" and proposal else 0,
        )
        if call.prompt_state is not None:
            # The state the refused answer was given in (its feedback line included): a retry's
            # state can be paired with a verified answer for the same task (trainer/feedback.py).
            rec["prompt_state"] = call.prompt_state
        out.append(rec)
    return out


def _pairs(ctx: _SessionIndex, f: Filters) -> list[dict[str, Any]]:
    """(prompt, chosen, rejected): a refused actor answer and a later answer at the same plan
    step that was applied and kept. The prompt is the refused attempt's: the state in which
    the chosen answer would have been the right one too."""
    if "actor" not in f.roles:
        return []
    attempts: list[tuple[int, str, str, ev.ModelCalled]] = []  # (seq, status, action id, call)
    for action_id, (seq, proposal) in ctx.proposals.items():
        call = ctx.calls.get(proposal.model_call_id or "")
        if call is None or proposal.action.type == "finish":
            continue
        attempts.append((seq, ctx.action_status(action_id), action_id, call[1]))
    out = []
    for i, (seq, status, action_id, bad) in enumerate(attempts):
        if status not in NEGATIVE:
            continue
        step = ctx.proposals[action_id][1].step
        good = next(
            (
                a
                for a in attempts[i + 1 :]
                if a[1] == "applied" and ctx.proposals[a[2]][1].step == step
            ),
            None,
        )
        if good is None or good[3].response == bad.response:
            continue
        prompt = _prompt_for(bad, f)
        if prompt is None:
            continue
        rec = ctx.base(seq, bad.id)
        rec.update(
            role="actor",
            prompt=prompt,
            chosen=[{"role": "assistant", "content": good[3].response}],
            rejected=[{"role": "assistant", "content": bad.response}],
            step=step,
            why=ctx.why(action_id),
            chosen_event_id=good[3].id,
        )
        out.append(rec)
    return out


# --- records → shards + manifest ---------------------------------------------------------


def record_key(fmt: str, rec: dict[str, Any]) -> str:
    """What makes two records the same, whatever session they came from."""
    if fmt == "sft":
        basis: Any = [rec["prompt"], rec["completion"]]
    elif fmt == "negatives":
        basis = [rec["prompt"], rec["rejected"], rec["status"]]
    elif fmt == "pairs":
        basis = [rec["prompt"], rec["chosen"], rec["rejected"]]
    elif fmt == "srl":
        basis = [rec["instruction"], rec["context"], rec["action"], rec["status"]]
    else:
        basis = [rec["instruction"], rec["prompt"], rec["pre"], rec["post"], rec["test_command"]]
    return hashlib.sha256(_canon(basis)).hexdigest()[:24]


def _canon(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Manifest:
    format: str
    count: int
    duplicates: int
    sessions: list[dict[str, Any]]
    filters: dict[str, Any]
    shards: list[dict[str, Any]]
    content_hash: str
    stream_sequences: dict[str, int]
    version: int = DATASET_VERSION

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build(
    fmt: str, sessions: Iterable[SessionRecords], filters: Filters
) -> tuple[list[dict[str, Any]], Manifest]:
    """Deduplicated, ordered records of ``fmt`` and the manifest (shards not yet written)."""
    ordered = sorted((s for s in sessions if s.source is not None), key=_completed)
    seen: set[str] = set()
    records: list[dict[str, Any]] = []
    dupes = 0
    for s in ordered:
        for rec in sorted(s.records.get(fmt, []), key=lambda r: r["seq"]):
            key = record_key(fmt, rec)
            if key in seen:
                dupes += 1
                continue
            seen.add(key)
            records.append({"id": key, **rec})
    srcs = [s.source.to_json() for s in ordered if s.source is not None]
    manifest = Manifest(
        format=fmt,
        count=len(records),
        duplicates=dupes,
        sessions=srcs,
        filters=filters.to_json(),
        shards=[],
        content_hash="",
        stream_sequences={
            "first": min((s["first_seq"] for s in srcs), default=0),
            "last": max((s["last_seq"] for s in srcs), default=0),
        },
    )
    return records, manifest


def _completed(s: SessionRecords) -> int:
    assert s.source is not None
    return s.source.completed_seq


def encode_jsonl(records: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(_canon(r) + b"\n" for r in records)


def write_dataset(
    out: str | Path,
    fmt: str,
    sessions: Iterable[SessionRecords],
    filters: Filters,
    *,
    parquet: bool = True,
    shard_records: int = SHARD_RECORDS,
) -> Manifest:
    """Write ``out/<fmt>-NNNNN.jsonl`` shards (and ``.parquet`` twins when pyarrow is
    installed) plus ``out/manifest.json``; files of an earlier build that no longer belong
    are removed. Loadable with ``datasets.load_dataset("json", data_files=...)``."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    records, manifest = build(fmt, sessions, filters)
    chunks = [records[i : i + shard_records] for i in range(0, len(records), shard_records)] or [[]]
    digest = hashlib.sha256()
    written: set[str] = {"manifest.json"}
    pa = _pyarrow() if parquet else None
    for i, chunk in enumerate(chunks):
        name = f"{fmt}-{i:05d}.jsonl"
        data = encode_jsonl(chunk)
        _atomic_write(directory / name, data)
        written.add(name)
        digest.update(data)
        shard: dict[str, Any] = {
            "path": name,
            "count": len(chunk),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if pa is not None and chunk:
            pq_name = f"{fmt}-{i:05d}.parquet"
            _write_parquet(pa, directory / pq_name, chunk)
            written.add(pq_name)
            shard["parquet"] = pq_name
        manifest.shards.append(shard)
    manifest.content_hash = digest.hexdigest()
    for stale in directory.glob(f"{fmt}-*.*"):
        if stale.name not in written:
            stale.unlink(missing_ok=True)
    _atomic_write(
        directory / "manifest.json",
        json.dumps(manifest.to_json(), sort_keys=True, indent=1).encode() + b"\n",
    )
    return manifest


# --- appending (issue 28 §4) -----------------------------------------------------------------


@dataclass
class AppendState:
    """What appending to a dataset needs to know about what it already holds: the record keys
    (deduplication), the running hash of its shards' bytes in order (the manifest's
    ``content_hash``, which therefore equals a full rebuild's), the sessions and the last
    completion sequence. Read once from the files (``load_append_state``), then kept."""

    manifest: dict[str, Any]
    seen: set[str]
    digest: Any
    sessions: set[str]
    last_completed: int
    session_texts: list[str] = field(default_factory=list)
    """Each entry of ``manifest["sessions"]`` as it appears in manifest.json, so that rewriting
    the manifest after an append does not serialise every session again."""


def load_append_state(directory: str | Path, filters: Filters) -> AppendState | None:
    """The state of a dataset written by ``write_dataset`` or ``append_dataset``; None when
    there is none, it was built with other filters, or a shard does not match its manifest
    (the caller rebuilds)."""
    directory = Path(directory)
    try:
        manifest = read_manifest(directory)
    except (FileNotFoundError, ValueError):
        return None
    if manifest.get("filters") != filters.to_json() or manifest.get("version") != DATASET_VERSION:
        return None
    digest = hashlib.sha256()
    seen: set[str] = set()
    for shard in manifest["shards"]:
        try:
            data = (directory / shard["path"]).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != shard["sha256"]:
            return None
        digest.update(data)
        for line in data.splitlines():
            if line:
                seen.add(json.loads(line)["id"])
    sessions = {s["session_id"] for s in manifest["sessions"]}
    last = max((s["completed_seq"] for s in manifest["sessions"]), default=0)
    texts = [_nested(s, 2) for s in manifest["sessions"]]
    return AppendState(manifest, seen, digest, sessions, last, texts)


def _nested(value: Any, depth: int) -> str:
    """``value`` as ``json.dumps(..., sort_keys=True, indent=1)`` writes it ``depth`` levels
    deep inside a document."""
    return json.dumps(value, sort_keys=True, indent=1).replace("\n", "\n" + " " * depth)


def manifest_bytes(manifest: dict[str, Any], session_texts: list[str]) -> bytes:
    """``json.dumps(manifest, sort_keys=True, indent=1) + "\\n"``, byte for byte, with the
    sessions taken from their cached texts: the cost of the sessions list is a join."""
    parts = []
    for key in sorted(manifest):
        if key == "sessions":
            body = "[\n  " + ",\n  ".join(session_texts) + "\n ]" if session_texts else "[]"
        else:
            body = _nested(manifest[key], 1)
        parts.append(f" {json.dumps(key)}: {body}")
    return ("{\n" + ",\n".join(parts) + "\n}\n").encode()


def can_append(state: AppendState | None, sessions: Iterable[SessionRecords]) -> bool:
    """Appending gives what a rebuild would only when every new session completed after the
    last one already in the dataset (records are ordered by completion)."""
    if state is None:
        return False
    return all(
        s.source is None
        or s.source.session_id in state.sessions
        or s.source.completed_seq > state.last_completed
        for s in sessions
    )


def append_dataset(
    out: str | Path, fmt: str, sessions: Iterable[SessionRecords], state: AppendState
) -> dict[str, Any]:
    """Add the records of new sessions as one new shard (JSONL; Parquet twins come with the
    next full rebuild) and rewrite the manifest; sessions already in the dataset are skipped.
    The records, their order and ``content_hash`` are exactly what ``write_dataset`` would
    give for all the sessions (with other shard boundaries). The caller checked
    ``can_append``. Returns the manifest."""
    directory = Path(out)
    ordered = sorted(
        (s for s in sessions if s.source is not None and s.source.session_id not in state.sessions),
        key=_completed,
    )
    manifest = state.manifest
    if not ordered:
        return manifest
    records: list[dict[str, Any]] = []
    dupes = 0
    for s in ordered:
        for rec in sorted(s.records.get(fmt, []), key=lambda r: r["seq"]):
            key = record_key(fmt, rec)
            if key in state.seen:
                dupes += 1
                continue
            state.seen.add(key)
            records.append({"id": key, **rec})
    if records:
        name = f"{fmt}-{len(manifest['shards']):05d}.jsonl"
        data = encode_jsonl(records)
        _atomic_write(directory / name, data)
        state.digest.update(data)
        manifest["shards"].append(
            {"path": name, "count": len(records), "sha256": hashlib.sha256(data).hexdigest()}
        )
    srcs = [s.source.to_json() for s in ordered if s.source is not None]
    manifest["count"] += len(records)
    manifest["duplicates"] += dupes
    manifest["sessions"] += srcs
    manifest["content_hash"] = state.digest.hexdigest()
    had = len(manifest["sessions"]) > len(srcs)
    seqs = manifest["stream_sequences"]
    manifest["stream_sequences"] = {
        "first": min([*([seqs["first"]] if had else []), *(s["first_seq"] for s in srcs)]),
        "last": max([*([seqs["last"]] if had else []), *(s["last_seq"] for s in srcs)]),
    }
    state.sessions.update(s["session_id"] for s in srcs)
    state.last_completed = max(state.last_completed, *(s["completed_seq"] for s in srcs))
    state.session_texts += [_nested(s, 2) for s in srcs]
    _atomic_write(directory / "manifest.json", manifest_bytes(manifest, state.session_texts))
    return manifest


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        return None
    import pyarrow as pa

    return pa


def _write_parquet(pa: Any, path: Path, records: list[dict[str, Any]]) -> None:
    import pyarrow.parquet as pq

    # Nested, heterogeneous fields (actions, examples) are stored as JSON text so that every
    # shard has one flat, stable schema.
    flat = [
        {
            k: (json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v)
            for k, v in r.items()
        }
        for r in records
    ]
    from oopav.files import temporary_name

    table = pa.Table.from_pylist(flat)
    tmp = temporary_name(path)
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)


def _atomic_write(path: Path, data: bytes) -> None:
    from oopav.files import atomic_write

    atomic_write(path, data)


def read_manifest(directory: str | Path | None) -> dict[str, Any]:
    """A dataset directory's manifest. ``None``: a recipe's unset ``dataset`` (it named no
    ``tasks`` either), refused with the fix rather than a TypeError from ``Path(None)``."""
    if directory is None:
        raise ValueError("the recipe names no data: set `tasks` or `dataset`")
    path = Path(directory) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"no dataset at {directory}: manifest.json is missing")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def read_records(directory: str | Path | None) -> list[dict[str, Any]]:
    """The records of a dataset directory, in order (JSONL shards named by its manifest)."""
    manifest = read_manifest(directory)
    assert directory is not None  # read_manifest refused None
    out: list[dict[str, Any]] = []
    for shard in manifest["shards"]:
        with open(Path(directory) / shard["path"], encoding="utf-8") as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out


def data_files(directory: str | Path) -> list[str]:
    """The JSONL shard paths, for ``datasets.load_dataset("json", data_files=...)``."""
    manifest = read_manifest(directory)
    return [str(Path(directory) / s["path"]) for s in manifest["shards"] if s["count"]]
