"""Shared handler helpers: oversized diffs stay appendable, the model-call retry loop."""

from __future__ import annotations

from pathlib import Path

from oopav.config import Settings
from oopav.handlers.planner import missing_test_step
from oopav.handlers.ports import Ports
from oopav.handlers.support.workspace import MAX_EVENT_DIFF, cap_diff
from oopav.models.prompt import PlanOutput, PlanStepOutput


def test_small_diff_is_kept_whole(tmp_path: Path) -> None:
    ports = Ports(settings=Settings(data_dir=tmp_path))
    assert cap_diff("--- a\n+++ b\n", ports, "s", "x.diff") == "--- a\n+++ b\n"
    assert not (tmp_path / "artifacts").exists()


def test_oversized_diff_is_capped_and_kept_as_an_artifact(tmp_path: Path) -> None:
    ports = Ports(settings=Settings(data_dir=tmp_path))
    diff = "+" + "y" * (3 * MAX_EVENT_DIFF)
    capped = cap_diff(diff, ports, "sess", "final.diff")
    assert len(capped.encode()) <= MAX_EVENT_DIFF
    artifact = tmp_path / "artifacts" / "sess" / "final.diff"
    assert artifact.read_text() == diff
    assert f"{len(diff)} bytes in all" in capped and str(artifact) in capped


def _plan(*descriptions: str, decision: str = "required") -> PlanOutput:
    steps = [PlanStepOutput(id=i + 1, description=d) for i, d in enumerate(descriptions)]
    return PlanOutput(steps=steps, files=[], test_decision=decision, rationale="")  # type: ignore[arg-type]


def test_required_tests_are_checked_by_the_manifest_not_by_words() -> None:
    cmd = ["python", "-m", "pytest", "-q"]
    assert missing_test_step(_plan("rename it"), "optional") is None
    # Words about tests are not a test: a test file in the files, or the command itself, is.
    words = missing_test_step(_plan("rename it", "run the tests"), "required", cmd)
    assert words is not None and "name no test file" in words
    assert "or a step that runs `python -m pytest -q`" in words
    assert (
        missing_test_step(_plan("rename it", "run `python -m pytest -q`"), "required", cmd) is None
    )
    with_file = PlanOutput(
        steps=[PlanStepOutput(id=1, description="rename", files=["tests/test_a.py"])],
        files=["a.py"],
        test_decision="required",
        rationale="",
    )
    assert missing_test_step(with_file, "required") is None
    # No command known: only a test file will do, and the message does not invent one.
    none = missing_test_step(_plan("run pytest"), "required")
    assert none is not None and "step that runs" not in none


def test_required_tests_cannot_be_downgraded_by_the_plan() -> None:
    problem = missing_test_step(_plan("rename", "run pytest", decision="skip"), "required")
    assert problem is not None and "'skip'" in problem
