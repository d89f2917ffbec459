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


def test_required_tests_need_a_test_step() -> None:
    assert missing_test_step(_plan("rename it"), "required") is not None
    assert missing_test_step(_plan("rename it", "run the tests"), "required") is None
    assert missing_test_step(_plan("rename it"), "optional") is None


def test_required_tests_cannot_be_downgraded_by_the_plan() -> None:
    problem = missing_test_step(_plan("rename", "run pytest", decision="skip"), "required")
    assert problem is not None and "'skip'" in problem
