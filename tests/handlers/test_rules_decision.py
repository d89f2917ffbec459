"""The decision core's pure rules: test selection, the red gate, evidence, policy, summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oopav.decide.budgets import summarise_context
from oopav.decide.evidence import gather, mentioned_symbols
from oopav.decide.orient import decide_gate
from oopav.decide.policy import LoopPolicy, TestPolicy, loop_policy_problem
from oopav.decide.tests import detect_test_command, effective_decision, select_tests
from oopav.sandbox.files import WorkspaceFiles


@pytest.mark.parametrize(
    ("files", "argv"),
    [
        ({"pytest.ini": "[pytest]\n"}, ["python", "-m", "pytest", "-q"]),
        ({"tests/test_a.py": "def test(): pass\n"}, ["python", "-m", "pytest", "-q"]),
        ({"package.json": json.dumps({"scripts": {"test": "jest"}})}, ["npm", "test", "--silent"]),
        ({"Cargo.toml": "[package]\n"}, ["cargo", "test", "--quiet"]),
        ({"go.mod": "module x\n"}, ["go", "test", "./..."]),
        (
            {"package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified"'}})},
            None,
        ),
        ({"README.md": "hi\n"}, None),
    ],
)
def test_detect_test_command(tmp_path: Path, files: dict[str, str], argv: list[str] | None) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found, why = detect_test_command(WorkspaceFiles(tmp_path))
    assert found == argv, why
    if argv is None:
        assert "none was detected" in why


def test_the_task_command_always_runs_and_required_without_one_is_unverified() -> None:
    pol = TestPolicy()
    s = select_tests("skip", ["make", "test"], None, pol)
    assert s.argv == ["make", "test"] and s.source == "task" and not s.unverified
    s = select_tests("required", None, (None, "none was detected"), pol)
    assert s.argv is None and s.unverified and "none was detected" in s.why
    s = select_tests("recommended", None, (None, "none was detected"), pol)
    assert s.argv is None and not s.unverified
    s = select_tests("required", None, (["go", "test", "./..."], "go.mod"), pol)
    assert s.argv == ["go", "test", "./..."] and s.source == "detected"
    s = select_tests("optional", None, None, pol)
    assert s.argv is None and not s.unverified
    s = select_tests("required", None, (["x"], "y"), TestPolicy(detect=False))
    assert s.argv is None and s.unverified


def test_effective_decision_only_raises_from_the_real_change() -> None:
    pol = TestPolicy(large_change_lines=20)
    assert effective_decision("optional", manifest=[], changed=["a.py"], lines=21, policy=pol)[
        0
    ] == ("recommended")
    assert effective_decision("required", manifest=[], changed=["a.py"], lines=1, policy=pol)[
        0
    ] == ("required")
    d, why = effective_decision(
        "optional",
        manifest=["a.py", "b.py", "c.py"],
        changed=["a.py"],
        lines=3,
        policy=pol,
        complexity=8,
    )
    assert d == "required" and "3 files" in why
    assert (
        effective_decision("skip", manifest=[], changed=["a.py"], lines=2, policy=pol)[0]
        == "optional"
    )
    assert (
        effective_decision("skip", manifest=[], changed=["README.md"], lines=2, policy=pol)[0]
        == "skip"
    )


def test_red_gate_waits_for_evidence_and_escalates_when_the_gap_stays_open() -> None:
    assert decide_gate("red", 0.1, 0, 2)[0] == "gather_evidence"
    assert decide_gate("red", 0.4, 1, 2)[0] == "proceed"
    assert decide_gate("red", 0.55, 1, 2)[0] == "gather_evidence"
    gate, why = decide_gate("red", 0.55, 2, 2)
    assert gate == "stop" and "did not close within 2 rounds" in why
    assert decide_gate("black", 0.0, 5, 2)[0] == "stop"
    # A green or yellow task with a high gap gets one evidence round, then proceeds anyway.
    assert decide_gate("yellow", 0.9, 0, 2)[0] == "gather_evidence"
    assert decide_gate("yellow", 0.9, 1, 2)[0] == "proceed"
    assert decide_gate("green", 0.3, 0, 2)[0] == "proceed"


def test_evidence_exact_then_widened(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "Query.py").write_text("def run_query(sql):\n    return sql\n")
    instruction = "Fix `runQuery` in db/query.py and `run_query`"
    assert mentioned_symbols(instruction) == ["runQuery", "run_query"]
    first = {(i.kind, i.target): i for i in gather(WorkspaceFiles(tmp_path), instruction, 1)}
    assert not first[("file", "db/query.py")].found
    assert first[("symbol", "run_query")].found
    assert first[("symbol", "run_query")].locations == ["pkg/Query.py:1"]
    assert not first[("symbol", "runQuery")].found
    second = {(i.kind, i.target): i for i in gather(WorkspaceFiles(tmp_path), instruction, 2)}
    assert second[("file", "db/query.py")].found
    assert second[("file", "db/query.py")].locations == ["pkg/Query.py"]


def test_loop_policy_validation_names_the_field() -> None:
    assert loop_policy_problem({"tier": "tests", "allow": ["exec:x"]}) is None
    assert "policy.tier" in (loop_policy_problem({"tier": "all"}) or "")
    assert "policy.replans.cap" in (loop_policy_problem({"replans": {"cap": -1}}) or "")
    assert "policy.tests.bogus" in (loop_policy_problem({"tests": {"bogus": 1}}) or "")
    assert LoopPolicy().rollback == "restart"


def test_summarise_context_keeps_every_section_header_and_fits() -> None:
    text = "".join(f"### Part {i}\n" + ("x" * 900) + "\n" for i in range(4))
    out = summarise_context(text, 1500, "artifact ctx.md")
    assert len(out.encode()) <= 1500
    assert all(f"### Part {i}" in out for i in range(4))
    assert "artifact ctx.md" in out and out.startswith("[context summarised")
    assert summarise_context("short", 100, "x") == "short"


async def test_orient_records_the_embedder_and_query_of_each_memory_hit(tmp_path: Path) -> None:
    from oopav.config import Settings
    from oopav.context.memory import Hit
    from oopav.events import catalog as ev
    from oopav.events.clock import ManualClock
    from oopav.events.factory import caused_event, root_event
    from oopav.handlers.orient import Orient
    from oopav.handlers.ports import Ports
    from oopav.projections.session import fold

    class Embedder:
        name = "hashing-256"

    class Memory:
        embedder = Embedder()

        def query(self, text: str, k: int, only_successful: bool) -> list[Hit]:
            return [
                Hit(
                    session_id="s-old",
                    score=0.91,
                    instruction="rename x",
                    plan_summary="1. x",
                    outcome="success",
                )
            ]

    clock = ManualClock()
    task = root_event(
        ev.TaskSubmitted, handler="intake", clock=clock, instruction="Rename `x` to `y`.", repo="/r"
    )
    base = caused_event(
        ev.ObservationRecorded, task, handler="observer", clock=clock, files_total=3
    )
    state = fold([task, base])
    ports = Ports(settings=Settings(data_dir=tmp_path), clock=clock)
    [report] = await Orient(memory=Memory()).handle(base, state, ports, None)
    assert isinstance(report, ev.OrientReported)
    [example] = report.memory_examples
    assert example["embedder"] == "hashing-256" and example["query"] == "Rename `x` to `y`."
    assert example["session_id"] == "s-old" and report.memory_hits == [("s-old", 0.91)]
