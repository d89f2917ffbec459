"""Learned rules checked against the real ast-grep CLI (a test helper and a bench flag).

Users run the rule file ``oopav synth`` prints with ``ast-grep scan --rule FILE --update-all``;
the loop's sandbox runs the same rules in process (``sandbox.astgrep.rewrite_source``). The two
must agree: a rule the CLI refuses ("Rule must specify a set of AST kinds to match") or reads
differently is a rule the user cannot use. :func:`check_rules` applies each rule, in order, to
every file with both and compares the results byte for byte:

- ``rejected``: the CLI refused the rule file (its first error line is the detail);
- ``differs``: the CLI rewrote a file otherwise than one in-process pass of the rule;
- ``invalid``: ast-grep-py refused it too (synth never hands out such a rule);
- ``passes``: a deletion rule whose in-process result (``SynthRule.apply``, repeated until
  nothing changes: adjacent deleted statements overlap) needs the CLI run more than once.

One deliberate difference is not a finding: a line that is blank in a re-indented multi-line
metavariable stays as it was in process, where the CLI pads it with the indentation (see
``sandbox.astgrep.reindent``). :func:`check_file` runs the whole rule file at once, as a user
does; the CLI applies every document of it to the original text in one pass, so rules learned
one after another (each on the text the earlier ones produce) may read otherwise there.

Not used by the loop (it spawns the CLI); tests and ``bench/synth_real.py --cli-check`` call it.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from oopav.sandbox.astgrep import LANG_EXTENSIONS, RuleError, find_cli, rewrite_source
from oopav.synth.core import SynthRule

MAX_CLI_PASSES = 8  # as synth's own apply (core.MAX_PASSES)


@dataclass(frozen=True)
class CliFinding:
    """One rule the CLI refuses or applies otherwise (``rule`` is its 0-based index)."""

    rule: int
    rule_id: str
    kind: str  # rejected | differs | passes | file | invalid
    path: str = ""
    detail: str = ""

    def line(self) -> str:
        where = f" {self.path}" if self.path else ""
        return f"rule {self.rule + 1} ({self.rule_id}) {self.kind}{where}: {self.detail}"


def same_modulo_padding(ours: str, cli: str) -> bool:
    """Byte-identical but for the one known difference: a blank line the CLI padded."""
    if ours == cli:
        return True
    a, b = ours.split("\n"), cli.split("\n")
    return len(a) == len(b) and all(
        x == y or (not x.strip() and not y.strip()) for x, y in zip(a, b, strict=True)
    )


def _first_error(text: str) -> str:
    """The CLI's reason: the lines after "Caused by" (one, or a summary and the cause)."""
    lines = [ln.strip(" ╰▻✖") for ln in text.splitlines() if ln.strip()]
    at = next((i for i, ln in enumerate(lines) if "Caused by" in ln), None)
    reason = lines[at + 1 :] if at is not None else lines
    return (" ".join(reason) or "(no output)")[:200]


def _first_diff(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.split("\n"), b.split("\n"), strict=False), 1):
        if x != y:
            return f"line {i}: in process {x.strip()[:70]!r}, CLI {y.strip()[:70]!r}"
    return "line count differs"


class _Tree:
    """A scratch directory holding the files under names of the language's extension."""

    def __init__(self, root: Path, language: str, texts: Sequence[str]) -> None:
        ext = LANG_EXTENSIONS[language][0]
        self.root = root
        self.names = [f"f{i}{ext}" for i in range(len(texts))]
        self.write(texts)

    def write(self, texts: Sequence[str]) -> None:
        for name, text in zip(self.names, texts, strict=True):
            (self.root / name).write_text(text, encoding="utf-8")

    def read(self) -> list[str]:
        return [(self.root / n).read_text(encoding="utf-8") for n in self.names]

    def scan(self, rule_yaml: str, timeout: float) -> str | None:
        """Run ``ast-grep scan --rule --update-all`` once; the CLI's error when it refuses."""
        rule_file = self.root / "rule.yml"
        rule_file.write_text(rule_yaml, encoding="utf-8")
        proc = subprocess.run(
            [find_cli(), "scan", "--rule", str(rule_file), "--update-all", *self.names],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        if proc.returncode != 0:
            return _first_error(proc.stderr or proc.stdout)
        return None


def check_rules(
    rules: Sequence[SynthRule],
    files: Sequence[tuple[str, str]],
    language: str,
    *,
    timeout: float = 60.0,
) -> list[CliFinding]:
    """Each rule, in order, on every file (``(path, text)``), by the CLI and in process; each
    rule starts from the text the earlier rules produced in process. [] when all agree."""
    findings: list[CliFinding] = []
    texts = [t for _, t in files]
    paths = [p for p, _ in files]
    with tempfile.TemporaryDirectory(prefix="oopav-clicheck-") as tmp:
        tree = _Tree(Path(tmp), language, texts)
        for i, rule in enumerate(rules):
            as_rule = rule.as_rule()
            try:
                once = [rewrite_source(t, as_rule)[0] for t in texts]
                full = [rule.apply(t)[0] for t in texts]
            except RuleError as exc:  # not a rule synth hands out: it verifies them in process
                findings.append(CliFinding(i, rule.id, "invalid", detail=exc.message[:200]))
                continue
            tree.write(texts)
            error = tree.scan(rule.to_yaml(), timeout)
            if error is not None:
                findings.append(CliFinding(i, rule.id, "rejected", detail=error))
                texts = full
                continue
            got = tree.read()
            bad = [j for j in range(len(texts)) if not same_modulo_padding(once[j], got[j])]
            for j in bad:
                findings.append(
                    CliFinding(i, rule.id, "differs", paths[j], _first_diff(once[j], got[j]))
                )
            if not bad and full != once:
                # A deletion of adjacent statements: the CLI run again until nothing changes.
                for _ in range(MAX_CLI_PASSES - 1):
                    before = got
                    tree.scan(rule.to_yaml(), timeout)
                    got = tree.read()
                    if got == before:
                        break
                for j in range(len(texts)):
                    if full[j] != once[j]:
                        same = same_modulo_padding(full[j], got[j])
                        detail = (
                            "several CLI runs give the in-process result"
                            if same
                            else _first_diff(full[j], got[j])
                        )
                        findings.append(CliFinding(i, rule.id, "passes", paths[j], detail))
            texts = full
    return findings


def check_file(
    rules: Sequence[SynthRule],
    files: Sequence[tuple[str, str]],
    language: str,
    *,
    timeout: float = 60.0,
) -> list[CliFinding]:
    """The whole rule file (``SynthResult.to_yaml``) in one CLI run against the rules applied
    in order in process; one ``file`` finding per file that differs."""
    if not rules:
        return []
    texts = [t for _, t in files]
    want = list(texts)
    try:
        for rule in rules:
            want = [rule.apply(t)[0] for t in want]
    except RuleError as exc:
        return [CliFinding(0, "(file)", "invalid", detail=exc.message[:200])]
    with tempfile.TemporaryDirectory(prefix="oopav-clicheck-") as tmp:
        tree = _Tree(Path(tmp), language, texts)
        error = tree.scan("---\n".join(r.to_yaml() for r in rules), timeout)
        if error is not None:
            return [CliFinding(0, "(file)", "file", detail=f"refused: {error}")]
        got = tree.read()
    return [
        CliFinding(0, "(file)", "file", path, _first_diff(w, g))
        for (path, _), w, g in zip(files, want, got, strict=True)
        if not same_modulo_padding(w, g)
    ]
