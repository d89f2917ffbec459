"""Removals learned where they happen (issue 26, wave 3k synth23).

An edit that removes a small piece — a call-chain member (``.map_err(InvalidUriBytes)``), a
postfix or prefix operator (TypeScript's non-null ``!``), a modifier, a parameter — is a
rewrite of the smallest node that holds it: what is removed stays literal, the rest is
abstracted. Three things stood between such edits and a general rule:

* :func:`comments_kept` — commented-out code edited along with the code (http's
  ``.map_err(InvalidUriBytes)`` removed from a live call and from the same call in a
  ``/* … */`` block): a rule rewrites code, not the text of a comment, so the example is
  refused as "changes comments outside the rewritten code" and nothing is learned. The
  comment's edit is left out of the example instead (its comments kept as they were), and
  the rule is learned from the code; a note says so.
* :func:`removal` — a pattern that names nothing but the token it removes (``$A!`` ->
  ``$A``, ``let mut $A`` -> ``let $A``): the removed token is what the rule is about, as a
  replaced operator is (``precision._substitution``). With two sites or more it is closed by
  the shapes the sites bind (``A: member_expression``), not by where the sites happen to
  sit (got's two ``!`` in spread arguments, the held-out one on a call's receiver).
* :func:`unused_parameter` — a parameter removed from functions whose bodies never use it,
  where the examples keep it in functions whose bodies do (express's ``function(req, res,
  next)`` -> ``function(req, res)``, kept where the body calls ``next()``): the body not
  naming the parameter is the context, rather than the argument position the sites share.
"""

from __future__ import annotations

import re
from typing import Any

from ast_grep_py import SgNode

from oopav.synth.sites import COMMENT_KINDS


def _comments(root: SgNode) -> list[SgNode]:
    out: list[SgNode] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.kind() in COMMENT_KINDS:
            out.append(n)
            continue
        stack.extend(reversed(n.children()))
    out.sort(key=lambda n: n.range().start.index)
    return out


def comments_kept(before: str, after: str, broot: SgNode, aroot: SgNode) -> str | None:
    """``after`` with every comment that the edit changed given back its ``before`` text, or
    None when no comment changed or the comments do not pair up one for one (a comment
    added or removed is a change of its own)."""
    cb, ca = _comments(broot), _comments(aroot)
    if len(cb) != len(ca):
        return None
    out = after
    changed = False
    for b, a in sorted(zip(cb, ca, strict=True), key=lambda p: -p[1].range().start.index):
        if b.text() == a.text():
            continue
        r = a.range()
        out = out[: r.start.index] + b.text() + out[r.end.index :]
        changed = True
    if not changed or out == before:
        return None
    return out


_SPLIT = re.compile(r"\$\$?\$?[A-Z][A-Z0-9_]*")
_TOKENS = re.compile(r"\w+|[^\w\s]")


def _subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(t == u for u in it) for t in short)


def removal(pattern: str, fix: str) -> bool:
    """The fix is the pattern with literal tokens removed, its metavariables kept in order
    (``$A!`` -> ``$A``, ``let mut $A`` -> ``let $A``, ``$A.unwrap()`` -> ``$A``): the
    removed tokens are what the rule is about."""
    if _SPLIT.findall(pattern) != _SPLIT.findall(fix) or not _SPLIT.findall(pattern):
        return False
    removed = False
    for a, b in zip(_SPLIT.split(pattern), _SPLIT.split(fix), strict=True):
        ta, tb = _TOKENS.findall(a), _TOKENS.findall(b)
        if len(tb) > len(ta) or not _subsequence(tb, ta):
            return False
        removed = removed or len(tb) < len(ta)
    return removed


_NAME = re.compile(r"^[A-Za-z_$][\w$]*$")


def _param_names(node: SgNode) -> set[str] | None:
    params = node.field("parameters")
    if params is None or node.field("body") is None:
        return None
    out: set[str] = set()
    for c in params.children():
        if not c.is_named():
            continue
        name = c if _NAME.match(c.text()) else (c.field("pattern") or c.field("name"))
        if name is not None and _NAME.match(name.text()):
            out.add(name.text())
    return out


def _uses(node: SgNode, name: str) -> set[str]:
    """The kinds of the leaves of ``node``'s body that spell ``name`` (comments and strings
    aside)."""
    body = node.field("body")
    out: set[str] = set()
    stack = [body] if body is not None else []
    while stack:
        n = stack.pop()
        if not n.children():
            if n.text() == name and n.kind() not in COMMENT_KINDS and "string" not in n.kind():
                out.add(n.kind())
            continue
        stack.extend(n.children())
    return out


