"""Before any test runs: do the rules ``synth:`` learns from a task's examples match anything in
the repository? A rule that matches nothing can only end in identical no-op retries
(``stuck: repeat x3``); the session stops at once instead, naming the nearest names the
repository does have (a misspelled example is the usual cause). Reads the workspace only, in
process: replay reproduces it."""

from __future__ import annotations

import difflib
import keyword
import re
from pathlib import Path
from typing import Any

import msgspec

from oopav.sandbox.files import WorkspaceFiles

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_FILES = 5000


def _changed_names(examples: list[dict[str, Any]]) -> list[str]:
    """Identifiers the examples' ``before`` has and their ``after`` lost (the renamed names)."""
    out: list[str] = []
    for x in examples:
        before = set(_IDENT.findall(str(x.get("before", ""))))
        after = set(_IDENT.findall(str(x.get("after", ""))))
        out += sorted(n for n in before - after if not keyword.iskeyword(n) and len(n) > 2)
    return list(dict.fromkeys(out))


def examples_match_nothing(root: Path, examples: list[Any]) -> str | None:
    """Why the session should stop (the learned rules match nothing), or None (they match,
    or synthesis fails: that has its own message later)."""
    from oopav.events.actions import AstGrepAction
    from oopav.sandbox.astgrep import RuleError, files_for, rewrite_source, rule_from_action
    from oopav.synth import synthesize

    raw = [msgspec.to_builtins(x) if not isinstance(x, dict) else x for x in examples]
    try:
        result = synthesize(raw)
    except Exception:
        return None  # synthesis fails: the actor says why, as before
    idents: set[str] = set()
    texts: dict[str, str] = {}
    for learned in result.rules:
        try:
            rule = rule_from_action(msgspec.convert(learned.as_action(), AstGrepAction))
        except (RuleError, msgspec.ValidationError):
            return None
        for rel in files_for(root, ["."], rule.language)[:MAX_FILES]:
            text = WorkspaceFiles(root).text(rel, errors="replace")
            if text is None:
                continue
            try:
                _, count = rewrite_source(text, rule)
            except RuleError:
                continue
            if count:
                return None
            texts[rel] = text
            idents.update(_IDENT.findall(text))
    names = _changed_names(raw)
    near: list[str] = []
    for name in names:
        near += [n for n in difflib.get_close_matches(name, sorted(idents), n=5, cutoff=0.6)]
    near = list(dict.fromkeys(n for n in near if n not in names))
    rules = ", ".join(r.id for r in result.rules)
    what = f" (the example changes {', '.join(f'`{n}`' for n in names[:5])})" if names else ""
    hint = (
        f"; nearest names in the repository: {', '.join(near[:8])} — check the examples' spelling"
        if near
        else "; no similar name in the repository"
    )
    return (
        f"the rule(s) learned from the examples ({rules}) match nothing in the repository"
        f"{what}: nothing to change{hint}{_fitted_hint(raw, texts)}"
    )


def _fitted_hint(raw: list[dict[str, Any]], texts: dict[str, str]) -> str:
    """``"; fitted to the repository, …"``: the least generalisation of the rules that still
    reproduces every example and rewrites something here (synth/target.py), for the user to
    review — the session does not apply a rule the examples do not show. "" when none."""
    from oopav.synth import synthesize

    try:
        fitted = synthesize(raw, target=sorted(texts.items()))
    except Exception:
        return ""
    notes = [n for n in fitted.notes if n.startswith("fitted to the repository")]
    if not notes:
        return ""
    sites = notes[0].rsplit(" rewrites ", 1)[-1].split(" ", 1)[0]
    steps = notes[0].split("there; ", 1)[-1].split(" (the least", 1)[0]
    return (
        f"; a rule widened to fit the repository ({steps}) would rewrite {sites} site(s): "
        "review it with `oopav synth EXAMPLES --apply .` before using it"
    )
