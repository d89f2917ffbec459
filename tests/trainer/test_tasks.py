"""Synthetic codemod tasks: verified by their gold rule, split by source file."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner

from oopav.trainer.tasks import (
    FAMILIES,
    apply_rule,
    generate,
    load_tasks,
    target_text,
    task_messages,
)


def test_generated_tasks_are_verified_by_their_gold_rule_and_split_by_file() -> None:
    got = generate(120, seed=1, holdout=0.3)
    assert len(got.tasks) == 120
    families = {t.family for t in got.tasks}
    assert families >= {"rename_call", "rename_method", "add_kwarg", "wrap_call", "replace_api"}
    for t in got.tasks:
        post, count = apply_rule(t.action(), t.pre)
        assert post == t.post and count == t.rewrites >= 1 and post != t.pre
        ast.parse(t.post)
    train = {t.source for t in got.tasks if t.split == "train"}
    test = {t.source for t in got.tasks if t.split == "test"}
    assert train and test and not (train & test)
    # Deterministic for a seed.
    assert [t.id for t in generate(120, seed=1, holdout=0.3).tasks] == [t.id for t in got.tasks]


def test_javascript_optional_chaining_from_a_js_corpus(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text(
        "function title(doc) {\n  const t = doc && doc.title;\n  return render(t, 2);\n}\n"
    )
    got = generate(10, corpus=tmp_path, families=("optional_chaining", "rename_call"))
    by_family = {t.family: t for t in got.tasks}
    oc = by_family["optional_chaining"]
    assert oc.language == "javascript" and "doc?.title" in oc.post
    assert "render_" in by_family["rename_call"].post


def test_prompt_and_target_follow_the_contract() -> None:
    from oopav.models.prompt import parse_role_answer

    t = generate(5, seed=2).tasks[0]
    parsed = parse_role_answer("actor", target_text(t.rule))
    assert parsed.payload == t.action()
    (msg,) = task_messages(t.instruction, t.pre)
    assert t.instruction in msg["content"] and t.pre in msg["content"]


def test_cli_generate_writes_splits_and_manifest(tmp_path: Path) -> None:
    from oopav.cli import cli

    r = CliRunner().invoke(cli, ["tasks", "generate", "--n", "40", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["counts"]["train"] + manifest["counts"]["test"] == 40
    assert len(load_tasks(tmp_path, "train")) == manifest["counts"]["train"]
    assert set(manifest["families"]) <= set(FAMILIES)
    named = tmp_path / "named"
    args = ["tasks", "generate", "--n", "30", "--families", "rename_attr,swap_args"]
    r = CliRunner().invoke(cli, [*args, "--out", str(named)])
    assert r.exit_code == 0, r.output
    got = json.loads((named / "manifest.json").read_text())["families"]
    assert set(got) == {"rename_attr", "swap_args"}
    r = CliRunner().invoke(cli, [*args[:-1], "rename_atr", "--out", str(named)])
    assert r.exit_code != 0 and "unknown task families: rename_atr" in r.output
    r = CliRunner().invoke(cli, ["tasks", "generate", "--kind", "git", "--out", str(tmp_path)])
    assert (
        r.exit_code != 0 and "--kind git needs --repo" in r.output
    )  # (tests/trainer/test_mined.py)


def test_a_small_set_still_has_a_test_split_disjoint_by_file(tmp_path: Path) -> None:
    """A small set whose files all hashed to train had no test split, and `train`'s final
    evaluation reported n=0: the smallest file moves to test; from a single file there is
    nothing to move, and `tasks generate` says so."""
    from oopav.cli import cli
    from oopav.trainer.tasks import ensure_test_split, generate

    tasks = generate(4, seed=0, holdout=0.2).tasks
    sources = ["big.py", "big.py", "big.py", "small.py"]
    train_only = [
        dataclasses.replace(t, source=f, split="train") for t, f in zip(tasks, sources, strict=True)
    ]
    split = ensure_test_split(train_only, 0.2)
    assert [t.split for t in split] == ["train", "train", "train", "test"]
    assert ensure_test_split(train_only, 0.0) == train_only
    # Four tasks from the standard library's first shuffled file (seed 0): one file.
    r = CliRunner().invoke(cli, ["tasks", "generate", "--n", "4", "--out", str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    assert "train=4" in r.output and "warning: no test split" in r.output
    assert "from 1 source file(s)" in r.output


def test_rename_attr_renames_accesses_not_calls_and_leaves_the_default_mix_alone(
    tmp_path: Path,
) -> None:
    """``rename_attr`` (asked for by name) renames ``obj.a`` reads and writes; its sites are
    not method calls; without it, generation is what it was (the default split's figures)."""
    from oopav.trainer.tasks import EXTRA_FAMILIES, sites

    code = "def f(self, doc):\n    self.size = doc.size + 1\n    return doc.render(self.size)\n"
    got = sites(code, "python", attrs=True)
    assert {(s.kind, s.name) for s in got if s.kind == "attr"} == {("attr", "size")}
    # doc.render(...) is a call site (a lower-case receiver reads as a module), not an attr one.
    assert ("module", "render") in {(s.kind, s.name) for s in got}
    assert all(s.kind != "attr" for s in sites(code, "python"))

    (tmp_path / "m.py").write_text(code)
    (t,) = generate(1, corpus=tmp_path, families=EXTRA_FAMILIES).tasks
    assert t.family == "rename_attr" and t.rule["pattern"] == "$OBJ.size"
    new = t.rule["rewrite"].removeprefix("$OBJ.")
    assert new.startswith("size_") and new + "`" in t.instruction
    assert t.post == code.replace(".size", f".{new}") and t.rewrites == 3
    # Off by default: the default mix never sees attribute sites.
    assert "rename_attr" not in FAMILIES
    assert all(t.family in FAMILIES for t in generate(60, seed=3).tasks)
