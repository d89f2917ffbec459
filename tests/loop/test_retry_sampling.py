"""Which sampling an actor call uses (handlers/support/model_calls.attempt_sampling): greedy
for a session's first actor call, ``policy.retry_temperature`` with a seed per earlier call for
every later one; a group's own sampling and other roles are left alone."""

from __future__ import annotations

from helpers.events import task_submitted
from oopav.decide.policy import loop_policy_problem
from oopav.handlers.support.model_calls import attempt_sampling
from oopav.models.base import Sampling
from oopav.projections.session import SessionState


def state(policy: dict[str, object] | None, earlier: int) -> SessionState:
    s = SessionState(session_id="s1", task=task_submitted("s1", policy=policy))
    s.budgets_used.model_calls_by_role["actor"] = earlier
    return s


def test_the_first_call_is_greedy_and_later_ones_sample_with_their_own_seed() -> None:
    policy = {"retry_temperature": 0.8}
    assert attempt_sampling(state(policy, 0), "actor", 0, None, 0) == (None, 0)
    sampling, seed = attempt_sampling(state(policy, 0), "actor", 1, None, 0)
    assert sampling == Sampling(temperature=0.8) and seed == 1
    sampling, seed = attempt_sampling(state(policy, 2), "actor", 1, None, 5)
    assert sampling == Sampling(temperature=0.8) and seed == 8  # 5 + two earlier + this retry


def test_without_the_option_other_roles_and_groups_are_unchanged() -> None:
    assert attempt_sampling(state(None, 3), "actor", 1, None, 0) == (None, 0)
    assert attempt_sampling(state({"retry_temperature": 0.8}, 3), "planner", 1, None, 0) == (
        None,
        0,
    )
    grid = Sampling(temperature=0.3)
    assert attempt_sampling(state({"retry_temperature": 0.8}, 3), "actor", 1, grid, 7) == (
        grid,
        7,
    )


def test_retry_temperature_is_validated() -> None:
    problem = loop_policy_problem({"retry_temperature": 5})
    assert problem is not None and "retry_temperature" in problem
    assert loop_policy_problem({"retry_temperature": 0.8}) is None
