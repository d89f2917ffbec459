"""The shortest rule that makes the same rewrite: training targets without redundant context.

A teacher's ast_grep rule can carry context its task never needed: ``synth:`` learned to add
``inside: {kind: attribute, field: attribute, stopBy: neighbor}`` to an attribute rename,
which is more precise in general but, on a one-file task where no other ``get`` occurs, changes
nothing — and it is ~100 characters more of structure a small policy must learn to produce
with the name garbled in it (docs/benchmarks.md § Flywheel, wave 3e). :func:`minimal_rule`
drops such constraints one at a time and keeps a removal only when the rule, applied to the
task's own files through the sandbox's in-process ast-grep path (``rule_from_action``,
``check_rule``, ``rewrite_source``), still gives byte-identical results on every file.

Only the training task's files decide: nothing here reads a held-out task. The anchors are
never dropped: a mapping's ``kind`` and ``pattern`` (a rule of a bare ``regex`` would also
match a string's content of the same text on another file), the matched node's own ``regex``
(the old name: on a file whose only attribute is ``get``, ``{kind: identifier, inside:
{kind: attribute}}`` rewrites the same bytes, but a policy trained on it learns to leave the
name out), and ``id``, ``language``, ``fix``, ``metadata``. Everything else is a candidate:
``inside``, ``has``, ``not``, a nested ``regex``, ``field``, ``stopBy``, items of ``all`` /
``any``, and the rule's ``constraints``, ``transform`` and ``utils``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import yaml

from oopav.events.actions import AstGrepAction
from oopav.sandbox.astgrep import RuleError, check_rule, rewrite_source, rule_from_action

ANCHORS = frozenset({"kind", "pattern"})
# The rewritten node's own keys that are kept besides: its regex is the name being changed.
TOP_ANCHORS = ANCHORS | {"regex"}
EXTRA_KEYS = ("constraints", "transform", "utils")
# A bound on removal passes: each kept removal shortens the rule, so this only stops a
# pathological rule from looping; real rules settle in two passes.
MAX_PASSES = 8

Path_ = tuple[str | int, ...]


def _apply(data: Mapping[str, Any], files: Mapping[str, str]) -> tuple[str, ...] | None:
    """Every file after the rule ``data`` (a loaded rule YAML), in ``files``' order; None when
    the loop would refuse the rule (it does not parse, compile, or its patterns are broken)."""
    try:
        text = yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)
        rule = rule_from_action(AstGrepAction(rule=text))
        check_rule(rule)
        return tuple(rewrite_source(src, rule)[0] for src in files.values())
    except (RuleError, ValueError, RuntimeError):
        return None


def _candidates(node: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Paths of removable parts under ``node``, outermost first (a whole ``inside`` before its
    ``stopBy``): keys of mappings but the anchors, items of lists. ``node`` is the rule's
    ``rule`` mapping (``path`` empty: the rewritten node itself)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in (TOP_ANCHORS if not path else ANCHORS):
                yield (*path, key)
            yield from _candidates(value, (*path, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield (*path, i)
            yield from _candidates(item, (*path, i))


def _without(data: dict[str, Any], path: Path_) -> dict[str, Any] | None:
    """A deep copy of ``data`` with the part at ``path`` removed; None where the removal would
    leave an empty mapping or list (no rule) or the path is gone."""
    import copy

    out = copy.deepcopy(data)
    parent: Any = out
    for step in path[:-1]:
        try:
            parent = parent[step]
        except (KeyError, IndexError, TypeError):
            return None
    last = path[-1]
    try:
        del parent[last]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(parent, dict | list) and not parent:
        return None
    return out


def minimal_rule(rule_yaml: str, files: Mapping[str, str]) -> str:
    """The shortest form of ``rule_yaml`` found by dropping constraints one at a time that
    rewrites every file of ``files`` (path -> text) byte-identically; ``rule_yaml`` itself
    (unchanged text) when nothing can go, when the loop would refuse it, or when it changes no
    file (then every removal would "agree": there is nothing to decide by)."""
    try:
        data = yaml.safe_load(rule_yaml)
    except yaml.YAMLError:
        return rule_yaml
    if not isinstance(data, dict) or not isinstance(data.get("rule"), dict):
        return rule_yaml
    want = _apply(data, files)
    if want is None or want == tuple(files.values()):
        return rule_yaml
    changed = False
    for _ in range(MAX_PASSES):
        progress = False
        paths = [("rule", *p) for p in _candidates(data["rule"])]
        paths += [(k,) for k in EXTRA_KEYS if k in data]
        for path in paths:
            trial = _without(data, path)
            if trial is not None and _apply(trial, files) == want:
                data, progress, changed = trial, True, True
                break  # paths of the old rule may be stale: list them again
        if not progress:
            break
    if not changed:
        return rule_yaml
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _action_json(answer: str) -> dict[str, Any] | None:
    """The action of a compact answer (``<action>{json}</action>``), or None."""
    start, end = answer.find("<action>"), answer.find("</action>")
    if start < 0 or end < start:
        return None
    try:
        body = json.loads(answer[start + len("<action>") : end])
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def minimal_answer(answer: str, files: Mapping[str, str]) -> str:
    """``answer`` (a compact answer) with its ast_grep rule replaced by :func:`minimal_rule`;
    unchanged when it is no ast_grep rule or its compact form would not round-trip."""
    from oopav.models.profiles import compact_answer

    body = _action_json(answer)
    if body is None or body.get("type") != "ast_grep" or not isinstance(body.get("rule"), str):
        return answer
    if compact_answer(body) != answer:
        return answer  # not the compact form: rewriting it would change more than the rule
    short = minimal_rule(body["rule"], files)
    if short == body["rule"]:
        return answer
    return compact_answer({**body, "rule": short})


def _answer(rec: Mapping[str, Any]) -> str | None:
    comp = rec.get("completion")
    if isinstance(comp, list) and comp and isinstance(comp[-1], dict):
        content = comp[-1].get("content")
        return content if isinstance(content, str) else None
    return None


def minimize_records(
    records: list[dict[str, Any]],
    files_of: Callable[[str], Mapping[str, str] | None],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Compact SFT records with each answer's rule at its shortest on its own task's files,
    and counts (records, shorter, mean answer characters before and after).

    ``files_of(session_id)``: the task's files before the session (None: leave the session's
    records as they are). A session's records are taken in order of ``seq``, each against the
    files as the earlier answers left them (the recorded rules, which the verifier passed)."""
    out = [dict(r) for r in records]
    state: dict[str, dict[str, str] | None] = {}
    before = after = shorter = 0
    order = sorted(
        range(len(out)), key=lambda i: (str(out[i].get("session_id")), out[i].get("seq", 0))
    )
    for i in order:
        rec = out[i]
        answer = _answer(rec)
        if answer is None:
            continue
        sid = str(rec.get("session_id"))
        if sid not in state:
            got = files_of(sid)
            state[sid] = dict(got) if got is not None else None
        files = state[sid]
        before += len(answer)
        new = answer if files is None else minimal_answer(answer, files)
        after += len(new)
        if new != answer:
            shorter += len(new) < len(answer)
            comp = list(rec["completion"])
            comp[-1] = {**comp[-1], "content": new}
            rec["completion"] = comp
            rec["minimal_rule"] = True
        if files is not None:
            body = _action_json(answer)
            if body is not None and body.get("type") == "ast_grep" and body.get("rule"):
                data = yaml.safe_load(body["rule"])
                done = _apply(data, files) if isinstance(data, dict) else None
                if done is not None:
                    state[sid] = dict(zip(files, done, strict=True))
    n = sum(_answer(r) is not None for r in out)
    return out, {
        "records": n,
        "shorter": shorter,
        "mean_chars_before": round(before / max(1, n), 1),
        "mean_chars_after": round(after / max(1, n), 1),
    }
