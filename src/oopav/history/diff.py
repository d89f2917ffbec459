"""The diff of two runs (``oopav diff A B``): pure, over two sessions' recorded events.

Two sessions never share an id (every id derives from the session's first event), so events
are compared *normalized*: the envelope (ids, causation, time, hash link) and each type's
volatile fields are dropped, any string equal to one of the session's own event ids becomes
``@<type>#<n>`` (the n-th event of that type), and the session id inside strings (branch
names, paths) becomes ``<session>``. The task's model is an input, not a step: it is reported
with the downstream aspects (a fork's ``fork:P@N:M`` as ``M``, the fork relation on its own),
so two models on one task diverge where their answers first differ.

The timelines are aligned by step with a longest-common-subsequence match over event types
(``difflib``), so an inserted replan does not shift everything after it. The first aligned
step whose normalized events differ (or that only one side has) is the first divergence,
named by event, field and both values. What differs downstream is summarised per aspect:
plans, actions, gate verdicts, outcome, tokens, time; then the diff between the two final
diffs.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import msgspec

from oopav.events import catalog as ev
from oopav.events.catalog import Event

Recorded = list[tuple[int, Event]]
ENVELOPE = ("id", "aggregate_id", "causation_id", "correlation_id", "ts", "prev_hash", "schema")
# Inside nested records (sandbox executions, test runs): times, and where an execution's output
# was kept (a path derived from the event id); an execution's ``key`` derives from ids too.
_NESTED_VOLATILE = frozenset({"duration_ms", "latency_ms", "artifact"})
# Durations printed by test runners ("Ran 3 tests in 0.003s", "2 passed in 0.41s") in output
# tails: noise between two runs of the same commands, not a divergence.
_DURATION = re.compile(r"\b\d+(?:\.\d+)?s\b")
_FORK = re.compile(r"^fork:[^@]+@\d+:(.*)$")


@dataclass
class Step:
    """One aligned step: an event of A, of B, or of both."""

    status: str  # same | changed | only_a | only_b
    a_seq: int | None
    b_seq: int | None
    a_type: str | None
    b_type: str | None
    field: str | None = None


@dataclass
class Divergence:
    step: int
    a_seq: int | None
    b_seq: int | None
    a_type: str | None
    b_type: str | None
    field: str | None
    a_value: Any
    b_value: Any
    # dataclasses.field by its full name: this class has a member called ``field``.
    fields: list[str] = dataclasses.field(
        default_factory=list
    )  # every top-level field that differs

    def describe(self) -> str:
        if self.a_type is None:
            return f"step {self.step + 1}: only B has {self.b_type} (seq {self.b_seq})"
        if self.b_type is None:
            return f"step {self.step + 1}: only A has {self.a_type} (seq {self.a_seq})"
        what = self.a_type if self.a_type == self.b_type else f"{self.a_type} / {self.b_type}"
        return (
            f"step {self.step + 1}: {what} (A seq {self.a_seq}, B seq {self.b_seq})"
            + (f" field {self.field}" if self.field else "")
            + f": A={_short(self.a_value)} B={_short(self.b_value)}"
            + (f" (fields differing: {', '.join(self.fields)})" if len(self.fields) > 1 else "")
        )


@dataclass
class Side:
    session_id: str
    events: int
    outcome: str | None
    model: str | None
    parent: str | None
    fork_sequence: int | None
    plans: list[list[str]]
    actions: list[str]
    gates: list[str]
    tokens: int
    model_calls: int
    seconds: float
    final_diff: str


@dataclass
class RunDiff:
    a: Side
    b: Side
    relation: str | None
    identical: bool
    same_prefix: int
    first_divergence: Divergence | None
    steps: list[Step]
    downstream: dict[str, dict[str, Any]] = field(default_factory=dict)
    diff_of_diffs: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return out

    def lines(self) -> list[tuple[str, str]]:
        """The report as (text, style) lines: the CLI prints them, the TUI colours them."""
        out: list[tuple[str, str]] = []
        for tag, s in (("A", self.a), ("B", self.b)):
            out.append(
                (
                    f"{tag} {s.session_id}  {s.outcome or '(running)'}  {s.events} events  "
                    f"model={s.model or '-'}  tokens={s.tokens}  {s.seconds:.1f}s",
                    "bold",
                )
            )
        if self.relation:
            out.append((self.relation, "cyan"))
        if self.identical:
            out.append(
                ("identical: every step matches (volatile fields and ids excluded)", "green")
            )
        else:
            out.append((f"{self.same_prefix} step(s) identical before the first divergence", ""))
            assert self.first_divergence is not None
            out.append(("first divergence: " + self.first_divergence.describe(), "bold red"))
        out.append(("", ""))
        for aspect, d in self.downstream.items():
            mark = "=" if d["same"] else "≠"
            out.append((f"{mark} {aspect}", "" if d["same"] else "yellow"))
            if not d["same"]:
                out.append((f"    A: {_short(d['a'], 160)}", "dim"))
                out.append((f"    B: {_short(d['b'], 160)}", "dim"))
        out.append(("", ""))
        if self.a.final_diff == self.b.final_diff:
            out.append(("final diffs: identical", "green"))
        else:
            out.append(("final diffs differ (--- A's diff, +++ B's diff):", "bold"))
            for line in self.diff_of_diffs.splitlines():
                style = "red" if line.startswith("-") else "green" if line.startswith("+") else ""
                out.append((line, style))
        return out


def _short(value: Any, width: int = 100) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def _untimed(value: Any) -> Any:
    return _DURATION.sub("<t>s", value) if isinstance(value, str) else value


def _fork_model(spec: str | None) -> str | None:
    if spec is None:
        return None
    m = _FORK.match(spec)
    return m.group(1) or None if m else spec


def normalize(events: Recorded, also: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The events of one session as builtins without anything that only says which session
    they belong to (see the module docstring). ``also``: other session ids to hide the same
    way (the other run's: a reused baseline carries the session it was measured in)."""
    if not events:
        return []
    sid = events[0][1].aggregate_id
    others = [o for o in also if o and o != sid]
    names: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for _, e in events:
        counts[e.type] += 1
        names[e.id] = f"@{e.type}#{counts[e.type]}"

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            if value in names:
                return names[value]
            out = value.replace(sid, "<session>") if sid and sid in value else value
            for other in others:
                if other in out:
                    out = out.replace(other, "<session>")
            return out
        if isinstance(value, dict):
            drop = _NESTED_VOLATILE | ({"key"} if "purpose" in value else set())
            return {
                k: _untimed(scrub(v)) if k.endswith("_tail") else scrub(v)
                for k, v in value.items()
                if k not in drop
            }
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    out = []
    for _, e in events:
        d = msgspec.to_builtins(e)
        d["type"] = e.type
        for name in (*ENVELOPE, *type(e).volatile_fields()):
            d.pop(name, None)
        d["actor"] = str(d.get("actor", "")).split("/", 1)[0]  # the version may differ
        if isinstance(e, ev.TaskSubmitted):
            d.pop("parent_session", None)
            d.pop("fork_sequence", None)
            d.pop("source", None)
            d.pop("actor", None)  # intake, or `replay` for a fork
            # The model is an input, reported on its own ("model" below): two models on one
            # task, or a fork that continues with another, diverge where an answer differs.
            d.pop("model", None)
        out.append(scrub(d))
    return out


