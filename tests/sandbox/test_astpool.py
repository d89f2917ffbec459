"""The ast-grep worker pool: same results as in-process, trees reused across rules, errors in
file order, and every failure falling back to in-process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from oopav.events.actions import AstGrepAction
from oopav.sandbox import astpool, treecache
from oopav.sandbox.apply import ActionPlan, plan_action
from oopav.sandbox.astgrep import Rule, RuleError, rewrite_source, rule_from_action

RULE = rule_from_action(
    AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python")
)
OTHER = rule_from_action(
    AstGrepAction(pattern="return $X", rewrite="return ($X)", language="python")
)


def _module(k: int, functions: int = 200) -> str:
    body = "".join(
        f"def f{i}(x):\n    y = fetch(x, {i + k})\n    if y:\n        return fetch(\n"
        f"            y,\n        )\n    return None\n\n\n"
        for i in range(functions)
    )
    return f"# module {k}\n{body}"


# Big enough for the pool (>= MIN_POOL_BYTES of candidates), one file without the literal.
ITEMS = [(f"pkg/m{k}.py", _module(k)) for k in range(6)] + [("pkg/none.py", "x = 1\n")]


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[astpool.AstGrepPool]:
    p = astpool.AstGrepPool(1)  # this process + one worker
    assert p.start(wait=True)
    monkeypatch.setattr(astpool, "_pool", p)
    yield p
    p.close()


def _parsed(p: astpool.AstGrepPool, ws: Path) -> int:
    """Trees parsed for ``ws``: by the worker, and by this process for its own share."""
    return p.misses + treecache.for_workspace(ws).misses


def _serial(items: list[tuple[str, str]], rule: Rule) -> list[tuple[str, int]]:
    return [rewrite_source(text, rule) for _, text in items]


def test_batch_is_big_enough_for_the_pool() -> None:
    assert sum(len(t) for _, t in ITEMS) >= 2 * astpool.MIN_POOL_BYTES


def test_pool_results_equal_in_process_and_a_second_rule_reuses_the_trees(
    pool: astpool.AstGrepPool, tmp_path: Path
) -> None:
    expected = _serial(ITEMS, RULE)
    assert sum(n for _, n in expected) == 6 * 400
    treecache.drop_workspace(tmp_path)
    first = astpool.rewrite_files(tmp_path, ITEMS, OTHER)
    assert first == _serial(ITEMS, OTHER)
    # `return` is a keyword (compared by kind), so that rule needs no literal: all 7 parsed.
    assert pool.batches == 1 and _parsed(pool, tmp_path) == 7
    assert 1 <= pool.misses <= 6  # the worker took a share, this process the rest
    assert astpool.rewrite_files(tmp_path, ITEMS, RULE) == expected
    assert pool.batches == 2 and _parsed(pool, tmp_path) == 7  # the second rule parsed nothing
    assert set(pool._holders.values()) == {0, 1}
    treecache.drop_workspace(tmp_path)


def test_drop_and_forget_reach_the_workers(pool: astpool.AstGrepPool, tmp_path: Path) -> None:
    astpool.drop_workspace(tmp_path)
    astpool.rewrite_files(tmp_path, ITEMS, RULE)
    worker = pool.misses
    astpool.drop_workspace(tmp_path)  # this process's trees and the worker's
    astpool.rewrite_files(tmp_path, ITEMS, RULE)
    assert pool.misses == 2 * worker and _parsed(pool, tmp_path) == worker + 6
    for path in ("pkg/m0.py", "pkg/m1.py", "pkg/m2.py"):
        before = _parsed(pool, tmp_path)
        astpool.forget(tmp_path, [path])
        astpool.rewrite_files(tmp_path, ITEMS, RULE)
        assert _parsed(pool, tmp_path) == before + 1  # only the forgotten file's tree is gone
    astpool.drop_workspace(tmp_path)


def test_small_batch_stays_in_process(pool: astpool.AstGrepPool, tmp_path: Path) -> None:
    treecache.drop_workspace(tmp_path)
    small = [("a.py", "fetch(1)\n"), ("b.py", "fetch(2, 3)\n")]
    assert astpool.rewrite_files(tmp_path, small, RULE) == [
        ("fetch_page(1)\n", 1),
        ("fetch_page(2, 3)\n", 1),
    ]
    assert pool.batches == 0 and treecache.for_workspace(tmp_path).misses == 2


def test_rule_error_is_the_first_in_file_order(pool: astpool.AstGrepPool, tmp_path: Path) -> None:
    bad = Rule(id="bad", language="python", rule={"matches": "nowhere"}, fix="x")
    with pytest.raises(RuleError) as serial:
        _serial(ITEMS, bad)
    with pytest.raises(RuleError) as pooled:
        astpool.rewrite_files(tmp_path, ITEMS, bad)
    assert pool.batches == 1  # it ran on the workers
    assert (pooled.value.code, pooled.value.message) == (serial.value.code, serial.value.message)


def test_a_dead_worker_makes_the_batch_run_in_process(
    pool: astpool.AstGrepPool, tmp_path: Path
) -> None:
    treecache.drop_workspace(tmp_path)
    pool._procs[0].kill()
    pool._procs[0].join(5)
    assert astpool.rewrite_files(tmp_path, ITEMS, RULE) == _serial(ITEMS, RULE)
    assert not pool.ready()  # closed; a later batch starts it again in the background
    # Each file parsed once in this process (its own share's trees were reused).
    assert treecache.for_workspace(tmp_path).misses == 6
    treecache.drop_workspace(tmp_path)


def test_plan_action_on_a_big_workspace_uses_the_pool(
    pool: astpool.AstGrepPool, tmp_path: Path
) -> None:
    for path, text in ITEMS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    plan = plan_action(
        tmp_path,
        AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python"),
    )
    assert isinstance(plan, ActionPlan)
    assert pool.batches == 1
    assert plan.matches == 6 * 400
    assert {c.path: c.after for c in plan.changes} == {
        p: a for (p, _), (a, n) in zip(ITEMS, _serial(ITEMS, RULE), strict=True) if n
    }


def test_a_pool_that_cannot_start_leaves_batches_in_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class NoProcesses:
        def Pipe(self) -> object:
            raise OSError("no more processes")

    monkeypatch.setattr(astpool.multiprocessing, "get_context", lambda _: NoProcesses())
    p = astpool.AstGrepPool(1)
    monkeypatch.setattr(astpool, "_pool", p)
    assert not p.start(wait=True)
    starter = p._starting
    assert not p.start(wait=True) and p._starting is starter  # no retry within RETRY_S
    treecache.drop_workspace(tmp_path)
    assert astpool.rewrite_files(tmp_path, ITEMS, RULE) == _serial(ITEMS, RULE)
    assert p.batches == 0 and treecache.for_workspace(tmp_path).misses == 6
    treecache.drop_workspace(tmp_path)


def test_worker_count_follows_the_allowed_cores_and_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OOPAV_ASTGREP_WORKERS", raising=False)
    monkeypatch.setattr(astpool.os, "sched_getaffinity", lambda _: {0}, raising=False)
    assert astpool.worker_count() == 0  # one core: no pool, everything in-process
    monkeypatch.setattr(astpool.os, "sched_getaffinity", lambda _: set(range(16)), raising=False)
    assert astpool.worker_count() == 3
    monkeypatch.setenv("OOPAV_ASTGREP_WORKERS", "0")
    assert astpool.worker_count() == 0
