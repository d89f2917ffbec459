"""The diff of two runs as a pure function: built events, no server."""

from __future__ import annotations

from datetime import UTC, datetime

from oopav.events import catalog as ev
from oopav.events.actions import FinishAction
from oopav.events.catalog import Event, PlanStep
from oopav.events.clock import ManualClock
from oopav.events.factory import caused_event, root_event
from oopav.events.ids import IdGenerator
from oopav.history.diff import align, diff_runs, normalize
from oopav.history.tree import Node, lineage, render

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def session(
    seed: int,
    *,
    model: str,
    plan: str,
    outcome: str,
    diff: str,
    tokens: int = 10,
    parent: str | None = None,
    extra_replan: bool = False,
) -> list[tuple[int, Event]]:
    clock = ManualClock(T0, step=1.0)
    ids = IdGenerator(clock, seed=seed)
    task = root_event(
        ev.TaskSubmitted,
        handler="intake",
        clock=clock,
        ids=ids,
        instruction="rename",
        repo="/r",
        model=model,
        parent_session=parent,
        fork_sequence=3 if parent else None,
    )
    out: list[Event] = [task]

    def nxt(cls: type[Event], handler: str, **f: object) -> Event:
        e = caused_event(cls, out[-1], handler=handler, index=len(out), clock=clock, **f)
        out.append(e)
        return e

    nxt(
        ev.WorkspacePrepared,
        "observer",
        path=f"/ws/{task.id}",
        base_commit="abc",
        branch=f"oopav/{task.id}",
    )
    call = nxt(
        ev.ModelCalled,
        "planner",
        role="planner",
        backend="scripted",
        request_hash="h",
        request={"m": "plan"},
        response=plan,
        prompt_tokens=tokens,
    )
    nxt(ev.PlanProposed, "planner", steps=[PlanStep(id=1, description=plan)], model_call_id=call.id)
    if extra_replan:
        nxt(ev.ReplanTriggered, "observer", source="observer", reason="look again")
    nxt(ev.ActionProposed, "actor", action=FinishAction(summary="done"), action_hash="f" * 64)
    nxt(ev.GateEvaluated, "verifier", gate="tests", passed=outcome == "success")
    nxt(ev.SessionCompleted, "verifier", outcome=outcome, diff=diff)
    return list(enumerate(out, start=1))


def test_two_runs_that_agree_are_identical_despite_other_ids() -> None:
    a = session(1, model="m", plan="p", outcome="success", diff="D")
    b = session(2, model="m", plan="p", outcome="success", diff="D")
    assert a[0][1].id != b[0][1].id
    d = diff_runs(a, b)
    assert d.identical and d.first_divergence is None and d.same_prefix == len(a)
    assert all(x["same"] for k, x in d.downstream.items() if k != "time (s)")
    # The session id inside a branch name and ids in model_call_id are normalized away.
    assert normalize(a)[1]["branch"] == "oopav/<session>"
    assert normalize(a)[3]["model_call_id"] == "@model_called#1"


def test_first_divergence_names_event_field_and_values_then_downstream() -> None:
    a = session(1, model="m", plan="rename all", outcome="success", diff="+a\n", tokens=10)
    b = session(2, model="m", plan="rename one", outcome="failed", diff="+b\n", tokens=12)
    d = diff_runs(a, b)
    f = d.first_divergence
    assert f is not None and f.a_type == f.b_type == "model_called"
    # The answer is named before the token count that also differs.
    assert f.field == "response" and (f.a_value, f.b_value) == ("rename all", "rename one")
    assert f.fields == ["prompt_tokens", "response"]
    assert f.a_seq == f.b_seq == 3 and d.same_prefix == 2
    assert d.downstream["plans"] == {"same": False, "a": [["rename all"]], "b": [["rename one"]]}
    assert d.downstream["outcome"]["b"] == "failed"
    assert d.downstream["tokens"] == {"same": False, "a": 10, "b": 12}
    assert "-+a" in d.diff_of_diffs and "++b" in d.diff_of_diffs
    text = "\n".join(t for t, _ in d.lines())
    assert "first divergence: step 3: model_called" in text and "field response" in text


def test_an_inserted_step_does_not_shift_the_rest() -> None:
    a = session(1, model="m", plan="p", outcome="success", diff="D")
    b = session(2, model="m", plan="p", outcome="success", diff="D", extra_replan=True)
    d = diff_runs(a, b)
    assert [s.status for s in d.steps].count("only_b") == 1
    assert [s.status for s in d.steps].count("changed") == 0
    f = d.first_divergence
    assert f is not None and f.a_type is None and f.b_type == "replan_triggered"
    pairs = align(normalize(a), normalize(b))
    assert (None, 4) in pairs and (4, 5) in pairs


def test_a_fork_compares_its_continuation_model_and_is_named() -> None:
    a = session(1, model="m", plan="p", outcome="success", diff="D")
    pid = a[0][1].aggregate_id
    b = session(2, model=f"fork:{pid}@3:m", plan="p", outcome="success", diff="D", parent=pid)
    d = diff_runs(a, b)
    assert d.identical and d.relation == "B is a fork of A at seq 3"
    assert d.downstream["model"] == {"same": True, "a": "m", "b": "m"}


def test_lineage_from_any_member_and_its_rendering() -> None:
    nodes = {
        "r": Node("r", outcome="failed"),
        "c1": Node("c1", parent="r", fork_sequence=4, outcome="success"),
        "c2": Node("c2", parent="r", fork_sequence=6, outcome="failed"),
        "g": Node("g", parent="c2", fork_sequence=9, outcome="success", diverged="step 7"),
        "other": Node("other"),
    }
    tree = lineage(nodes, "g")
    assert tree.session_id == "r"
    assert [n.session_id for n in tree.walk()] == ["r", "c1", "c2", "g"]
    lines = render(tree, mark="g")
    assert lines[0].startswith("r  failed")
    assert lines[1].startswith("├─ fork@4 c1") and lines[2].startswith("└─ fork@6 c2")
    assert lines[3].startswith("   └─ fork@9 g") and lines[3].endswith("↳ step 7 *")
    # A parent that is gone ends the walk upward; a forged cycle is cut.
    nodes["r"].parent = "g"
    assert {n.session_id for n in lineage(nodes, "c1").walk()} == {"r", "c1", "c2", "g"}