# Where a step differs in several fields, the one that says the most is named first: a model
# call's answer before the backend that gave it, the request (what the prompt became) next.
_PRIORITY = {"model_called": ("response", "request_hash", "request")}


def _step_field(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    for key in _PRIORITY.get(str(a.get("type")), ()):
        if key in a and key in b:
            found = _first_field(a[key], b[key], key)
            if found:
                return found
    return _first_field(a, b)


def _fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Every top-level field that differs."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _first_field(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return path or "(type)"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                return sub
            found = _first_field(a[k], b[k], sub)
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_field(x, y, f"{path}[{i}]")
            if found:
                return found
        return f"{path}[len]" if len(a) != len(b) else None
    return None if a == b else (path or "(value)")


def _value_at(d: Any, path: str | None) -> Any:
    """The value at a ``_first_field`` path (``a.b[2].c``); the whole value when unknown."""
    if not path:
        return d
    cur = d
    for part in re.findall(r"[^.\[\]]+|\[\d+\]|\[len\]", path):
        if part == "[len]":
            return len(cur) if isinstance(cur, list) else None
        try:
            cur = cur[int(part[1:-1])] if part.startswith("[") else cur[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return cur


def _side(events: Recorded) -> Side:
    task = next((e for _, e in events if isinstance(e, ev.TaskSubmitted)), None)
    done = next((e for _, e in events if isinstance(e, ev.SessionCompleted)), None)
    calls = [e for _, e in events if isinstance(e, ev.ModelCalled)]
    plans = [[s.description for s in e.steps] for _, e in events if isinstance(e, ev.PlanProposed)]
    actions = []
    for _, e in events:
        if isinstance(e, ev.ActionProposed):
            actions.append(f"{e.action.type}:{e.action_hash[:10]}")
    gates = [
        f"{e.gate}:{'skipped' if e.skipped else 'pass' if e.passed else 'fail'}"
        for _, e in events
        if isinstance(e, ev.GateEvaluated)
    ]
    ts = [e.ts for _, e in events]
    return Side(
        session_id=events[0][1].aggregate_id if events else "",
        events=len(events),
        outcome=done.outcome if done else None,
        model=_fork_model(task.model) if task else None,
        parent=task.parent_session if task else None,
        fork_sequence=task.fork_sequence if task else None,
        plans=plans,
        actions=actions,
        gates=gates,
        tokens=sum(c.prompt_tokens + c.completion_tokens for c in calls),
        model_calls=len(calls),
        seconds=(max(ts) - min(ts)).total_seconds() if ts else 0.0,
        final_diff=done.diff if done else "",
    )


def _relation(a: Side, b: Side) -> str | None:
    if b.parent and b.parent == a.session_id:
        return f"B is a fork of A at seq {b.fork_sequence}"
    if a.parent and a.parent == b.session_id:
        return f"A is a fork of B at seq {a.fork_sequence}"
    if a.parent and a.parent == b.parent:
        return f"A and B are forks of {a.parent} (at seq {a.fork_sequence} and {b.fork_sequence})"
    return None


def align(
    na: list[dict[str, Any]], nb: list[dict[str, Any]]
) -> list[tuple[int | None, int | None]]:
    """Pairs of indexes (A, B) in timeline order; None where one side has no such step."""
    matcher = difflib.SequenceMatcher(
        a=[d["type"] for d in na], b=[d["type"] for d in nb], autojunk=False
    )
    pairs: list[tuple[int | None, int | None]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pairs += list(zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        # replace / delete / insert: the A steps, then the B steps (a different decision is
        # a different event, not the same event changed).
        pairs += [(i, None) for i in range(i1, i2)]
        pairs += [(None, j) for j in range(j1, j2)]
    return pairs


# Events that say where a result came from, not what was decided: a session that reused a
# baseline records ``baseline_reused`` and then the same observation a measuring one records,
# so two runs that differ only in that are the same run.
PROVENANCE_ONLY = frozenset({"baseline_reused"})


def diff_runs(a: Recorded, b: Recorded) -> RunDiff:
    """Compare two sessions' recorded events (stream order, ``(seq, event)``)."""
    a = [(s, e) for s, e in a if e.type not in PROVENANCE_ONLY]
    b = [(s, e) for s, e in b if e.type not in PROVENANCE_ONLY]
    ids = tuple(x[0][1].aggregate_id for x in (a, b) if x)
    na, nb = normalize(a, ids), normalize(b, ids)
    for d in (*na, *nb):  # and the observation's note of where its baseline came from
        if d.get("type") == "observation_recorded" and isinstance(d.get("reasons"), list):
            d["reasons"] = [
                r for r in d["reasons"] if not str(r).startswith("baseline reused from session")
            ]
    steps: list[Step] = []
    first: Divergence | None = None
    same_prefix = 0
    for i, j in align(na, nb):
        ea = a[i] if i is not None else None
        eb = b[j] if j is not None else None
        if i is not None and j is not None:
            fld = _step_field(na[i], nb[j])
            status = "same" if fld is None else "changed"
        else:
            fld = None
            status = "only_a" if j is None else "only_b"
        steps.append(
            Step(
                status,
                ea[0] if ea else None,
                eb[0] if eb else None,
                ea[1].type if ea else None,
                eb[1].type if eb else None,
                fld,
            )
        )
        if status == "same" and first is None:
            same_prefix += 1
        if status != "same" and first is None:
            first = Divergence(
                len(steps) - 1,
                steps[-1].a_seq,
                steps[-1].b_seq,
                steps[-1].a_type,
                steps[-1].b_type,
                fld,
                _value_at(na[i], fld) if i is not None else None,
                _value_at(nb[j], fld) if j is not None else None,
                _fields(na[i], nb[j]) if i is not None and j is not None else [],
            )
    sa, sb = _side(a), _side(b)
    downstream: dict[str, dict[str, Any]] = {}
    for aspect, va, vb in (
        ("model", sa.model, sb.model),
        ("plans", sa.plans, sb.plans),
        ("actions", sa.actions, sb.actions),
        ("gate verdicts", sa.gates, sb.gates),
        ("outcome", sa.outcome, sb.outcome),
        ("tokens", sa.tokens, sb.tokens),
        ("model calls", sa.model_calls, sb.model_calls),
        ("time (s)", round(sa.seconds, 3), round(sb.seconds, 3)),
        ("events", sa.events, sb.events),
    ):
        downstream[aspect] = {"same": va == vb, "a": va, "b": vb}
    dod = "".join(
        difflib.unified_diff(
            sa.final_diff.splitlines(keepends=True),
            sb.final_diff.splitlines(keepends=True),
            fromfile=f"A {sa.session_id}",
            tofile=f"B {sb.session_id}",
        )
    )
    return RunDiff(
        a=sa,
        b=sb,
        relation=_relation(sa, sb),
        identical=first is None,
        same_prefix=same_prefix,
        first_divergence=first,
        steps=steps,
        downstream=downstream,
        diff_of_diffs=dod,
    )
