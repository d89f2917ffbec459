"""Examples that no one rule set reproduces together: learned in groups (wave 3g synth6).

Real edits (axios 0438dd3bac, a further example added by the incremental protocol) ended in
"the rules learned for each change interfere" and no rule at all, although each group of the
examples had a rule set of its own. The reproduction: a chain of renames made in two files
(`fetch` -> `fetch_page` in one, the old `fetch_page` -> `fetch_all` in the other). Learned
together the rules interfere (`fetch` -> `fetch_page` -> `fetch_all`), and learned one after
another the second file's change contradicts the first file's result; learned apart and
applied in the order that reproduces both, the union is exact on both and on a held-out file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from oopav.cli import cli
from oopav.sandbox.astgrep import find_cli
from oopav.synth import Example, SynthesisError, synthesize
from oopav.synth.clicheck import check_file, check_rules
from oopav.synth.partition import MAX_LEARNS, learn_in_groups, partitions

RENAMES = [
    Example("x = client.fetch(u)\n", "x = client.fetch_page(u)\n", path="a.py"),
    Example("x = client.fetch_page(u)\n", "x = client.fetch_all(u)\n", path="b.py"),
]
HELD_BEFORE = "p = client.fetch(q)\nr = client.fetch_page(s)\nclient.fetch_more(t)\n"
HELD_AFTER = "p = client.fetch_page(q)\nr = client.fetch_all(s)\nclient.fetch_more(t)\n"


def test_examples_that_need_two_rule_sets_get_their_union() -> None:
    result = synthesize(RENAMES)
    assert result.groups == [[2], [1]]  # the second file's rename must run first
    assert [r.examples for r in result.rules] == [(2,), (1,)]
    assert [(r.rule["regex"], r.fix) for r in result.rules] == [
        ("^fetch_page$", "fetch_all"),
        ("^fetch$", "fetch_page"),
    ]
    for ex in RENAMES:
        assert result.apply(ex.before)[0] == ex.after
    assert result.examples_reproduced == 2
    assert result.apply(HELD_BEFORE)[0] == HELD_AFTER
    assert any("2 groups" in n and "synth-1 from example 2" in n for n in result.notes)
    # The rule file says where each rule came from, in a key ast-grep leaves to users.
    docs = list(yaml.safe_load_all(result.to_yaml()))
    assert [d["metadata"] for d in docs] == [{"examples": [2]}, {"examples": [1]}]
    assert result.to_json()["groups"] == [[2], [1]]


def test_a_group_keeps_the_negatives_and_contradictions_still_fail() -> None:
    # The same code changed two ways: no partition reproduces both, so the contract holds.
    with pytest.raises(SynthesisError):
        synthesize(
            [
                Example("x = f(u)\n", "x = g(u)\n", path="a.py"),
                Example("x = f(u)\n", "x = h(u)\n", path="b.py"),
            ]
        )
    # An unchanged example is every group's negative: it keeps `client.fetch_page(v)`, so the
    # second file's group narrows its rename to the call it shows and leaves that one alone.
    kept = Example("y = client.fetch_page(v)\n", "y = client.fetch_page(v)\n", path="c.py")
    narrowed = synthesize([*RENAMES, kept])
    assert narrowed.groups == [[2], [1]]
    assert narrowed.rules[0].rule == {"pattern": "client.fetch_page(u)"}
    assert narrowed.apply(kept.before)[0] == kept.before
    # One rule set for all examples stays as it was: no groups, no provenance in the file.
    single = synthesize([RENAMES[0]])
    assert single.groups == [] and single.rules[0].examples is None
    assert "metadata" not in single.rules[0].to_dict() and "groups" not in single.to_json()


def test_the_union_runs_in_the_ast_grep_cli_as_in_process() -> None:
    if find_cli() is None:
        pytest.fail("the ast-grep CLI is part of the toolchain (pip install ast-grep-cli)")
    result = synthesize(RENAMES)
    files = [("a.py", RENAMES[0].before), ("b.py", RENAMES[1].before), ("c.py", HELD_BEFORE)]
    found = check_rules(result.rules, files, "python") + check_file(result.rules, files, "python")
    assert not found, "\n".join(f.line() for f in found)


def test_oopav_synth_prints_the_groups(tmp_path: Path) -> None:
    ex = tmp_path / "ex.json"
    ex.write_text(
        json.dumps([{"before": e.before, "after": e.after, "path": e.path} for e in RENAMES])
    )
    r = CliRunner().invoke(cli, ["synth", str(ex), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["groups"] == [[2], [1]] and data["examples_reproduced"] == 2
    assert [d["metadata"]["examples"] for d in data["rules"]] == [[2], [1]]


def test_partitions_fewest_groups_first_earlier_examples_together() -> None:
    assert list(partitions([1, 2, 3], 2)) == [[(1, 2), (3,)], [(1, 3), (2,)], [(1,), (2, 3)]]
    assert list(partitions([1, 2, 3], 3)) == [[(1,), (2,), (3,)]]
    # Stirling numbers of the second kind: every partition once.
    assert [len(list(partitions([1, 2, 3, 4], k))) for k in (1, 2, 3, 4)] == [1, 7, 6, 1]
    learned: list[tuple[int, ...]] = []

    def learn(group: tuple[int, ...]) -> str | None:
        learned.append(group)
        return None if group == (1, 3) else "ok"

    def combine(groups: list[tuple[tuple[int, ...], str]]) -> list[tuple[int, ...]] | None:
        keys = [g for g, _ in groups]
        return keys if keys == [(3,), (1, 2)] else None  # only this order verifies

    assert learn_in_groups([1, 2, 3], learn, combine) == [(3,), (1, 2)]
    assert learned == [(1, 2), (3,)]  # each group learned once, the search stops at the first union
    # A hopeless set of examples costs at most MAX_LEARNS group learns.
    learned.clear()
    assert learn_in_groups(list(range(1, 7)), learn, lambda groups: None) is None
    assert len(learned) == MAX_LEARNS
