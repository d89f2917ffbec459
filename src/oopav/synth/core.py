"""The synthesiser: examples in, verified ast-grep rules out (see the package docstring)."""

from __future__ import annotations

import bisect
import difflib
import json
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, cast

import yaml
from ast_grep_py import SgNode

from oopav.sandbox.astgrep import (
    LANG_EXTENSIONS,
    Rule,
    RuleError,
    expand_fix,
    fix_config,
    indent_at,
    normalize_language,
    parse_template,
    reindent,
    rewrite_source,
)
from oopav.synth.abstract import Options, Template, abstract_sites, collapse_chains
from oopav.synth.annotations import ATTR_RUN, RUST_ITEMS, annotated, made_here, names_items
from oopav.synth.appends import append_rules
from oopav.synth.arrows import LANGS as ARROW_LANGS
from oopav.synth.arrows import arrow_callback
from oopav.synth.clishape import cli_rule, kinds_from_sites
from oopav.synth.commas import DEPTH as COMMA_DEPTH
from oopav.synth.commas import trailing_comma_rule
from oopav.synth.discriminate import (
    bound_context,
    closure,
    conjoin,
    context_closure,
    family_constraints,
    merge_constraints,
    never_reassigned_fragment,
    not_called,
    own_first,
    signature,
    type_import,
    value_constraints,
)
from oopav.synth.discriminate import constraints as discriminating
from oopav.synth.formatargs import LANGS as FORMAT_LANGS
from oopav.synth.formatargs import concat_template, inline_args
from oopav.synth.headers import in_place as header_in_place
from oopav.synth.imports import manage_imports
from oopav.synth.members import member_candidates
from oopav.synth.narrow import callee_constraints, deleted_call, usage_fragments
from oopav.synth.placement import at_edge, bound_names, edge_candidates
from oopav.synth.precision import (
    anchor_container,
    append_guard,
    binds_names,
    closures,
    literal_strings,
    lone_insertion,
    names_nothing,
    nested_guard,
    rewrapped,
    statement_guard,
)
from oopav.synth.qualified import add_qualified_rules
from oopav.synth.relax import relax
from oopav.synth.removals import collapse_runs, comments_kept, unused_parameter
from oopav.synth.returns import adds_none_return
from oopav.synth.returns import guard as returns_guard
from oopav.synth.roots import closed_values, local_context, own_context, own_rooted
from oopav.synth.scoped import declared_in, scoped_rename_rules, shadowed
from oopav.synth.semicolons import DEPTH as SEMI_DEPTH
from oopav.synth.semicolons import missing_semicolon_rule
from oopav.synth.sites import (
    COMMENT_KINDS,
    IMPORT_LISTS,
    KIND_WRAPPERS,
    LIST_KINDS,
    WRAPPERS,
    Site,
    SiteError,
    find_sites,
    has_error,
    node_at,
    parse,
    relayout,
)
from oopav.synth.splice import NEIGHBOUR as SPLICED
from oopav.synth.splice import insertion, literal_splice, respliced
from oopav.synth.strictness import strict_guard
from oopav.synth.toplines import candidates as top_candidates
from oopav.synth.toplines import headers as top_header
from oopav.synth.toplines import reproduced as top_reproduced
from oopav.synth.toplines import top_directive

MAX_LEVELS = 4
# Over-matching candidates per search that get a discriminating context (each costs one
# more run over the examples and a few candidates).
MAX_DISCRIMINATIONS = 8
# Sites larger than this (characters) are abstracted by their own and not lifted further.
MAX_PATTERN_CHARS = 4000
# How far above a literal value wrapped whole the search looks for where it sits (wave 3d).
MAX_WRAP_LEVELS = 2
# Rank of a parameter alone (tried after every other candidate): after the plain
# candidates, before the ones a context narrowed (1_000_000 on).
LATE = 900_000
DEFERRED = 1_000_000
# Wave 3k: the name-list and literal insertion rules above definitions, when a general
# rule narrowed by what the definitions are covers every site (after every deferred one).
ANNOTATED_LATE = 3_000_000
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPTIONS = (
    Options(),
    Options(deep=True),
    Options(constants=True),
    Options(spread=False),
    Options(heads=True),
    Options(literal=True),
)
# Where a pattern snippet that does not parse on its own is put, per language: `sites.WRAPPERS`
# (kept below `core`, which `macros` reads too).
_WRAPPERS = WRAPPERS


@dataclass(frozen=True)
class Example:
    """A before/after pair; ``language`` defaults to the one of ``path``'s extension."""

    before: str
    after: str
    language: str | None = None
    path: str | None = None
    # A partial example (wave 3h): the user edited some sites of a file and left the others
    # of the same shape for the rule ("I changed this call; do the rest"). Its edited sites
    # are positives the rule must reproduce exactly; its unchanged code is *not* a negative,
    # so whatever the rule does there is no failure.
    partial: bool = False
    # With ``partial``: 1-based lines of ``before`` whose code the rule must leave as ``after``
    # has it ("do the rest, but not the call on line 175"): negatives inside a partial example.
    keep: tuple[int, ...] = ()


@dataclass(frozen=True)
class SynthRule:
    """One rewrite rule: ``rule`` is ast-grep's rule object, ``fix`` its template."""

    id: str
    language: str
    rule: dict[str, Any]
    fix: str
    sites: int = 0  # example sites it rewrites
    # Metavariable constraints (``{"F": {"regex": "^_?\\w*pager$"}}``): a name the examples
    # vary, abstracted no further than the examples show.
    constraints: dict[str, Any] | None = None
    # ast-grep transforms the fix uses (``replace`` inside a string literal: ``%s`` -> ``{}``).
    transform: dict[str, Any] | None = None
    # A deletion: the fix's range grows over the neighbouring statement (see
    # ``sandbox.astgrep.Rule.expand_start``).
    expand_start: dict[str, Any] | None = None
    expand_end: dict[str, Any] | None = None
    # A deletion's companion (the same statement first/last in its block): it may match
    # nothing in a repository, which the loop would take for a refused rule, so the `synth:`
    # policy leaves it out (see ``loop_rules``).
    companion: bool = False
    # A follow-up (``"import"``: synth/imports.py): applied after the rewrites, it may match
    # nothing in a file or repository that needs no import change, which is not a refusal.
    follow_up: str | None = None
    # The examples (1-based) whose group learned this rule, where the examples needed
    # several rule sets (wave 3g synth6); None: learned from all of them together.
    examples: tuple[int, ...] | None = None

    def cli_rule(self) -> dict[str, Any]:
        """The rule as rendered: with the kind the ast-grep CLI needs where the rule implies
        it (synth/clishape.py); what it matches is unchanged, in process and in the CLI."""
        return cli_rule(self.rule, self.constraints)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "language": self.language, "rule": self.cli_rule()}
        if self.follow_up:
            # ast-grep's own free-form key: the CLI accepts the file; the loop reads it.
            data["metadata"] = {"optional": True, "follow_up": self.follow_up}
        if self.examples is not None:
            data.setdefault("metadata", {})["examples"] = list(self.examples)
        if self.constraints:
            data["constraints"] = self.constraints
        if self.transform:
            data["transform"] = self.transform
        data["fix"] = (
            fix_config(self.fix, self.expand_start, self.expand_end)
            if self.expand_start or self.expand_end
            else self.fix
        )
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def as_rule(self) -> Rule:
        return Rule(
            id=self.id,
            language=self.language,
            rule=self.cli_rule(),
            fix=self.fix,
            constraints=self.constraints,
            transform=self.transform,
            expand_start=self.expand_start,
            expand_end=self.expand_end,
            optional=self.follow_up is not None,
        )

    def apply(self, source: str) -> tuple[str, int]:
        return _apply_rule(source, self.as_rule())

    def as_action(self, paths: list[str] | None = None) -> dict[str, Any]:
        """The actor action that applies this rule (``ast_grep``, the loop's wire format)."""
        return {"type": "ast_grep", "rule": self.to_yaml(), "paths": paths or ["."]}


@dataclass
class SynthResult:
    rules: list[SynthRule]
    language: str
    examples_reproduced: int
    ambiguous: bool = False
    notes: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0
    # The groups of examples (1-based) learned one rule set each, in the order their rules
    # apply; empty when one rule set covers every example (wave 3g synth6).
    groups: list[list[int]] = field(default_factory=list)
    # The examples (1-based) given as partial (wave 3h): their unchanged code was not taken
    # for code the rules must leave alone.
    partial_examples: list[int] = field(default_factory=list)

    def to_yaml(self) -> str:
        """A rule file for ``ast-grep scan --rule FILE`` (one YAML document per rule)."""
        return "---\n".join(r.to_yaml() for r in self.rules)

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": [r.to_dict() for r in self.rules],
            "examples_reproduced": self.examples_reproduced,
            "ambiguous": self.ambiguous,
            "notes": list(self.notes),
            **({"groups": [list(g) for g in self.groups]} if self.groups else {}),
            **({"partial_examples": list(self.partial_examples)} if self.partial_examples else {}),
        }

    def loop_rules(self) -> list[SynthRule]:
        """The rules the loop applies, one action each: all but deletion companions, which
        may match nothing in the task's repository (a refused action there)."""
        return [r for r in self.rules if not r.companion]

    def actions(self, paths: list[str] | None = None) -> list[dict[str, Any]]:
        """One ``ast_grep`` action per rule, in order: gold actions for training."""
        return [r.as_action(paths) for r in self.rules]

    def apply(self, source: str) -> tuple[str, int]:
        """Apply the rules in order (as the loop does, one action per rule)."""
        total = 0
        for r in self.rules:
            source, n = r.apply(source)
            total += n
        return source, total


class SynthesisError(ValueError):
    """No rule reproduces the examples. ``example`` is 1-based (None: not one example's fault)."""

    def __init__(self, reason: str, example: int | None = None) -> None:
        self.reason = reason
        self.example = example
        super().__init__(reason)


MAX_PASSES = 8


def _apply_rule(source: str, rule: Rule) -> tuple[str, int]:
    """One rule applied; a deletion rule again until nothing changes (bounded): of adjacent
    deleted statements each pass removes every other one, since the fix of one reaches into
    its neighbour's range and ast-grep skips overlapping fixes."""
    if not (rule.expand_start or rule.expand_end):
        return rewrite_source(source, rule)
    total = 0
    for _ in range(MAX_PASSES):
        source, n = rewrite_source(source, rule)
        total += n
        if not n:
            break
    return source, total


def language_of(example: Example, default: str | None = None) -> str:
    if example.language:
        return normalize_language(example.language)
    if example.path:
        suffix = PurePosixPath(example.path).suffix.lower()
        for lang, exts in LANG_EXTENSIONS.items():
            if suffix in exts:
                return lang
    if default:
        return normalize_language(default)
    raise SynthesisError("no language: give the example a `language` or a `path` with an extension")


GUESS_ORDER = ("python", "typescript", "javascript", "go", "rust")


def guess_language(examples: list[Example]) -> str:
    """The first language (in :data:`GUESS_ORDER`) in which every side of every example parses
    without errors; Go and Rust snippets usually need their file or function around them."""
    for lang in GUESS_ORDER:
        if all(not has_error(parse(side, lang)) for e in examples for side in (e.before, e.after)):
            return lang
    raise SynthesisError(
        "no language: the examples name no `language` or `path`, and they do not parse as any of "
        + ", ".join(GUESS_ORDER)
    )


# --- evaluation of one candidate ---------------------------------------------------------


@dataclass
class _Ex:
    index: int
    before: str
    after: str
    root: SgNode
    root_after: SgNode
    sites: list[Site]
    # A partial example: a rewrite that reaches none of its sites is neither right nor wrong,
    # but on the lines it keeps (``keep``: [start, end) spans of ``before``), a negative.
    partial: bool = False
    keep: list[tuple[int, int]] = field(default_factory=list)


def _expected(ex: _Ex, start: int, end: int) -> str | None:
    """The after text of before[start:end], or None when the span cuts through a site. A
    span inside one site whose change it holds whole (the site's text around the span kept:
    `argv` of `y.argv` -> `y.parse()`) has the site's new text there (wave 3r)."""
    inner = _inner(ex, start, end)
    if inner is not None:
        return inner[1]
    out, pos = [], start
    for s in ex.sites:
        if s.end <= start or s.start >= end:
            continue
        if s.start < start or s.end > end:
            return None
        out.append(ex.before[pos : s.start])
        out.append(s.after_text)
        pos = s.end
    out.append(ex.before[pos:end])
    return "".join(out)


def _inner(ex: _Ex, start: int, end: int) -> tuple[Site, str] | None:
    """(the site, the new text of before[start:end]) when the span lies strictly inside one
    site and the site's change is all within it: the site's text before and after the span
    is the start and the end of its after text."""
    for s in ex.sites:
        if s.start <= start and end <= s.end and (s.start, s.end) != (start, end):
            if s.insert is not None or s.delete is not None:
                return None
            head, tail = ex.before[s.start : start], ex.before[end : s.end]
            a = s.after_text
            if len(head) + len(tail) <= len(a) and a.startswith(head) and a.endswith(tail):
                return s, a[len(head) : len(a) - len(tail)]
            return None
    return None


def _evaluate_deletion(rule: Rule, exs: list[_Ex]) -> set[int] | None:
    """As :func:`_evaluate` for a deletion rule: every node it matches must be a deleted
    site's node, and applying it (to a fixpoint) must give the example with exactly those
    sites deleted."""
    covered: set[int] = set()
    for ex in exs:
        try:
            nodes = ex.root.find_all(rule.config())
        except Exception:
            return None
        if not nodes:
            continue
        by_range = {(s.node.range().start.index, s.node.range().end.index): s for s in ex.sites}
        hit = []
        for n in nodes:
            r = n.range()
            site = by_range.get((r.start.index, r.end.index))
            if site is None and _free(ex, r.start.index, r.end.index):
                continue  # a partial example's unchanged code: free either way
            if site is None or site.delete is None:
                return None
            hit.append(site)
        try:
            got, _ = _apply_rule(ex.before, rule)
        except RuleError:
            return None
        if ex.partial:
            if not _reproduced(ex, got, {id(s) for s in ex.sites if s not in hit}):
                return None
            covered.update(id(x) for x in hit)
            continue
        out, pos = [], 0
        for site in sorted(hit, key=lambda x: x.start):
            if site.start < pos:
                return None
            out.append(ex.before[pos : site.start])
            pos = site.end
        if got != "".join(out) + ex.before[pos:]:
            return None
        covered.update(id(x) for x in hit)
    return covered


def _evaluate(rule: Rule, exs: list[_Ex]) -> set[int] | None:
    """The ids of the sites ``rule`` rewrites correctly, or None when it rewrites anything
    wrongly (an over-match, or a wrong result) in any example."""
    if rule.expand_start or rule.expand_end:
        return _evaluate_deletion(rule, exs)
    covered: set[int] = set()
    for ex in exs:
        rewrites = _rewrites(rule, ex)
        if rewrites is None:
            return None
        for start, end, _node, replacement in rewrites:
            if replacement != _expected(ex, start, end):
                twin = _insertion_twin(ex, start, end, replacement)
                if twin is None:
                    if _free(ex, start, end):
                        continue  # unchanged code of a partial example: not a negative
                    return None
                covered.add(id(twin))
                continue
            covered.update(id(s) for s in ex.sites if start <= s.start and s.end <= end)
            inner = _inner(ex, start, end)
            if inner is not None:
                covered.add(id(inner[0]))
    return covered


def _right_rewrites(rule: Rule, ex: _Ex) -> list[tuple[int, int, SgNode, str]] | None:
    """The rewrites ``rule`` makes of ``ex.before`` that are the example's own (the
    replacement is the after text of the span; synth/relax.py's evidence)."""
    rewrites = _rewrites(rule, ex)
    if rewrites is None:
        return None
    return [r for r in rewrites if r[3] == _expected(ex, r[0], r[1])]


def _insertion_twin(ex: _Ex, start: int, end: int, replacement: str) -> Site | None:
    """The insertion site that a rewrite of ``[start, end)`` makes from the other side
    (wave 3f): a statement inserted before ``next.ServeHTTP(w, r)`` is the one an example
    shows inserted after ``ctx = …`` when only whitespace lies between the two anchors —
    chi's `r = r.WithContext(ctx)`, whose two examples put it after a blank line (before
    the call) and right after an assignment (after it). The same text either way."""
    for site in ex.sites:
        if site.insert is None:
            continue
        if site.end <= start and not ex.before[site.end : start].strip():
            lo, hi = site.start, end
        elif site.start >= end and not ex.before[end : site.start].strip():
            lo, hi = start, site.end
        else:
            continue
        want = _expected(ex, lo, hi)
        if want is not None and want == ex.before[lo:start] + replacement + ex.before[end:hi]:
            return site
    return None


def _rewrites(
    rule: Rule, ex: _Ex, nested: bool = False
) -> list[tuple[int, int, SgNode, str]] | None:
    """What ``rule`` does to ``ex.before``: (start, end, node, replacement) of each outermost
    match whose replacement differs from its text, as ast-grep applies them (an overlapped
    match skipped; kept when ``nested``: a statement inserted after the last one of a
    block, where the block's own statement also matches, wave 3d); None when the rule
    cannot run or expand its fix."""
    return _rewrites_in(rule, ex.root, ex.before, nested)


def _rewrites_in(
    rule: Rule, root: SgNode, text: str, nested: bool = False
) -> list[tuple[int, int, SgNode, str]] | None:
    """:func:`_rewrites` on any parsed text (``root`` its tree)."""
    template = parse_template(rule.fix or "", (rule.transform or {}).keys())
    try:
        nodes = root.find_all(rule.config())
    except Exception:
        return None
    spans = sorted(
        ((n.range().start.index, n.range().end.index, n) for n in nodes),
        key=lambda t: (t[0], -t[1]),
    )
    out: list[tuple[int, int, SgNode, str]] = []
    pos = 0
    for start, end, node in spans:
        if start < pos and not nested:
            continue
        pos = max(pos, end)
        try:
            replacement = expand_fix(node, template, text)
        except Exception:
            return None
        if "\n" in replacement:
            replacement = reindent(replacement, 0, indent_at(text, start))
        if replacement != text[start:end]:
            out.append((start, end, node, replacement))
    return out


def _classify(
    rule: Rule, exs: list[_Ex], nested: bool = False
) -> tuple[list[SgNode], list[SgNode]] | None:
    """The nodes ``rule`` rewrites as the examples do (positives) and those it rewrites
    wrongly (negatives: mostly code the examples keep), as :func:`_evaluate` sees them (with
    the matches inside another one too when ``nested``); None when the rule cannot run."""
    pos: list[SgNode] = []
    neg: list[SgNode] = []
    for ex in exs:
        rewrites = _rewrites(rule, ex, nested)
        if rewrites is None:
            return None
        for start, end, node, replacement in rewrites:
            right = replacement == _expected(ex, start, end) or (
                _insertion_twin(ex, start, end, replacement) is not None
            )
            if not right and _free(ex, start, end):
                continue  # a partial example's unchanged code is neither (wave 3h)
            (pos if right else neg).append(node)
    return pos, neg


def _classify_deletion(rule: Rule, exs: list[_Ex]) -> tuple[list[SgNode], list[SgNode]] | None:
    """As :func:`_classify` for a deletion rule: the matched nodes that are deleted sites, and
    the others (statements the examples keep)."""
    pos: list[SgNode] = []
    neg: list[SgNode] = []
    for ex in exs:
        try:
            nodes = ex.root.find_all(rule.config())
        except Exception:
            return None
        deleted = {
            (s.node.range().start.index, s.node.range().end.index)
            for s in ex.sites
            if s.delete is not None
        }
        for n in nodes:
            r = n.range()
            if (r.start.index, r.end.index) in deleted:
                pos.append(n)
            elif not _free(ex, r.start.index, r.end.index):
                neg.append(n)
    return pos, neg


# --- candidates ------------------------------------------------------------------------------


def _lift(site: Site, ex: _Ex, levels: int) -> list[Site]:
    """The site and its named ancestors (up to ``levels``), each with its after text."""
    out = [site]
    node = site.node
    for anc in node.ancestors():
        if len(out) > levels:
            break
        if not anc.is_named() or anc.kind() in LIST_KINDS or anc.parent() is None:
            continue
        r = anc.range()
        s, e = r.start.index, r.end.index
        inner = [x for x in ex.sites if s <= x.start and x.end <= e]
        if any(x.start < s < x.end or x.start < e < x.end for x in ex.sites):
            break
        shift = sum(
            len(x.after_text) - (x.end - x.start) for x in ex.sites if x.end <= s and x not in inner
        )
        a_s = s + shift
        a_e = a_s + (e - s) + sum(len(x.after_text) - (x.end - x.start) for x in inner)
        anode = node_at(ex.root_after, a_s, a_e)
        if anode is None:
            continue
        out.append(Site(ex.index, anc, s, e, a_s, a_e, ex.after[a_s:a_e], anode))
    return out


# Leaf kinds that name things. A rename reaches every kind of its namespace (a value or type
# name; a member name) unless the examples keep the name somewhere (then a narrower candidate
# wins): `Visitor` the trait is also `Visitor` the type in `dyn Visitor<'a>`.
_SHORTHAND = (
    "shorthand_property_identifier",
    "shorthand_property_identifier_pattern",
    "shorthand_field_identifier",
)
_VALUE_KINDS = ("identifier", "type_identifier", "package_identifier", *_SHORTHAND)
_MEMBER_KINDS = (
    "property_identifier",
    "field_identifier",
    "private_property_identifier",
    *_SHORTHAND,
)
_NAME_KINDS = tuple(dict.fromkeys(_VALUE_KINDS + _MEMBER_KINDS))
_KINDS_OF: dict[str, list[str]] = {}


def _name_kinds(language: str) -> list[str]:
    """The kinds of :data:`_NAME_KINDS` that ``language``'s grammar has."""
    if language not in _KINDS_OF:
        root = parse("", language)
        ok = []
        for k in _NAME_KINDS:
            try:
                root.find_all(kind=k)
            except Exception:
                continue
            ok.append(k)
        _KINDS_OF[language] = ok
    return _KINDS_OF[language]


def _field_key(node: SgNode) -> bool:
    """``node`` is the key of a Go keyed element (``C{Name: v}``): a struct field's name."""
    parent = node.parent()
    if parent is None or parent.kind() != "literal_element":
        return False
    keyed = parent.parent()
    return keyed is not None and keyed.kind() == "keyed_element" and keyed.child(0) == parent


_GLOBAL_OBJECTS = frozenset({"global", "globalThis", "window"})


def _global_member(node: SgNode, language: str) -> bool:
    """``node`` is a property of JavaScript's global object (``global.window = …``): the
    same name as the global variable (``new window.Headers()``), so a rename reaches the
    value names too (ky's `window` -> `self`, wave 3d)."""
    if language not in ("javascript", "typescript", "tsx"):
        return False
    parent = node.parent()
    if parent is None or parent.kind() != "member_expression":
        return False
    obj, prop = parent.field("object"), parent.field("property")
    return (
        obj is not None
        and obj.text() in _GLOBAL_OBJECTS
        and prop is not None
        and prop.range() == node.range()
    )


# A Go member access: (its kind, the field of the package, the field of the member).
_ACCESS = {"selector_expression": ("operand", "field")}


