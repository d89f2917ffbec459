"""Every evaluation case: the rule learned from at most two training examples reproduces the
training examples and rewrites each held-out file exactly as expected."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oopav.synth.evaluate import cases_in, load_case, score_case

CASES = cases_in(Path(__file__).parent / "cases")


def test_there_are_enough_cases_in_every_language() -> None:
    langs = [p.parent.name for p in CASES]
    assert len(CASES) >= 40
    for lang in ("python", "javascript", "typescript", "go", "rust"):
        assert langs.count(lang) >= 6, lang


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_case(path: Path) -> None:
    case = load_case(path)
    assert 1 <= len(case["train"]) <= 3 and 1 <= len(case["heldout"]) <= 3
    score = score_case(case, min(2, len(case["train"])))
    assert score.synthesised, score.error
    assert score.exact, "\n".join(score.details)
    assert score.correct == score.produced == score.expected


EXTENSIONS = {"python": ".py", "javascript": ".js", "typescript": ".ts", "go": ".go", "rust": ".rs"}


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_case_with_the_ast_grep_cli(path: Path, tmp_path: Path) -> None:
    """The rule file, given to the real CLI (`ast-grep scan --rule --update-all`), rewrites the
    held-out files exactly as expected too."""
    from oopav.sandbox.astgrep import find_cli
    from oopav.synth import Example, synthesize

    case = load_case(path)
    lang = case["language"]
    result = synthesize(
        [Example(e["before"], e["after"], language=lang) for e in case["train"][:2]]
    )
    rule_file = tmp_path / "rule.yml"
    rule_file.write_text(result.to_yaml())
    tree = tmp_path / "tree"
    tree.mkdir()
    for i, h in enumerate(case["heldout"]):
        (tree / f"f{i}{EXTENSIONS[lang]}").write_text(h["before"])
    proc = subprocess.run(
        [find_cli(), "scan", "--rule", str(rule_file), "--update-all", str(tree)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for i, h in enumerate(case["heldout"]):
        assert (tree / f"f{i}{EXTENSIONS[lang]}").read_text() == h["after"]
