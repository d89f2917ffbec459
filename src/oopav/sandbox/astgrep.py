"""ast-grep rewrites applied in-process with ast-grep-py.

ast-grep-py finds matches (rule, constraints, utils, transform) but ignores ``fix``, so the
fix template is expanded here the way the ast-grep CLI does it: ``$A`` / ``$$A`` (single),
``$$$A`` (multiple), transformed variables, and the CLI's re-indentation of multi-line text.
The CLI stays the reference: ``cli_rewrite`` runs it, and a test requires identical output
with one deliberate difference: a line that is blank in the re-indented text stays as it was,
where the CLI pads it with the indentation (trailing whitespace nobody's edit adds).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import msgspec
import yaml
from ast_grep_py import Config, SgNode, SgRoot

from oopav.sandbox.rulefilter import Need, may_match, required_text
from oopav.sandbox.treecache import TreeCache

if TYPE_CHECKING:  # the event catalog costs ~100 ms to import; `oopav synth` never needs it
    from oopav.events.actions import AstGrepAction

LANG_ALIASES: dict[str, str] = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "jsx": "javascript",
    "ts": "typescript",
    "rs": "rust",
    "golang": "go",
    "c++": "cpp",
    "cxx": "cpp",
    "rb": "ruby",
    "kt": "kotlin",
    "cs": "csharp",
    "c#": "csharp",
}
# ast-grep's default file extensions per language.
LANG_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "python": (".py", ".py3", ".pyi", ".bzl"),
    "javascript": (".js", ".cjs", ".mjs", ".jsx"),
    "typescript": (".ts", ".cts", ".mts"),
    "tsx": (".tsx",),
    "rust": (".rs",),
    "go": (".go",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".hpp", ".cpp", ".c++", ".hh", ".cxx", ".cu", ".ino"),
    "ruby": (".rb", ".rbw", ".gemspec"),
    "kotlin": (".kt", ".ktm", ".kts"),
    "csharp": (".cs",),
    "bash": (".bash", ".sh", ".zsh", ".bats"),
    "lua": (".lua",),
    "json": (".json",),
    "yaml": (".yml", ".yaml"),
    "html": (".html", ".htm", ".xhtml"),
    "css": (".css", ".scss"),
    "php": (".php",),
    "scala": (".scala", ".sc", ".sbt"),
    "swift": (".swift",),
}
_KNOWN_KEYS = {
    "id",
    "language",
    "rule",
    "fix",
    "constraints",
    "transform",
    "utils",
    "message",
    "severity",
    "note",
    "files",
    "ignores",
    "metadata",
}
_VAR_CHARS = re.compile(r"[A-Z0-9_]*")


class RuleError(ValueError):
    """A rule that cannot be used; ``code`` is a rejection reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Rule(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    language: str
    rule: dict[str, Any]
    fix: str | None = None
    constraints: dict[str, Any] | None = None
    transform: dict[str, Any] | None = None
    utils: dict[str, Any] | None = None
    # ast-grep's FixConfig ``expandStart`` / ``expandEnd``: the replaced range grows over the
    # neighbouring sibling that matches (one step, as the CLI does). Rules by example delete a
    # whole statement with them: ``fix: {template: $PREV, expandStart: {pattern: $PREV}}``
    # replaces the previous statement *through* the deleted one by the previous one, so its
    # line goes too (a plain ``fix: ''`` leaves an empty line behind).
    expand_start: dict[str, Any] | None = None
    expand_end: dict[str, Any] | None = None
    # ``metadata: {optional: true}``: a follow-up rule (an import a rewrite needs, rules by
    # example) may match nothing where no file needs it; the loop applies that as no change.
    optional: bool = False

    def config(self) -> Config:
        cfg: dict[str, Any] = {"rule": self.rule}
        for key in ("constraints", "transform", "utils"):
            value = getattr(self, key)
            if value:
                cfg[key] = value
        # Config's own keys, holding the rule's YAML mappings; ast-grep validates them on use.
        return cast(Config, cfg)

    def to_yaml(self) -> str:
        data: dict[str, Any] = {"id": self.id, "language": self.language, "rule": self.rule}
        for key in ("constraints", "transform", "utils", "fix"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        if self.expand_start or self.expand_end:
            data["fix"] = fix_config(self.fix or "", self.expand_start, self.expand_end)
        if self.optional:
            data["metadata"] = {"optional": True}
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def fix_config(
    template: str, expand_start: dict[str, Any] | None, expand_end: dict[str, Any] | None
) -> dict[str, Any]:
    """The YAML ``fix`` mapping of a template with expansions (the CLI's FixConfig)."""
    out: dict[str, Any] = {"template": template}
    if expand_start:
        out["expandStart"] = expand_start
    if expand_end:
        out["expandEnd"] = expand_end
    return out


def normalize_language(name: str) -> str:
    lang = name.strip().lower()
    lang = LANG_ALIASES.get(lang, lang)
    if lang not in LANG_EXTENSIONS:
        raise RuleError(
            "unknown_language",
            f"unknown language {name!r}; one of: {', '.join(sorted(LANG_EXTENSIONS))}",
        )
    return lang


def rule_from_action(action: AstGrepAction) -> Rule:
    """The rule of an action, full YAML or short form; RuleError when malformed."""
    if action.rule:
        if action.pattern or action.rewrite:
            raise RuleError(
                "bad_rule", "give either `rule` (YAML) or `pattern` + `rewrite`, not both"
            )
        try:
            data = yaml.safe_load(action.rule)
        except yaml.YAMLError as exc:
            raise RuleError("bad_rule", f"rule is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise RuleError("bad_rule", "rule YAML must be a mapping with id, language, rule, fix")
        unknown = set(data) - _KNOWN_KEYS
        if unknown:
            raise RuleError("bad_rule", f"unknown rule keys: {', '.join(sorted(unknown))}")
        for key in ("language", "rule"):
            if key not in data:
                raise RuleError("bad_rule", f"rule YAML needs `{key}`")
        if not isinstance(data["rule"], dict):
            raise RuleError(
                "bad_rule", "`rule` must be a mapping (pattern, kind, inside, has, ...)"
            )
        fix = data.get("fix")
        expand: dict[str, Any] = {}
        if isinstance(fix, dict):
            if "template" not in fix or set(fix) - {"template", "expandStart", "expandEnd"}:
                raise RuleError(
                    "bad_rule",
                    "`fix` is a template, or a mapping of `template` with optional "
                    "`expandStart` / `expandEnd`",
                )
            for key, name in (("expandStart", "expand_start"), ("expandEnd", "expand_end")):
                if key in fix:
                    if not isinstance(fix[key], dict):
                        raise RuleError("bad_rule", f"`fix.{key}` must be a rule mapping")
                    expand[name] = fix[key]
            fix = fix["template"]
        if fix is not None and not isinstance(fix, str):
            raise RuleError("bad_rule", "`fix` must be a string template")
        if fix is None:
            raise RuleError("bad_rule", "rule has no `fix`: nothing to rewrite")
        _check_fix_vars(fix, data)
        meta = data.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise RuleError("bad_rule", "`metadata` must be a mapping (e.g. `optional: true`)")
        return Rule(
            id=str(data.get("id") or "rule"),
            language=normalize_language(str(data["language"])),
            rule=data["rule"],
            fix=fix,
            constraints=data.get("constraints"),
            transform=data.get("transform"),
            utils=data.get("utils"),
            optional=bool((meta or {}).get("optional", False)),
            **expand,
        )
    if not action.pattern or action.rewrite is None or not action.language:
        raise RuleError("bad_rule", "short form needs `pattern`, `rewrite` and `language`")
    # The short form too: `f($B)` → `f()` at every site is never what was meant.
    _check_fix_vars(action.rewrite, {"rule": {"pattern": action.pattern}}, where="rewrite")
    return Rule(
        id="short",
        language=normalize_language(action.language),
        rule={"pattern": action.pattern},
        fix=action.rewrite,
    )


def _check_fix_vars(fix: str, data: dict[str, Any], where: str = "fix") -> None:
    """The CLI refuses a fix that names a metavariable the rule never binds; so do we, in the
    YAML and the short form alike, instead of silently substituting nothing."""
    transforms = set((data.get("transform") or {}).keys())
    bound_text = yaml.safe_dump({k: data.get(k) for k in ("rule", "utils", "constraints")})
    bound = sorted(set(re.findall(r"\$+([A-Z_][A-Z0-9_]*)", bound_text)))
    for piece in parse_template(fix, transforms):
        if isinstance(piece, tuple) and piece[0] != "transformed":
            name = piece[1]
            if not re.search(r"\$" + re.escape(name) + r"(?![A-Z0-9_])", bound_text):
                have = ", ".join(f"${b}" for b in bound) or "none"
                raise RuleError(
                    "rule_invalid",
                    f"metavariable `${name}` is used in `{where}` but the pattern does not bind "
                    f"it (the pattern binds: {have}); it would be replaced by nothing. Fix: "
                    f"add `${name}` to the pattern, or use one of the bound names",
                )


# --- fix templates, as in ast-grep's replacer/template.rs --------------------------------


def indent_at(text: str, offset: int) -> int:
    """Leading spaces of the line holding ``offset`` (ast-grep's get_indent_at_offset: tabs
    do not count)."""
    segment = text[text.rfind("\n", 0, offset) + 1 : offset]
    return len(segment) - len(segment.lstrip(" "))


def reindent(text: str, original: int, target: int) -> str:
    """Move a multi-line text from indentation ``original`` to ``target`` (first line kept).

    A blank (empty or whitespace-only) line is left as it is. The CLI pads it with the
    indentation: trailing whitespace no person's edit adds, so a class body moved by a rewrite
    came back with every empty line changed (structlog's ``class X(object):`` -> ``class X:``)."""
    if "\n" not in text or original == target:
        return text
    lines = text.split("\n")
    if original > target:
        cut = " " * (original - target)
        return "\n".join(
            ln[len(cut) :] if ln.startswith(cut) and ln.strip() else ln for ln in lines
        )
    pad = " " * (target - original)
    return "\n".join([lines[0]] + [pad + ln if ln.strip() else ln for ln in lines[1:]])


def parse_template(fix: str, transforms: Iterable[str]) -> list[str | tuple[str, str, int]]:
    """Literal fragments and (kind, name, indent) variables; kind is single/multi/transformed."""
    names = set(transforms)
    out: list[str | tuple[str, str, int]] = []
    buf_start = 0
    i = 0
    while True:
        j = fix.find("$", i)
        if j < 0:
            break
        k = j
        dollars = 0
        while dollars < 3 and k < len(fix) and fix[k] == "$":
            k += 1
            dollars += 1
        name = _VAR_CHARS.match(fix, k).group(0)  # type: ignore[union-attr]  # [A-Z0-9_]* matches anywhere
        if not name:
            i = j + 1
            continue
        out.append(fix[buf_start:j])
        kind = "multi" if dollars == 3 else ("transformed" if name in names else "single")
        out.append((kind, name, indent_at(fix, j)))
        i = buf_start = k + len(name)
    out.append(fix[buf_start:])
    return out


def expand_fix(node: SgNode, template: list[str | tuple[str, str, int]], source: str) -> str:
    parts: list[str] = []
    compile_template(tuple(template))(parts, node, source)
    return "".join(parts)


# Straight-line code per metavariable kind; {name} and {indent} are filled in with repr() and
# int(), so nothing from a rule is ever executed. Each metavariable costs calls into
# ast-grep-py (the bulk of a warm rewrite): text comes from ``text()`` where one node holds
# it, offsets (``replace("")`` is the cheapest way to get them) only for a multi-node value
# or a multi-line one to re-indent.
_SINGLE = """
    first = node.get_match({name})
    if first is not None:
        text = first.text()
        if "\\n" in text:
            newline = True
            text = reindent(text, indent_at(source, first.replace("").start_pos), {indent})
        append(text)"""
_MULTI = """
    ms = node.get_multiple_matches({name})
    if ms:
        first = ms[0]
        if len(ms) == 1:
            text = first.text()
        else:
            text = source[first.replace("").start_pos : ms[-1].replace("").end_pos]
        if "\\n" in text:
            newline = True
            text = reindent(text, indent_at(source, first.replace("").start_pos), {indent})
        append(text)"""
_TRANSFORMED = """
    value = node.get_transformed({name})
    if value is not None:
        if "\\n" in value:
            newline = True
            value = reindent(value, 0, {indent})
        append(value)"""

Expander = Callable[[list[str], SgNode, str], bool]


@functools.lru_cache(maxsize=256)
def compile_template(template: tuple[str | tuple[str, str, int], ...]) -> Expander:
    """A function appending the fix text of one match to a list; it returns True when the
    text has a newline (the caller re-indents it). Generated once per template: a generic
    loop over the pieces made a warm rewrite of 4,000 matches ~11% slower."""
    lines = ["def expand(out, node, source):", "    append = out.append"]
    newline = False
    for piece in template:
        if isinstance(piece, str):
            if piece:
                lines.append(f"    append({piece!r})")
                newline = newline or "\n" in piece
            continue
        kind, name, indent = piece
        code = {"single": _SINGLE, "multi": _MULTI, "transformed": _TRANSFORMED}[kind]
        lines.append(code.format(name=repr(name), indent=int(indent)))
    lines.insert(1, f"    newline = {newline}")
    lines.append("    return newline")
    scope: dict[str, Any] = {"reindent": reindent, "indent_at": indent_at}
    exec(compile("\n".join(lines), "<ast-grep fix>", "exec"), scope)
    return scope["expand"]


class _Prepared(NamedTuple):
    """What a rule needs per file, computed once per rule rather than once per file."""

    config: Config
    expand: Expander
    need: Need
    expand_start: dict[str, Any] | None = None
    expand_end: dict[str, Any] | None = None


# Keyed by the rule's content, not the object: callers such as rules-by-example build a new,
# equal Rule for every file they try. Bounded; a rule whose content does not encode is
# prepared on every call.
_prepared: dict[bytes, _Prepared] = {}
_PREPARED_MAX = 256
_prepared_lock = threading.Lock()


def _prepare(rule: Rule) -> _Prepared:
    try:
        key = msgspec.json.encode(
            (
                rule.language,
                rule.rule,
                rule.fix,
                rule.constraints,
                rule.transform,
                rule.utils,
                rule.expand_start,
                rule.expand_end,
            )
        )
    except (TypeError, msgspec.EncodeError):
        key = None
    if key is not None:
        hit = _prepared.get(key)
        if hit is not None:
            return hit
    template = parse_template(rule.fix or "", (rule.transform or {}).keys())
    prepared = _Prepared(
        config=rule.config(),
        expand=compile_template(tuple(template)),
        need=required_text(rule),
        expand_start=rule.expand_start,
        expand_end=rule.expand_end,
    )
    if key is not None:
        with _prepared_lock:
            while len(_prepared) >= _PREPARED_MAX:
                _prepared.pop(next(iter(_prepared)))
            _prepared[key] = prepared
    return prepared


def rewrite_source(
    source: str, rule: Rule, *, trees: TreeCache | None = None, path: str | None = None
) -> tuple[str, int]:
    """(new source, number of rewrites). Raises RuleError when the rule does not compile.
    ``trees``: a workspace's parsed-tree cache (``path`` names the file in it).

    A file whose text lacks a literal every match must contain (``rulefilter``) is neither
    parsed nor searched: it cannot match."""
    prepared = _prepare(rule)
    if not may_match(prepared.need, source):
        return source, 0
    root = (
        trees.root(source, rule.language, path)
        if trees is not None
        else SgRoot(source, rule.language).root()
    )
    try:
        nodes = root.find_all(prepared.config)
    except Exception as exc:  # ast-grep-py raises RuntimeError/Exception with the cause chain
        raise RuleError("rule_invalid", _clean_error(exc)) from exc
    if not nodes:
        return source, 0
    if prepared.expand_start or prepared.expand_end:
        return _splice_spans(
            source,
            [(*match_span(n, prepared.expand_start, prepared.expand_end), n) for n in nodes],
            prepared.expand,
        )
    done = _splice(source, nodes, prepared.expand)
    if done is None:
        # find_all yields matches in pre-order, i.e. already by (start, longest first); this
        # is only a safety net should that ever not hold.
        done = _splice(source, sorted(nodes, key=_span_key), prepared.expand)
        assert done is not None
    return done


_BOUND = re.compile(r"^\$([A-Z_][A-Z0-9_]*)$")


def _expands_to(sibling: SgNode | None, node: SgNode, rule: dict[str, Any]) -> bool:
    """``sibling`` matches an expansion rule of ``node``'s match: ``{pattern: $X}`` with ``$X``
    bound by the match is that very node (the CLI matches with the match's metavariables);
    any other rule is matched on its own."""
    if sibling is None:
        return False
    pattern = rule.get("pattern")
    bound = _BOUND.match(pattern) if isinstance(pattern, str) and len(rule) == 1 else None
    if bound is not None:
        got = node.get_match(bound.group(1))
        return got is not None and got.range() == sibling.range()
    try:
        return sibling.matches(**rule)
    except Exception as exc:
        raise RuleError("rule_invalid", f"fix expansion: {_clean_error(exc)}") from exc


def match_span(
    node: SgNode, expand_start: dict[str, Any] | None, expand_end: dict[str, Any] | None
) -> tuple[int, int]:
    """The range a match's fix replaces: the node's, grown over the previous (next) sibling
    that matches ``expand_start`` (``expand_end``), one sibling each, as ast-grep 0.51 does."""
    r = node.range()
    start, end = r.start.index, r.end.index
    if expand_start:
        prev = node.prev()
        if prev is not None and _expands_to(prev, node, expand_start):
            start = prev.range().start.index
    if expand_end:
        nxt = node.next()
        if nxt is not None and _expands_to(nxt, node, expand_end):
            end = nxt.range().end.index
    return start, end


def _splice_spans(
    source: str, spans: list[tuple[int, int, SgNode]], expand: Expander
) -> tuple[str, int]:
    """As :func:`_splice`, over matches whose replaced range was expanded. The CLI takes them
    in the order of the matched nodes (pre-order: by the node's own start, longest first), not
    of the expanded ranges, and skips a range that starts before the end of one it replaced:
    where a deleted statement's range reaches back over a block holding another deleted
    statement, the one inside the block goes first (ordered by expanded start, the block's
    statement won and a user's ``ast-grep scan`` deleted the other one)."""
    out: list[str] = []
    pos = count = 0
    for start, end, node in sorted(spans, key=lambda t: _node_key(t[2])):
        if start < pos:
            continue
        out.append(source[pos:start])
        mark = len(out)
        if expand(out, node, source):
            replacement = "".join(out[mark:])
            del out[mark:]
            out.append(reindent(replacement, 0, indent_at(source, start)))
        pos = end
        count += 1
    out.append(source[pos:])
    return "".join(out), count


def _node_key(node: SgNode) -> tuple[int, int]:
    r = node.range()
    return r.start.index, -r.end.index


def _span_key(node: SgNode) -> tuple[int, int]:
    edit = node.replace("")
    return edit.start_pos, -edit.end_pos


def _splice(source: str, nodes: list[SgNode], expand: Expander) -> tuple[str, int] | None:
    """The source with each match replaced by its fix, in one pass over matches ordered by
    (start, longest first); None if they are not so ordered. A match nested in one already
    replaced is skipped, as the CLI skips overlapping edits."""
    out: list[str] = []
    append = out.append
    pos = count = 0
    last_start = last_end = -1
    for node in nodes:
        edit = node.replace("")  # both offsets in one call into ast-grep-py
        start = edit.start_pos
        end = edit.end_pos
        if start < last_start or (start == last_start and end > last_end):
            return None
        last_start = start
        last_end = end
        if start < pos:
            continue
        append(source[pos:start])
        mark = len(out)
        if expand(out, node, source):
            replacement = "".join(out[mark:])
            del out[mark:]
            append(reindent(replacement, 0, indent_at(source, start)))
        pos = end
        count += 1
    append(source[pos:])
    return "".join(out), count


def check_rule(rule: Rule) -> None:
    """Compile the rule against an empty document so errors surface before any file is read,
    and check each pattern is valid code of the language: ast-grep accepts a broken pattern
    silently and it then matches nothing, which reads like "no such code" to the model."""
    for pattern in _patterns(rule.rule):
        problem = pattern_problem(pattern, rule.language)
        if problem:
            raise RuleError(
                "pattern_invalid",
                f"pattern is not valid {rule.language}: {problem}. A pattern is a piece of code "
                "with $NAME / $$$NAME standing for nodes; fix the code, or use `kind` / `regex`",
            )
    try:
        SgRoot("", rule.language).root().find_all(rule.config())
    except Exception as exc:
        raise RuleError("rule_invalid", _clean_error(exc)) from exc


def _patterns(node: Any) -> list[str]:
    """Every pattern string in a rule (``pattern: str`` or ``pattern: {context: str}``)."""
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                out.append(value)
            elif key == "pattern" and isinstance(value, dict) and "selector" not in value:
                if isinstance(value.get("context"), str):
                    out.append(value["context"])
            else:
                out += _patterns(value)
    elif isinstance(node, list):
        for item in node:
            out += _patterns(item)
    return out


_METAVAR = re.compile(r"\$\$\$([A-Z_][A-Z0-9_]*)?|\$\$?([A-Z_][A-Z0-9_]*)")


def pattern_problem(pattern: str, language: str) -> str | None:
    """Where a pattern fails to parse (with the line and a caret), or None. Metavariables are
    replaced by identifiers first, as ast-grep does. Only languages oopav parses are checked."""
    from oopav.context.parsing import EXTENSIONS, error_nodes

    if language not in set(EXTENSIONS.values()):
        return None
    if _METAVAR.fullmatch(pattern.strip()):
        return None  # a lone metavariable matches any node (`kind` says which), in any language
    code = _METAVAR.sub(lambda m: "µ" + (m.group(1) or m.group(2) or "_"), pattern)
    code = code.replace("µ", "__m_")
    try:
        errors = error_nodes(code.encode(), language, limit=1)
    except Exception:
        return None
    if not errors:
        return None
    line, col, kind = errors[0]
    lines = pattern.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"{kind} at line {line}, column {col + 1}\n  {text}\n  {' ' * col}^"


def _clean_error(exc: BaseException) -> str:
    text = str(exc).split("Stack backtrace:")[0].strip()
    return re.sub(r"\n\s*\n", "\n", text)


# --- files ---------------------------------------------------------------------------------

_GLOB_CHARS = set("*?[")


def files_for(workspace: Path, paths: Iterable[str], language: str) -> list[str]:
    """Workspace-relative files of ``language`` under ``paths`` (files, dirs or globs),
    sorted, skipping hidden entries (``.git``) as the CLI does."""
    exts = LANG_EXTENSIONS[language]
    root = workspace.resolve()
    found: set[str] = set()

    def add(p: Path) -> None:
        rel = p.relative_to(root).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            return
        if p.is_file() and not p.is_symlink() and p.suffix.lower() in exts:
            found.add(rel)

    def walk(d: Path) -> None:
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
            for f in filenames:
                add(Path(dirpath) / f)

    for raw in paths:
        spec = raw.strip() or "."
        if any(c in spec for c in _GLOB_CHARS):
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [n for n in dirnames if not n.startswith(".")]
                for f in filenames:
                    full = Path(dirpath) / f
                    rel = full.relative_to(root).as_posix()
                    if fnmatch.fnmatchcase(rel, spec) or fnmatch.fnmatchcase(f, spec):
                        add(full)
            continue
        target = (root / spec).resolve()
        if target != root and root not in target.parents:
            continue
        if target.is_dir():
            walk(target)
        elif target.is_file():
            add(target)
    return sorted(found)


def find_cli() -> str:
    """The ``ast-grep`` CLI: the one installed beside this interpreter first (the wheel's, even
    when the venv is not activated), then ``ast-grep`` on PATH. ``sg`` only when it says it is
    ast-grep: on most Linux systems ``/usr/bin/sg`` is shadow-utils' "execute as group"."""
    import sys

    here = Path(sys.executable).parent
    for name in ("ast-grep", "sg"):
        cand = here / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("ast-grep")
    if found:
        return found
    sg = shutil.which("sg")
    if sg and _is_ast_grep(sg):
        return sg
    raise FileNotFoundError("ast-grep CLI not found: pip install ast-grep-cli")


def _is_ast_grep(path: str) -> bool:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "ast-grep" in (out.stdout + out.stderr).lower()


def cli_rewrite(directory: Path, rule: Rule, files: list[str]) -> dict[str, str]:
    """Reference implementation: ``ast-grep scan --update-all`` on copies; returns the new
    text of each rewritten file. Used by tests and the benchmark, not by the agent loop."""
    rule_path = directory / ".oopav-rule.yml"
    rule_path.write_text(rule.to_yaml())
    try:
        proc = subprocess.run(
            [find_cli(), "scan", "--rule", str(rule_path), "--update-all", *files],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode not in (0, 1):
            raise RuleError("rule_invalid", proc.stderr.strip() or proc.stdout.strip())
    finally:
        rule_path.unlink(missing_ok=True)
    return {f: (directory / f).read_text() for f in files}


def cli_json_matches(directory: Path, rule: Rule, files: list[str]) -> list[dict[str, Any]]:
    rule_path = directory / ".oopav-rule.yml"
    rule_path.write_text(rule.to_yaml())
    try:
        proc = subprocess.run(
            [find_cli(), "scan", "--rule", str(rule_path), "--json=compact", *files],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        rule_path.unlink(missing_ok=True)
    return json.loads(proc.stdout or "[]")