def _package_member(
    seed: Site, remaining: list[tuple[Site, _Ex]], language: str
) -> dict[str, Any] | None:
    """Wave 3t: a Go member renamed where every site reaches it through one imported package
    (`strings.Replace` -> `strings.ReplaceAll`): the rename of that package's function, first
    — not of every member of that name (pflag d6bb2cc8 renamed an interface's `Replace`
    method too)."""
    from oopav.synth.imports import bound_names, imports_of

    if language != "go":
        # A Go package's function is that package's (`strings.Replace`); elsewhere one API's
        # member is reached through several imported objects (got's `is.function_` and
        # `assert.function_`, both from `@sindresorhus/is`): the member rename stays open.
        return None
    old, new = seed.before_text, seed.after_text
    heads: set[str] = set()
    access: tuple[str, str, str] | None = None
    for site, ex in remaining:
        if site.before_text != old or site.after_text != new:
            continue
        up = site.node.parent()
        fields = _ACCESS.get(up.kind()) if up is not None else None
        if up is None or fields is None:
            return None
        obj, member = up.field(fields[0]), up.field(fields[1])
        if obj is None or member is None or member.range() != site.node.range():
            return None
        if obj.children() or not _IDENT.match(obj.text()):
            return None
        imported = set().union(
            *(bound_names(n.text(), language) for n in imports_of(ex.before, language))
        )
        if obj.text() not in imported:
            return None
        heads.add(obj.text())
        access = (up.kind(), *fields)
    if len(heads) != 1 or access is None:
        return None
    kind, obj_field, member_field = access
    return {
        "kind": seed.node.kind(),
        "regex": "^" + re.escape(old) + "$",
        "inside": {
            "kind": kind,
            "field": member_field,
            "stopBy": "neighbor",
            "has": {"field": obj_field, "regex": "^" + re.escape(heads.pop()) + "$"},
        },
    }


# A Rust macro's name where it is called: `deref!(…)`, and in a token tree (a macro's
# body), the name before a `!`.
_MACRO_NAME = [
    {"inside": {"kind": "macro_invocation", "field": "macro", "stopBy": "neighbor"}},
    {
        "inside": {"kind": "token_tree", "stopBy": "neighbor"},
        "precedes": {"regex": "^!$", "stopBy": "neighbor"},
    },
]


def _is_macro_name(node: SgNode) -> bool:
    up = node.parent()
    if up is None:
        return False
    if up.kind() == "macro_invocation":
        name = up.field("macro")
        return name is not None and name.range() == node.range()
    following = node.next()
    return up.kind() == "token_tree" and following is not None and following.text() == "!"


def _macro_rename(
    seed: Site, remaining: list[tuple[Site, _Ex]], language: str
) -> dict[str, Any] | None:
    """Wave 3t: a Rust rename whose every site names a macro where it is called stays in
    the macros' namespace (hyper 62d96adc's `deref!(…)` -> `__hyper__deref!(…)` renamed the
    `Deref` trait's `fn deref` and the kept `macro_rules! deref` too)."""
    if language != "rust":
        return None
    old, new = seed.before_text, seed.after_text
    sites = [s for s, _ in remaining if s.before_text == old and s.after_text == new]
    if not sites or not all(_is_macro_name(s.node) for s in sites):
        return None
    return {"kind": "identifier", "regex": "^" + re.escape(old) + "$", "any": _MACRO_NAME}


def _rename_candidates(
    seed: Site, remaining: list[tuple[Site, _Ex]], language: str
) -> list[dict[str, Any]]:
    old, new = seed.before_text, seed.after_text
    if seed.node.children() or not _IDENT.match(old) or not _IDENT.match(new):
        return []
    regex0 = "^" + re.escape(old) + "$"
    valid = _name_kinds(language)
    space = _VALUE_KINDS if seed.node.kind() in _VALUE_KINDS else _MEMBER_KINDS
    every = [k for k in space if k in valid]
    first: list[dict[str, Any]] = []
    if _field_key(seed.node) or _global_member(seed.node, language):
        # A field's name written as a composite literal's key (Go's `C{SkipPathes: n}`, an
        # `identifier` there) is the same name as the field's declaration and its selectors
        # (`field_identifier`): the rename reaches both spaces; narrowed by the examples'
        # kept code like any other candidate.
        both = [k for k in (*_VALUE_KINDS, *_MEMBER_KINDS) if k in valid]
        first.append({"regex": regex0, "any": [{"kind": k} for k in dict.fromkeys(both)]})
    qualified = _package_member(seed, remaining, language)
    if qualified is not None:
        first.append(qualified)
    macros = _macro_rename(seed, remaining, language)
    if macros is not None:
        first.append(macros)
    # Wave 3u: a member renamed (every site a method's or a field's name) reaches the
    # member's other spellings (synth/members.py): first with the namespace below, and
    # after the plain kind the member's spellings alone.
    same = [s.node for s, _ in remaining if s.before_text == old and s.after_text == new]
    alts: list[dict[str, Any]] = []
    if seed.node.kind() in every and len(every) > 1:
        alts = [{"kind": k} for k in every]
        if space is _MEMBER_KINDS and language == "rust":
            # A Rust method is called as a field (`x.f()`) but defined as a plain name.
            alts.append(
                {
                    "kind": "identifier",
                    "inside": {
                        "any": [{"kind": "function_item"}, {"kind": "function_signature_item"}],
                        "field": "name",
                        "stopBy": "neighbor",
                    },
                }
            )
    member_first, member_late = member_candidates(
        seed.node, same, language, alts or [{"kind": seed.node.kind()}]
    )
    first += [{"regex": regex0, **m} for m in member_first]
    if alts:
        first.append({"regex": regex0, "any": alts})
    kinds = sorted(
        {
            s.node.kind()
            for s, _ in remaining
            if not s.node.children() and s.before_text == old and s.after_text == new
        }
    )
    regex = "^" + re.escape(old) + "$"
    out: list[dict[str, Any]] = first
    if len(kinds) > 1 and set(kinds) != set(every):
        out.append({"regex": regex, "any": [{"kind": k} for k in kinds]})
    out.append({"kind": seed.node.kind(), "regex": regex})
    for m in member_late:
        if {"regex": regex, **m} not in out:
            out.append({"regex": regex, **m})
    if old in PREDECLARED_TYPES.get(language, ()):
        # Wave 3k (synth22): a predeclared type is no name a commit renames; changed to
        # another type it is changed where the sites show (urfave/cli's `[]int` and
        # `SliceBase[int, …]` made `int64`, `Base int` of another file kept: 11 wrong
        # hunks). First, where every site's parent is one of a few kinds.
        parents = {
            up.kind() if (up := s.node.parent()) is not None else None
            for s, _ in remaining
            if s.before_text == old and s.after_text == new
        }
        if None not in parents and len(parents) <= 3:
            out.insert(
                0,
                {
                    "kind": seed.node.kind(),
                    "regex": regex,
                    "inside": {**_kind_any(sorted(p for p in parents if p)), "stopBy": "neighbor"},
                },
            )
    if seed.node.kind() == "this":
        # What `this` means depends on the function that binds it (the nearest one that is
        # not an arrow function): renamed inside middleware generators, it is not the
        # `this` of a class's methods. Only inside the binding kinds the examples show.
        binders = {_binder(s.node) for s, _ in remaining if s.node.kind() == "this"}
        if None not in binders:
            alts = [{"kind": k} for k in sorted(b for b in binders if b)]
            out.insert(
                0, {"kind": "this", "regex": regex, "inside": {"any": alts, "stopBy": "end"}}
            )
    return out


# A member access and the field that names its member, per grammar.
_MEMBER_FIELDS = {
    "member_expression": "property",
    "attribute": "attribute",
    "selector_expression": "field",
    "field_expression": "field",
}


def _member_tail(seed: Site) -> list[tuple[dict[str, Any], str]]:
    """``x.argv`` -> ``x.parse()`` (yargs f13ebf43, fluent chains over lines): the member's
    name rewritten to the new text, the receiver and the layout before the name left as they
    are. A pattern rooted at the member access put the example's receiver or its line break
    and indentation into the fix (`$A\n    .parse()`): a chain laid out otherwise, or on one
    line, got nothing or a wrong indentation. Not a plain rename (`_rename_candidates`)."""
    field = _MEMBER_FIELDS.get(seed.node.kind())
    name = seed.node.field(field) if field else None
    if name is None or name.children():
        return []
    head = seed.before_text[: name.range().start.index - seed.start]
    if seed.before_text != head + name.text() or not seed.after_text.startswith(head):
        return []
    new = seed.after_text[len(head) :]
    if _IDENT.match(new) or not re.match(r"[A-Za-z_$][\w$]*\(", new) or "\n" in new:
        return []  # a rename is _rename_candidates'; the new text starts as a call
    rule = {
        "kind": name.kind(),
        "regex": "^" + re.escape(name.text()) + "$",
        "inside": {"kind": seed.node.kind(), "field": field, "stopBy": "neighbor"},
    }
    return [(rule, new)]


def _kind_any(kinds: list[str]) -> dict[str, Any]:
    return {"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}


# The types a language predeclares (a commit changes them at some uses; it cannot rename them).
PREDECLARED_TYPES: dict[str, frozenset[str]] = {
    "go": frozenset(
        "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune "
        "string uint uint8 uint16 uint32 uint64 uintptr any comparable".split()
    ),
    "rust": frozenset(
        "bool char str i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64".split()
    ),
}


_FUNCTIONS = (
    "function_expression",
    "function",
    "generator_function",
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
)


def _binder(node: SgNode) -> str | None:
    """The kind of the nearest enclosing non-arrow function (what binds ``this``)."""
    for a in node.ancestors():
        if a.kind() in _FUNCTIONS:
            return a.kind()
        if a.kind() in ("class_body", "class_declaration"):
            return None
    return None


# A parameter parses only in a parameter list (wave 3e): without this, a change inside
# one (`endpoint: str` -> `endpoint: t.Any`) had no pattern between the changed type
# (`str`, every `str` of the file) and the whole function around it. Per language, the
# parameter kinds and the definition they are put in.
_PARAM_WRAPPERS: dict[str, tuple[frozenset[str], str]] = {
    "python": (
        frozenset({"typed_parameter", "typed_default_parameter", "default_parameter"}),
        "def _f({}): pass",
    ),
    "javascript": (frozenset({"assignment_pattern"}), "function _f({}) {{}}"),
    "typescript": (
        frozenset({"required_parameter", "optional_parameter"}),
        "function _f({}) {{}}",
    ),
    "tsx": (frozenset({"required_parameter", "optional_parameter"}), "function _f({}) {{}}"),
    "go": (frozenset({"parameter_declaration"}), "func _f({}) {{}}"),
    "rust": (frozenset({"parameter"}), "fn _f({}) {{}}"),
}


# Wave 3h (synth7): members that parse only inside their container. An object's `key:
# value` pair alone reads as a labelled statement (JavaScript) or not at all (Python), so the
# pattern of one member (koa's `inspect: function(){…}` -> `inspect(){…}`) matched nothing and
# the rule was the whole object literal, comments and all, reaching no other file.
_MEMBER_WRAPPERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("python", "pair"): ("_ = {{ {} }}",),
    **{(lang, "pair"): ("_ = {{ {} }}",) for lang in ("javascript", "typescript", "tsx")},
    # A class's method or field alone is a call and a block, or nothing.
    **{
        (lang, kind): ("class _ {{ {} }}",)
        for lang in ("javascript", "typescript", "tsx")
        for kind in ("method_definition", "field_definition", "public_field_definition")
    },
}


def _pattern_rules(
    t: Template, language: str, kind: str, member: bool = False, node: SgNode | None = None
) -> list[dict[str, Any]]:
    """``t``'s pattern as rules: bare, then in each wrapper that parses it (``member``: the
    site is a member itself, see ``_MEMBER_WRAPPERS``; a member lifted to from a smaller
    site stays the container's pattern, `{retries: $A}`; a type-level or clause node in
    the context it parses in, see ``sites.KIND_WRAPPERS``)."""
    rules: list[dict[str, Any]] = [{"pattern": t.pattern}]
    members = _MEMBER_WRAPPERS.get((language, kind), ()) if member else ()
    for w in _WRAPPERS.get(language, ()) + members:
        rules.append({"pattern": {"context": w.format(t.pattern), "selector": kind}})
    for w in KIND_WRAPPERS.get((language, kind), ()):
        rule: dict[str, Any] = {"pattern": {"context": w.format(t.pattern), "selector": kind}}
        for guard in _clause_guards(t.pattern) if kind == "where_clause" else []:
            rule = conjoin(rule, guard)
        rules.append(rule)
    if node is not None and len(rules) == 1 + len(_WRAPPERS.get(language, ())):
        # Wave 3l (synth24): no wrapper of its own kind: the pattern in the site's own
        # surroundings, rooted at the site (see roots.py).
        own = own_context(node, t.pattern, kind, language)
        if own is not None:
            rules.append(own)
    return rules


def _clause_guards(pattern: str) -> list[dict[str, Any]]:
    """A Rust `where` clause pattern matches a clause with more predicates than it has
    (ast-grep lets the clause's further predicates go unmatched, and the fix drops them):
    kept to clauses of as many predicates as the pattern, unless a list metavariable stands
    for the predicates (it takes any number). A one-line pattern is kept to one-line
    clauses: its fix would write `where` and the predicates of a clause laid out over lines
    on one line."""
    guards: list[dict[str, Any]] = []
    if "\n" not in pattern:
        guards.append({"not": {"regex": "\n"}})
    if re.search(r"where\s*\$\$\$", pattern):
        return guards
    plain = re.sub(r"\$+([A-Z][A-Z0-9_]*)", r"\1", pattern)
    clause = parse("fn _f() " + plain + " {}", "rust").find(kind="where_clause")
    if clause is None:
        return guards
    n = sum(1 for c in clause.children() if c.kind() == "where_predicate")
    nth = {"position": n + 1, "ofRule": {"kind": "where_predicate"}}
    return [*guards, {"not": {"has": {"kind": "where_predicate", "nthChild": nth}}}]


def _param_rule(t: Template, language: str, kind: str) -> dict[str, Any] | None:
    """``t``'s pattern as a parameter (see ``_PARAM_WRAPPERS``), or None for other kinds."""
    kinds, wrapper = _PARAM_WRAPPERS.get(language, (frozenset(), ""))
    if kind not in kinds:
        return None
    return {"pattern": {"context": wrapper.format(t.pattern), "selector": kind}}


@dataclass
class _Choice:
    rule: dict[str, Any]
    fix: str
    covered: set[int]
    order: int
    key: str = ""
    level: int = -1  # -1: an identifier rename; else how far above the site the pattern sits
    constraints: dict[str, Any] | None = None
    transform: dict[str, Any] | None = None
    expand_start: dict[str, Any] | None = None
    expand_end: dict[str, Any] | None = None
    # Ranked first on purpose (an abstract candidate preferred over a literal one): the
    # lift-less preference leaves it alone.
    pinned: bool = False
    # A rule for any site of the seed's shape whatever its context (a concatenation made a
    # template literal, an import made `import type`): preferred to a block of statements
    # that covers more sites only by holding them side by side (see ``_shape_first``).
    shape: bool = False


def _closed_name(params: SgNode | None) -> str:
    """A regex for the one parameter name of ``params`` (`(res)` -> `^res$`)."""
    text = params.text()[1:-1].strip() if params is not None else ""
    return "^" + re.escape(text) + "$"


# A shape rule: rule, fix, constraints, transform.
ShapeRule = tuple[dict[str, Any], str, dict[str, Any] | None, dict[str, Any] | None]


def _shape_first(top: list[_Choice], choices: list[_Choice]) -> list[_Choice]:
    """``top`` (the candidates that cover the most sites), unless a shape rule covers the
    seed and the first of ``top`` is a pattern lifted over lines: two sites of different
    shapes side by side (`log('a ' + b)` above `const s = 'id: ' + c.id`) anti-unify as the
    block that holds both, which covers two sites and reaches nothing else; the shape rule
    covers one, and the next seed gets its own."""
    shaped = [c for c in choices if c.shape]
    if not shaped or not top or top[0].shape or top[0].level < 2:
        return top
    pattern = top[0].rule.get("pattern")
    if not isinstance(pattern, str) or "\n" not in pattern:
        return top
    return sorted(shaped, key=lambda c: (-len(c.covered), c.order))


def _lift_less(top: list[_Choice]) -> _Choice:
    """The first of ``top`` (the candidates that cover the most sites, in rank order) —
    unless it is a pattern lifted two or more levels above a candidate that covers the same
    sites (wave 3e, synth-narrow3). A whole enclosing function or ``impl`` kept as the
    rule's context (a pattern of 600 characters around serde's `where D: de::Deserializer`)
    reaches no held-out code, where the site narrowed by a kind or constraint does; a
    narrowed candidate still ranks after the plain ones of its level and the level above."""
    chosen = top[0]
    if chosen.pinned or chosen.level < 2:
        return chosen
    lower = [c for c in top if 0 <= c.level <= chosen.level - 2 and not LATE <= c.order < DEFERRED]
    return min(lower, key=lambda c: c.order) if lower else chosen


def synthesize(
    examples: list[Example] | list[dict[str, Any]],
    language: str | None = None,
    *,
    target: list[tuple[str, str]] | None = None,
) -> SynthResult:
    """Learn the most general rule set that reproduces every example (see the module doc).

    ``target``: the (path, text) files of the repository the rules are for (``oopav synth
    --apply DIR``); a rule set that rewrites nothing there is fitted to it (synth/target.py)."""
    t0 = time.perf_counter()
    exs_in = [e if isinstance(e, Example) else Example(**e) for e in examples]
    if not exs_in:
        raise SynthesisError("no examples: give at least one before/after pair")
    guessed: str | None = None
    if not language and not any(e.language or e.path for e in exs_in):
        guessed = language = guess_language(exs_in)
    langs = {language_of(e, language) for e in exs_in}
    if len(langs) > 1:
        raise SynthesisError(
            f"examples mix languages ({', '.join(sorted(langs))}); synthesise one language at a time"
        )
    lang = langs.pop()
    exs: list[_Ex] = []
    layout_notes: list[str] = []
    for n, e in enumerate(exs_in, 1):
        if not isinstance(e.partial, bool):
            raise SynthesisError(
                f"example {n}: `partial` must be true or false, not {e.partial!r}", n
            )
        keep: tuple[int, ...] | list[int] = e.keep
        if not isinstance(keep, (list, tuple)) or not all(
            isinstance(k, int) and not isinstance(k, bool) for k in keep
        ):
            raise SynthesisError(f"example {n}: `keep` must be a list of line numbers", n)
        if keep and not e.partial:
            raise SynthesisError(
                f"example {n}: `keep` needs `partial: true` (an example that is not partial "
                "keeps all of its unchanged code already)",
                n,
            )
        lines = e.before.count("\n") + (not e.before.endswith("\n"))
        bad = [k for k in keep if not 1 <= k <= lines]
        if bad:
            raise SynthesisError(
                f"example {n}: `keep` line {bad[0]} is outside its before text (1..{lines})", n
            )
        if e.partial and e.before == e.after and not keep:
            raise SynthesisError(
                f"example {n} is partial but changes nothing and keeps no line: a partial "
                "example shows the sites you edited (the rule does the rest of the file) or "
                "the lines it must leave alone (`keep`); code the rule must leave alone "
                "everywhere is an unchanged example that is not partial",
                n,
            )
    if all(e.before == e.after for e in exs_in):
        i = 1 if len(exs_in) == 1 else None
        raise SynthesisError(
            ("example 1: before and after are identical" if i else "every example is unchanged")
            + " (an unchanged example is a negative: code the rule must leave alone; give at "
            "least one example that changes something)",
            i,
        )
    # Wave 3u: a directive added at the top of each file (synth/toplines.py).
    top = None if any(e.partial for e in exs_in) else _top_lines(exs_in, lang)
    if top is not None:
        return _finish(top[0], top[1], guessed, [], t0)
    for i, e in enumerate(exs_in, 1):
        where = f"example {i}"
        broot, aroot = parse(e.before, lang), parse(e.after, lang)
        if e.before == e.after:
            # A negative: no sites, so any rewrite the candidate makes in it rejects it (in
            # a partial one, only a rewrite on the lines it keeps).
            keep_at = _keep_spans(e.before, list(e.keep)) if e.keep else []
            exs.append(_Ex(i, e.before, e.after, broot, aroot, [], e.partial, keep_at))
            continue
        if has_error(aroot) and not has_error(broot):
            raise SynthesisError(f"{where}: the after side does not parse as {lang}", i)
        after = e.after
        try:
            sites = find_sites(i, e.before, after, broot, aroot, where)
        except SiteError as exc:
            # A formatter may have reflowed the changed code: learn from the change in the
            # before side's layout instead (compared modulo layout), and say so.
            relaid = relayout(e.before, e.after, broot, aroot)
            # Wave 3k (synth23): commented-out code edited along with the code — the
            # comments' edits are left out, the rule is learned from the code.
            kept = comments_kept(e.before, e.after, broot, aroot) if relaid is None else None
            if relaid is None and kept is None:
                raise SynthesisError(str(exc), i) from None
            after = relaid if relaid is not None else cast(str, kept)
            aroot = parse(after, lang)
            try:
                sites = find_sites(i, e.before, after, broot, aroot, where)
            except SiteError:
                raise SynthesisError(str(exc), i) from None
            layout_notes.append(
                f"example {i} also reflows the changed code (a formatter's layout); the rules "
                "reproduce it modulo layout — run the project's formatter after them"
                if relaid is not None
                else f"example {i} also edits code inside comments; a rule rewrites code, so "
                "those comments were left as they were — edit them by hand"
            )
        spans = _keep_spans(e.before, list(e.keep)) if e.keep else []
        exs.append(_Ex(i, e.before, after, broot, aroot, sites, e.partial, spans))

    try:
        result, notes = _learn_examples(exs, lang)
    except SynthesisError as exc:
        # No one rule set reproduces every example: the examples that conflict may each get
        # their own (wave 3g synth6); the union must still reproduce every example.
        grouped = _learn_groups(exs, lang, exc)
        if grouped is None:
            raise
        result, notes = grouped
    else:
        notes += _follow_ups(result, exs)
    notes += _partial_notes(result, exs)
    if target:
        from oopav.synth.target import Target, fit

        skip = {e.path for e in exs_in if e.path}
        result, fitted = fit(result, exs, Target(target, skip), _right_rewrites)
        notes += fitted
    # Wave 3t: guards a rule's kind of change calls for, on the rules as learned (and fitted).
    result = _returns_guarded(result, exs, lang)
    result = _shadow_guarded(result, exs, lang)
    result = _spliced(result, exs, lang)
    # Wave 3u: no match with more in it than the pattern says (synth/strictness.py).
    result = _strict_guarded(result, exs, lang)
    # Wave 3u: a compound statement's header edited in place (synth/headers.py).
    result = _headers_in_place(result, exs, lang)
    return _finish(result, notes, guessed, layout_notes, t0)


def _top_lines(exs: list[Example], lang: str) -> tuple[SynthResult, list[str]] | None:
    """The rules that add the directive every changed example adds at its top: the first
    place (synth/toplines.py) that reproduces every example — one that starts with blank
    lines up to them, where another example shows the layout exactly."""
    pairs = [(e.before, e.after) for e in exs]
    directive = top_directive(pairs, lang)
    if directive is None:
        return None
    header = top_header([b for b, a in pairs if b != a], lang)
    changed = sum(1 for b, a in pairs if b != a)
    for where, steps in top_candidates(directive, lang, header):
        rules = [
            SynthRule(
                id=f"synth-{n}",
                language=lang,
                rule=rule,
                fix=fix,
                sites=changed if n == 1 else 0,
                expand_start=start,
            )
            for n, (rule, fix, start) in enumerate(steps, 1)
        ]
        result = SynthResult(rules=rules, language=lang, examples_reproduced=len(exs))
        loose: list[int] = []
        exact = 0
        try:
            for n, (before, after) in enumerate(pairs, 1):
                right, same = top_reproduced(before, after, result.apply(before)[0])
                if not right:
                    break
                if not same:
                    loose.append(n)
                elif before != after:
                    exact += 1
            else:
                if not exact:
                    continue
                notes = [f"`{directive}` added {where}, once a file"]
                if loose:
                    notes.append(
                        "example(s) "
                        + ", ".join(map(str, loose))
                        + " start with blank lines, which lie before the file's first token "
                        "where no rule writes: reproduced up to them"
                    )
                return result, notes
        except RuleError:
            continue
    return None


