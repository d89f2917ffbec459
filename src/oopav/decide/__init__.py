"""The loop's pure decisions (the Decider pattern): facts in, a decision out, no bus, sandbox,
model client or click (``tests/test_layers.py`` enforces it).

- ``orient``, ``vocabulary``: the orient report (risk band, category, test decision);
- ``observer``: what the observer does after an action; ``evidence``: evidence rounds;
- ``gates``, ``checks``: what a gate's output means (tests against the baseline, new lint or
  type errors, the tier of gates, which tests run); ``plans``: judging a plan;
- ``stubs``: stub markers and parse errors; ``stuck``: repetition; ``budgets``: budgets and
  context caps; ``policy``: the task's loop policy; ``tests``: the test decision;
  ``reflection``: what the reflector reflects on.

No I/O here: the decisions that look at a repository's files (``scan_tree``,
``detect_test_command``, evidence, the checks) ask the workspace interface the handler passes
them (``decide.files.RepoFiles``, built as ``sandbox.files.WorkspaceFiles``; tests/test_layers.py
fails on a direct read). Handlers gather facts through their ports, call these and publish what
they decide."""

from oopav.decide.budgets import (
    clip_output,
    deployment_caps,
    merge_budgets,
    summarise_context,
)
from oopav.decide.observer import (
    ObserverAction,
    ObserverDecision,
    ObserverFacts,
    decide_observer_action,
    is_secret_path,
)
from oopav.decide.orient import (
    Category,
    OrientInput,
    OrientReport,
    classify_category,
    decide_risk,
    decide_tests,
    mentioned_paths,
    orient,
    score_complexity,
    score_evidence_gap,
)
from oopav.decide.stubs import finding_key, new_findings, scan_stubs, scan_tree
from oopav.decide.stuck import PERTURBATIONS, StuckMatch, detect_stuck, next_response

__all__ = [
    "PERTURBATIONS",
    "Category",
    "ObserverAction",
    "ObserverDecision",
    "ObserverFacts",
    "OrientInput",
    "OrientReport",
    "StuckMatch",
    "classify_category",
    "clip_output",
    "decide_observer_action",
    "decide_risk",
    "decide_tests",
    "deployment_caps",
    "detect_stuck",
    "finding_key",
    "is_secret_path",
    "mentioned_paths",
    "merge_budgets",
    "new_findings",
    "next_response",
    "orient",
    "scan_stubs",
    "scan_tree",
    "score_complexity",
    "score_evidence_gap",
    "summarise_context",
]
