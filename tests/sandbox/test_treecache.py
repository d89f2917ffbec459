"""The per-workspace parsed-tree cache: reuse by content, invalidation by writes, bounds."""

from __future__ import annotations

from pathlib import Path

from oopav.events.actions import AstGrepAction
from oopav.sandbox import treecache
from oopav.sandbox.apply import ActionPlan, apply_plan, plan_action
from oopav.sandbox.astgrep import rewrite_source, rule_from_action
from oopav.sandbox.treecache import TreeCache

SRC = "def f(x):\n    return fetch(x)\n\n\ndef g(y):\n    return fetch(y, 2)\n"
RULE = rule_from_action(
    AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python")
)


def test_second_rule_reuses_the_tree_and_gives_the_same_result() -> None:
    trees = TreeCache()
    other = rule_from_action(
        AstGrepAction(pattern="return $X", rewrite="return ($X)", language="python")
    )
    rewrite_source(SRC, other, trees=trees, path="m.py")
    assert (trees.misses, trees.hits) == (1, 0)
    cached = rewrite_source(SRC, RULE, trees=trees, path="m.py")
    assert (trees.misses, trees.hits) == (1, 1)
    assert cached == rewrite_source(SRC, RULE)  # identical to an uncached parse
    assert cached[1] == 2 and "fetch_page(y, 2)" in cached[0]


def test_changed_content_is_parsed_again_and_drops_the_old_tree() -> None:
    trees = TreeCache()
    rewrite_source(SRC, RULE, trees=trees, path="m.py")
    changed = SRC.replace("fetch(x)", "other(x)")
    _, n = rewrite_source(changed, RULE, trees=trees, path="m.py")
    assert trees.misses == 2 and n == 1  # never the stale tree with two matches
    assert len(trees) == 1  # the old content's tree went with the new one
    trees.forget("m.py")
    assert len(trees) == 0


def test_cache_is_bounded_by_source_bytes() -> None:
    trees = TreeCache(max_bytes=3 * len(SRC))
    for i in range(10):
        trees.root(SRC + f"# {i}\n", "python", f"m{i}.py")
    assert 1 <= len(trees) <= 3
    assert trees._bytes <= 3 * len(SRC) + 10


def test_apply_path_uses_the_workspace_cache_and_writes_invalidate(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text(SRC)
    treecache.drop_workspace(ws)
    action = AstGrepAction(pattern="fetch($$$A)", rewrite="fetch_page($$$A)", language="python")
    first = plan_action(ws, action)
    assert isinstance(first, ActionPlan)
    trees = treecache.for_workspace(ws)
    assert trees.misses == 1 and len(trees) == 1
    again = plan_action(ws, action)
    assert isinstance(again, ActionPlan) and trees.hits == 1
    assert again.changes[0].after == first.changes[0].after
    apply_plan(ws, first)
    assert len(trees) == 0  # the written file's old tree is gone
    # The rewritten file has no match left: a stale tree would have claimed two.
    after = plan_action(ws, action)
    assert not isinstance(after, ActionPlan) and after.reason == "no_match"
    treecache.drop_workspace(ws)