def _returns_guarded(result: SynthResult, exs: list[_Ex], lang: str) -> SynthResult:
    """Each rule that adds ``-> None`` (``: void``) only where nothing is returned
    (synth/returns.py), where the rule set still reproduces every example."""
    rules = list(result.rules)
    changed = False
    for i, r in enumerate(rules):
        shown = r.rule.get("pattern")
        pattern = shown.get("context", "") if isinstance(shown, dict) else shown or ""
        if not isinstance(pattern, str) or not adds_none_return(pattern, r.fix, lang):
            continue
        trial = [*rules[:i], replace(r, rule=returns_guard(r.rule, pattern, lang)), *rules[i + 1 :]]
        if _rules_hold(exs, trial, lang):
            rules, changed = trial, True
    return replace(result, rules=rules) if changed else result


# Names no code binds as its own variable (`self`, `this`): no shadowing guard.
_NOT_SHADOWED = frozenset({"self", "this", "cls", "super", "Self", "crate"})


def _strict_guarded(result: SynthResult, exs: list[_Ex], lang: str) -> SynthResult:
    """Each rule's pattern conjoined with its ``ast``-strictness twin (synth/strictness.py),
    where the rule set still reproduces every example."""
    rules = list(result.rules)
    changed = False
    for i, r in enumerate(rules):
        guarded = strict_guard(r.rule, lang)
        if guarded is None:
            continue
        trial = [*rules[:i], replace(r, rule=guarded), *rules[i + 1 :]]
        if _reproduces(exs, trial, lang):
            rules, changed = trial, True
    return replace(result, rules=rules) if changed else result


def _headers_in_place(result: SynthResult, exs: list[_Ex], lang: str) -> SynthResult:
    """Each rule that writes a clause anew for a change of its literal header rewritten to
    edit the header's text only (synth/headers.py), where the rule set still reproduces
    every example."""
    rules = list(result.rules)
    changed = False
    for i, r in enumerate(rules):
        if r.transform or r.expand_start or r.expand_end or r.follow_up or r.constraints:
            continue
        edited = header_in_place(r.rule, r.fix, lang)
        if edited is None:
            continue
        rule, transform, fix = edited
        trial = [*rules[:i], replace(r, rule=rule, transform=transform, fix=fix), *rules[i + 1 :]]
        if _reproduces(exs, trial, lang):
            rules, changed = trial, True
    return replace(result, rules=rules) if changed else result


def _reproduces(exs: list[_Ex], rules: list[SynthRule], lang: str) -> bool:
    """``rules`` reproduce every example (an invalid rule: no)."""
    result = SynthResult(rules=rules, language=lang, examples_reproduced=0)
    try:
        return all(_reproduced(ex, result.apply(ex.before)[0]) for ex in exs)
    except RuleError:
        return False


def _renamed_name(rule: dict[str, Any], fix: str) -> str | None:
    """The name a plain rename rule renames (``{regex: ^old$, kind: identifier}`` or an
    ``any`` of kinds with ``identifier``), where it reaches identifiers; else None."""
    rx = rule.get("regex")
    if not isinstance(rx, str) or not _IDENT.match(fix):
        return None
    m = re.fullmatch(r"\^([A-Za-z_$][\w$]*)\$", rx)
    if m is None or m.group(1) in _NOT_SHADOWED:
        return None
    kinds = [rule.get("kind")] + [a.get("kind") for a in rule.get("any", []) if isinstance(a, dict)]
    return m.group(1) if "identifier" in kinds else None


# Where a name is a module's or a path's (no value a local could stand for): a path's
# segment, a `use`, a Go package clause or import, a Python dotted module name.
_MODULE_PARENTS = frozenset(
    {
        "scoped_identifier",
        "scoped_type_identifier",
        "use_declaration",
        "scoped_use_list",
        "use_list",
        "use_as_clause",
        "package_clause",
        "import_spec",
        "dotted_name",
    }
)


def _example_matches(r: SynthRule, exs: list[_Ex]) -> list[SgNode] | None:
    """The nodes ``r`` matches in the examples' before texts (None: a rule ast-grep-py
    refuses here, which the post-passes leave as it is)."""
    config: dict[str, Any] = {"rule": r.rule}
    if r.constraints:
        config["constraints"] = r.constraints
    try:
        return [m for ex in exs for m in ex.root.find_all(cast(Any, config))]
    except Exception:
        return None


def _module_sites(r: SynthRule, exs: list[_Ex]) -> bool:
    """Every match of ``r`` in the examples is a module's or a path's name."""
    nodes = _example_matches(r, exs) or []
    return bool(nodes) and all(
        n.kind() == "package_identifier"
        or ((up := n.parent()) is not None and up.kind() in _MODULE_PARENTS)
        for n in nodes
    )


def _shadow_guarded(result: SynthResult, exs: list[_Ex], lang: str) -> SynthResult:
    """Wave 3t: each rename of a module's or a path's name (every example site one: a crate,
    a package, a path's segment) left out of the scopes that bind the name as their own
    variable (a parameter, a loop variable, a local: ``scoped.shadowed``) — where the rule
    set still reproduces every example. ripgrep's crate `glob` -> `globset` renamed a
    held-out `for glob in globs` too."""
    rules = list(result.rules)
    changed = False
    for i, r in enumerate(rules):
        if r.follow_up or r.transform:
            continue
        name = _renamed_name(r.rule, r.fix)
        if name is None or declared_in(name, [ex.root for ex in exs]):
            continue  # the examples rename a variable of that name: no guard against it
        if not _module_sites(r, exs):
            # a value renamed (a function, a parameter): a local of that name is the same
            # thing under its old name, renamed with it (immer's `const immer =
            # lib.default` -> `const produce = …`; loguru's parameter `enhance`)
            continue
        guard = shadowed(name, lang)
        if guard is None:
            continue
        trial = [*rules[:i], replace(r, rule=conjoin(r.rule, guard)), *rules[i + 1 :]]
        if _rules_hold(exs, trial, lang):
            rules, changed = trial, True
    return replace(result, rules=rules) if changed else result


def _spliced(result: SynthResult, exs: list[_Ex], lang: str) -> SynthResult:
    """Each rule that inserts an item beside a one-node metavariable of a list, re-rooted at
    that item (synth/splice.py): the rest of the node is left as it was, its layout with it —
    where the rule set still reproduces every example."""
    rules = list(result.rules)
    changed = False
    for i, r in enumerate(rules):
        pattern = r.rule.get("pattern")
        if (
            isinstance(pattern, dict)
            and set(r.rule) == {"pattern"}  # nothing else says where it applies
            and not (r.transform or r.follow_up or r.companion or r.constraints)
        ):
            # a list written as one literal text: an item inserted beside one of its items
            found_literal = _literal_spliced(r, exs, lang)
            if found_literal is not None:
                trial = [*rules[:i], found_literal, *rules[i + 1 :]]
                if _rules_hold(exs, trial, lang):
                    rules, changed = trial, True
            continue
        if (
            not isinstance(pattern, str)
            or r.transform
            or r.expand_start
            or r.expand_end
            or r.follow_up
            or r.companion
        ):
            continue
        found = insertion(pattern, r.fix)
        if found is None:
            continue
        var, text, before, multi = found
        if multi:
            # `pager($$$A)` -> `pager($$$A, color)` keeps what lies between the items as it
            # is (only the brackets' inner margins are written anew), and reads as the change
            # it is: left so (the re-rooted form would say `$SPLICED, color`).
            continue
        matches = _example_matches(r, exs)
        if matches is None:
            continue
        roots = [ex.root for ex in exs]
        rule = respliced(r.rule, var, matches, roots, multi, before, lang)
        if rule is None:
            continue
        var = SPLICED if multi else var
        fix = text + "$" + var if before else "$" + var + text
        trial = [*rules[:i], replace(r, rule=rule, fix=fix), *rules[i + 1 :]]
        if _rules_hold(exs, trial, lang):
            rules, changed = trial, True
    return replace(result, rules=rules) if changed else result


def _literal_spliced(r: SynthRule, exs: list[_Ex], lang: str) -> SynthRule | None:
    matches = _example_matches(r, exs)
    if matches is None:
        return None
    found = literal_splice(matches, r.fix, lang)
    if found is None:
        return None
    return replace(r, rule=found[0], fix=found[1], constraints=None)


def _partial_notes(result: SynthResult, exs: list[_Ex]) -> list[str]:
    """Say which examples were partial and what the rules do to the rest of them (wave 3h):
    the sites a user left for the rule, rewritten as in any other file."""
    notes: list[str] = []
    for ex in exs:
        if not ex.partial:
            continue
        result.partial_examples.append(ex.index)
        try:
            got = result.apply(ex.before)[0]
        except RuleError:
            continue
        extra = len(_line_changes(ex.after, got))
        kept = f" and the {len(ex.keep)} line(s) it keeps" if ex.keep else ""
        notes.append(
            f"example {ex.index} is partial: its {len(ex.sites)} edited site(s){kept} "
            "reproduced; "
            + (
                f"the rules also rewrite {extra} line hunk(s) of its unchanged code (the sites "
                "left for the rule)"
                if extra
                else "the rules rewrite nothing else in it"
            )
        )
    return notes


def _line_changes(a: str, b: str) -> list[tuple[int, int]]:
    sm = difflib.SequenceMatcher(
        None, a.splitlines(keepends=True), b.splitlines(keepends=True), autojunk=False
    )
    return [(i1, i2) for tag, i1, i2, _j1, _j2 in sm.get_opcodes() if tag != "equal"]


def _learn_examples(exs: list[_Ex], lang: str) -> tuple[SynthResult, list[str]]:
    """The rule set for ``exs`` (all of them, one set): the trailing-comma set, the
    missing-semicolon set, else the rules learned side by side, else one after another. Raises SynthesisError."""
    all_sites = [(s, ex) for ex in exs for s in ex.sites]
    if (
        all_sites
        and all(s.node.kind() in COMMENT_KINDS for s, _ in all_sites)
        and not _same_substitution([s for s, _ in all_sites])
    ):
        first = all_sites[0][1].index
        raise SynthesisError(
            f"example {first} changes a comment; comments are not rewritable", first
        )

    exs_by_index = {ex.index: ex for ex in exs}
    exs_all = exs

    def learn(lists: bool) -> tuple[SynthResult, list[str]]:
        remaining = list(all_sites)
        rules: list[SynthRule] = []
        notes: list[str] = []
        ambiguous = False
        skipped: list[tuple[Site, SynthesisError]] = []
        while remaining:
            seed = remaining[0][0]
            choices = _search(seed, remaining, exs, lang, lists)
            if not choices and seed.node.kind() in COMMENT_KINDS:
                # A comment changed along with the code (a doc comment's example, a
                # `@default` list): left out with a note, so the code's change is still
                # learned (wave 3d); only comments and nothing learned is an error.
                skipped.append(
                    (
                        seed,
                        SynthesisError(
                            f"example {seed.example} changes a comment in a way no single "
                            f"substitution describes ({seed.before_text[:40]!r} -> "
                            f"{seed.after_text[:40]!r}); a rule rewrites comments only by one "
                            "word or phrase replaced throughout",
                            seed.example,
                        ),
                    )
                )
                remaining = remaining[1:]
                continue
            if not choices:
                error = SynthesisError(
                    f"example {seed.example}: no rule rewrites {seed.before_text[:60]!r} into "
                    f"{seed.after_text[:60]!r} without changing something else",
                    seed.example,
                )
                # An insertion next to an anchor the examples also keep without it is a
                # contradiction too (ky's `await server.close();` after one `t.is(…)` and
                # not after the same `t.is(…)` in another test): left out (wave 3d).
                if seed.delete is not None or not _kept_elsewhere(seed, exs):
                    raise error
                # The examples contradict themselves here (the same code, in a context no
                # constraint tells apart, is changed once and kept elsewhere): leave this
                # site out rather than fail on the others or rewrite what they keep.
                skipped.append((seed, error))
                remaining = remaining[1:]
                continue
            best = max(len(c.covered) for c in choices)
            top_choices = sorted(
                (c for c in choices if len(c.covered) == best), key=lambda c: c.order
            )
            top_choices = _shape_first(top_choices, choices)
            chosen = _same_layout(_idempotent(_lift_less(top_choices), seed, exs, lang), exs, lang)
            chosen = _closed(chosen, exs, lang)
            chosen = _twin(chosen, exs, lang)
            chosen = _qualified(chosen, exs, lang)
            # Ambiguous: a more general rule (more metavariables) fits as well as the one chosen.
            wider = [
                c
                for c in top_choices
                if c.level == chosen.level >= 0
                and not chosen.shape  # general by what the shape is, not by its variables
                and _vars(_runs_collapsed(c.key)) > _vars(chosen.key)
                and not _deeper_chain(c.key, chosen.key)
            ]
            if wider:
                ambiguous = True
                alt_pattern, _, alt_fix = max(wider, key=lambda c: _vars(c.key)).key.partition("\0")
                notes.append(
                    f"synth-{len(rules) + 1}: a more general rule fits the examples as well "
                    f"({alt_pattern!r} -> {alt_fix!r}); the narrower one was kept (call heads, "
                    "definition names and constants stay literal) — add an example that shows which"
                )
            rules.append(
                SynthRule(
                    id=f"synth-{len(rules) + 1}",
                    language=lang,
                    rule=chosen.rule,
                    fix=chosen.fix,
                    sites=len(chosen.covered),
                    constraints=chosen.constraints,
                    transform=chosen.transform,
                    expand_start=chosen.expand_start,
                    expand_end=chosen.expand_end,
                )
            )
            remaining = [(s, ex) for s, ex in remaining if id(s) not in chosen.covered]
            if chosen.expand_start or chosen.expand_end:
                gap = _gap_companion(chosen, exs, lang, len(rules))
                if gap is not None:
                    rules.insert(len(rules) - 1, gap)
                    rules[-1] = replace(rules[-1], id=f"synth-{len(rules)}")
                companion = _companion(chosen, exs, lang, len(rules) + 1)
                if companion is not None:
                    rules.append(companion)

        if skipped and not rules:
            raise skipped[0][1]
        left_out = {id(s) for s, _ in skipped}
        for seed, _ in skipped[:3]:
            line = exs_by_index[seed.example].before.count("\n", 0, seed.start) + 1
            why = (
                "a comment no single substitution describes (change it by hand)"
                if seed.node.kind() in COMMENT_KINDS
                else "no rule tells it apart from the same code the examples keep unchanged"
            )
            notes.append(
                f"example {seed.example} line {line}: {seed.before_text[:40]!r} -> "
                f"{seed.after_text[:40]!r} left out: {why}"
            )
        if len(skipped) > 3:
            notes.append(f"... and {len(skipped) - 3} more site(s) left out")
        result = SynthResult(rules=rules, language=lang, examples_reproduced=0, ambiguous=ambiguous)
        for ex in exs:
            got, _ = result.apply(ex.before)
            if not _reproduced(ex, got, left_out):
                raise SynthesisError(
                    f"example {ex.index}: the rules learned for each change interfere when applied "
                    "in order; give the changes as separate examples",
                    ex.index,
                )
            result.examples_reproduced += _reproduced(ex, got)
        return result, notes

    def learn_sequential() -> tuple[SynthResult, list[str]]:
        """Rules that interfere when learned side by side (a rule for one change rewrites
        code that a rule for another change must still match): each rule is learned on the
        text the earlier ones produce, at most one per site."""
        # A partial example (wave 3h synth9): each step re-diffs it from what the earlier
        # rules made of it, towards an after text that keeps their rewrites of its unchanged
        # code (free there), so only its edited sites are left to learn.
        cur = exs_all
        rules: list[SynthRule] = []
        for _ in range(len(all_sites) + 1):
            remaining = [(s, ex) for ex in cur for s in ex.sites]
            if not remaining:
                break
            seed = remaining[0][0]
            choices = _search(seed, remaining, cur, lang, False)
            if not choices:
                raise SynthesisError("no rule", seed.example)
            best = max(len(c.covered) for c in choices)
            top = sorted((c for c in choices if len(c.covered) == best), key=lambda c: c.order)
            top = _shape_first(top, choices)
            chosen = _same_layout(_idempotent(_lift_less(top), seed, cur, lang), cur, lang)
            chosen = _closed(chosen, cur, lang)
            chosen = _twin(chosen, cur, lang)
            step = [
                SynthRule(
                    id="s",
                    language=lang,
                    rule=chosen.rule,
                    fix=chosen.fix,
                    sites=len(chosen.covered),
                    constraints=chosen.constraints,
                    transform=chosen.transform,
                    expand_start=chosen.expand_start,
                    expand_end=chosen.expand_end,
                )
            ]
            if chosen.expand_start or chosen.expand_end:
                gap = _gap_companion(chosen, cur, lang, 0)
                if gap is not None:
                    step.insert(0, gap)
                companion = _companion(chosen, cur, lang, 0)
                if companion is not None:
                    step.append(companion)
            rules += step
            one = SynthResult(step, lang, 0)
            cur = _rewritten(cur, [one.apply(ex.before)[0] for ex in cur], lang)
        else:
            raise SynthesisError("interfere", None)
        result = SynthResult([replace(r, id=f"synth-{n}") for n, r in enumerate(rules, 1)], lang, 0)
        for ex in exs_all:
            if not _reproduced(ex, result.apply(ex.before)[0]):
                raise SynthesisError("interfere", ex.index)
            result.examples_reproduced += 1
        return result, [
            "the rules were learned one after another, each on the text the earlier ones "
            "produce (learned side by side they interfere): apply them in order"
        ]

    # Trailing commas at every depth (wave 3f): one rule and its nested copies, when the
    # examples change nothing else.
    commas = _trailing_commas(exs, lang)
    if commas is not None:
        result = SynthResult(rules=commas, language=lang, examples_reproduced=len(exs))
        notes = [
            "trailing commas: the last item of every multi-line list gains one; the rule "
            f"repeats as {len(commas) - 1} nested follow-up(s), one list depth each"
        ]
    elif (semis := _semicolons(exs, lang)) is not None:
        # Missing semicolons at every depth (wave 3i synth13), as trailing commas.
        result = SynthResult(rules=semis, language=lang, examples_reproduced=len(exs))
        notes = [
            "missing semicolons: every statement of the kinds the examples end with `;` "
            f"gains one; the rule repeats as {len(semis) - 1} nested follow-up(s), one "
            "statement depth each"
        ]
    elif (prefixed := _prefix_rules(exs, lang)) is not None:
        # A modifier added in front of a definition (wave 3j synth18): a rule on its kind.
        result = SynthResult(rules=prefixed, language=lang, examples_reproduced=len(exs))
        rule = prefixed[0].rule
        notes = [
            f"prefix: `{prefixed[0].fix[:-2]}` added to every {rule['kind']} whose "
            f"{rule['has']['field']} is "
            f"`{rule['has']['regex'][4:-2]}` (a rule on the node kind, any header and body)"
        ]
    elif (scoped := _scoped_renames(exs, lang)) is not None:
        # A parameter renamed in its scope (wave 3j synth14): the binder and its uses, not
        # the function literal around them.
        result = SynthResult(rules=scoped, language=lang, examples_reproduced=len(exs))
        # The identifier rules name the rename; the shorthand ones (wave 3j synth18) follow.
        named = [r for r in scoped if r.rule.get("kind") == "identifier"] or scoped
        notes = [
            "scoped rename: "
            + ", ".join(f"`{_rename_pair(r)}`" for r in named)
            + (
                " where a function's parameter is unused (the binder alone)"
                if "any" in named[0].rule
                else " in every function that binds it as a parameter"
                + (
                    " and every block that declares it"
                    if re.search(r"variable_declarator|'assignment'", repr(named[0].rule))
                    else ""
                )
                + " (the binder and its uses)"
                + (
                    ", shorthand properties `{ X }` as `{ X: Y }`"
                    if len(named) < len(scoped)
                    else ""
                )
            )
        ]
    elif (appended := _append_rules(exs, lang)) is not None:
        # One item appended to lists of one owner (wave 3k synth21): the item as its own
        # rewrite on the list's last item, not the example's whole list.
        result = SynthResult(rules=appended, language=lang, examples_reproduced=len(exs))
        notes = [
            f"insert: `{appended[0].fix.split(chr(10))[-1].split(', ')[-1].rstrip(',')}` "
            "added to every list whose owner (or neighbouring item) the examples name, after "
            "the item they show it after (any other items, the layouts they show)"
        ]
    else:
        result, notes = _learn_all(learn, learn_sequential)
        # Wave 3l (synth25): the chosen rules' incidental constraints relaxed where every
        # example still comes out the same (synth/relax.py).
        result, relaxed = relax(result, exs, _right_rewrites)
        notes = notes + relaxed
    return result, notes


def _append_rules(exs: list[_Ex], lang: str) -> list[SynthRule] | None:
    """The append rule set (``synth.appends``): the first candidate that matches every
    edited site and nothing else of its owner in any layout (the examples' kept lists are
    negatives), and reproduces every example."""
    if any(ex.partial for ex in exs):
        return None
    sites = sum(len(ex.sites) for ex in exs)
    examples = [(ex.root, ex.after, ex.root_after, ex.sites) for ex in exs]
    for candidate, probes in append_rules(examples, lang):
        rules = [
            SynthRule(
                id=f"synth-{n}",
                language=lang,
                rule={k: v for k, v in rule.items() if k != "transform"},
                fix=fix,
                sites=sites * (n == 1),
                # A Go field's padding from its neighbour (wave 3u, synth/neighbours.py).
                transform=rule.get("transform"),
            )
            for n, (rule, fix) in enumerate(candidate, 1)
        ]
        try:
            kept = any(
                not any(s.start <= m.range().start.index < s.end for s in ex.sites)
                for ex in exs
                for probe in probes
                for m in ex.root.find_all(cast(Any, {"rule": probe}))
            )
            if not kept and _rules_hold(exs, rules, lang):
                return rules
        except RuntimeError:  # a rule ast-grep refuses (no candidate of ours should be)
            continue
    return None


def _learn_all(learn: Any, learn_sequential: Any) -> tuple[SynthResult, list[str]]:
    try:
        result, notes = learn(lists=True)
    except SynthesisError as exc:
        if "interfere" not in exc.reason:
            raise
        # A list rule (parameters, arguments) may overlap a rule learned for another change:
        # learn again from whole nodes only; then one rule after another.
        try:
            result, notes = learn(lists=False)
        except SynthesisError as again:
            if "interfere" not in again.reason:
                raise
            try:
                result, notes = learn_sequential()
            except (SynthesisError, SiteError):
                raise again from None
    return result, notes


def _trailing_commas(exs: list[_Ex], lang: str) -> list[SynthRule] | None:
    """The trailing-comma rule set (``synth.commas``): the rule and its nested copies, when
    the set reproduces every example (a partial one as :func:`_reproduced` has it: its
    edited sites and kept lines; its other lists are the rule's to change)."""
    pairs = [(ex.before, ex.after) for ex in exs]
    found = trailing_comma_rule(pairs, lang, tuple(ex.partial for ex in exs))
    if found is None:
        return None
    rule_obj, sites = found
    rule_obj = _except_kept(rule_obj, exs)
    rule = SynthRule(id="synth-1", language=lang, rule=rule_obj, fix="$A,", sites=sites)
    rules = [rule] + [
        replace(rule, id=f"synth-{i}", sites=0, follow_up="nested")
        for i in range(2, COMMA_DEPTH + 1)
    ]
    result = SynthResult(rules=rules, language=lang, examples_reproduced=0)
    if not all(_reproduced(ex, result.apply(ex.before)[0]) for ex in exs):
        return None
    return rules


