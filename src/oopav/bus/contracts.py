"""What each handler consumes and emits: the contract least-privilege credentials are cut from.

``SUBSCRIBES`` and ``EMITS`` are declared here, beside the credentials they are cut into, so
the bus layer needs no handler code; ``tests/ops/test_contracts.py`` checks ``SUBSCRIBES``
against each handler class's own ``subscribes`` and ``EMITS`` against what the handlers really
emit (``tests/ops/test_contracts.py`` runs sessions
and fails on any event whose ``actor`` is not allowed its type), so the credentials that
``oopav ops accounts`` generates can never silently drift from the code.
"""

from __future__ import annotations

# Any loop handler may end a session: a message that fails on its last delivery is parked and
# its session completed as aborted by the runtime on the handler's behalf.
_ENDS = ("session_completed", "budget_exceeded")

EMITS: dict[str, tuple[str, ...]] = {
    "intake": ("task_submitted", "task_rejected"),
    "grants": ("permission_granted", "permission_denied"),
    "watchdog": _ENDS,
    # The decision core (docs/loop.md): evidence, rollbacks, questions to a person, candidates.
    "observer": (
        "workspace_prepared",
        "baseline_reused",
        "observation_recorded",
        "replan_triggered",
        "evidence_gathered",
        "workspace_rolled_back",
        "human_input_requested",
        "critic_verdict",
        "model_called",
        *_ENDS,
    ),
    "orient": ("orient_reported", "replan_triggered", "human_input_requested", *_ENDS),
    "planner": (
        "model_called",
        "plan_proposed",
        "stuck_detected",
        "replan_triggered",
        "plan_candidate_evaluated",
        "candidate_selected",
        "critic_verdict",
        "caution_raised",
        *_ENDS,
    ),
    "actor": (
        "model_called",
        "action_proposed",
        "action_rejected",
        "permission_requested",
        "action_applied",
        "stuck_detected",
        "replan_triggered",
        "candidate_evaluated",
        "candidate_selected",
        "human_input_requested",  # an `ask` action
        "question_answered",
        *_ENDS,
    ),
    "verifier": (
        "gate_evaluated",
        "verification_completed",
        "replan_triggered",
        "critic_verdict",
        "model_called",
        "workspace_rolled_back",
        "replan_scored",
        *_ENDS,
    ),
    # The reflector writes the mission's library and starts holdout sessions of its own.
    "reflector": (
        "task_submitted",
        "mission.experience_library_seeded",
        "mission.reflection_proposed",
        "mission.guidance_op_applied",
        "mission.reflection_rejected",
        "mission.guidance_rolled_back",
        "mission.model_called",
    ),
}

# Handlers that answer `nats req` besides their durable consumer: the request subject, and
# where they watch for the outcome to answer with (their own events, or a core subject).
SERVES: dict[str, tuple[str, ...]] = {
    "intake": (
        "oopav.tasks.submit",
        "oopav.ev.session.*.task_submitted",
        "oopav.ev.session.*.task_rejected",
    ),
    "grants": ("oopav.grants.submit", "oopav.grants_outcome.*"),
}
# Core (not stored) subjects a handler publishes besides its events.
PUBLISHES: dict[str, tuple[str, ...]] = {"grants": ("oopav.grants_outcome.*",)}


# The session event types each loop handler consumes (its class's ``subscribes``).
SUBSCRIBES: dict[str, tuple[str, ...]] = {
    "observer": ("task_submitted", "action_applied", "orient_reported", "action_rejected"),
    "orient": ("observation_recorded", "evidence_gathered", "human_input_provided"),
    "planner": ("orient_reported", "replan_triggered"),
    "actor": (
        "plan_proposed",
        "observation_recorded",
        "action_rejected",
        "permission_granted",
        "permission_denied",
        "evidence_gathered",
        "human_input_provided",
    ),
    "verifier": ("action_proposed",),
    "watchdog": ("*",),
}


def subscribes(name: str) -> tuple[str, ...]:
    """The session event types a handler consumes (``*``: all of them)."""
    return SUBSCRIBES.get(name, ())


def emits(name: str) -> tuple[str, ...]:
    try:
        return EMITS[name]
    except KeyError:
        raise KeyError(f"no contract for handler {name!r}; known: {', '.join(EMITS)}") from None
