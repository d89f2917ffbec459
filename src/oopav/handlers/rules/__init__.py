"""The loop's pure decision rules: stub markers, the observer action, the orient report, stuck
detection and budget accounting. No I/O here except ``scan_tree`` reading the files it scans;
handlers feed these functions facts from events and publish what they decide."""

from oopav.handlers.rules.budgets import (
    clip_output,
    deployment_caps,
    merge_budgets,
    summarise_context,
)
from oopav.handlers.rules.observer import (
    ObserverAction,
    ObserverDecision,
    ObserverFacts,
    decide_observer_action,
    is_secret_path,
)
from oopav.handlers.rules.orient import (
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
from oopav.handlers.rules.stubs import finding_key, new_findings, scan_stubs, scan_tree
from oopav.handlers.rules.stuck import PERTURBATIONS, StuckMatch, detect_stuck, next_response

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