def _except_kept(rule: dict[str, Any], exs: list[_Ex]) -> dict[str, Any]:
    """``rule`` (a formatter's rule: trailing commas, missing semicolons) less the nodes it
    matches on the lines a partial example keeps (wave 3u): the user showed those as left
    alone — one list the commit forgot, a statement it kept — and the change is still the
    formatter's everywhere else, so each kept node is excluded by its own text in its own
    kind of parent (``not: {regex: '^text$', inside: {kind: …}}``) rather than the whole
    rule given up for one literal rule per site. The caller still checks that the set
    reproduces every example (a kept node with the text of an edited one fails there)."""
    out: list[dict[str, Any]] = []
    for ex in exs:
        if not ex.keep:
            continue
        for m in ex.root.find_all(**rule):
            r = m.range()
            a, b = r.start.index, r.end.index
            if not any(a < kb and ka <= b for ka, kb in ex.keep):
                continue
            p = m.parent()
            one: dict[str, Any] = {"regex": f"^{re.escape(m.text())}$"}
            if p is not None:
                one["inside"] = {"kind": p.kind(), "stopBy": "neighbor"}
            if one not in out:
                out.append(one)
    if not out:
        return rule
    excluded = {"not": out[0]} if len(out) == 1 else {"not": {"any": out}}
    return {**rule, "all": [*rule.get("all", []), excluded]}


def _semicolons(exs: list[_Ex], lang: str) -> list[SynthRule] | None:
    """The missing-semicolon rule set (``synth.semicolons``): the rule and its nested
    copies, when the set reproduces every example (a partial one as :func:`_reproduced` has
    it)."""
    pairs = [(ex.before, ex.after) for ex in exs]
    found = missing_semicolon_rule(pairs, lang, tuple(ex.partial for ex in exs))
    if found is None:
        return None
    rule_obj, sites = found
    rule_obj = _except_kept(rule_obj, exs)
    rule = SynthRule(id="synth-1", language=lang, rule=rule_obj, fix="$A;", sites=sites)
    rules = [rule] + [
        replace(rule, id=f"synth-{i}", sites=0, follow_up="nested")
        for i in range(2, SEMI_DEPTH + 1)
    ]
    result = SynthResult(rules=rules, language=lang, examples_reproduced=0)
    if not all(_reproduced(ex, result.apply(ex.before)[0]) for ex in exs):
        return None
    return rules


# A modifier added in front of a definition (`unsafe `, `pub `, `export `, `pub(crate) `).
_PREFIX = re.compile(r"^(?:[a-z]+(?:\([a-z:]+\))? )+$")


def _prefix_rules(exs: list[_Ex], lang: str) -> list[SynthRule] | None:
    """Wave 3j (synth18): every site of the examples is a definition of one kind that gains
    one modifier in front (`impl X for T {` -> `unsafe impl X for T {`) and no definition
    with parameters (a function's header rule, :func:`_header_template`, serves those). A
    pattern keeps the header's shape (an `impl`'s type parameters and `where` clause, a
    struct's generics), so the rule is on the node kind: ``kind`` with the trait (an
    `impl`'s) or the name the examples change, the node's first word as it was (not the
    modified one again), fixed to the modifier and the node (``$A``). Kept only where it
    reproduces every example and matches every edited site."""
    sites = [s for ex in exs for s in ex.sites]
    if not sites or any(
        s.insert is not None or s.delete is not None or s.after_node is None for s in sites
    ):
        return None
    kinds = {s.node.kind() for s in sites} | {s.after_node.kind() for s in sites if s.after_node}
    prefixes = {
        s.after_text[: len(s.after_text) - len(s.before_text)]
        for s in sites
        if s.after_text.endswith(s.before_text)
    }
    if len(kinds) != 1 or len(prefixes) != 1:
        return None
    prefix = next(iter(prefixes))
    if not all(s.after_text == prefix + s.before_text for s in sites):
        return None
    if not _PREFIX.match(prefix) or any(s.node.field("parameters") is not None for s in sites):
        return None
    fields = [f for f in ("trait", "name") if all(s.node.field(f) is not None for s in sites)]
    first = {re.match(r"[A-Za-z_]+", s.before_text) for s in sites}
    if not fields or None in first:
        return None
    words = {m.group() for m in first if m is not None}
    if len(words) != 1 or prefix.split()[-1] == next(iter(words)):
        return None
    names = sorted({s.node.field(fields[0]).text() for s in sites})  # type: ignore[union-attr]
    rule = {
        "kind": next(iter(kinds)),
        "pattern": "$A",
        "regex": rf"^{re.escape(next(iter(words)))}\b",
        "has": {"field": fields[0], "regex": "^(?:" + "|".join(map(re.escape, names)) + ")$"},
    }
    rules = [SynthRule(id="synth-1", language=lang, rule=rule, fix=prefix + "$A", sites=len(sites))]
    return rules if _rules_hold(exs, rules, lang) else None


def _rules_hold(exs: list[_Ex], rules: list[SynthRule], lang: str) -> bool:
    """``rules`` match every edited site and reproduce every example (an invalid rule: no)."""
    result = SynthResult(rules=rules, language=lang, examples_reproduced=0)
    try:
        return all(_renames_sites(ex, rules) for ex in exs) and all(
            _reproduced(ex, result.apply(ex.before)[0]) for ex in exs
        )
    except RuleError:
        return False


def _scoped_renames(exs: list[_Ex], lang: str) -> list[SynthRule] | None:
    """The scoped-rename rule set (``synth.scoped``): the first candidate (the binder alone
    where unused, then the binder and its uses) that reproduces every example."""
    pairs = [(ex.before, ex.after) for ex in exs]
    for candidate, sites in scoped_rename_rules(pairs, lang, [ex.root for ex in exs]):
        rules = [
            SynthRule(id=f"synth-{n}", language=lang, rule=rule, fix=fix, sites=sites * (n == 1))
            for n, (rule, fix) in enumerate(candidate, 1)
        ]
        if _rules_hold(exs, rules, lang):
            return rules
    return None


def _renames_sites(ex: _Ex, rules: list[SynthRule]) -> bool:
    """Every edited site of ``ex`` holds an identifier one of ``rules`` matches (a partial
    example's check is by lines, which a rule that matches nothing there may pass)."""
    spans = [
        (m.range().start.index, m.range().end.index)
        for r in rules
        for m in ex.root.find_all(cast(Any, {"rule": r.rule}))
    ]
    return all(any(s.start <= a and b <= s.end for a, b in spans) for s in ex.sites)


def _rename_pair(rule: SynthRule) -> str:
    return f"{rule.rule['regex'][1:-1].replace(chr(92), '')} -> {rule.fix}"


def _follow_ups(result: SynthResult, exs: list[_Ex]) -> list[str]:
    """The rules that serve the changes (depth copies, macro arguments, imports, the CLI's
    kinds), each kept only while ``result`` still reproduces ``exs``; returns their notes."""
    # Sites left out (examples that contradict themselves): a follow-up must keep what the
    # rules already give there, not reproduce the example whole.
    partial = (
        {ex.index: result.apply(ex.before)[0] for ex in exs}
        if result.examples_reproduced < len(exs) or any(ex.partial for ex in exs)
        else None
    )

    def reproduces(candidate: SynthResult) -> bool:
        try:
            return all(
                _reproduced(ex, got := candidate.apply(ex.before)[0])
                or (partial is not None and got == partial[ex.index])
                for ex in exs
            )
        except RuleError:
            return False

    notes: list[str] = []
    # Tab-indented fixes at the other depths (wave 3g).
    from oopav.synth.tabdepth import add_depth_rules

    notes += add_depth_rules(result, reproduces)
    # Rust: the same rewrite inside macro arguments (token trees), wave 3d.
    from oopav.synth.macros import add_macro_rules

    notes += add_macro_rules(result, reproduces)
    # A called function's definition renamed with its calls, a new parameter passed by
    # the calls (wave 3h, synth/definitions.py).
    from oopav.synth.definitions import add_definition_rules

    notes += add_definition_rules(result, reproduces, [ex.before for ex in exs])
    notes += manage_imports(result, [(ex.before, ex.after) for ex in exs], reproduces)
    # Go: a package's name as other packages write it, `pkg.Name` (wave 3u, qualified.py).
    notes += add_qualified_rules(
        result, reproduces, [ex.before for ex in exs if ex.before != ex.after]
    )
    # A rule the ast-grep CLI would refuse for want of a kind gets the kinds it matched.
    notes += kinds_from_sites(result, [ex.before for ex in exs], reproduces)
    return notes


def _learn_groups(
    exs: list[_Ex], lang: str, error: SynthesisError
) -> tuple[SynthResult, list[str]] | None:
    """Examples that no one rule set reproduces together, learned in the fewest groups that
    each get a rule set of their own (wave 3g synth6): the union of the groups' sets, kept
    only when, applied in order as the CLI and the loop apply it, it reproduces every example
    byte for byte (the sites a group's own set leaves out, left out the same) — so nothing the
    examples keep is rewritten. Each rule says which examples it came from. None: no
    partition into at most ``partition.MAX_LEARNS`` group learns works."""
    from oopav.synth.partition import learn_in_groups, renumber

    changing = [ex.index for ex in exs if ex.before != ex.after]
    if len(changing) < 2:
        return None
    by_index = {ex.index: ex for ex in exs}
    # Unchanged examples are negatives: every group's rules must leave them alone.
    negatives = [ex for ex in exs if ex.before == ex.after]

    def learn(group: tuple[int, ...]) -> tuple[SynthResult, list[str]] | None:
        part = [by_index[i] for i in group] + negatives
        try:
            result, notes = _learn_examples(part, lang)
            notes = notes + _follow_ups(result, part)
        except (SynthesisError, SiteError, RuleError):
            return None
        return result, notes

    def combine(
        groups: list[tuple[tuple[int, ...], tuple[SynthResult, list[str]]]],
    ) -> tuple[SynthResult, list[str]] | None:
        rules: list[SynthRule] = []
        notes: list[str] = []
        own: dict[int, str] = {}  # each example as its own group's set leaves it
        for group, (res, group_notes) in groups:
            ids = {r.id: f"synth-{len(rules) + n}" for n, r in enumerate(res.rules, 1)}
            rules += [replace(r, id=ids[r.id], examples=group) for r in res.rules]
            notes += [f"{_examples_text(group)}: {renumber(n, ids)}" for n in group_notes]
            for i in group:
                own[i] = res.apply(by_index[i].before)[0]
        union = SynthResult(rules=rules, language=lang, examples_reproduced=0)
        union.groups = [list(group) for group, _ in groups]
        try:
            for ex in exs:
                got = union.apply(ex.before)[0]
                if not _reproduced(ex, got) and got != own.get(ex.index, ex.after):
                    return None
                union.examples_reproduced += _reproduced(ex, got)
        except RuleError:
            return None
        return union, notes

    found = learn_in_groups(changing, learn, combine)
    if found is None:
        return None
    union, notes = found
    parts = "; ".join(
        f"{_rule_span([r for r in union.rules if r.examples == tuple(g)])} from "
        f"{_examples_text(tuple(g))}"
        for g in union.groups
    )
    head = (
        f"no one rule set reproduces every example ({error.reason[:120]}): the examples are "
        f"learned in {len(union.groups)} groups, each rule set on its own, and applied one "
        f"after another ({parts})"
    )
    return union, [head, *notes]


def _examples_text(group: tuple[int, ...]) -> str:
    if len(group) == 1:
        return f"example {group[0]}"
    return "examples " + ", ".join(str(i) for i in group)


def _rule_span(rules: list[SynthRule]) -> str:
    if len(rules) == 1:
        return rules[0].id
    return f"{rules[0].id}..{rules[-1].id}"


def _finish(
    result: SynthResult,
    notes: list[str],
    guessed: str | None,
    layout_notes: list[str],
    t0: float,
) -> SynthResult:
    rules = result.rules
    # Follow-ups (imports) and deletion companions serve a change; they are not changes.
    changes = sum(1 for r in rules if not r.follow_up and not r.companion)
    if len(rules) > 1:
        notes.insert(
            0,
            (
                f"the examples hold {changes} different changes: a rule set of {len(rules)} "
                "rules, applied in order"
                if changes > 1
                else f"a rule set of {len(rules)} rules (one change and its follow-ups), "
                "applied in order"
            ),
        )
    if guessed:
        notes.append(
            f"the examples name no language or path; they parse as {guessed} (give `path` or "
            "`language` to choose)"
        )
    result.notes = notes + layout_notes
    result.elapsed_ms = round((time.perf_counter() - t0) * 1000, 3)
    return result


def _rewritten(exs: list[_Ex], mids: list[str], lang: str) -> list[_Ex]:
    """The examples from ``mids[i]`` (the text earlier rules produced) to their after text
    (a partial example's: :func:`_partial_target`)."""
    out = []
    for ex, before in zip(exs, mids, strict=True):
        after, keep = _partial_target(ex, before) if ex.partial else (ex.after, ex.keep)
        broot, aroot = parse(before, lang), parse(after, lang)
        where = f"example {ex.index}"
        sites = [] if before == after else find_sites(ex.index, before, after, broot, aroot, where)
        out.append(_Ex(ex.index, before, after, broot, aroot, sites, ex.partial, keep))
    return out


