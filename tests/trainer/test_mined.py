"""Mined tasks: the commits of a repository built here with real git → verified tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from git_history import make_history

from oopav.cli import cli
from oopav.models.prompt import parse_role_answer
from oopav.trainer.mined import mine
from oopav.trainer.tasks import apply_rule, load_tasks, split_of, target_text


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    repo = tmp_path_factory.mktemp("mined") / "repo"
    return repo, make_history(repo)


def test_each_learnable_hunk_is_a_task_verified_by_its_gold_rule(
    history: tuple[Path, list[str]],
) -> None:
    repo, _ = history
    got = mine(repo, holdout=0.5)
    by_source: dict[str, list[str]] = {}
    for t in got.tasks:
        post, count = apply_rule(t.action(), t.pre)
        assert post == t.post != t.pre and count == t.rewrites >= 1
        assert t.split == split_of(t.source, 0.5) and t.family.startswith("git_")
        assert parse_role_answer("actor", target_text(t.rule)).payload == t.action()
        by_source.setdefault(t.source, []).append(t.post)
    # The rename across files: its definition, its call sites and the import, file by file.
    assert sorted(by_source) == ["app/main.py", "pkg/net.py", "tools/files.py"]
    assert any("import fetch_page" in p for p in by_source["app/main.py"])
    assert any("fetch_page(urls[0])" in p for p in by_source["app/main.py"])
    assert any(p.startswith("def fetch_page(url)") for p in by_source["pkg/net.py"])
    assert by_source["tools/files.py"] == [
        "def backup(src, dst):\n    shutil.copy(dst, src)\n    return dst\n"
    ]
    instructions = {t.instruction for t in got.tasks}
    assert instructions == {"Rename fetch to fetch_page.", "Swap the arguments of shutil.copy."}
    # "Add restore" is no rewrite; "Tidy report" makes two changes in one function, and a
    # task showing that function with only one of them made would teach half the commit.
    assert got.rejected == {"not_learnable": 1, "partial_change": 2}
    train = {t.source for t in got.tasks if t.split == "train"}
    test = {t.source for t in got.tasks if t.split == "test"}
    assert not (train & test)


def test_rev_range_and_limit(history: tuple[Path, list[str]]) -> None:
    repo, shas = history
    only_swap = mine(repo, rev=f"{shas[1]}..{shas[2]}")
    assert [t.instruction for t in only_swap.tasks] == ["Swap the arguments of shutil.copy."]
    assert len(mine(repo, n=2).tasks) == 2
    with pytest.raises(ValueError, match="git rev-list"):
        mine(repo, rev="nope..HEAD")


def test_cli_generate_kind_git(history: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, _ = history
    out = tmp_path / "tasks"
    args = ["tasks", "generate", "--kind", "git", "--repo", str(repo), "--n", "10"]
    r = CliRunner().invoke(cli, [*args, "--holdout", "0.5", "--out", str(out)])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["train"] + manifest["counts"]["test"] == 5
    assert manifest["rejected"]["partial_change"] == 2
    loaded = load_tasks(out, "train") + load_tasks(out, "test")
    assert {t.source for t in loaded} == {"app/main.py", "pkg/net.py", "tools/files.py"}

    r = CliRunner().invoke(cli, ["tasks", "generate", "--kind", "git", "--out", str(out)])
    assert r.exit_code != 0 and "--kind git needs --repo" in r.output
    r = CliRunner().invoke(
        cli, ["tasks", "generate", "--kind", "git", "--repo", str(tmp_path), "--out", str(out)]
    )
    assert r.exit_code != 0 and "is not a git repository" in r.output