def unused_parameter(
    seed: SgNode, positives: list[SgNode], negatives: list[SgNode]
) -> dict[str, Any] | None:
    """A fragment for a function-level site whose parameter the positives' bodies never use
    and every negative's body does: ``not`` a body naming it (see the module doc)."""
    if not negatives:
        return None
    pos = [seed, *positives]
    sets = [_param_names(p) for p in pos]
    neg_sets = [_param_names(n) for n in negatives]
    if any(s is None for s in sets) or any(s is None for s in neg_sets):
        return None
    common = set.intersection(*[s for s in sets if s is not None])
    for name in sorted(common):
        if any(_uses(p, name) for p in pos):
            continue
        kinds = [_uses(n, name) for n in negatives]
        if all(name in (s or set()) and k for s, k in zip(neg_sets, kinds, strict=True)):
            found = sorted(set().union(*kinds))
            leaf: dict[str, Any] = (
                {"kind": found[0]} if len(found) == 1 else {"any": [{"kind": k} for k in found]}
            )
            leaf = {**leaf, "regex": f"^{re.escape(name)}$", "stopBy": "end"}
            unused = {"not": {"has": {"field": "body", "stopBy": "neighbor", "has": leaf}}}
            # Of the arity the sites show, when they agree (express's `(req, res, next)`,
            # not the error handler's `(err, req, res, next)`, whose arity is its meaning).
            arities = {_arity(p) for p in pos}
            if len(arities) != 1:
                return unused
            more = {
                "has": {
                    "field": "parameters",
                    "stopBy": "neighbor",
                    "has": {"nthChild": arities.pop() + 1},
                }
            }
            return {"all": [unused, {"not": more}]}
    return None


def _arity(node: SgNode) -> int:
    params = node.field("parameters")
    return 0 if params is None else sum(1 for c in params.children() if c.is_named())
    return None


_RUN = re.compile(r"(?<![\w$])\$[A-Z][A-Z0-9_]*(?:,\s*\$[A-Z][A-Z0-9_]*)+(?![\w$])")


def collapse_runs(t: Any) -> Any | None:
    """A removal's template with the items of a list it keeps — a run of two or more
    metavariables, ``$A, $B, $C``, the same in the pattern and the fix — made one list
    metavariable (``const { FSTDEP010, $A, $B, $C } = $D`` -> ``const { FSTDEP010,
    $$$REST } = $D``): how many items the one example's list held is not what the removal
    is about. None when there is no such run. The caller verifies the rule."""
    pattern, fix = t.pattern, t.fix
    if not removal(pattern, fix) or "$$$REST" in pattern:
        return None
    for m in sorted(_RUN.finditer(pattern), key=lambda m: m.start() - m.end()):
        run = m.group(0)
        names = re.findall(r"\$[A-Z][A-Z0-9_]*", run)
        if fix.count(run) != 1 or any(
            len(re.findall(re.escape(n) + r"(?![\w])", pattern + fix)) != 2 for n in names
        ):
            continue
        variables = {
            k: v for k, v in t.variables.items() if k not in names and "$" + k not in names
        }
        return type(t)(pattern.replace(run, "$$$REST"), fix.replace(run, "$$$REST"), variables)
    # Wave 3r: one item kept next to the removed one (`super().__init__(self, $A)` ->
    # `super().__init__($A)`, itsdangerous 0e255fc2): the item is the rest of the list, of
    # any length (the held-out call passes three more arguments, over lines).
    for m in _ONE.finditer(pattern):
        name = m.group(0)
        at = re.compile(re.escape(name) + r"(?![\w$])")
        if len(at.findall(pattern)) != 1 or len(at.findall(fix)) != 1:
            continue
        left, right = pattern[: m.start()].rstrip(), pattern[m.end() :].lstrip()
        if not (left.endswith(("(", ",")) and right.startswith((")", ","))):
            continue
        if not (left.endswith(",") or right.startswith(",")):
            continue  # the only item of its list: nothing was removed beside it
        f = at.search(fix)
        assert f is not None
        fl, fr = fix[: f.start()].rstrip(), fix[f.end() :].lstrip()
        if not (fl.endswith(("(", ",")) and fr.startswith((")", ","))):
            continue
        variables = {k: v for k, v in t.variables.items() if k != name[1:] and k != name}
        rest = lambda _m: "$$$REST"  # noqa: E731
        return type(t)(at.sub(rest, pattern), at.sub(rest, fix), variables)
    return None


_ONE = re.compile(r"(?<![\w$])\$[A-Z][A-Z0-9_]*(?![\w$])")