def _partial_target(ex: _Ex, mid: str) -> tuple[str, list[tuple[int, int]]]:
    """A partial example's after text and kept spans for a rule learned on ``mid`` (what the
    earlier rules made of its before text), as the sequential learner needs them: line by
    line, ``mid``'s lines where they differ from the after text away from every edited site
    and kept line (the rules rewrote unchanged code there: free, so kept as they made it),
    the after text's lines elsewhere; the kept lines at their place in ``mid`` (one the rules
    rewrote is dropped: the final check fails the example there)."""
    line_of = [0] + [m.end() for m in re.finditer("\n", ex.after)]
    fixed: set[int] = set()
    for s in ex.sites:
        first = bisect.bisect_right(line_of, s.after_start) - 1
        last = bisect.bisect_right(line_of, max(s.after_start, s.after_end - 1)) - 1
        fixed.update(range(first, last + 1))
    before_lines = ex.before.splitlines(keepends=True)
    mid_lines = mid.splitlines(keepends=True)
    after_lines = ex.after.splitlines(keepends=True)
    starts = [0] + [m.end() for m in re.finditer("\n", ex.before)]
    kept_lines = {
        bisect.bisect_right(starts, a) - 1 for a, _b in ex.keep
    }  # 0-based lines of before
    # Kept lines where the after text has them (they are unchanged, so its equal blocks).
    ab = difflib.SequenceMatcher(None, before_lines, after_lines, autojunk=False)
    for tag, i1, i2, j1, _j2 in ab.get_opcodes():
        if tag == "equal":
            fixed.update(j1 + n - i1 for n in kept_lines if i1 <= n < i2)
    out: list[str] = []
    sm = difflib.SequenceMatcher(None, mid_lines, after_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        near = fixed.intersection(range(j1, max(j2, j1 + 1))) or (j1 == j2 and j1 - 1 in fixed)
        out += after_lines[j1:j2] if tag == "equal" or near else mid_lines[i1:i2]
    target = "".join(out)
    # The kept lines, in mid's numbering (where mid still has them as before did).
    keep_mid: list[int] = []
    bm = difflib.SequenceMatcher(None, before_lines, mid_lines, autojunk=False)
    for tag, i1, i2, j1, _j2 in bm.get_opcodes():
        if tag == "equal":
            keep_mid += [j1 + n - i1 + 1 for n in sorted(kept_lines) if i1 <= n < i2]
    return target, _keep_spans(mid, keep_mid)


def _kept_elsewhere(seed: Site, exs: list[_Ex]) -> bool:
    """The examples keep ``seed``'s code unchanged somewhere (the same text, on token
    boundaries, outside every site): they contradict themselves about it."""
    text = seed.before_text
    left = r"\b" if text[:1].isalnum() or text[:1] == "_" else ""
    right = r"\b" if text[-1:].isalnum() or text[-1:] == "_" else ""
    pattern = re.compile(left + re.escape(text) + right)
    for ex in exs:
        if ex.partial:
            continue  # its unchanged code is left for the rule, not kept (wave 3h)
        for m in pattern.finditer(ex.before):
            if not any(s.start <= m.start() < s.end for s in ex.sites):
                return True
    return False


def _partial_after(ex: _Ex, left_out: set[int]) -> str:
    """``ex``'s after text with the sites in ``left_out`` not rewritten."""
    out, pos = [], 0
    for s in ex.sites:
        if id(s) in left_out:
            continue
        out.append(ex.before[pos : s.start])
        out.append(s.after_text)
        pos = s.end
    out.append(ex.before[pos:])
    return "".join(out)


def _free(ex: _Ex, start: int, end: int) -> bool:
    """A rewrite of ``ex.before[start:end]`` is free: ``ex`` is partial and the rewrite
    reaches neither an edited site nor a line the example keeps, nor the line of an edited
    site (wave 3j synth16: the user edited that line and left the rest of it as it is —
    `null != a && a !== b`, the site the second `!=`, keeps the first)."""
    return (
        ex.partial
        and not _touches(ex, start, end)
        and not any(a < end and start < b for a, b in ex.keep)
        and not _on_site_line(ex, start, end)
    )


def _on_site_line(ex: _Ex, start: int, end: int) -> bool:
    """``ex.before[start:end]`` shares a line with one of ``ex``'s edited sites."""
    for s in ex.sites:
        lo = ex.before.rfind("\n", 0, s.start) + 1
        hi = ex.before.find("\n", s.end)
        hi = len(ex.before) if hi < 0 else hi
        if (start < hi and lo < end) or (start == end and lo <= start <= hi):
            return True
    return False


def _keep_spans(before: str, lines: list[int]) -> list[tuple[int, int]]:
    """The [start, end) spans of ``before``'s 1-based ``lines`` (without the newline)."""
    starts = [0] + [m.end() for m in re.finditer("\n", before)]
    out = []
    for n in sorted(set(lines)):
        a = starts[n - 1]
        b = starts[n] - 1 if n < len(starts) else len(before)
        out.append((a, max(a, b)))
    return out


def _touches(ex: _Ex, start: int, end: int) -> bool:
    """A rewrite of ``ex.before[start:end]`` reaches one of ``ex``'s sites (overlaps it)."""
    return any(
        (s.start < end and start < s.end) or (s.start == s.end and start <= s.start <= end)
        for s in ex.sites
    )


def _reproduced(ex: _Ex, got: str, left_out: set[int] | None = None) -> bool:
    """``got`` (what the rules make of ``ex.before``) is the example's after text — with the
    sites in ``left_out`` not rewritten. For a partial example (wave 3h) the edited sites
    must come out exactly and the rest is free: compared line by line with the after text,
    every line that holds an edited site must be the same; lines of the unchanged code may
    differ (the rules rewrite the other sites of the shape there, as in any file). A rewrite
    on the very line of an edited site counts against it (conservative: a line is the unit)."""
    want = _partial_after(ex, left_out) if left_out else ex.after
    if got == want:
        return True
    if not ex.partial:
        return False
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = length = 0
    for s in ex.sites:
        if left_out and id(s) in left_out:
            continue
        out.append(ex.before[pos : s.start])
        length += s.start - pos
        spans.append((length, length + len(s.after_text)))
        out.append(s.after_text)
        length += len(s.after_text)
        pos = s.end
    out.append(ex.before[pos:])
    ref = "".join(out)
    # The lines the example keeps, where ``ref`` has them: they must come out as they are.
    kept_sites = [s for s in ex.sites if not (left_out and id(s) in left_out)]
    n_sites = len(spans)
    for a, b in ex.keep:
        shift_a = sum(len(s.after_text) - (s.end - s.start) for s in kept_sites if s.end <= a)
        shift_b = sum(len(s.after_text) - (s.end - s.start) for s in kept_sites if s.end <= b)
        spans.append((a + shift_a, b + shift_b))
    # A kept line is kept whole: text inserted at either end of it changes it too (a trailing
    # comma after its last item), where an insertion at a site's edge may be the site's
    # neighbour's (wave 3h synth9).
    kept_spans = set(spans[n_sites:])
    starts = [0] + [m.end() for m in re.finditer("\n", ref)]
    site_lines: set[int] = set()
    for a, b in spans:
        first = bisect.bisect_right(starts, a) - 1
        last = bisect.bisect_right(starts, max(a, b - 1)) - 1
        site_lines.update(range(first, last + 1))
    ref_lines = ref.splitlines(keepends=True)
    got_lines = got.splitlines(keepends=True)
    starts.append(len(ref))
    sm = difflib.SequenceMatcher(None, ref_lines, got_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:
            if i1 in site_lines and i1 - 1 in site_lines:
                return False  # a line inserted inside an edited site
            continue
        if not site_lines.intersection(range(i1, i2)):
            continue
        if i2 - i1 == j2 - j1:
            # Lines that hold an edited site and differ: neither the site's own characters
            # nor the unchanged code on the same line may be rewritten (`null != a && a !==
            # b`, the site the second `!=`: the user edited the line and kept the first,
            # wave 3j synth16).
            if any(
                n in site_lines and ref_lines[n] != got_lines[j1 + n - i1] for n in range(i1, i2)
            ):
                return False
            continue
        # Lines re-laid out around an edited site: the site's own characters may not change.
        lo, hi = starts[i1], starts[min(i2, len(starts) - 1)]
        inner = [
            (a - lo, b - lo, (a, b) in kept_spans)
            for a, b in spans
            if (a < hi and lo < b) or lo <= a == b <= hi
        ]
        chars = difflib.SequenceMatcher(None, ref[lo:hi], "".join(got_lines[j1:j2]), autojunk=False)
        for op, c1, c2, _d1, _d2 in chars.get_opcodes():
            if op == "equal":
                continue
            for a, b, whole in inner:
                if (c1 < b and a < c2) if c1 < c2 else (a <= c1 <= b if whole else a < c1 < b):
                    return False
    return True


def _stable(ex: _Ex, rule: Rule) -> bool:
    """``rule`` leaves ``ex``'s after text alone (it does not rewrite its own output again);
    in a partial example, the edited sites' after text alone (the unchanged code there still
    has sites to rewrite). Raises RuleError as ``rewrite_source`` does."""
    if not ex.partial:
        return rewrite_source(ex.after, rule)[0] == ex.after
    rewrites = _rewrites_in(rule, ex.root_after, ex.after)
    if rewrites is None:
        return False
    return not any(
        start < s.after_end and s.after_start < end
        for start, end, _n, _r in rewrites
        for s in ex.sites
    )


def _idempotent(choice: _Choice, seed: Site, exs: list[_Ex], lang: str) -> _Choice:
    """The choice, guarded when it would rewrite its own output again: a fix that wraps the
    match (``fmt::Formatter`` -> ``fmt::Formatter<'_>``) matches again inside the result. The
    guard: not directly inside a node of the kind the site becomes."""
    if choice.expand_start or choice.expand_end:
        return choice  # a deletion: checked to a fixpoint already
    rule = Rule(
        id="c", language=lang, rule=choice.rule, fix=choice.fix, constraints=choice.constraints
    )
    try:
        if all(_stable(ex, rule) for ex in exs):
            return choice
    except RuleError:
        return choice
    if seed.after_node is None:
        return choice
    # Not inside that kind at all; else (precision first, wave 3d) not in the very field the
    # match lands in: `t.Iterable` -> `t.Iterable[t.Any]` must not give
    # `t.Iterable[t.Any][t.Any]`, yet `t.Optional[t.Iterable]` is a site.
    inner: list[dict[str, Any]] = [{"kind": seed.after_node.kind(), "stopBy": "neighbor"}]
    holder = rewrapped(seed.after_node, seed.before_text)
    if holder is not None:
        inner.append({"kind": holder[0], "field": holder[1], "stopBy": "neighbor"})
    guards = [{"not": {"inside": g}} for g in inner]
    # Wave 3l (synth26): a fix that writes a new line into the body it matches (the first
    # statement of a function) matches its output again: not where the body holds it.
    pattern = choice.rule.get("pattern")
    if isinstance(pattern, str):
        new = [
            ln.strip()
            for ln in choice.fix.split("\n")
            if ln.strip() and "$" not in ln and ln.strip() not in pattern
        ]
        if new:
            guards.append({"not": {"has": {"pattern": new[0], "stopBy": "end"}}})
    for guard in guards:
        guarded = conjoin(choice.rule, guard)
        g = Rule(
            id="c", language=lang, rule=guarded, fix=choice.fix, constraints=choice.constraints
        )
        try:
            covered = _evaluate(g, exs)
            ok = all(_stable(ex, g) for ex in exs)
        except RuleError:
            continue
        if covered is None or covered != choice.covered or not ok:
            continue
        return _Choice(
            guarded, choice.fix, covered, choice.order, choice.key, choice.level, choice.constraints
        )
    return choice


_METAVAR = re.compile(r"\$\$\$[A-Z_][A-Z0-9_]*|\$[A-Z_][A-Z0-9_]*")


def _layout_regex(texts: list[str], fix: str) -> str | None:
    """A regex that holds the layout every one of ``texts`` (the multi-line matches of a rule
    whose ``fix`` writes line breaks) shares: a line break, and where every match and the fix
    open (close) with the same line, that line alone (``{`` then a line break): a one-line
    object whose value spans lines is not of this layout. None when a text is one line."""
    if not texts or not all("\n" in t for t in texts):
        return None
    firsts = {t.split("\n", 1)[0].strip() for t in texts}
    lasts = {t.rsplit("\n", 1)[1].strip() for t in texts}
    fix_first, fix_last = fix.split("\n", 1)[0].strip(), fix.rsplit("\n", 1)[1].strip()
    head = tail = ""
    if firsts == {fix_first} and not _METAVAR.search(fix_first):
        head = f"^{_rx_escape(fix_first)}[ \t]*\n"
    if lasts == {fix_last} and not _METAVAR.search(fix_last):
        tail = f"\n[ \t]*{_rx_escape(fix_last)}$"
        # ast-grep re-indents a multi-line fix by the spaces before the match, not tabs: in
        # tab-indented code the fix writes the examples' depth wherever it matches (ky's
        # `{\n\t\t$A,\n\t}` at other depths). Keep such a rule to that depth (its closing
        # line indented as the examples' are): code at another depth is left alone.
        indents = {_indent(t.rsplit("\n", 1)[1]) for t in texts}
        fix_indent = _indent(fix.rsplit("\n", 1)[1])
        if "\t" in fix.split("\n", 1)[1] and indents == {fix_indent}:
            tail = f"\n{fix_indent}{_rx_escape(fix_last)}$"
    if head and tail:
        return head + r"[\s\S]*" + tail
    return head or tail or "\n"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _regexes(rule: Any) -> set[str]:
    """Every ``regex`` in a rule object, at any depth."""
    if isinstance(rule, dict):
        own = {rule["regex"]} if isinstance(rule.get("regex"), str) else set()
        return own.union(*(_regexes(v) for v in rule.values()))
    if isinstance(rule, list):
        return set().union(*(_regexes(v) for v in rule))
    return set()


# An insertion's fix: the anchor, a line break, the new statement (or the other way round).
_INSERTS = re.compile(r"^\$ANCHOR\n|\n[ \t]*\$ANCHOR$")


def _fixes_layout(fix: str) -> bool:
    """The fix writes a line break of its own (outside its metavariables)."""
    return "\n" in _METAVAR.sub("", fix)


def _rx_escape(text: str) -> str:
    """``text`` as a literal in ast-grep's (Rust) regex syntax."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)


def _right_sites(choice: _Choice, exs: list[_Ex], lang: str) -> list[Any]:
    """The example nodes ``choice`` rewrites right (what a post-pass may narrow it to); none
    for expanding or transforming rules, which the post-passes leave as they are."""
    if choice.expand_start or choice.expand_end or choice.transform:
        return []
    rule = Rule(
        id="c", language=lang, rule=choice.rule, fix=choice.fix, constraints=choice.constraints
    )
    split = _classify(rule, exs)
    if split is not None and not split[0] and split[1]:
        # A list rule rewrites a part of its site (the parameters of a function the site is,
        # `(next)` -> ` *(next)`): no rewrite lines up with a site's span. Wave 3g: where the
        # rule reproduces an example whole, what it rewrites there is right.
        right: list[SgNode] = []
        for ex in exs:
            rewrites = _rewrites(rule, ex)
            try:
                whole = rewrites is not None and _reproduced(ex, _apply_rule(ex.before, rule)[0])
            except RuleError:
                whole = False
            if whole and rewrites:
                right += [node for _, _, node, _ in rewrites]
        return right
    return list(split[0]) if split is not None else []


def _same_layout(choice: _Choice, exs: list[_Ex], lang: str) -> _Choice:
    """The choice, kept to the layout class of its sites when its fix hard-codes a line break:
    learned from multi-line sites only (``{\\n\\t$A\\n}`` -> ``{\\n\\t$A,\\n}``, a
    trailing comma), it would also match the one-line nodes of the pattern's shape (ast-grep
    matches modulo layout) and lay them out over several lines. The guard: a ``regex`` on the
    matched text that only the sites' layout meets (see :func:`_layout_regex`)."""
    if not _fixes_layout(choice.fix) or (_INSERTS.search(choice.fix) and len(choice.covered) > 1):
        # Wave 3g: a statement inserted next to its anchor writes its line break between
        # the two; the anchor is copied as it stands (one line or several), so its layout
        # is no context (ky's `await server.close();` after a test's last statement, a
        # multi-line call in the example, a one-line one in the held-out tests). One site
        # alone keeps every restriction (precision first, as for lone insertions).
        return choice
    sites = _right_sites(choice, exs, lang)
    if not sites:
        return choice
    rx = _layout_regex([n.text() for n in sites], choice.fix)
    if rx is None or rx in _regexes(choice.rule):
        return choice
    guarded = conjoin(choice.rule, {"regex": rx})
    g = Rule(id="c", language=lang, rule=guarded, fix=choice.fix, constraints=choice.constraints)
    try:
        covered = _evaluate(g, exs)
    except RuleError:
        return choice
    if covered is None or covered != choice.covered:
        return choice
    return replace(choice, rule=guarded)


def _closed_first(
    rule: dict[str, Any],
    cons: dict[str, Any] | None,
    closed: dict[str, Any],
    parent: dict[str, Any] | None,
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """A narrowed candidate (``rule``, ``cons``) closed by what every positive shares — its
    metavariables' values (:func:`discriminate.closure`) and its parent's kind
    (:func:`discriminate.context_closure`) — and, should that cover fewer sites, as it was
    (precision first: the closed one is tried first)."""
    merged = merge_constraints(cons, closed)
    narrowed = rule
    if parent is not None and json.dumps(parent, sort_keys=True) not in json.dumps(
        rule, sort_keys=True
    ):
        narrowed = conjoin(rule, parent)
    if (narrowed, merged) == (rule, cons):
        return [(rule, cons)]
    return [(narrowed, merged), (rule, cons)]


_CALL_HEAD = re.compile(r"(?<=\.)([A-Za-z]\w*)(?=\()")


def _twin(choice: _Choice, exs: list[_Ex], lang: str) -> _Choice:
    """Go: a method call head kept literal (``$A.FindRoute($B, $C)``) also reaches its
    exported or unexported twin (``findRoute``), the same operation under the other
    visibility (Go exports by the first letter's case): a public method and the private
    one it wraps take the same arguments and change together. The head becomes a
    metavariable kept to the two spellings, only where the rule still rewrites exactly the
    same example sites (a kept call of the twin in the examples says no)."""
    if lang != "go" or choice.transform or choice.expand_start or choice.expand_end:
        return choice
    pattern = choice.rule.get("pattern")
    if not isinstance(pattern, str) or "$HEAD" in pattern:
        return choice
    heads = set(_CALL_HEAD.findall(pattern))
    if len(heads) != 1:
        return choice
    name = heads.pop()
    call = "." + name + "("
    if choice.fix.count(call) != pattern.count(call) or not choice.fix.count(call):
        return choice
    rule = {**choice.rule, "pattern": pattern.replace(call, ".$HEAD(")}
    fix = choice.fix.replace(call, ".$HEAD(")
    first = "[" + name[0].upper() + name[0].lower() + "]"
    constraints = {**(choice.constraints or {}), "HEAD": {"regex": "^" + first + name[1:] + "$"}}
    candidate = Rule(id="c", language=lang, rule=rule, fix=fix, constraints=constraints)
    try:
        covered = _evaluate(candidate, exs)
    except RuleError:
        return choice
    if covered is None or covered != choice.covered:
        return choice
    return replace(choice, rule=rule, fix=fix, constraints=constraints)


# A Go package-qualified name (`ctxhttp.$A`, `ctxhttp.Handler`), as a pattern alone.
_GO_QUALIFIED = re.compile(r"^[A-Za-z_]\w*\.(?:\$[A-Z][A-Z0-9_]*|[A-Za-z_]\w*)$")


def _qualified(choice: _Choice, exs: list[_Ex], lang: str) -> _Choice:
    """Go (wave 3f): a package-qualified name is a `qualified_type` where a type stands and a
    `selector_expression` where a value does, and a pattern of it alone parses as the type:
    chi's `ctxhttp.$A` -> `$A` (the package folded into chi), learned on `ctxhttp.Handler`
    types, left `return ctxhttp.HandlerFunc(func(…) {…})` and `cxh = ctxhttp.HandlerFunc(t)`
    of the same file as they were (half the edit). The rule reaches both, where it still
    rewrites every site it did and nothing the examples keep."""
    pattern = choice.rule.get("pattern")
    # Wave 3k (synth22): the other way round too — learned on values (urfave/cli's `cli.$A`
    # -> `$A` on calls, `pattern: {context: 'func _() { cli.$A }', selector:
    # selector_expression}`), it left `cli.Command{…}` and `*cli.Context` as they were, half
    # of many lines (16 wrong hunks).
    if isinstance(pattern, dict) and pattern.get("selector") == "selector_expression":
        context = str(pattern.get("context", ""))
        inner = re.fullmatch(r"func _\(\) \{ (?:_ = )?(.*) \}", context)
        pattern = inner.group(1) if inner else None
    if (
        lang != "go"
        or set(choice.rule) != {"pattern"}
        or not isinstance(pattern, str)
        or not _GO_QUALIFIED.match(pattern)
        or choice.transform
        or choice.expand_start
        or choice.expand_end
    ):
        return choice
    value = {"context": "func _() { _ = " + pattern + " }", "selector": "selector_expression"}
    if isinstance(choice.rule["pattern"], dict):
        value = choice.rule["pattern"]
    rule = {"any": [{"pattern": pattern}, {"pattern": value}]}
    candidate = Rule(
        id="c", language=lang, rule=rule, fix=choice.fix, constraints=choice.constraints
    )
    try:
        covered = _evaluate(candidate, exs)
    except RuleError:
        return choice
    if covered is None or not choice.covered <= covered:
        return choice
    return replace(choice, rule=rule, covered=covered)


def _closed(choice: _Choice, exs: list[_Ex], lang: str) -> _Choice:
    """The choice closed by what its sites share when its pattern names nothing (see
    ``synth/precision.py``), if the closed rule rewrites exactly the same sites."""
    sites = _right_sites(choice, exs, lang)
    if not sites:
        return choice
    tries = closures(choice.rule, choice.fix, choice.constraints, sites)
    outer = nested_guard(choice.rule, choice.fix, sites)
    if outer is not None:
        tries.insert(0, (outer, choice.constraints))
    whole: list[str] | None = None
    for narrowed, cons in tries:
        g = Rule(id="c", language=lang, rule=narrowed, fix=choice.fix, constraints=cons)
        try:
            covered = _evaluate(g, exs)
        except RuleError:
            continue
        if covered is None and choice.level == 0 and choice.order < 0:
            # A list rule (its sites are the lists inside the example sites, see
            # _list_candidates): the closed rule must give every example the text the open
            # one gives it (wave 3g).
            if whole is None:
                whole = _outputs(choice.rule, choice.constraints, choice.fix, exs, lang)
            if whole is not None and _outputs(narrowed, cons, choice.fix, exs, lang) == whole:
                choice = replace(choice, rule=narrowed, constraints=cons)
                break
            continue
        if covered == choice.covered:
            choice = replace(choice, rule=narrowed, constraints=cons)
            break
    # Wave 3e: an appended item never lands in an empty list or after a trailing comma; an
    # expression made a statement stays where its sites' statements stand.
    for guarded in (
        append_guard(choice.rule, choice.fix),
        statement_guard(choice.rule, choice.fix, sites),
        literal_strings(choice.rule, lang),
    ):
        if guarded is None:
            continue
        g = Rule(
            id="c", language=lang, rule=guarded, fix=choice.fix, constraints=choice.constraints
        )
        try:
            if _evaluate(g, exs) == choice.covered:
                choice = replace(choice, rule=guarded)
        except RuleError:
            pass
    return choice


def _outputs(
    rule: dict[str, Any], cons: dict[str, Any] | None, fix: str, exs: list[_Ex], lang: str
) -> list[str] | None:
    """What the rule makes of each example's before text (None when it cannot run)."""
    g = Rule(id="c", language=lang, rule=rule, fix=fix, constraints=cons)
    try:
        return [_apply_rule(ex.before, g)[0] for ex in exs]
    except RuleError:
        return None


def _is_list(cons: dict[str, Any]) -> bool:
    """Name constraints that only list names (``^(?:a|b)$``)."""
    return all(str(c.get("regex", "")).startswith("^(?:") for c in cons.values())


def annotates(seed: Site, sites: list[Site]) -> bool:
    """The same Rust attribute line inserted above two items or more (wave 3k; one site
    says too little about which items: its own anchor first, as before)."""
    inserted = (seed.inserted or "").lstrip()
    if seed.insert != "before" or seed.node.kind() not in RUST_ITEMS or inserted[:2] != "#[":
        return False
    same = {s.start for s in sites if s.insert == seed.insert and s.inserted == seed.inserted}
    return len(same | {seed.start}) >= 2


def _by_name(rule: dict[str, Any]) -> bool:
    """An insertion rule that lists its anchors by name (``has: {field: name, regex}``)."""
    return any(
        isinstance(x, dict) and x.get("has", {}).get("field") == "name" for x in rule.get("all", [])
    )


def _names_fragment(fragment: dict[str, Any]) -> bool:
    """A discriminating fragment that lists definitions by name (the most specific kind);
    not what a definition itself is (synth/annotations.py)."""
    text = repr(fragment)
    if names_items(fragment):
        return True  # wave 3u: the items an attribute annotates, by name or first line
    # "Never assigned again" (wave 3r) names nothing: what the declaration itself is.
    return "'has'" in text and not made_here(fragment) and not never_reassigned_fragment(fragment)


def _holds(node: SgNode, site: Site) -> bool:
    """``node`` is (or holds) ``site``'s node: the match that rewrites the seed."""
    r = node.range()
    return r.start.index <= site.start and site.end <= r.end.index


def _vars(key: str) -> int:
    return len(re.findall(r"\$+[A-Z]", key.split("\0")[0]))


def _runs_collapsed(key: str) -> str:
    """``key`` with a removal's run of kept list items one list metavariable (see
    ``removals.collapse_runs``): `{ X, $A, $B }` is no more general than `{ X, $$$REST }`."""
    pattern, _, fix = key.partition("\0")
    t = collapse_runs(Template(pattern, fix, {}))
    return key if t is None else t.pattern + "\0" + t.fix


def _deeper_chain(key: str, chosen: str) -> bool:
    """``key`` is ``chosen`` with a member chain kept at the depth its sites show (see
    :func:`abstract.collapse_chains`): more metavariables, and narrower, not wider."""
    pattern, _, fix = key.partition("\0")
    tc = collapse_chains(Template(pattern, fix, {}))
    return tc is not None and tc.pattern + "\0" + tc.fix == chosen


def _search(
    seed: Site,
    remaining: list[tuple[Site, _Ex]],
    exs: list[_Ex],
    lang: str,
    lists: bool = True,
) -> list[_Choice]:
    """Every candidate rule that rewrites ``seed`` and nothing wrongly, in generality order."""
    choices: list[_Choice] = []
    seen: set[str] = set()
    budget = [MAX_DISCRIMINATIONS]
    # (tier, sequence, candidate): over-matching candidates narrowed by a context or a list
    # of names, evaluated only when the plain candidates leave sites uncovered.
    deferred: list[tuple[int, int, tuple[Any, ...]]] = []
    where: set[int] = set()  # deferred rules narrowed by a positive context (wave 3d)

    def consider(
        rule: dict[str, Any],
        fix: str,
        key: str,
        level: int = -1,
        group: list[Site] | None = None,
        constraints: dict[str, Any] | None = None,
        transform: dict[str, Any] | None = None,
        discriminate: bool = True,
    ) -> None:
        dedupe = json.dumps([rule, fix, constraints, transform], sort_keys=True)
        if dedupe in seen:
            return
        seen.add(dedupe)
        candidate = Rule(
            id="c",
            language=lang,
            rule=rule,
            fix=fix,
            constraints=constraints,
            transform=transform,
        )
        try:
            covered = _evaluate(candidate, exs)
        except RuleError:
            return
        if covered and id(seed) in covered:
            choices.append(
                _Choice(rule, fix, covered, len(seen), key, level, constraints, transform)
            )
            return
        if covered is not None:
            return
        # A candidate with name constraints narrows to the names themselves instead.
        if discriminate and constraints is None and budget[0] > 0:
            # Too general: the smallest context that tells the sites it rewrites right from
            # the code it rewrites wrongly (the examples' unchanged code of the same shape).
            # Tried after every plain candidate (see ``deferred``).
            budget[0] -= 1
            # An inserted statement's anchor is often inside another statement that
            # matches too (a test's last statement, in the test call's statement).
            anchored = "$ANCHOR" in fix
            split = _classify(candidate, exs, anchored)
            if split is not None:
                pos, neg = split
                node = next((p for p in pos if _holds(p, seed)), None)
                rx = _layout_regex([p.text() for p in pos], fix) if _fixes_layout(fix) else None
                if node is not None and rx is not None:
                    # A fix that lays its match out over lines, whose wrong rewrites are all
                    # of another layout (one-line objects): the sites' layout is the context,
                    # at once (before an enclosing context: it says nothing about where).
                    if not any(re.search(rx, n.text()) for n in neg):
                        guarded = conjoin(rule, {"regex": rx})
                        consider(guarded, fix, key, level, None, constraints, transform, False)
                # (a lifted pattern only: a bare name gives way to the pattern above it,
                # `$A.fetch` where a called `fetch(2)` is kept)
                uncalled = not_called(pos, neg) if node is not None and level >= 1 else None
                if uncalled is not None:
                    # Wave 3h: the kept code is this shape called, the sites never are: at
                    # once, before a context where the few sites happen to sit.
                    consider(
                        conjoin(rule, uncalled),
                        fix,
                        key,
                        level,
                        None,
                        constraints,
                        transform,
                        False,
                    )
                if node is not None:
                    names = sorted(
                        set(re.findall(r"(?<!\$)\$([A-Z][A-Z0-9_]*)", key.split("\0")[0]))
                    )
                    # Closed by what every positive binds (precision first, see closure).
                    closed = closure(names, pos, neg)
                    if anchored and "nthChild" in rule:
                        # Wave 3l: next to the first (last) statement of a body whatever
                        # it is: the anchors' kinds or texts are no closure (placement.py).
                        closed.pop("ANCHOR", None)
                    shared_parent = context_closure(pos, neg)
                    # How the bound name is used elsewhere in its file (wave 3e): an
                    # imported name used only as a type, where the kept ones are values.
                    usage = [(1, x) for x in usage_fragments(names, pos, neg, fix)]
                    # Wave 3k (synth23): a parameter the sites' bodies never use, where the
                    # kept functions' bodies do — before any other context.
                    unused = unused_parameter(node, pos, neg)
                    # Wave 3l (synth26): the definitions that bind, as a parameter, a name
                    # the new code uses (synth/placement.py) — where kept ones do not.
                    shown = rule.get("pattern")
                    pattern = shown if isinstance(shown, str) else key.split("\0")[0]
                    usage[:0] = [(1, x) for x in bound_names(node, pos, pattern, fix)]
                    if unused is not None:
                        usage.insert(0, (0, unused))
                    fragments = discriminating(node, pos, neg, fix if anchored else "")
                    if own_rooted(rule):
                        # Wave 3l: a rule rooted at the site itself takes its context from
                        # the site's parent and children only (see roots.py).
                        fragments = [x for x in fragments if local_context(x)]
                    for tier, extra in usage + [
                        (2 if _names_fragment(x) else 1, x) for x in fragments
                    ]:
                        for r, cons in _closed_first(
                            conjoin(rule, extra), constraints, closed, shared_parent
                        ):
                            deferred.append(
                                (tier, len(deferred), (r, fix, key, level, cons, transform))
                            )
                            if "'not'" not in repr(extra) or never_reassigned_fragment(extra):
                                # says where it applies (run_upgrades); "never assigned
                                # again" is a property of the site, written with a `not`
                                where.add(id(r))
                    # Which values, not where: the kept code differs from the sites in
                    # what a metavariable binds (`null == x` kept, `404 == x` changed).
                    # Precision first: kept values excluded with the rule closed by what the
                    # sites share, then the sites' own values, then kept values excluded.
                    if transform is None:
                        ranked: list[list[tuple[dict[str, Any], dict[str, Any] | None]]]
                        ranked = [[], [], []]
                        # The names the sites call, before any list of texts (wave 3e).
                        for value in callee_constraints(names, pos, neg):
                            ranked[0] += _closed_first(rule, value, closed, shared_parent)
                        # Wave 3o: the sites' values of one type, the whole type.
                        for value in family_constraints(names, pos, neg):
                            ranked[0] += _closed_first(rule, value, closed, shared_parent)
                        # Wave 3j: two or more types the sites show: their own list
                        # before any kept-value exclusion (own_first) that no other
                        # metavariable's one text closes.
                        shown = own_first(names, pos, neg)
                        for value in value_constraints(names, pos, neg, own=True):
                            # Wave 3e: kept *names* excluded from a pattern that names
                            # nothing close it by the few kinds its sites sit in.
                            parent = shared_parent or (
                                context_closure(pos, neg, several=True)
                                if names_nothing(key) and binds_names(list(value), neg)
                                else None
                            )
                            options = _closed_first(rule, value, closed, parent)
                            if not any("not" in c for c in value.values()):
                                ranked[1] += options
                            elif set(value) & shown and not any(
                                "regex" in c for k, c in closed.items() if k not in value
                            ):
                                # (unless another metavariable is one text at every site:
                                # serde's `de::$B` -> `de::$B<'de>`, every `de::` trait but
                                # the kept `de::Error`, tests/synth/test_precision.py)
                                ranked[2] += options
                            else:
                                ranked[0] += options[:-1]
                                ranked[2].append(options[-1])
                        for r, cons in (o for tier in ranked for o in tier):
                            if own_rooted(rule) and not closed_values(cons):
                                continue  # wave 3l: no bare list of kept texts (roots.py)
                            deferred.append((1, len(deferred), (r, fix, key, level, cons, None)))
        if group and len(group) > 1 and constraints is None:
            # Too general: the names the group's sites differ in, no wider than they show.
            # Names that share a shape (`pager`, `_nullpager`) at once, also listed; names
            # that share nothing only after the plain candidates and the contexts: a list
            # of unrelated names is no evidence of where the rule applies.
            found = _name_constraints(rule, group, lang)
            family = any(not _is_list(c) for c in found)
            shaped = False  # the names' shape fits the examples (it kept no such name)
            for cons in found:
                if family and (not _is_list(cons) or shaped or not _def_names(rule, cons)):
                    start = len(choices)
                    consider(rule, fix, key, level, None, cons)
                    shaped = shaped or (not _is_list(cons) and len(choices) > start)
                else:
                    # Wave 3e: definitions' names whose shape the examples also keep
                    # (`test_layout(env)` kept among thirteen `test_*(env)` changed) are
                    # a list of names like any other, tried after the contexts that may
                    # tell them apart. Call heads stay listed at once: there the names
                    # are what the change is about (`_nullpager`, `_pipepager`).
                    deferred.append((2, len(deferred), (rule, fix, key, level, cons, None)))

    def run_deferred() -> None:
        """The discriminated candidates, when no plain one covers every site: ranked after
        the plain ones (ties go to a rule without an added context), contexts before name
        lists."""
        best = max((len(c.covered) for c in choices), default=0)
        if best == len(remaining):
            return
        start = len(choices)
        for tier, seq, (rule, fix, key, level, cons, transform) in sorted(
            deferred, key=lambda d: (d[0], d[1])
        ):
            consider(rule, fix, key, level, None, cons, transform, discriminate=False)
            for c in choices[start:]:
                c.order = 1_000_000 + tier * 10_000 + seq
            start = len(choices)
            if choices and max(len(c.covered) for c in choices) == len(remaining):
                break
        deferred.clear()

    def run_upgrades() -> None:
        """Wave 3d (recall): when the plain winner keeps literal what a deferred candidate
        abstracts (rust's `self.0.visit($$$A)` against `$A.visit($$$B)`, which also matched
        a kept `x.visit(..).unwrap()`), the abstract pattern narrowed by a context (a kind,
        not a list of names: tier 1) is preferred — a context says where, a literal receiver
        only which text the one example happened to have."""
        if not choices or not deferred:
            return
        best = max(len(c.covered) for c in choices)
        top = min((c for c in choices if len(c.covered) == best), key=lambda c: c.order)
        plain = top.key.split("\0")[0]
        # Wave 3j (synth14): a definition changed in its header only (`fn advance(…)` ->
        # `unsafe fn advance(…)`): its body, literal in the plain winner, is no context at
        # all, so a body-abstract pattern narrowed by the enclosing definitions' names (the
        # trait implemented) is preferred too.
        names_too = _header_only(seed)
        # Wave 3k (synth23): an unused parameter (tier 0, see removals.py) first.
        ups = [
            d
            for d in deferred
            if d[0] == 0 and d[2][3] == top.level and _generalises(d[2][2].split("\0")[0], plain)
        ] + [
            d
            for d in deferred
            if (d[0] == 1 or (names_too and d[0] == 2 and "$$$" in d[2][2].split("\0")[0]))
            and d[2][3] == top.level
            and "'not'" not in repr(d[2][4])  # a kept value excluded is no context
            and id(d[2][0]) in where
            and _generalises(d[2][2].split("\0")[0], plain)
        ]
        if top.level >= 1 and not seed.node.children() and "\n" in plain:
            # Wave 3r: a name renamed (`StringArg` -> `StringArgs`) where the examples keep
            # the name elsewhere (its definition): the rename narrowed by the site's context
            # (`inside: {kind: composite_literal, field: type}`) before a lifted pattern that
            # keeps the one example's surroundings over lines, and so their layout
            # (`StringArg{\n\t\t$$$A,\n\t}`: every held-out literal is laid out otherwise).
            rename = seed.before_text + "\0" + seed.after_text
            ups += [
                d
                for d in deferred
                if d[0] == 1
                and d[2][3] == -1
                and d[2][2] == rename
                and "'not'" not in repr(d[2][0])
                and id(d[2][0]) in where
            ]
        for _tier, _seq, (rule, fix, key, level, cons, transform) in ups:
            start = len(choices)
            consider(rule, fix, key, level, None, cons, transform, discriminate=False)
            for c in choices[start:]:
                if len(c.covered) >= best and top.covered <= c.covered:
                    c.order = top.order - 1
                    c.pinned = True
                    return

    if seed.insert is not None:
        # Wave 3k (synth20): a line inserted above definitions (a Rust attribute): the
        # rules by the definitions' names or by the literal anchor come after the general
        # ones narrowed by what the definitions are (synth/annotations.py); a list of
        # names reaches no other definition.
        late: list[tuple[dict[str, Any], str]] = []
        annotating = annotates(seed, [s for s, _ in remaining])
        for rule, fix in _insert_candidates(seed, remaining, lang):
            if annotating and (rule.get("pattern") != "$ANCHOR" or _by_name(rule)):
                late.append((rule, fix))
                continue
            consider(rule, fix, fix)
        run_upgrades()
        run_deferred()
        if late:
            full = any(len(c.covered) == len(remaining) for c in choices)
            start = len(choices)
            for rule, fix in late:
                consider(rule, fix, fix)
            for c in choices[start:] if full else []:
                c.order += ANNOTATED_LATE
        return choices
    if seed.delete is not None:
        tried: list[tuple[dict[str, Any], str, Any, Any, Any, bool]] = [
            (*d, True) for d in _delete_candidates(seed, remaining, lang)
        ]
        while tried:
            rule, fix, start, end, cons, may_narrow = tried.pop(0)
            candidate = Rule(
                id="c",
                language=lang,
                rule=rule,
                fix=fix,
                constraints=cons,
                expand_start=start,
                expand_end=end,
            )
            try:
                covered = _evaluate(candidate, exs)
            except RuleError:
                continue
            if covered and id(seed) in covered:
                choices.append(
                    _Choice(rule, fix, covered, len(choices), fix, 0, cons, None, start, end)
                )
            elif covered is None and may_narrow and budget[0] > 0:
                # Deletes a statement the examples keep: narrow it to where they differ. A
                # rule ast-grep cannot run (a pattern whose context never yields the
                # selector: `mut` in `fn _f() { mut }`) costs no narrowing: reqwest's
                # `let mut rt` -> `let rt` spent the budget on five of them before the rule
                # by kind got its turn (wave 3p).
                split = _classify_deletion(candidate, exs)
                if split is not None:
                    budget[0] -= 1
                # The seed's node, not its site: a deleted site spans the layout after it
                # (`mut ` of `let mut rt`), which no matched node holds.
                own = seed.node.range()
                if split is not None and any(
                    p.range() == own and p.get_root() is seed.node.get_root() for p in split[0]
                ):
                    extras = discriminating(seed.node, *split)
                    tried[:0] = [(conjoin(rule, x), fix, start, end, cons, False) for x in extras]
        return choices
    if seed.node.kind() in COMMENT_KINDS:
        sub = _comment_substitution(seed.before_text, seed.after_text)
        if sub is not None:
            old, new = sub
            rule = {"kind": seed.node.kind(), "pattern": "$CMT", "regex": _word_regex(old)}
            transform = {
                "NEWCMT": {
                    "replace": {
                        "source": "$CMT",
                        "replace": _word_regex(old),
                        "by": new.replace("$", "$$"),
                    }
                }
            }
            consider(rule, "$NEWCMT", old + "\0" + new, 0, None, None, transform)
        return choices
    for rule in _rename_candidates(seed, remaining, lang):
        consider(rule, seed.after_text, seed.before_text + "\0" + seed.after_text)
    for rule, fix in _member_tail(seed):
        # Wave 3r: a member replaced by other text (`.argv` -> `.parse()`), rooted at the
        # member's name: whatever the receiver and however the chain is laid out.
        consider(rule, fix, "." + seed.node.text().rsplit(".", 1)[-1] + "\0" + fix)
    if any(len(c.covered) == len(remaining) for c in choices):
        return choices  # a rename covers every site: nothing more general to find
    lifted = {
        id(s): _lift(s, ex, MAX_LEVELS)
        for s, ex in remaining
        if s.delete is None and s.node.kind() not in COMMENT_KINDS
    }
    pending: list[tuple[Site, list[tuple[Template, list[Site]]]]] = []
    for level, top in enumerate(lifted[id(seed)]):
        if level and top.end - top.start > MAX_PATTERN_CHARS:
            break  # a pattern this large is no rule anyone wants (and costly to abstract)
        peers = [
            lifted[id(s)][level]
            for s, _ in remaining[1:]
            if id(s) in lifted
            and len(lifted[id(s)]) > level
            and lifted[id(s)][level].node.kind() == top.node.kind()
            and s.insert is None
        ]
        groups = [[top, *peers], [top]] if peers else [[top]]
        templates: list[tuple[Template, list[Site]]] = []
        # A huge site (a data table whose rows changed): only the default and the literal
        # abstraction, and only of its own (anti-unifying hundreds of rows across sites
        # costs seconds for a rule that fits nothing else).
        large = top.end - top.start > MAX_PATTERN_CHARS
        header = _header_template(top)
        if header is not None and "$$$PARAMS" in header.pattern:
            # Wave 3j (synth14): a definition changed in its header only is learned at the
            # header, its body (and its parameters, which stay) any: first. Where the
            # parameters changed, after the anti-unified templates (which abstract the
            # parameters the sites vary, `($$$A, $B: int)`).
            templates.append((header, [top]))
            _consider_header(header, top, level, consider, lang)
            header = None
        for opts in _OPTIONS if not large else (_OPTIONS[0], _OPTIONS[-1]):
            for group in groups if not large else [[top]]:
                t = abstract_sites(group, opts)
                if t is None:
                    continue
                templates.append((t, group))
                # A string rewritten by one substitution: the transform first (it is the more
                # general), then the literal string.
                prefixed = _string_prefix(t, top, lang)
                if prefixed is not None and prefixed[2] is not None:
                    # A quote change only where the examples agree on it for several
                    # strings (wave 3j): one string's new quotes say nothing of others'.
                    texts = {x.node.text() for x, _ in remaining if "string" in x.node.kind()}
                    if len(texts) < 2:
                        prefixed = None
                if prefixed is not None and budget[0] > 0:
                    # Never bare (every string of a file): only narrowed by a positive
                    # context that tells the examples' changed strings from their kept
                    # ones, before the literal string (which reaches no other value).
                    p_rule, p_fix, p_transform = prefixed
                    # A quote change (wave 3j) is tried besides the prefixes, within the
                    # budget the literal string's own contexts still get.
                    budget[0] -= 1 if p_transform is None else 0
                    cand = Rule(
                        id="c", language=lang, rule=p_rule, fix=p_fix, transform=p_transform
                    )
                    split = _classify(cand, exs, False)
                    node = next((x for x in split[0] if _holds(x, seed)), None) if split else None
                    if split is not None and node is not None:
                        for extra in discriminating(node, *split):
                            if "'not'" not in repr(extra):
                                key = "$STR\0" + p_fix
                                consider(
                                    conjoin(p_rule, extra),
                                    p_fix,
                                    key,
                                    level,
                                    None,
                                    None,
                                    p_transform,
                                    False,
                                )
                st = _string_transform(t, top)
                if st is not None:
                    pattern, fix, cons, transform = st
                    for rule in _pattern_rules(Template(pattern, fix, {}), lang, top.node.kind()):
                        consider(rule, fix, pattern + "\0" + fix, level, None, cons, transform)
                # Wave 3r: arguments moved into their format string's placeholders
                # (`panic!("{:?}", x)` -> `panic!("{x:?}")`): any such string, not this one.
                fa = inline_args(t, _string_kind(top), lang) if lang in FORMAT_LANGS else []
                for pattern, fix, cons, transform in fa:
                    for rule in _format_rules(Template(pattern, fix, {}), top, lang):
                        consider(rule, fix, pattern + "\0" + fix, level, None, cons, transform)
                # Wave 3s: shape rules, first (pinned; see ``_shape_first``): a
                # concatenation of strings and names made a template literal (`'a ' + b` ->
                # `` `a ${b}` ``), any of that shape (the example's strings as `'$A'`
                # matched no empty string, no other quotes); `import {…}` -> `import type
                # {…}` for any import whose names the file uses as types only (without a kept
                # import in the examples, the source stayed literal: zustand's '../vanilla').
                shaped: list[ShapeRule | None]
                shaped = [concat_template(top.before_text, top.after_text, lang)]
                typed = type_import(top.before_text, top.after_text, lang)
                if typed is not None:
                    shaped.append((typed, "import type $A from $B", None, None))
                # and an anonymous function made an arrow function (`function(res) {…}` ->
                # `res => {…}`), its body any: node-fetch's 93 callbacks.
                if lang in ARROW_LANGS:
                    shaped.append(arrow_callback(top.node, top.after_text, lang))
                for found in shaped:
                    if found is None:
                        continue
                    start = len(choices)
                    srule, sfix, scons, strans = found
                    consider(srule, sfix, "$SHAPE\0" + sfix, level, None, scons, strans, False)
                    if len(choices) == start and scons and "P" in scons:
                        # The examples keep other callbacks as they are (node-fetch's
                        # `function(err)` beside the `function(res)` it changed): the shape
                        # closed by the parameter's name the sites have.
                        name = top.node.field("parameters")
                        closed = {**scons, "P": {**scons["P"], "regex": _closed_name(name)}}
                        consider(srule, sfix, "$SHAPE\0" + sfix, level, None, closed, strans, False)
                    for c in choices[start:]:
                        c.order, c.pinned, c.shape = -1, True, True
                # A member chain of any depth before the depth the sites show (wave 3i):
                # `$A.$D;` before `$A.$B.$C.$D;`, verified like any candidate.
                tc = collapse_chains(t)
                if tc is not None:
                    templates.append((tc, group))
                    for rule in _pattern_rules(
                        tc, lang, top.node.kind(), level == 0, top.node if level == 0 else None
                    ):
                        consider(rule, tc.fix, tc.pattern + "\0" + tc.fix, level, group)
                # Wave 3k (synth23): an item removed from a list, the list's other items
                # any number (`{ FSTDEP010, $$$REST }`), before the one example's count.
                tr = collapse_runs(t)
                if tr is not None:
                    templates.append((tr, group))
                    for rule in _pattern_rules(
                        tr, lang, top.node.kind(), level == 0, top.node if level == 0 else None
                    ):
                        consider(rule, tr.fix, tr.pattern + "\0" + tr.fix, level, group)
                for rule in _pattern_rules(
                    t, lang, top.node.kind(), level == 0, top.node if level == 0 else None
                ):
                    consider(rule, t.fix, t.pattern + "\0" + t.fix, level, group)
        if header is not None:
            templates.append((header, [top]))
            _consider_header(header, top, level, consider, lang)
        # The smallest discriminating context: the same patterns, only where the site sits
        # (``inside`` its parent, in that field). Tried after the pattern lifted one level
        # (`$A.fetch` reads better than `fetch` inside an attribute) — unless that level
        # drags comments into the rule, then before it.
        pending.append((top, templates))
        chain = lifted[id(seed)]
        comments_above = level == 0 and len(chain) > 1 and _has_comment(chain[1].node)
        if (level == 1 or comments_above) and not (
            choices and max(len(c.covered) for c in choices) == len(remaining)
        ):
            for node_site, temps in pending:
                for ctx in _contexts(node_site.node):
                    for t, group in temps:
                        for rule in _pattern_rules(t, lang, node_site.node.kind()):
                            consider(
                                {**rule, "inside": ctx},
                                t.fix,
                                t.pattern + "\0" + t.fix,
                                level,
                                group,
                            )
            pending.clear()
        if (
            level >= 1
            and deferred
            and not (choices and max(len(c.covered) for c in choices) == len(remaining))
        ):
            # Lift less: a candidate narrowed by a context or a constraint at this level
            # before a pattern that drags an enclosing block into the rule (koa's
            # `$A == $B` with `A` not `null`, not the function body holding both sites).
            run_deferred()
        if choices and max(len(c.covered) for c in choices) == len(remaining):
            if level < MAX_WRAP_LEVELS and _literal_wrap(seed, choices, len(remaining)):
                continue  # a literal value wrapped: look above for where it sits (wave 3d)
            break
    _prefer_abstract_wraps(seed, choices, len(remaining), exs, lang)
    # The changed list alone (parameters, arguments) — when every rule found so far that
    # covers the most sites carries a multi-line fix: the body's layout, re-indented at each
    # site, is what such a rule gets wrong on held-out code (tabs, other depths).
    best = max((len(c.covered) for c in choices), default=0)
    if lists and all("\n" in c.fix for c in choices if len(c.covered) == best):
        _list_candidates(seed, remaining, exs, lang, choices)
    run_upgrades()
    run_deferred()
    # A parameter alone (wave 3e), tried last, ranked after the plain candidates and before
    # the narrowed ones (it is the more local context): chosen where it covers more sites
    # than the plain ones (werkzeug's `endpoint: str` -> `endpoint: t.Any` in two functions
    # of other names), not where the enclosing definition's name is the context that fits
    # (rich's `max_width: int` -> `options: …` made in `__rich_measure__` only).
    start = len(choices)
    for level, top in enumerate(lifted[id(seed)]):
        if _param_rule(Template("", "", {}), lang, top.node.kind()) is None:
            continue
        peers = [
            lifted[id(s)][level]
            for s, _ in remaining[1:]
            if id(s) in lifted
            and len(lifted[id(s)]) > level
            and lifted[id(s)][level].node.kind() == top.node.kind()
        ]
        for opts in _OPTIONS:
            for group in [[top, *peers], [top]] if peers else [[top]]:
                t = abstract_sites(group, opts)
                param = _param_rule(t, lang, top.node.kind()) if t is not None else None
                if t is not None and param is not None:
                    key = t.pattern + "\0" + t.fix
                    consider(param, t.fix, key, level, group, discriminate=False)
        break  # the innermost parameter only
    for c in choices[start:]:
        c.order += LATE
    _made_statements(seed, remaining, exs, lang, choices, consider)
    if not choices and seed.node.kind() == "token_tree" and "\n" not in seed.before_text:
        # Wave 3p: a change inside a Rust macro's arguments or an attribute's tokens that no
        # other candidate rewrites (reqwest 11d835dc: `(target_arch = "wasm32")` ->
        # `(all(target_arch = "wasm32", any(…)))` in the `#[cfg(…)]` of `macro_rules!`
        # bodies). A pattern of the token tree's text parses as an expression, never as
        # tokens: the token tree by its exact text, narrowed like any other candidate where
        # the examples keep the same tokens. Last: it never displaces a rule found before.
        # Its own narrowing (the candidates above may have spent the budget on nothing).
        budget[0] = max(budget[0], 1)
        rule = {"kind": "token_tree", "regex": "^" + _rx_escape(seed.before_text) + "$"}
        consider(rule, seed.after_text, seed.before_text + "\0" + seed.after_text)
        run_deferred()
    return choices


def _made_statement(site: Site) -> bool:
    """The site's expression is made a statement: the same text with a `;` after it."""
    return (
        site.insert is None
        and site.delete is None
        and site.after_text == site.before_text + ";"
        and not site.before_text.rstrip().endswith((";", "}"))
    )


# A Rust item's `#[cfg(…)]`, among the attributes and comments right before it.
_CFG_ATTRIBUTE: dict[str, Any] = {
    "kind": "attribute_item",
    "regex": "^#\\[cfg\\(",
    "stopBy": {
        "not": {
            "any": [{"kind": "attribute_item"}, {"kind": "line_comment"}, {"kind": "block_comment"}]
        }
    },
}
_ITEM_SKIP = frozenset({"attribute_item", "line_comment", "block_comment"})


def _cfgs(node: SgNode) -> set[str]:
    """The `#[cfg(…)]` attributes some enclosing node of ``node`` follows (what
    ``inside: {stopBy: end, follows: _CFG_ATTRIBUTE}`` sees)."""
    out: set[str] = set()
    for a in node.ancestors():
        prev = a.prev()
        while prev is not None and prev.kind() in _ITEM_SKIP:
            if prev.kind() == "attribute_item" and prev.text().startswith("#[cfg("):
                out.add(prev.text())
            prev = prev.prev()
    return out


def _made_statements(
    seed: Site,
    remaining: list[tuple[Site, _Ex]],
    exs: list[_Ex],
    lang: str,
    choices: list[_Choice],
    consider: Any,
) -> None:
    """An expression made a statement (wave 3f): `R::discard(self)` -> `R::discard(self);`,
    Rust's tail expressions of functions that return nothing. The sites' call heads differ
    (`round_to_native::<F, _>(…)`, `check_round_to_f64(…)`) and are not what the change is
    about: where the expression sits is. One rule `$A` -> `$A;` over the kinds the sites
    are, in the kinds of node they stand in (a `block`), narrowed by a context that keeps
    the examples' other expressions of those kinds (a function's `-> T` result) — a kind or
    what the enclosing definition's signature declares, never a name. Pinned first when it
    covers every site the best plain choice does (a literal call head reaches no other
    call)."""
    if not _made_statement(seed):
        return
    peers = [s for s, _ in remaining if _made_statement(s)]
    kinds = sorted({s.node.kind() for s in peers})
    parents = sorted({p.kind() for s in peers if (p := s.node.parent()) is not None})
    if len(kinds) > 3 or not parents or len(parents) > 3:
        return
    base: dict[str, Any] = {
        **({"kind": kinds[0]} if len(kinds) == 1 else {"any": [{"kind": k} for k in kinds]}),
        "pattern": "$A",
        "inside": {
            **(
                {"kind": parents[0]}
                if len(parents) == 1
                else {"any": [{"kind": k} for k in parents]}
            ),
            "stopBy": "neighbor",
        },
    }
    # Closed by what every site's function declares (precision first: a tail expression of
    # a function that returns a value is that value; the examples seldom keep one).
    shared = signature([s.node for s in peers], [], closing=True)
    if shared is None:
        return
    base = conjoin(base, shared)
    if lang == "rust":
        # Code under a `#[cfg(…)]` that no site is under: a change a compiler or linter run
        # made (clippy here) never saw it — serde kept `R::begin_raw_buffering(self)` under
        # `#[cfg(feature = "raw_value")]`, log `self.v.set(val)` in a `#[cfg(not(…))]` impl
        # (while changing a function under `#[cfg(feature = "kv_unstable")]`: that one the
        # run saw).
        seen = sorted({c for s in peers for c in _cfgs(s.node)})
        cfg: dict[str, Any] = dict(_CFG_ATTRIBUTE)
        if seen:
            cfg["not"] = {"regex": "^(?:" + "|".join(_rx_escape(c) for c in seen) + ")$"}
        base = conjoin(base, {"not": {"inside": {"stopBy": "end", "follows": cfg}}})
    fix = "$A;"
    key = "$A\0" + fix
    candidate = Rule(id="c", language=lang, rule=base, fix=fix)
    try:
        covered = _evaluate(candidate, exs)
    except RuleError:
        return
    start = len(choices)
    if covered and id(seed) in covered:
        consider(base, fix, key, 0, None, None, None, False)
    elif covered is None:
        split = _classify(candidate, exs, False)
        if split is None:
            return
        pos, neg = split
        node = next((p for p in pos if _holds(p, seed)), None)
        if node is None:
            return
        for extra in discriminating(node, pos, neg):
            text = repr(extra)
            # A kind says where; the signature's return type says what the function gives
            # back. A list of names (of definitions, of values) only says which.
            if "'not'" not in text and "'has'" not in text and "'regex'" not in text:
                consider(conjoin(base, extra), fix, key, 0, None, None, None, False)
    new = choices[start:]
    if not new or len(choices) == len(new):
        return
    best = max(len(c.covered) for c in choices[:start])
    top = min((c for c in choices[:start] if len(c.covered) == best), key=lambda c: c.order)
    mine = max(new, key=lambda c: (len(c.covered), -c.order))
    if top.covered <= mine.covered:
        mine.order = min(c.order for c in choices[:start]) - 1
        mine.pinned = True
    else:
        for c in new:
            c.order += DEFERRED


def _consider_header(header: Template, top: Site, level: int, consider: Any, lang: str) -> None:
    for rule in _pattern_rules(header, lang, top.node.kind()):
        consider(rule, header.fix, header.pattern + "\0" + header.fix, level, [top])


def _header_only(seed: Site) -> bool:
    """``seed`` is a function-like definition whose change leaves its body as it was (a
    modifier, a parameter, a return type, a decorator of the header)."""
    if seed.insert is not None or seed.delete is not None or seed.after_node is None:
        return False
    node, after = seed.node, seed.after_node
    if node.field("parameters") is None or after.field("parameters") is None:
        return False
    body, after_body = node.field("body"), after.field("body")
    return body is not None and after_body is not None and body.text() == after_body.text()


# The header fields of a definition a header rule abstracts where they stay as they were:
# (field, the metavariable's text) — a list metavariable inside the field's brackets.
_HEADER_FIELDS = (
    ("parameters", "($$$PARAMS)"),
    ("type_parameters", "<$$$TPARAMS>"),
    ("return_type", "$RET"),
    ("result", "$RET"),
)


def _header_spans(node: SgNode, same: set[str]) -> list[tuple[int, int, str]]:
    """The spans (relative to ``node``) of its header fields named in ``same``, each with
    its metavariable text; a field whose brackets or type are not where the metavariable
    expects them is left literal."""
    start = node.range().start.index
    out: list[tuple[int, int, str]] = []
    for name, var in _HEADER_FIELDS:
        f = node.field(name)
        if f is None or name not in same:
            continue
        text = f.text()
        if var.startswith("(") and not (text.startswith("(") and text.endswith(")")):
            continue
        if var.startswith("<") and not (text.startswith("<") and text.endswith(">")):
            continue
        if var == "$RET" and text.startswith(":"):
            kids = [k for k in f.children() if k.is_named()]
            if len(kids) != 1:
                continue
            f = kids[0]  # TypeScript's `: T`: the type after the colon
        out.append((f.range().start.index - start, f.range().end.index - start, var))
    return sorted(out)


def _header_part(node: SgNode, same: set[str]) -> str | None:
    """``node``'s text (a definition) with its body written ``$$$BODY`` and its header
    fields in ``same`` as metavariables; continuation lines relative to the node's column.
    None where the body is no block."""
    body = node.field("body")
    if body is None:
        return None
    start = node.range().start.index
    text = node.text()
    kind = body.kind()
    if kind == "block" and node.kind() == "function_definition":
        colon = next((c for c in node.children() if c.kind() == ":"), None)
        if colon is None:
            return None
        head, tail = text[: colon.range().end.index - start], "\n    $$$BODY"
    elif kind in ("block", "statement_block") and body.text().startswith("{"):
        head = text[: body.range().start.index - start].rstrip()
        tail = " {\n    $$$BODY\n}"
    else:
        return None
    out, pos = [], 0
    for a, b, var in _header_spans(node, same):
        if a < pos or b > len(head):
            return None
        out += [head[pos:a], var]
        pos = b
    head = "".join(out) + head[pos:]
    column = node.range().start.column
    cut = " " * column
    lines = head.split("\n")
    head = "\n".join([lines[0]] + [ln[column:] if ln.startswith(cut) else ln for ln in lines[1:]])
    return head + tail


def _header_template(site: Site) -> Template | None:
    """The header rule of a definition changed in its header only (see
    :func:`_header_only`): `def NAME($$$PARAMS):` + `$$$BODY` -> the new header + the body.
    The parameters, type parameters and return type are metavariables where they stay as
    they were; the name and the changed part of the header literal."""
    if not _header_only(site) or site.after_node is None:
        return None
    same: set[str] = set()
    variables = {"BODY": site.node.field("body").text()}  # type: ignore[union-attr]
    for name, _var in _HEADER_FIELDS:
        b, a = site.node.field(name), site.after_node.field(name)
        if b is not None and a is not None and b.text() == a.text():
            same.add(name)
    pattern = _header_part(site.node, same)
    fix = _header_part(site.after_node, same)
    if pattern is None or fix is None or pattern == fix:
        return None
    for v in re.findall(r"\$+([A-Z]+)", pattern):
        variables.setdefault(v, "")
    return Template(pattern, fix, variables)


def _generalises(general: str, specific: str) -> bool:
    """``specific`` (a pattern) is an instance of ``general``: the same text where
    ``general`` is literal, anything where it has a metavariable — but not a name that
    call heads, members and definitions keep (a metavariable for ``FindRoute`` in
    ``$A.FindRoute(``, ``HTTPError`` in ``ky.HTTPError``, ``load`` in ``def load(``: what
    the change is about, not where it is)."""
    if general == specific or "$" not in general:
        return False
    if not re.search(r"[A-Za-z_]", re.sub(r"\$+[A-Z][A-Z0-9_]*", "", general)):
        return False  # a bare `$A` in some context is no rule anyone meant
    parts = re.split(r"(\$\$\$[A-Z][A-Z0-9_]*|\$[A-Z][A-Z0-9_]*)", general)
    rx = "".join(
        ("(.*?)" if p.startswith("$$$") else "(.+?)") if i % 2 else re.escape(p)
        for i, p in enumerate(parts)
    )
    m = re.fullmatch(rx, specific, re.DOTALL)
    if m is None:
        return False
    for k in range(1, len(parts) // 2 + 1):
        span = m.group(k)
        before, after = specific[: m.start(k)], specific[m.end(k) :]
        if after.lstrip().startswith("(") or (
            _IDENT.match(span) and before.endswith((".", "::", "->"))
        ):
            return False
    return True


def _literal_wrap(seed: Site, choices: list[_Choice], n: int) -> bool:
    """Every choice that covers the ``n`` sites is literal (no metavariable) and the seed
    is a value carried whole into a larger after text (ky's `'msg'` ->
    `{message: 'msg'}`): the value itself is not what the rule is about, where it sits is."""
    if seed.insert is not None or seed.delete is not None or "\n" in seed.before_text:
        return False
    if seed.before_text not in seed.after_text or seed.before_text == seed.after_text:
        return False
    if seed.after_node is not None and seed.after_node.kind() == seed.node.kind():
        # Wave 3i (synth11): the node extended in place, not wrapped (a type parameter
        # gaining a default, a `where` clause a trailing comma): the node is the unit of
        # the rewrite, and the literal node is what the examples show of it.
        return False
    full = [c for c in choices if len(c.covered) == n]
    # Plain literal choices only: one a context narrowed already says where it sits.
    return bool(full) and all(_vars(c.key) == 0 and c.order < 1_000_000 for c in full)


def _prefer_abstract_wraps(
    seed: Site, choices: list[_Choice], n: int, exs: list[_Ex], lang: str
) -> None:
    """After :func:`_literal_wrap` lifted the search: the lowest abstract candidate that
    covers every site (``t.throws($A, $B)`` -> ``t.throws($A, {message: $B})``) ranks
    before the literal value."""
    if not _literal_wrap(seed, [c for c in choices if c.level <= 0], n):
        return
    wraps = [
        c
        for c in choices
        if len(c.covered) == n
        and c.level > 0
        and _vars(c.key) > 0
        # A name stays literal (`throws`): `($A, $B)` alone would wrap every such list.
        and re.search(r"[A-Za-z_]", re.sub(r"\$+[A-Z][A-Z0-9_]*", "", c.key.split("\0")[0]))
    ]
    low = min((c.order for c in choices), default=0)
    for c in sorted(wraps, key=lambda c: (c.level, c.order)):
        # The metavariable that binds the value keeps to the value's kind (a string stays
        # a string: an argument that already is `{message: …}` is not wrapped again).
        bound = _binding_of(c, seed, lang)
        if bound is None or (c.constraints and bound in c.constraints):
            continue
        narrowed = {**(c.constraints or {}), bound: {"kind": seed.node.kind()}}
        candidate = Rule(
            id="c",
            language=lang,
            rule=c.rule,
            fix=c.fix,
            constraints=narrowed,
            transform=c.transform,
        )
        try:
            covered = _evaluate(candidate, exs)
        except RuleError:
            continue
        if covered is not None and c.covered <= covered:
            c.constraints = narrowed
            c.order = low - 1
            c.pinned = True
            return


def _binding_of(choice: _Choice, seed: Site, lang: str) -> str | None:
    """The metavariable of ``choice``'s pattern that binds ``seed``'s node at the seed."""
    root = seed.node.get_root().root()
    rule = Rule(
        id="c", language=lang, rule=choice.rule, fix=choice.fix, constraints=choice.constraints
    )
    try:
        matches = root.find_all(rule.config())
    except Exception:
        return None
    want = seed.node.range()
    for m in matches:
        if not _holds(m, seed):
            continue
        for name in sorted(
            set(re.findall(r"(?<!\$)\$([A-Z][A-Z0-9_]*)", choice.key.split("\0")[0]))
        ):
            got = m.get_match(name)
            if got is not None and got.range() == want:
                return name
    return None


_FIELDS = (
    "attribute",
    "property",
    "field",
    "right",
    "left",
    "value",
    "condition",
    "function",
    "argument",
    "arguments",
    "type",
    "return_type",
    "object",
    "body",
    "key",
    "operand",
    "subject",
    "superclass",
    "trait",
    "index",
    "alternative",
    "consequence",
)


def _has_comment(node: SgNode) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind() in COMMENT_KINDS:
            return True
        stack.extend(n.children())
    return False


def _contexts(node: SgNode) -> list[dict[str, Any]]:
    """``inside`` rules for where ``node`` sits: its parent's kind and field, then the kind.
    A literal bound to a name (wave 3i): the binders of that name first (see
    :func:`discriminate.bound_context`)."""
    parent = node.parent()
    if parent is None:
        return []
    bound = bound_context(node)
    out: list[dict[str, Any]] = [bound] if bound is not None else []
    r = node.range()
    if parent.kind() in LIST_KINDS:
        grand = parent.parent()
        if grand is not None:
            out.append(
                {
                    "kind": parent.kind(),
                    "stopBy": "neighbor",
                    "inside": {"kind": grand.kind(), "stopBy": "neighbor"},
                }
            )
        return out
    for name in _FIELDS:
        f = parent.field(name)
        if f is not None and f.range() == r:
            out.append({"kind": parent.kind(), "field": name, "stopBy": "neighbor"})
            break
    out.append({"kind": parent.kind(), "stopBy": "neighbor"})
    return out


def _name_constraints(
    rule: dict[str, Any], group: list[Site], lang: str
) -> list[dict[str, dict[str, str]]]:
    """Constraints for a pattern that over-matches: each single metavariable that binds a
    different name at each site of ``group`` gets a regex covering just those names — first
    their common shape (``^_?\\w*pager$`` from ``pager``, ``_nullpager``), then the names
    themselves."""
    pattern = rule.get("pattern")
    if not isinstance(pattern, str):
        return []
    names: dict[str, set[str]] = {}
    for site in group:
        try:
            m = site.node.find(pattern=pattern)  # the node itself first (pre-order)
        except Exception:  # a pattern that is no single node: nothing to constrain
            return []
        if m is None or m.range() != site.node.range():
            return []
        for var in set(re.findall(r"(?<!\$)\$([A-Z][A-Z0-9_]*)", pattern)):
            got = m.get_match(var)
            if got is None:
                continue
            names.setdefault(var, set()).add(got.text())
    varying = {v: t for v, t in names.items() if len(t) > 1 and all(_IDENT.match(x) for x in t)}
    if not varying:
        return []
    shape = {v: {"regex": _shape_regex(t)} for v, t in varying.items()}
    exact = {
        v: {"regex": "^(?:" + "|".join(re.escape(x) for x in sorted(t)) + ")$"}
        for v, t in varying.items()
    }
    return [c for c in (shape, exact) if c]


_DEF_NAME = r"\b(?:def|function|fn|func|class|struct|interface|trait|impl)\s+\${}\b"


def _def_names(rule: dict[str, Any], cons: dict[str, Any]) -> bool:
    """Every metavariable ``cons`` constrains is a definition's name in ``rule``'s pattern
    (``def $A(…)``): names of where the change is, not of what it changes."""
    pattern = rule.get("pattern")
    return isinstance(pattern, str) and all(re.search(_DEF_NAME.format(v), pattern) for v in cons)


def _shape_regex(names: set[str]) -> str:
    """``^prefix\\w*suffix$`` from the longest common prefix and suffix (an optional
    leading underscore aside), or the alternation of the names when they share too little."""
    bare = [n.lstrip("_") for n in names]
    under = "_?" if any(n.startswith("_") for n in names) else ""
    prefix = _common_prefix(bare)
    suffix = _common_prefix([b[len(prefix) :][::-1] for b in bare])[::-1]
    if len(prefix) + len(suffix) < 3:
        return "^(?:" + "|".join(re.escape(x) for x in sorted(names)) + ")$"
    return "^" + under + re.escape(prefix) + r"\w*" + re.escape(suffix) + "$"


def _common_prefix(texts: list[str]) -> str:
    out = texts[0]
    for t in texts[1:]:
        while not t.startswith(out):
            out = out[:-1]
    return out


_STRING = re.compile(r"""(?<![\w$])(["'])(?:\\.|(?!\1)[^\\\n])*\1""")
_REGEX_META = re.compile(r"([\\.^$|?*+()\[\]{}])")


def _string_transform(
    t: Template, top: Site
) -> tuple[str, str, dict[str, Any], dict[str, Any]] | None:
    """A string literal of the pattern that the fix rewrites by one substitution throughout
    (``'%s [%s]'`` -> ``'{} [{}]'``): the literal becomes ``$STR1`` (a string) and the fix
    uses ``$NEW1``, an ast-grep ``replace`` transform of it. None when there is no such
    literal."""
    ps, fs = list(_STRING.finditer(t.pattern)), list(_STRING.finditer(t.fix))
    if not ps or len(ps) != len(fs):
        return None
    for p, f in zip(ps, fs, strict=True):
        a, b = p.group(0), f.group(0)
        if a == b:
            continue
        spans = {
            (i1, i2, j1, j2)
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, False).get_opcodes()
            if tag != "equal"
        }
        pairs = {(a[i1:i2], b[j1:j2]) for i1, i2, j1, j2 in spans}
        if len(pairs) != 1:
            return None
        old, new = pairs.pop()
        if not old or a.replace(old, new) != b:
            return None
        # A change inside a word (gin's "Invalid node type" -> "invalid node type": `I` ->
        # `i`) is a change of that word: replacing the letter in every string rewrote
        # "/HI" too. Widen it to the whole word and replace the word only.
        word = False
        if all(_word_char(a, i1 - 1) or _word_char(a, i2) for i1, i2, _, _ in spans):
            i1, i2, j1, j2 = min(spans)
            while _word_char(a, i1 - 1):
                i1, j1 = i1 - 1, j1 - 1
            while _word_char(a, i2) and _word_char(b, j2):
                i2, j2 = i2 + 1, j2 + 1
            wide_old, wide_new = a[i1:i2], b[j1:j2]
            if re.sub(_word_regex(wide_old), wide_new.replace("\\", "\\\\"), a) != b:
                return None
            old, new, word = wide_old, wide_new, True
        kind = "string"
        for n in top.node.find_all(regex="^" + re.escape(a) + "$"):
            if "string" in n.kind():
                kind = n.kind()
                break
        pattern = t.pattern[: p.start()] + "$STR1" + t.pattern[p.end() :]
        fix = t.fix[: f.start()] + "$NEW1" + t.fix[f.end() :]
        transform = {
            "NEW1": {
                "replace": {
                    "source": "$STR1",
                    "replace": _word_regex(old) if word else _REGEX_META.sub(r"\\\1", old),
                    "by": new.replace("$", "$$"),
                }
            }
        }
        cons: dict[str, Any] = {"kind": kind}
        if word:
            cons["regex"] = _word_regex(old)  # only strings that hold the word
        return pattern, fix, {"STR1": cons}, transform
    return None


def _format_rules(t: Template, top: Site, lang: str) -> list[dict[str, Any]]:
    """``t`` as rules; a Rust macro's token tree in a call of that very macro (a token
    tree's pattern says nothing of the macro around it: `format!` is no `panic!`)."""
    parent = top.node.parent()
    if top.node.kind() != "token_tree" or parent is None or parent.kind() != "macro_invocation":
        return _pattern_rules(t, lang, top.node.kind())
    name = parent.field("macro")
    if name is None:
        return []
    return [
        {
            "pattern": {"context": f"{name.text()}!{t.pattern}", "selector": "token_tree"},
            "inside": {
                "kind": "macro_invocation",
                "stopBy": "neighbor",
                "has": {"field": "macro", "regex": "^" + re.escape(name.text()) + "$"},
            },
        }
    ]


def _string_kind(top: Site) -> str:
    """The node kind of the strings under ``top`` (``string``, Rust's ``string_literal``)."""
    for n in top.node.find_all(regex="^[fFbBrRuU]{0,2}[\"']"):
        if "string" in n.kind():
            return n.kind()
    return "string"


_PREFIX = re.compile(r"[bBrRuUfF]{1,2}")
# Wave 3j (synth15): a string literal whose quotes change (`"x"` -> `'x'`, `"x"` -> `b'x'`,
# JS `'x'` -> `` `x` ``), a body that means the same between either quotes.
_QUOTED = re.compile(r"""(?P<prefix>[bBrRuUfF]{0,2})(?P<q>["'`])(?P<body>[^"'`\\\n$]*)(?P=q)""")
_QUOTE_LANGS = frozenset({"python", "javascript", "typescript", "tsx"})


def _string_prefix(
    t: Template, top: Site, lang: str
) -> tuple[dict[str, Any], str, dict[str, Any] | None] | None:
    """Python: a prefix added to a string literal (``'x'`` -> ``b'x'``, werkzeug's bytes):
    every string without a prefix of the literal's kind (``$STR`` -> ``b$STR``), the most
    general candidate; where the examples keep other strings, a context narrows it (a
    sibling, see synth/discriminate.py). Only a template that is the string itself.
    Wave 3j: quotes changed too (``"x"`` -> ``'x'``, ``"x"`` -> ``b'x'``; JS and TS quotes
    and template literals): every string of those quotes whose body has no quote, escape or
    ``$`` (the same text between either quotes), rewritten by a ``replace`` transform of its
    quotes (``$NEWQ``), the prefix put before it — one rule, not one per string."""
    if "string" not in top.node.kind():
        return None
    m = _STRING.fullmatch(t.pattern) if lang == "python" else None
    if m is not None and t.fix.endswith(t.pattern):
        prefix = t.fix[: len(t.fix) - len(t.pattern)]
        if not _PREFIX.fullmatch(prefix):
            return None
        rule = {"kind": top.node.kind(), "regex": "^[\"']", "pattern": "$STR"}
        return rule, prefix + "$STR", None
    if lang not in _QUOTE_LANGS:
        return None
    a, b = _QUOTED.fullmatch(t.pattern), _QUOTED.fullmatch(t.fix)
    if a is None or b is None or a["body"] != b["body"] or a["q"] == b["q"]:
        return None
    if a["prefix"] or (lang != "python" and b["prefix"]) or a["q"] == "`":
        return None
    if b["prefix"] and not _PREFIX.fullmatch(b["prefix"]):
        return None
    q, q2 = a["q"], b["q"]
    body = "[^\"'`\\\\\\n$]*"
    rule = {"kind": top.node.kind(), "regex": f"^{q}{body}{q}$", "pattern": "$STR"}
    transform = {"NEWQ": {"replace": {"source": "$STR", "replace": f"^{q}|{q}$", "by": q2}}}
    return rule, b["prefix"] + "$NEWQ", transform


def _insert_candidates(
    seed: Site, remaining: list[tuple[Site, _Ex]], lang: str
) -> list[tuple[dict[str, Any], str]]:
    """Rules that insert ``seed.inserted`` next to its anchor statement, most general first:
    next to the last (first) statement of the anchor's kind, next to every one, next to those
    of the anchor's name shape, next to the literal anchor. Each is guarded to insert once
    (not where the container already holds the new statement)."""
    node, new = seed.node, seed.inserted
    first = _first_statement(new, lang)
    if first is None:
        return []
    kind = node.kind()
    guard = {"not": {"inside": {"has": {"pattern": first}}}}
    after = seed.insert == "after"
    tab = _tab_indent(seed)
    new = _indent_lines(new, tab, after)
    anchor = tab + "$ANCHOR" if not after else "$ANCHOR"
    fix = "$ANCHOR\n" + new if after else new + "\n" + anchor
    edge = (
        {"not": {"precedes": {"kind": kind, "stopBy": "end"}}}
        if after
        else {"not": {"follows": {"kind": kind, "stopBy": "end"}}}
    )
    # Next to the last (first) of a kind: once per container. Otherwise: not where the
    # neighbour already is the new statement.
    local = (
        {"not": {"precedes": {"pattern": first, "stopBy": "neighbor"}}}
        if after
        else {"not": {"follows": {"pattern": _last_statement(new, lang), "stopBy": "neighbor"}}}
    )
    peers = [s for s, _ in remaining if s.insert == seed.insert and s.inserted == seed.inserted]
    # Precision first (wave 3e): a statement of the anchor's kind only in the kind of
    # container the anchors sit in; one lone site inside a function only by its own anchor.
    held = anchor_container([seed.node, *(p.node for p in peers)])
    if annotated(node) is not None and first.startswith("#"):
        # Wave 3u: an attribute inserted beside another (`#[test]` -> `#[cfg(unix)]\n#[test]`):
        # next to the anchor's text (then any attribute, closed by the anchors' texts), once
        # per run; which runs is what the annotated items say (discriminate.item_contexts), not
        # the position among the container's attributes (the last attribute of a file is
        # no place an attribute goes).
        new_first, new_last = first, _last_statement(new, lang)
        once = [
            {"not": {"precedes": {"pattern": new_first, "stopBy": ATTR_RUN}}},
            {"not": {"follows": {"pattern": new_last, "stopBy": ATTR_RUN}}},
        ]
        literal = node.text()
        return [
            (
                {"pattern": literal, "all": once},
                literal + "\n" + new if after else new + "\n" + tab + literal,
            ),
            ({"kind": kind, "pattern": "$ANCHOR", "all": [*once, held] if held else once}, fix),
        ]
    out: list[tuple[dict[str, Any], str]] = []
    generic = [
        ({"kind": kind, "pattern": "$ANCHOR", "all": [conjoin(edge, held), guard]}, fix),
        ({"kind": kind, "pattern": "$ANCHOR", "all": [conjoin(local, held)]}, fix),
    ]
    if annotates(seed, peers):
        # Wave 3k: an attribute above an item annotates that item, wherever it sits among
        # its siblings: "before the first of the kind" is no candidate (it happened to be
        # the first function of each impl in bytes' examples).
        generic = generic[1:]
    lone = lone_insertion(seed.node, peers)
    # Wave 3k (synth22): anchors that differ but assign one target (`f.Value = valBool`,
    # `f.Value = valDuration`): next to the last (then every) statement assigning it, before
    # next to the last statement of the kind — the examples cannot tell the two apart, and
    # the narrower one writes no statement after `i.hasBeenSet = true` or `i.slice =
    # append(…)` of another file (urfave/cli ef1ba861f7: 22 wrong hunks).
    targets = {_assigned(a.text()) for a in [seed.node, *(p.node for p in peers)]}
    target = targets.pop() if len(targets) == 1 else None

    def by_regex(regex: str) -> list[tuple[dict[str, Any], str]]:
        """Next to the statements matching ``regex``: the outermost such in its container,
        then every one."""
        matching = {"regex": regex}
        same = {"kind": kind, "regex": regex, "stopBy": "end"}
        edge = {"not": {"precedes": same}} if after else {"not": {"follows": same}}
        return [
            (
                {"kind": kind, "pattern": "$ANCHOR", "all": [matching, conjoin(edge, held), guard]},
                fix,
            ),
            ({"kind": kind, "pattern": "$ANCHOR", "all": [matching, conjoin(local, held)]}, fix),
        ]

    if not lone and target and len({seed.node.text(), *(p.node.text() for p in peers)}) > 1:
        out += by_regex("^" + _rx_escape(target) + r"\s*=[^=]")
    if not lone:
        # Wave 3l (synth26): next to the first (last) statement of its body whatever that
        # statement is (synth/placement.py): before "the first of the anchor's kind" when
        # every anchor is the first (last) of its body, after it when the kinds differ.
        roots = list({id(ex): ex.root for _, ex in remaining}.values())
        edges = edge_candidates(after, held, guard, fix, roots, lang)
        nodes = [seed.node, *(p.node for p in peers)]
        # (a prologue: the line uses what the definition binds, a guard on its parameters;
        # a line that names nothing of it, a debug print, keeps to the anchor's kind)
        if at_edge(nodes, after) and bound_names(seed.node, nodes, "$ANCHOR", fix):
            out += edges + generic
        else:
            out += generic
            if any(p.node.kind() != kind for p in peers):
                out += edges
    # Wave 3g: where a name the statement uses is declared (ky's `await server.close();`
    # after each test's last statement, only in tests that start a server).
    scoped = [
        ({**r, "all": [*r["all"], declared]}, f)
        for declared in _declared_in_container(new, [seed.node, *(p.node for p in peers)], lang)
        for r, f in generic
    ]
    if not lone:
        out += scoped
    names = {n.text() for p in peers if (n := p.node.field("name")) is not None}
    if names and all(_IDENT.match(x) for x in names):
        regex = _shape_regex(names) if len(names) > 1 else "^" + re.escape(names.pop()) + "$"
        has_name = {"has": {"field": "name", "regex": regex}}
        out.append(
            ({"kind": kind, "pattern": "$ANCHOR", "all": [has_name, conjoin(local, held)]}, fix)
        )
    # Wave 3j (synth15): anchors that differ in their arguments but call one head
    # (`t.equal(data, 'x');`, `t.equal(body, 'y');`): next to a statement calling that head,
    # the first (last) such in its container, then every one — not one rule per literal
    # anchor, which reaches no other neighbour.
    anchors = {seed.node.text(), *(p.node.text() for p in peers)}
    heads = {_anchor_head(a) for a in anchors}
    head = heads.pop() if len(heads) == 1 else None
    if len(anchors) > 1 and head:
        out += by_regex("^" + re.escape(head) + r"\s*\(")
    literal = node.text()
    out.append(
        (
            {"pattern": literal, "all": [local]},
            literal + "\n" + new if after else new + "\n" + tab + literal,
        )
    )
    # A lone site whose own anchor yields no rule still gets the general one, last.
    return out + scoped + generic if lone else out


_ANCHOR_HEAD = re.compile(
    r"^((?:await\s+)?[A-Za-z_$][\w$]*(?:\s*(?:\.|::|->)\s*[A-Za-z_$][\w$]*)*)\s*\("
)


_ASSIGNED = re.compile(r"^([A-Za-z_$][\w$]*(?:\s*(?:\.|::|->)\s*[A-Za-z_$][\w$]*)*)\s*=[^=]")


def _assigned(text: str) -> str | None:
    """The target a statement assigns (`f.Value` of `f.Value = x`), or None."""
    m = _ASSIGNED.match(text)
    return re.sub(r"\s+", "", m.group(1)) if m else None


def _anchor_head(text: str) -> str | None:
    """The callee a statement starts by calling (`t.equal` of `t.equal(a, b);`), or None."""
    m = _ANCHOR_HEAD.match(text)
    return m.group(1) if m else None


# A statement that declares a name (`const server = …`, `server := …`, `server = …`,
# `let server: Server = …`); NAME is filled in.
_DECLARES = r"^(?:(?:export\s+)?(?:const|let|var)\s+)?NAME\s*(?::[^=\n]*)?:?=[^=]"


def _declared_in_container(new: str, anchors: list[SgNode], lang: str) -> list[dict[str, Any]]:
    """Rule fragments saying that the anchor's container (its block) declares, in a
    statement of its own, a name the inserted statement uses — for each such name that every
    anchor's container declares (wave 3g). ky's `await server.close();` goes after the
    last statement of the tests that start a server (`const server = await
    createHttpTestServer();`), not into every test, nor into the callbacks inside them."""
    root = parse(new, lang)
    names = sorted(
        {
            n.text()
            for n in root.find_all(kind="identifier")
            if _IDENT.match(n.text()) and n.text() not in ("await", "self", "this")
        }
    )
    out: list[dict[str, Any]] = []
    for name in names:
        regex = _DECLARES.replace("NAME", re.escape(name))
        kinds = set()
        for anchor in anchors:
            parent = anchor.parent()
            if parent is None or not any(
                re.search(regex, c.text()) for c in parent.children() if c.is_named()
            ):
                break
            kinds.add(parent.kind())
        else:
            if len(kinds) == 1:
                has = {"regex": regex, "stopBy": "neighbor"}
                out.append({"inside": {"kind": kinds.pop(), "stopBy": "neighbor", "has": has}})
    return out


def _tab_indent(seed: Site) -> str:
    """The anchor's indentation when it is tabs, else "": ast-grep re-indents a fix by the
    spaces before the match only (none on a tab-indented line), so ky's `await
    server.close();` after a test's last statement came out at column 0 (wave 3d); the fix
    writes the tabs out. Spaces are left to the re-indent."""
    text = seed.node.get_root().root().text()
    line = text[text.rfind("\n", 0, seed.start) + 1 : seed.start]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    return indent if "\t" in indent and not line.strip() else ""


def _indent_lines(text: str, indent: str, first: bool) -> str:
    """``text``'s non-blank lines prefixed by ``indent`` (the first one too when ``first``:
    it starts a line of its own rather than at the match)."""
    if not indent:
        return text
    lines = text.split("\n")
    return "\n".join(
        indent + ln if ln.strip() and (i or first) else ln for i, ln in enumerate(lines)
    )


def _statements(text: str, lang: str) -> list[str]:
    root = parse(text, lang)
    if has_error(root):
        return []
    return [c.text() for c in root.children() if c.is_named() and c.kind() not in COMMENT_KINDS]


def _first_statement(text: str, lang: str) -> str | None:
    found = _statements(text, lang)
    return found[0] if found else None


def _last_statement(text: str, lang: str) -> str:
    found = _statements(text, lang)
    return found[-1] if found else text


def _companion(choice: _Choice, exs: list[_Ex], lang: str, n: int) -> SynthRule | None:
    """A deletion rule that joins the previous statement reaches no statement first in its
    block (nothing precedes it); its companion deletes those by joining the next one (and
    the other way round for the last in a block) — the same deletion wherever the statement
    sits, kept only when it rewrites nothing wrongly in the examples."""
    if choice.fix == "":
        return None  # an import list's item: see `_delete_candidates`
    base = {k: v for k, v in choice.rule.items() if k not in ("follows", "precedes")}
    if choice.expand_start:
        rule = {**base, "nthChild": 1, "precedes": {"pattern": "$NEXT", "stopBy": "neighbor"}}
        fix, start, end = "$NEXT", None, {"pattern": "$NEXT"}
    else:
        rule = {
            **base,
            "nthChild": {"position": 1, "reverse": True},
            "follows": {"pattern": "$PREV", "stopBy": "neighbor"},
        }
        fix, start, end = "$PREV", {"pattern": "$PREV"}, None
    return _kept_companion(choice, exs, lang, n, rule, fix, start, end)


def _gap_companion(choice: _Choice, exs: list[_Ex], lang: str, n: int) -> SynthRule | None:
    """A deleted statement goes with the narrower of the gaps around it: the examples show
    one side (joining the previous statement), but where they had a blank line on both
    sides either side reproduces them, and held-out code laid out otherwise (a blank line
    above, the next statement right below: the first import of a group) lost its blank
    line. This rule, applied before ``choice``, deletes such a statement with the gap after
    it instead (the other way round for a rule that joins the next statement). The layout
    is visible only in text, so the rule is a ``regex`` on the enclosing file over the
    deleted statements' own texts as the examples show them; other texts keep ``choice``'s
    layout. Kept only when it rewrites nothing wrongly in the examples."""
    if choice.fix == "":
        return None  # an import list's item: its comma, not a line
    texts = sorted({s.node.text() for ex in exs for s in ex.sites if id(s) in choice.covered})
    if not texts or any("\n" in t for t in texts) or len(texts) > 8:
        return None
    alts = "(?:" + "|".join(_rx_escape(t) for t in texts) + ")"
    base = {k: v for k, v in choice.rule.items() if k not in ("follows", "precedes")}
    # Joining the previous statement is wrong where the gap before is the wider one.
    wide_before = r"\n[ \t]*\n[ \t]*" + alts + r"[ \t]*\n[ \t]*\S"
    wide_after = r"\S[ \t]*\n[ \t]*" + alts + r"[ \t]*\n[ \t]*\n"
    root = exs[0].root.kind()
    rx = wide_before if choice.expand_start else wide_after
    where = {"inside": {"kind": root, "regex": rx, "stopBy": "end"}}
    rule = {**base, "all": [*base.get("all", []), where]}
    if choice.expand_start:
        rule["precedes"] = {"pattern": "$NEXT", "stopBy": "neighbor"}
        fix, start, end = "$NEXT", None, {"pattern": "$NEXT"}
    else:
        rule["follows"] = {"pattern": "$PREV", "stopBy": "neighbor"}
        fix, start, end = "$PREV", {"pattern": "$PREV"}, None
    return _kept_companion(choice, exs, lang, n, rule, fix, start, end)


def _kept_companion(
    choice: _Choice,
    exs: list[_Ex],
    lang: str,
    n: int,
    rule: dict[str, Any],
    fix: str,
    start: dict[str, Any] | None,
    end: dict[str, Any] | None,
) -> SynthRule | None:
    """A deletion companion of ``choice`` (``rule`` with its fix and expansions), kept only
    when it rewrites nothing wrongly in the examples."""
    candidate = Rule(
        id="c",
        language=lang,
        rule=rule,
        fix=fix,
        constraints=choice.constraints,
        expand_start=start,
        expand_end=end,
    )
    try:
        if _evaluate(candidate, exs) is None:
            return None
    except RuleError:
        return None
    return SynthRule(
        id=f"synth-{n}",
        language=lang,
        rule=rule,
        fix=fix,
        constraints=choice.constraints,
        expand_start=start,
        expand_end=end,
        companion=True,
    )


_Deletion = tuple[
    dict[str, Any], str, dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None
]


def _delete_candidates(seed: Site, remaining: list[tuple[Site, _Ex]], lang: str) -> list[_Deletion]:
    """Rules that delete ``seed.node`` with the layout before it (its previous sibling's
    range through it, replaced by that sibling: ``expandStart``) or, first in a block, after
    it (``expandEnd`` to the next sibling). Node rules from the most general: the deleted
    nodes of the same kind anti-unified token by token (``var $A = require($B);``), the
    literal node, then its kind and exact text."""
    node = seed.node
    kind = node.kind()
    peers = [
        s.node
        for s, _ in remaining
        if s.delete is not None and s.node.kind() == kind and s.node.text() != node.text()
    ]
    bases: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    # A comment deleted with its statement: by its exact text (a pattern of a comment
    # matches any comment).
    general = _token_pattern(node, peers) if kind not in COMMENT_KINDS else None
    if general is not None:
        pattern, values = general
        # Each metavariable no wider than the deleted nodes show: `var $A = require($B);`
        # deleting every require would be a guess the examples do not support.
        seen: dict[str, Any] = {
            v: {"regex": "^(?:" + "|".join(re.escape(x) for x in sorted(t)) + ")$"}
            for v, t in values.items()
        }
        bases += [(r, seen) for r in _pattern_rules(Template(pattern, "", {}), lang, kind)]
    # Calls of one callee deleted with arguments that differ at every site (debug prints:
    # zod's `console.log(`SUM: ${…}`);`, `console.log(`caught …`);`): the callee is what
    # the deletion is about, not the arguments (wave 3e).
    called = deleted_call(node, peers)
    if called is not None:
        bases += [(r, None) for r in _pattern_rules(Template(called, "", {}), lang, kind)]
    if kind not in COMMENT_KINDS:
        bases += [(r, None) for r in _pattern_rules(Template(node.text(), "", {}), lang, kind)]
    bases.append(({"kind": kind, "regex": "^" + re.escape(node.text()) + "$"}, None))
    parent = node.parent()
    if parent is not None and parent.kind() in IMPORT_LISTS:
        # A name removed from an import list: only there (the name is used elsewhere),
        # with the comma before it and the layout between (the list's one line, or the
        # item's own line of a one-per-line list): the same rule for either layout. The
        # first item of a list has no comma before it (no rule here; its own example).
        where = {"inside": {"kind": parent.kind(), "stopBy": "neighbor"}}
        comma = {"regex": "^,$"}
        item_rel = {"follows": {**comma, "stopBy": "neighbor"}}
        return [({**b, **where, **item_rel}, "", dict(comma), None, c) for b, c in bases]
    if parent is not None:
        # Narrower: only where the deleted node sits (the examples keep others elsewhere).
        where = {"inside": {"kind": parent.kind(), "stopBy": "neighbor"}}
        narrowed = [({**b, **where}, c) for b, c in bases]
        if _IDENT.match(node.text()) and not any(c.is_named() for c in node.children()):
            # Wave 3t: a keyword or modifier (`mut`, `pub`, `static`) is deleted from one
            # kind of place first: hyper d894439e's `&mut self` -> `&self` deleted every
            # `mut` of the held-out files (`let mut`, `mut req`: 185 wrong sites); its
            # parent's kind (`self_parameter`) is where it goes.
            bases = narrowed + bases
        else:
            bases += narrowed
    forms = [
        ({"follows": {"pattern": "$PREV", "stopBy": "neighbor"}}, "$PREV", "start"),
        ({"precedes": {"pattern": "$NEXT", "stopBy": "neighbor"}}, "$NEXT", "end"),
    ]
    if seed.delete == "next":
        forms.reverse()
    out: list[_Deletion] = []
    for base, cons in bases:
        for rel, var, side in forms:
            expand = {"pattern": var}
            out.append(
                (
                    {**base, **rel},
                    var,
                    expand if side == "start" else None,
                    expand if side == "end" else None,
                    cons,
                )
            )
    return out


def _token_pattern(node: SgNode, peers: list[SgNode]) -> tuple[str, dict[str, set[str]]] | None:
    """``node``'s text with the named leaves in which it differs from every peer of the
    same token shape made metavariables (``$A``, ``$B``, ...), or None (no such peer, or a
    difference in punctuation)."""
    from oopav.synth.sites import leaves

    mine = leaves(node)
    diff: set[int] = set()
    for peer in peers:
        theirs = leaves(peer)
        if len(theirs) != len(mine):
            continue
        for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            if a.text != b.text:
                if not (a.node.is_named() and b.node.is_named() and a.node.kind() == b.node.kind()):
                    return None
                diff.add(k)
    if not diff:
        return None
    base = node.range().start.index
    text = node.text()
    out, pos = [], 0
    values: dict[str, set[str]] = {}
    for n, k in enumerate(sorted(diff)):
        t = mine[k]
        var = chr(ord("A") + n % 26) * (1 + n // 26)
        out += [text[pos : t.start - base], "$" + var]
        pos = t.end - base
        values[var] = {t.text} | {leaves(p)[k].text for p in peers if len(leaves(p)) == len(mine)}
    out.append(text[pos:])
    return "".join(out), values


def _same_substitution(sites: list[Site]) -> bool:
    """Wave 3f: comments alone are learned when two or more sites make one substitution and
    it rewrites code (a code sample in doc comments: ky's `response.clone().json()` ->
    `response.json()` in three files' JSDoc examples) — not prose (a word or phrase)."""
    subs = {_comment_substitution(s.before_text, s.after_text) for s in sites}
    if len(sites) < 2 or len(subs) != 1 or None in subs:
        return False
    old, new = next(iter(s for s in subs if s is not None))
    return bool(re.search(r"[.()\[\]{}=<>;:]", old + new))


def _comment_substitution(before: str, after: str) -> tuple[str, str] | None:
    """A comment's change as one substitution, widened to whole words (``prefixUrl`` ->
    ``prefix``, not ``Url`` -> ``""``), when replacing it throughout gives the new comment
    (a code sample in a doc comment changed like the code); else None."""
    pre = 0
    while pre < min(len(before), len(after)) and before[pre] == after[pre]:
        pre += 1
    suf = 0
    while (
        suf < min(len(before), len(after)) - pre
        and before[len(before) - 1 - suf] == after[len(after) - 1 - suf]
    ):
        suf += 1

    def word(c: str) -> bool:
        return c.isalnum() or c == "_"

    while pre > 0 and word(before[pre - 1]):
        pre -= 1
    while suf > 0 and word(before[len(before) - suf]):
        suf -= 1
    old, new = before[pre : len(before) - suf], after[pre : len(after) - suf]
    if not old.strip() or "\n" in old or "\n" in new:
        return None
    if re.sub(_word_regex(old), lambda _m: new, before) != after:
        return None
    return old, new


def _word_char(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


def _word_regex(text: str) -> str:
    """``text`` as a regex, anchored at word boundaries where it starts (ends) with a word
    character."""
    left = r"\b" if text[:1].isalnum() or text[:1] == "_" else ""
    right = r"\b" if text[-1:].isalnum() or text[-1:] == "_" else ""
    return left + _REGEX_META.sub(r"\\\1", text) + right


# Where a list node (parameters, arguments) parses on its own, per language and list kind:
# a pattern of the list alone rewrites only it, not the definition or call around it.
_LIST_WRAPPERS: dict[str, dict[str, tuple[str, ...]]] = {
    "python": {"parameters": ("def _f{}: pass",), "argument_list": ("_f{}",)},
    "javascript": {
        "formal_parameters": ("{} => {{}}", "function _f{} {{}}"),
        "arguments": ("_f{}",),
    },
    "typescript": {
        "formal_parameters": ("{} => {{}}", "function _f{} {{}}"),
        "arguments": ("_f{}",),
    },
    "tsx": {"formal_parameters": ("{} => {{}}", "function _f{} {{}}"), "arguments": ("_f{}",)},
    # A Go parameter list keeps its items literal where a `$$$A` would precede a typed
    # item (`$$$A, code int` parses as one declaration of two names).
    "go": {"argument_list": ("func _() {{ _f{} }}",), "parameter_list": ("func _f{} {{}}",)},
    "rust": {"parameters": ("fn _f{} {{}}",), "arguments": ("fn _g() {{ _f{}; }}",)},
}


def _list_site(site: Site, ex: _Ex, lang: str) -> Site | None:
    """The parameter or argument list of ``site``'s node that holds its whole change, as a
    site of its own (the list and what replaces it), or None."""
    wrappers = _LIST_WRAPPERS.get(lang, {})
    b, a = site.before_text, site.after_text
    if site.insert is not None or site.delete is not None or not wrappers:
        return None
    pre = 0
    while pre < min(len(b), len(a)) and b[pre] == a[pre]:
        pre += 1
    suf = 0
    while suf < min(len(b), len(a)) - pre and b[len(b) - 1 - suf] == a[len(a) - 1 - suf]:
        suf += 1
    lo, hi = site.start + pre, site.end - suf
    best = None
    stack = [site.node]
    while stack:
        n = stack.pop()
        r = n.range()
        if r.start.index <= lo and hi <= r.end.index:
            if n.kind() in wrappers:
                best = n
            stack.extend(n.children())
    if best is None or best.range() == site.node.range():
        return None
    r = best.range()
    delta = len(a) - len(b)
    a_s = site.after_start + (r.start.index - site.start)
    a_e = a_s + (r.end.index - r.start.index) + delta
    anode = node_at(ex.root_after, a_s, a_e)
    if anode is None or anode.kind() != best.kind():
        # A word inserted just before the list (`(t, done) =>` -> `async () =>`): the list
        # ends the span in the after tree; the fix writes both.
        ends = [
            n
            for n in ex.root_after.find_all(kind=best.kind())
            if n.range().end.index == a_e and a_s < n.range().start.index
        ]
        if not ends or ex.after[a_s : ends[0].range().start.index].strip() == "":
            return None
        anode = _covering(ex.root_after, a_s, a_e)
        if anode is None:
            return None
    return Site(ex.index, best, r.start.index, r.end.index, a_s, a_e, ex.after[a_s:a_e], anode)


def _covering(root: SgNode, start: int, end: int) -> SgNode | None:
    """The smallest node of ``root`` that contains [start, end)."""
    node: SgNode | None = root
    found = None
    while node is not None:
        r = node.range()
        if not (r.start.index <= start and end <= r.end.index):
            break
        found = node
        node = next(
            (
                c
                for c in node.children()
                if c.range().start.index <= start and end <= c.range().end.index
            ),
            None,
        )
    return found


def _list_candidates(
    seed: Site, remaining: list[tuple[Site, _Ex]], exs: list[_Ex], lang: str, choices: list[_Choice]
) -> None:
    """Rules that rewrite only the parameter or argument list that holds the change
    (``(_request, _options, $A)`` -> ``({$A})`` selected out of an arrow function), rather than
    the whole function or call with its body's layout: the smallest changed sub-node. Added
    to ``choices``, ids mapped back to the sites they stand for."""
    wrappers = _LIST_WRAPPERS.get(lang, {})
    if not wrappers:
        return
    subs: dict[int, Site] = {}
    for s, ex in remaining:
        sub = _list_site(s, ex, lang)
        if sub is not None:
            subs[id(s)] = sub
    if id(seed) not in subs:
        return
    top = subs[id(seed)]
    kind = top.node.kind()
    back = {id(sub): sid for sid, sub in subs.items()}
    # Each example with its sites replaced by their list sub-sites where they have one.
    sub_exs = [
        _Ex(
            ex.index,
            ex.before,
            ex.after,
            ex.root,
            ex.root_after,
            sorted((subs.get(id(x), x) for x in ex.sites), key=lambda x: x.start),
            ex.partial,
            ex.keep,
        )
        for ex in exs
    ]
    peers = [sub for sid, sub in subs.items() if sid != id(seed) and sub.node.kind() == kind]
    groups = [[top, *peers], [top]] if peers else [[top]]
    seen: set[str] = set()
    for opts in _OPTIONS:
        for group in groups:
            t = abstract_sites(group, opts)
            if t is None or "\n" in t.fix or t.pattern in seen:
                continue
            seen.add(t.pattern)
            for w in wrappers[kind]:
                rule = {"pattern": {"context": w.format(t.pattern), "selector": kind}}
                try:
                    covered = _evaluate(Rule(id="c", language=lang, rule=rule, fix=t.fix), sub_exs)
                except RuleError:
                    continue
                if covered and id(top) in covered:
                    mapped = {back.get(c, c) for c in covered}
                    choices.append(_Choice(rule, t.fix, mapped, -1, t.pattern + "\0" + t.fix, 0))
