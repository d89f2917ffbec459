"""Import management for learned rule sets (issue 26 item 3): pure, no I/O.

A rewrite often needs an import (``200`` -> ``http.StatusOK`` needs ``net/http``) or leaves one
unused (``os.path.join(a, b)`` -> ``join(a, b)`` may leave ``import os`` behind). Learned
literally, the examples' import changes go wrong on other files: an inserted import lands in
every file that lacks it, needed or not, and a deleted import goes from files that still use it.
So after the rules are learned, :func:`manage_imports` turns every import change into a
*follow-up* rule at the end of the set, applied after the rewrites:

- an import the examples insert goes only into a file that uses a name it binds (outside the
  imports) and does not import it yet;
- an import the examples delete goes only from a file where no name it binds is used any more;
- an import a rewrite's fix needs (a name the fix introduces that an example imports) is added
  where the rewrite introduced the name and the import is missing, even when no example shows
  the insertion (the example already had it);
- an import whose names a rewrite removes (``os`` in ``os.path.join($A, $B)`` -> ``join($A,
  $B)``) is dropped where nothing uses them any more — unless an example keeps it unused.

A follow-up rule is *optional* (``metadata: {optional: true}``): in a file or repository that
needs no import change it matches nothing, which is not a refusal (sandbox/apply.py). Every rule
set is checked again on the examples; a follow-up that would break one is not added, and the set
falls back to the rules as learned.

An inserted import goes into the file's *import block* (wave 3h synth10), not next to the
example's literal neighbour: after the block's last import, or where it sorts, or before the
first statement of a file without imports — the first choice that reproduces every example,
once per file (:func:`_insert_choices`).

Languages: Python, JavaScript, TypeScript (and TSX), Go, Rust. Which names an import binds is
read from its text per language (:func:`bound_names`); a wildcard import binds none and is left
alone.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ast_grep_py import SgNode

from oopav.synth.sites import has_error, parse

if TYPE_CHECKING:
    from oopav.synth.core import SynthResult, SynthRule

IMPORT_KINDS: dict[str, tuple[str, ...]] = {
    "python": ("import_statement", "import_from_statement"),
    "javascript": ("import_statement", "lexical_declaration", "variable_declaration"),
    "typescript": ("import_statement", "lexical_declaration", "variable_declaration"),
    "tsx": ("import_statement", "lexical_declaration", "variable_declaration"),
    "go": ("import_declaration", "import_spec"),
    "rust": ("use_declaration",),
}
# Where a name is used (not where it is bound by an import).
USE_KINDS: dict[str, tuple[str, ...]] = {
    "python": ("identifier",),
    "javascript": ("identifier", "shorthand_property_identifier"),
    "typescript": ("identifier", "type_identifier", "shorthand_property_identifier"),
    "tsx": ("identifier", "type_identifier", "shorthand_property_identifier"),
    "go": ("identifier", "package_identifier", "type_identifier"),
    "rust": ("identifier", "type_identifier"),
}
ROOT_KINDS = {
    "python": "module",
    "javascript": "program",
    "typescript": "program",
    "tsx": "program",
    "go": "source_file",
    "rust": "source_file",
}
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


# --- which names an import binds ------------------------------------------------------------


def _split_top(text: str) -> list[str]:
    """Comma-separated parts, not splitting inside braces."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in text:
        if c in "{(":
            depth += 1
        elif c in "})":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _python_names(text: str) -> set[str]:
    text = re.sub(r"#.*", "", text).replace("\\\n", " ")
    m = re.match(r"\s*from\s+\S+\s+import\s+(.*)$", text, re.S)
    if m:
        body = m.group(1).strip().strip("()")
        if body.strip() == "*":
            return set()
        out = set()
        for part in _split_top(body):
            words = part.split()
            out.add(words[-1] if len(words) == 3 and words[1] == "as" else words[0])
        return {n for n in out if _IDENT.match(n)}
    m = re.match(r"\s*import\s+(.*)$", text, re.S)
    if not m:
        return set()
    out = set()
    for part in _split_top(m.group(1)):
        words = part.split()
        out.add(words[-1] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0])
    return {n for n in out if _IDENT.match(n)}


def _js_binding(pattern: str) -> set[str]:
    pattern = pattern.strip()
    if pattern.startswith("{"):
        out = set()
        for part in _split_top(pattern.strip("{} ")):
            part = part.split("=")[0].strip()  # a default value
            if part.startswith("..."):
                part = part[3:]
            out.add(part.split(":")[-1].strip())
        return {n for n in out if _IDENT.match(n)}
    return {pattern} if _IDENT.match(pattern) else set()


def _js_names(text: str) -> set[str]:
    text = text.strip().rstrip(";")
    m = re.match(r"(?:const|let|var)\s+(.+?)\s*=\s*require\s*\(", text, re.S)
    if m:
        return _js_binding(m.group(1))
    m = re.match(r"import\s+(?:type\s+)?(.+?)\s+from\s+['\"]", text, re.S)
    if not m:
        return set()  # `import 'side-effect'`
    out: set[str] = set()
    for part in _split_top(m.group(1)):
        if part.startswith("{"):
            for item in _split_top(part.strip("{} ")):
                words = item.replace("type ", "", 1).split()
                if words:
                    out.add(words[-1] if len(words) == 3 and words[1] == "as" else words[0])
        elif part.startswith("*"):
            words = part.split()
            if len(words) == 3:
                out.add(words[2])
        else:
            out.add(part)
    return {n for n in out if _IDENT.match(n)}


def _go_spec_name(spec: str) -> str | None:
    spec = spec.strip()
    m = re.match(r'(?:([\w.]+)\s+)?"([^"]+)"', spec)
    if not m:
        return None
    alias, path = m.groups()
    if alias:
        return None if alias in ("_", ".") else alias
    segs = path.split("/")
    seg = segs[-1]
    if re.fullmatch(r"v\d+", seg) and len(segs) > 1:
        seg = segs[-2]
    seg = seg.split(".")[0]
    if "-" in seg:
        seg = seg.rsplit("-", 1)[-1]
    return seg if _IDENT.match(seg) else None


def _go_names(text: str) -> set[str]:
    body = text.strip()
    if body.startswith("import"):
        body = body[len("import") :].strip()
    if body.startswith("("):
        specs = [s for s in body.strip("() \n").splitlines() if s.strip()]
    else:
        specs = [body]
    return {n for s in specs if (n := _go_spec_name(re.sub(r"//.*", "", s))) is not None}


def _rust_tree(text: str, prefix: str) -> set[str]:
    text = text.strip()
    out: set[str] = set()
    m = re.match(r"^(.*?)::\{(.*)\}$", text, re.S)
    if m:
        base = m.group(1)
        for item in _split_top(m.group(2)):
            if item == "self":
                out.add(base.split("::")[-1])
            else:
                out |= _rust_tree(item, base)
        return out
    if text.endswith("*"):
        return out
    words = text.split()
    if len(words) == 3 and words[1] == "as":
        return {words[2]} if words[2] != "_" else set()
    last = text.split("::")[-1]
    if last == "self":
        last = (prefix or text).split("::")[-2] if "::" in text else prefix.split("::")[-1]
    return {last} if _IDENT.match(last) else set()


def _rust_names(text: str) -> set[str]:
    m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?use\s+(.*?);?\s*$", text, re.S)
    if not m:
        return set()
    return {n for n in _rust_tree(m.group(1).lstrip(":"), "") if n not in ("crate", "super")}


_NAMERS: dict[str, Callable[[str], set[str]]] = {
    "python": _python_names,
    "javascript": _js_names,
    "typescript": _js_names,
    "tsx": _js_names,
    "go": _go_names,
    "rust": _rust_names,
}


def bound_names(text: str, language: str) -> set[str]:
    """The names an import statement binds in its file (empty: not an import, or a wildcard)."""
    namer = _NAMERS.get(language)
    return namer(text) if namer else set()


def is_import(node: SgNode, language: str) -> bool:
    kind = node.kind()
    if kind not in IMPORT_KINDS.get(language, ()):
        return False
    if kind in ("lexical_declaration", "variable_declaration"):
        return "require(" in node.text() and bool(_js_names(node.text()))
    return True


def imports_of(source: str, language: str) -> list[SgNode]:
    """The file's import statements (Go: the specs, one per imported package)."""
    if language not in IMPORT_KINDS:
        return []
    root = parse(source, language)
    out = []
    for node in root.find_all(any=[{"kind": k} for k in IMPORT_KINDS[language]]):
        if node.kind() == "import_declaration":
            continue  # its specs are listed
        if is_import(node, language):
            out.append(node)
    return out


# --- the conditions --------------------------------------------------------------------------


def _not_in_imports(language: str) -> dict[str, Any]:
    kinds: list[dict[str, Any]] = [{"kind": k} for k in IMPORT_KINDS[language]]
    if language in ("javascript", "typescript", "tsx"):
        # A `require` declaration, not every declaration: `const t = new KyError()` uses it.
        kinds = _import_matchers(language)
    return {"not": {"inside": {"any": kinds, "stopBy": "end"}}}


def uses(names: Sequence[str], language: str, *, var: str | None = None) -> dict[str, Any]:
    """A rule: the file (the root node around the match) uses one of ``names`` outside its
    imports (``var``: the name the match captured in that metavariable instead)."""
    kinds = USE_KINDS[language]
    if var is not None:
        leaf: list[dict[str, Any]] = [{"kind": k, "pattern": var} for k in kinds]
    else:
        regex = "^(?:" + "|".join(re.escape(n) for n in sorted(names)) + ")$"
        leaf = [{"kind": k, "regex": regex} for k in kinds]
    if language == "go":
        # Wave 3t: a Go import binds a package, and a package is used only as a qualifier
        # (`path.Join`, `http.Header` as a type): gorilla/mux's local `path := …` is no use
        # of "path" (an import was added to a file that needed none).
        leaf = [
            {
                **x,
                "inside": {"kind": "selector_expression", "field": "operand", "stopBy": "neighbor"},
            }
            if x["kind"] == "identifier"
            else x
            for x in leaf
            if x["kind"] != "type_identifier"
        ]
    return {
        "inside": {
            "kind": ROOT_KINDS[language],
            "stopBy": "end",
            "has": {"any": leaf, **_not_in_imports(language), "stopBy": "end"},
        }
    }


# A name that is the last segment of a qualified reference does not need an import of its
# own (`std::future::ready(…)`, `os.path`): where ``uses_unqualified`` does not count it.
_QUALIFIED: dict[str, dict[str, Any]] = {
    "python": {"inside": {"kind": "attribute", "field": "attribute", "stopBy": "neighbor"}},
    "rust": {"inside": {"kind": "scoped_identifier", "field": "name", "stopBy": "neighbor"}},
}


def uses_unqualified(names: Sequence[str], language: str) -> dict[str, Any]:
    """:func:`uses`, counting a name only where it stands alone (not a qualified path's last
    segment: that needs no import of the name)."""
    rule = uses(names, language)
    qualified = _QUALIFIED.get(language)
    if qualified is not None:
        has = rule["inside"]["has"]
        has["any"] = [{**leaf, "not": qualified} for leaf in has["any"]]
    return rule


def bound_elsewhere(name: str, language: str) -> dict[str, Any]:
    """A rule: another import of the file (the root around the match) binds ``name`` already."""
    kinds: list[dict[str, Any]] = [{"kind": k} for k in IMPORT_KINDS[language]]
    if language in ("javascript", "typescript", "tsx"):
        kinds = _import_matchers(language)
    return {
        "inside": {
            "kind": ROOT_KINDS[language],
            "stopBy": "end",
            "has": {
                "any": kinds,
                "regex": r"(?:^|[^\w$])" + re.escape(name) + r"(?:$|[^\w$])",
                "stopBy": "end",
            },
        }
    }


def _imports_already(text: str, language: str) -> dict[str, Any]:
    """A rule: the file already has this import statement (one of the import kinds with the
    same text, layout aside)."""
    words = [re.escape(w) for w in re.findall(r"[\w$]+|[^\s\w$]", text)]
    regex = r"\s*".join(words)
    return {
        "inside": {
            "kind": ROOT_KINDS[language],
            "stopBy": "end",
            "has": {
                # `from __future__ import …` too (a kind of its own in Python).
                "any": [
                    {"kind": k}
                    for k in IMPORT_KINDS[language]
                    + (("future_import_statement",) if language == "python" else ())
                ],
                "regex": regex,
                "stopBy": "end",
            },
        }
    }


def _with(rule: dict[str, Any], *conds: dict[str, Any]) -> dict[str, Any]:
    out = dict(rule)
    out["all"] = [*rule.get("all", []), *conds]
    return out


# --- turning a rule set's import changes into follow-ups --------------------------------------


def _inserted(rule: SynthRule, *, literal: bool = False) -> str | None:
    fix = rule.fix
    if fix.startswith("$ANCHOR\n"):
        return fix[len("$ANCHOR\n") :]
    if fix.endswith("\n$ANCHOR"):
        return fix[: -len("\n$ANCHOR")]
    # The literal anchor (``pattern: const http = require('http')``, the fix the anchor and
    # the new statement): the same insertion, anchored to the example's neighbour.
    pattern = rule.rule.get("pattern")
    if literal and isinstance(pattern, str) and "$" not in pattern and pattern.strip():
        if fix.startswith(pattern + "\n"):
            return fix[len(pattern) + 1 :]
        m = re.fullmatch(r"(.*)\n[ \t]*" + re.escape(pattern.strip()), fix, re.S)
        if m:
            return m.group(1)
    return None


# --- where an inserted import goes: the file's import block (wave 3h synth10) ----------------
#
# Learned as a plain insertion, a new import is anchored to the example's neighbouring
# statement: ``has: {field: name, regex: ^(?:functools|sys)$}`` or a regex of the literal
# neighbours, so a held-out file whose import block differs gets nothing. What a user means is
# "put it in the file's import block": after the block's last import, or where it sorts among
# the others when the examples show sorted blocks, once per file.

# The top-level import statements of a language, as rule objects (JS/TS: `require`
# declarations too, not every declaration).
_REQUIRE = r"^(?:const|let|var)\s[^=]*=\s*require\s*\("


def _import_matchers(language: str) -> list[dict[str, Any]]:
    if language == "python":
        kinds = ["import_statement", "import_from_statement", "future_import_statement"]
        return [{"kind": k} for k in kinds]
    if language in ("javascript", "typescript", "tsx"):
        return [
            {"kind": "import_statement"},
            {"kind": "lexical_declaration", "regex": _REQUIRE},
            {"kind": "variable_declaration", "regex": _REQUIRE},
        ]
    if language == "go":
        return [{"kind": "import_spec"}]
    if language == "rust":
        return [{"kind": "use_declaration"}]
    return []


# Per language: the text before an import's sort key (the module it names) and what may end
# the key (every such character sorts before the key's own characters, or is listed).
_KEY_AT: dict[str, tuple[str, str, str]] = {
    # (regex before the key, regex reading the key, regex of a terminator)
    "python": (
        r"^(?:from|import)\s+",
        r"^\s*(?:from|import)\s+([\w.]+)",
        r"(?:\s|,|$)",
    ),
    "javascript": (
        r"(?:\bfrom\s*|\brequire\s*\(\s*|^import\s*)['\"]",
        r"(?:\bfrom\s*|\brequire\s*\(\s*|^import\s*)['\"]([^'\"]*)['\"]",
        r"['\"]",
    ),
    "go": (r"\"", r"\"([^\"]*)\"", r"\""),
    "rust": (
        r"^(?:pub(?:\([^)]*\))?\s+)?use\s+",
        r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;{\s]*)",
        r"(?:;|\s|\{)",
    ),
}
_KEY_AT["typescript"] = _KEY_AT["tsx"] = _KEY_AT["javascript"]


def _sort_key(text: str, language: str) -> str | None:
    spec = _KEY_AT.get(language)
    if spec is None:
        return None
    m = re.search(spec[1], text.strip(), re.S)
    return m.group(1) if m and m.group(1) else None


def _fold(language: str) -> bool:
    # isort and ruff compare Python modules case-insensitively; gofmt, rustfmt and the JS
    # sorters byte-wise.
    return language == "python"


def _below(c: str, fold: bool) -> str:
    """A character class of the printable characters that sort before ``c`` (and controls)."""
    key = c.lower() if fold else c
    chars = [chr(x) for x in range(0x20, 0x7F) if (chr(x).lower() if fold else chr(x)) < key]
    body = "".join("\\" + ch if ch in "\\]^-[&~|" else ch for ch in chars)
    return "[\\x00-\\x1f" + body + "]"


def _same(c: str, fold: bool) -> str:
    if fold and c.lower() != c.upper():
        return "[" + c.lower() + c.upper() + "]"
    return re.escape(c)


def _lt_regex(key: str, language: str, *, or_equal: bool = False, rustfmt: bool = False) -> str:
    """A regex an import statement's text matches when the module it names sorts before
    ``key`` (a proper prefix of it, or a smaller character where they first differ; or the
    same module, ``or_equal``)."""
    before, _, term = _KEY_AT[language]
    fold = _fold(language)
    alts = []
    # ``rustfmt``: rustfmt 1.x sorts paths from `self`, `super` and `crate` before the others,
    # in that order (wave 3l): `use super::…; use crate::BoxError; use bytes::…` (older
    # files sort byte-wise: `use HttpTryFrom; use self::…`).
    specials = ["self", "super", "crate"] if rustfmt else []
    first = re.split(r"::|[;{\s]", key)[0]
    at = specials.index(first) if first in specials else len(specials)
    alts += [re.escape(s) + r"(?:::|[;{\s])" for s in specials[:at]]
    for i, c in enumerate(key):
        if at < len(specials) and i < len(first):
            continue  # the same special first segment, compared after it
        prefix = "".join(_same(x, fold) for x in key[:i])
        alts.append(prefix + _below(c, fold))
        if i:
            # rustfmt: a list (`crate::{…}`) sorts after a path at its level, not before.
            alts.append(prefix + (r"(?:;|\s)" if specials else term))
    if or_equal:
        alts.append("".join(_same(x, fold) for x in key) + term)
    return before + "(?:" + "|".join(alts) + ")"


def _block_alternatives(
    new: str, language: str, root_kind: str
) -> list[tuple[list[tuple[dict[str, Any], str]], str]]:
    """Rule sets (rule, fix) that insert ``new`` into a file's import block, each with what
    it does, most plain first: after the block's last import; where it sorts (after the last
    import that sorts before it, or before the first when none does); before the first
    import that sorts after it."""
    matchers = _import_matchers(language)
    if not matchers:
        return []
    body = new.lstrip(" \t")
    indent = new[: len(new) - len(body)]
    body = body.rstrip("\n")
    after_fix = "$ANCHOR\n" + indent + body
    before_fix = body + "\n" + indent + "$ANCHOR"
    container = (
        {"kind": "import_spec_list", "stopBy": "neighbor"}
        if language == "go"
        else {"kind": root_kind, "stopBy": "neighbor"}
    )
    any_import = {"any": matchers}
    last = {
        "any": matchers,
        "pattern": "$ANCHOR",
        "inside": container,
        "not": {"precedes": {**any_import, "stopBy": "end"}},
    }
    out: list[tuple[list[tuple[dict[str, Any], str]], str]] = [
        ([(last, after_fix)], "after the file's last import")
    ]
    key = _sort_key(new, language)
    # Rust: rustfmt 1.x's order (`self`, `super`, `crate` first) among the private `use`s
    # (a `pub use` re-export block is a group of its own), then byte order among all (wave 3l).
    modes = (True, False) if language == "rust" and not body.startswith("pub") else (False,)
    for rustfmt in modes if key is not None else ():
        assert key is not None
        lt = _lt_regex(key, language, rustfmt=rustfmt)
        # `from __future__` stays first: it takes no part in the order.
        sortable = {"any": [m for m in matchers if m.get("kind") != "future_import_statement"]}
        if rustfmt:
            sortable = {"any": [{"kind": "use_declaration", "not": {"regex": r"^pub\b"}}]}
        after_lt = {
            **sortable,
            "pattern": "$ANCHOR",
            "regex": lt,
            "inside": container,
            "not": {"precedes": {**sortable, "regex": lt, "stopBy": "end"}},
        }
        first = {
            **sortable,
            "pattern": "$ANCHOR",
            "inside": container,
            "all": [
                {"not": {"follows": {**sortable, "stopBy": "end"}}},
                {
                    "not": {
                        "inside": {
                            "kind": container["kind"],
                            "stopBy": "neighbor",
                            "has": {**sortable, "regex": lt},
                        }
                    }
                },
            ],
        }
        which = "`use`s (rustfmt)" if rustfmt else "imports"
        out.append(
            (
                [(after_lt, after_fix), (first, before_fix)],
                f"where it sorts among the file's {which}",
            )
        )
    # Wave 3q: before the first import (in the file's order) that sorts after it, or after
    # the last import where none does. In a block of sorted groups this is where it sorts
    # in the first group that has a later module — "after the last import that sorts before
    # it" reaches past the group into a later one. reqwest ba7b2a75's `use
    # std::future::Future;` went between `use std::fs::File;` and `use std::io…` of a std
    # group that a `use bytes…; use futures…` group followed, and after the last `use` of a
    # file with no std group (no section of its own).
    for rustfmt in modes if key is not None else ():
        assert key is not None
        le = _lt_regex(key, language, or_equal=True, rustfmt=rustfmt)
        sortable = {"any": [m for m in matchers if m.get("kind") != "future_import_statement"]}
        if rustfmt:
            sortable = {"any": [{"kind": "use_declaration", "not": {"regex": r"^pub\b"}}]}
        later = {"all": [sortable, {"not": {"regex": le}}]}
        before_gt = {
            **later,
            "pattern": "$ANCHOR",
            "inside": container,
            "not": {"follows": {**later, "stopBy": "end"}},
        }
        none_later = {
            "any": matchers,
            "pattern": "$ANCHOR",
            "inside": container,
            "all": [
                {"not": {"precedes": {**any_import, "stopBy": "end"}}},
                {"not": {"inside": {**container, "has": later}}},
            ],
        }
        which = "`use`s that sorts after it (rustfmt)" if rustfmt else "imports that sorts after it"
        out.append(
            (
                [(before_gt, before_fix), (none_later, after_fix)],
                f"before the first of the file's {which}",
            )
        )
    return out


# --- sections: isort's and rustfmt's groups (wave 3k synth19) --------------------------------
#
# A sorted Python or Rust import block is sorted within *sections* separated by blank lines:
# isort's `__future__`, standard library, third party (and first party), local (relative)
# imports; Rust's `std`/`core`/`alloc` before the rest. "Where it sorts" over the whole block
# put attrs' `import types` after `from . import _config` (`.` sorts first), and a file whose
# block has no section of the new import (`import pytest` only) got it among the third-party
# ones. Here the new import goes where it sorts among the imports of its own section (isort:
# `import m` lines before `from m import` lines), or, where the file has none, opens its
# section: after the last import of an earlier section or before the first of a later one,
# a blank line between, as the examples show.

_STDLIB = sorted(n for n in sys.stdlib_module_names if not n.startswith("_"))
_PY_STDLIB = r"^(?:import|from)\s+(?:" + "|".join(_STDLIB) + r")(?:[.\s,]|$)"
_PY_LOCAL = r"^from\s+\."
_GO_STD = r'^(?:[\w.]+\s+)?"[^"./]+(?:/|")'
_RUST_STD = r"^(?:pub(?:\([^)]*\))?\s+)?use\s+(?:::)?(?:std|core|alloc)\b"
# JS/TS: eslint-plugin-import's `order` groups, Node's built-in modules, packages, parent
# (`../`) and sibling (`./`) modules.
_NODE_BUILTINS = (
    "assert async_hooks buffer child_process cluster console constants crypto dgram "
    "diagnostics_channel dns domain events fs http http2 https inspector module net os path "
    "perf_hooks process punycode querystring readline repl stream string_decoder sys timers "
    "tls trace_events tty url util v8 vm wasi worker_threads zlib"
).split()
_JS_SPEC = r"(?:\bfrom\s*|\brequire\s*\(\s*|^import\s*)['\"]"
_JS_BUILTIN = _JS_SPEC + r"(?:node:|(?:" + "|".join(_NODE_BUILTINS) + r")(?:/|['\"]))"


def _section_rules(language: str) -> list[dict[str, Any]]:
    """The sections of a language's import block, in order, as rule objects."""
    if language == "python":
        plain = [{"kind": "import_statement"}, {"kind": "import_from_statement"}]
        return [
            {"kind": "future_import_statement"},
            {"any": plain, "regex": _PY_STDLIB},
            {
                "any": plain,
                "all": [{"not": {"regex": _PY_STDLIB}}, {"not": {"regex": _PY_LOCAL}}],
            },
            {"any": plain, "regex": _PY_LOCAL},
        ]
    if language == "rust":
        use = {"kind": "use_declaration"}
        return [{**use, "regex": _RUST_STD}, {**use, "not": {"regex": _RUST_STD}}]
    if language == "go":
        # gofmt/goimports: the standard library (no dot in the path's first element) first.
        spec = {"kind": "import_spec"}
        return [{**spec, "regex": _GO_STD}, {**spec, "not": {"regex": _GO_STD}}]
    if language in ("javascript", "typescript", "tsx"):
        imports = {"any": _import_matchers(language)}
        return [
            {**imports, "regex": _JS_BUILTIN},
            {
                **imports,
                "all": [{"regex": _JS_SPEC + "[^.]"}, {"not": {"regex": _JS_BUILTIN}}],
            },
            {**imports, "regex": _JS_SPEC + r"\.\.(?:/|['\"])"},
            {**imports, "regex": _JS_SPEC + r"\.(?:/|['\"])"},
        ]
    return []


def _section_of(text: str, language: str) -> int | None:
    body = text.strip()
    if language == "python":
        if re.match(r"from\s+__future__\b", body):
            return 0
        if re.match(_PY_STDLIB, body):
            return 1
        return 3 if re.match(_PY_LOCAL, body) else 2
    if language == "rust":
        return 0 if re.match(_RUST_STD, body) else 1
    if language == "go":
        return 0 if re.match(_GO_STD, body) else 1
    if language in ("javascript", "typescript", "tsx"):
        if re.search(_JS_BUILTIN, body):
            return 0
        if re.search(_JS_SPEC + r"\.\.(?:/|['\"])", body):
            return 2
        if re.search(_JS_SPEC + r"\.(?:/|['\"])", body):
            return 3
        return 1 if re.search(_JS_SPEC, body) else None
    return None


def _section_alternatives(
    new: str, language: str, root_kind: str
) -> list[list[tuple[dict[str, Any], str]]]:
    """Rule sets that insert ``new`` where it sorts within its section of the import block
    (a new section where the file has none: with a blank line between sections, then
    without; JS/TS the other way round)."""
    sections = _section_rules(language)
    at = _section_of(new, language)
    key = _sort_key(new, language)
    if not sections or at is None or key is None or (at == 0 and language == "python"):
        return []
    # Rust: in rustfmt 1.x's order first, then byte-wise (wave 3l).
    out: list[list[tuple[dict[str, Any], str]]] = []
    for rustfmt in (True, False) if language == "rust" else (False,):
        out += _section_alternatives_by(new, language, root_kind, rustfmt=rustfmt)
    return out


def _section_alternatives_by(
    new: str, language: str, root_kind: str, *, rustfmt: bool
) -> list[list[tuple[dict[str, Any], str]]]:
    sections = _section_rules(language)
    at = _section_of(new, language)
    key = _sort_key(new, language)
    assert at is not None and key is not None
    body = new.strip(" \t\n")
    # A second import of the same module goes after the first (`import url = require('url')`
    # then `import {URL} from 'url'`).
    lt = _lt_regex(key, language, or_equal=language != "python", rustfmt=rustfmt)
    if language == "python":
        # isort's default order within a section: `import m` lines, then `from m import`.
        before = _KEY_AT[language][0]
        alts = lt[len(before) :]
        if body.startswith("from"):
            lt = r"(?:^import\s|^from\s+" + alts + ")"
        else:
            lt = r"^import\s+" + alts
    same = sections[at]
    root = {"kind": root_kind, "stopBy": "neighbor"}
    tab = ""
    if language == "go":
        # Go's specs sit in the declaration's list, one a line, tab-indented (ast-grep
        # re-indents a fix by spaces only).
        root = {"kind": "import_spec_list", "stopBy": "neighbor"}
        tab = "\t"
    same_lt = {"all": [same, {"regex": lt}]}

    def file_has(rule: dict[str, Any]) -> dict[str, Any]:
        return {"inside": {**root, "has": rule}}

    after_lt = {
        "all": [same, {"regex": lt}],
        "pattern": "$ANCHOR",
        "inside": root,
        "not": {"precedes": {**same_lt, "stopBy": "end"}},
    }
    first = {
        "all": [
            same,
            {"not": {"follows": {**same, "stopBy": "end"}}},
            {"not": file_has(same_lt)},
        ],
        "pattern": "$ANCHOR",
        "inside": root,
    }
    # Variant B: before the first import of its section that does not sort before it (where
    # a section is not quite sorted: got's `./helpers/invalid-url.js` after
    # `./helpers/with-server.js`, the new import before the latter), else after the last.
    not_lt = {"all": [same, {"not": {"regex": lt}}]}
    before_gt = {
        "all": [
            same,
            {"not": {"regex": lt}},
            {"not": {"follows": {**not_lt, "stopBy": "end"}}},
        ],
        "pattern": "$ANCHOR",
        "inside": root,
    }
    last = {
        "all": [
            same,
            {"not": {"precedes": {**same, "stopBy": "end"}}},
            {"not": file_has(not_lt)},
        ],
        "pattern": "$ANCHOR",
        "inside": root,
    }
    earlier = {"any": sections[:at]} if at else None
    later = {"any": sections[at + 1 :]} if at + 1 < len(sections) else None
    out: list[list[tuple[dict[str, Any], str]]] = []
    # Python and Rust separate sections by a blank line; JS/TS sorters mostly do not.
    gaps = ("\n", "\n\n") if language in ("javascript", "typescript", "tsx") else ("\n\n", "\n")
    for gap in gaps:
        opens: list[tuple[dict[str, Any], str]] = []
        if earlier is not None:
            rule = {
                "all": [
                    earlier,
                    {"not": {"precedes": {**earlier, "stopBy": "end"}}},
                    {"not": file_has(same)},
                ],
                "pattern": "$ANCHOR",
                "inside": root,
            }
            opens.append((rule, "$ANCHOR" + gap + tab + body))
        if later is not None:
            conds: list[dict[str, Any]] = [
                later,
                {"not": {"follows": {**later, "stopBy": "end"}}},
                {"not": file_has(same)},
            ]
            if earlier is not None:
                conds.append({"not": file_has(earlier)})
            rule = {"all": conds, "pattern": "$ANCHOR", "inside": root}
            opens.append((rule, body + gap + tab + "$ANCHOR"))
        after_fix = "$ANCHOR\n" + tab + body
        before_fix = body + "\n" + tab + "$ANCHOR"
        out.append([(after_lt, after_fix), (first, before_fix), *opens])
        out.append([(before_gt, before_fix), (last, after_fix), *opens])
    return out


def _future_alternative(new: str) -> list[tuple[dict[str, Any], str]]:
    """``from __future__ import …`` goes first in a Python file: before its first statement
    or comment, or right after the module docstring (a `#!` or coding line stays first: such
    a file gets nothing)."""
    body = new.strip(" \t\n")
    root = {"kind": "module", "stopBy": "neighbor"}
    docstring = {"kind": "expression_statement", "regex": "^[rRuUbBfF]*[\"']"}
    kinds = [{"kind": k} for k in [*_STATEMENTS["python"], *IMPORT_KINDS["python"], "comment"]]
    kinds.append({"kind": "future_import_statement"})
    first = {
        "any": kinds,
        "pattern": "$ANCHOR",
        "nthChild": 1,
        "inside": root,
        "all": [
            {"not": docstring},
            {"not": {"kind": "comment", "regex": "^#!|coding[:=]"}},
        ],
    }
    doc = {**docstring, "pattern": "$ANCHOR", "nthChild": 1, "inside": root}
    return [(first, body + "\n$ANCHOR"), (doc, "$ANCHOR\n" + body)]


def _future_section(new: str) -> list[tuple[dict[str, Any], str, dict[str, Any] | None]]:
    """The same place as :func:`_future_alternative`, laid out as isort lays out its
    ``__future__`` section: one blank line between it and the imports that follow, whether
    the docstring had one below it or not (wave 3q: uvicorn 32fa92fb added the line after
    one docstring that a blank line followed and after one that an import followed, a blank
    line below it in both; every held-out file, without a docstring, got it and a blank
    line at its top). After a docstring that code, not an import, follows, the lines
    between stay as they were. (rule, fix, expand_start) each."""
    body = new.strip(" \t\n")
    (first, _), (doc, doc_fix) = _future_alternative(new)
    docstring = {"kind": "expression_statement", "regex": "^[rRuUbBfF]*[\"']"}
    imports = [{"kind": k} for k in IMPORT_KINDS["python"]]
    # The import right after the docstring, its range grown back over the docstring: the
    # whitespace between them is rewritten, not kept.
    after_doc = {
        "any": imports,
        "pattern": "$ANCHOR",
        "nthChild": 2,
        "inside": {"kind": "module", "stopBy": "neighbor"},
        "follows": {**docstring, "pattern": "$DOC", "nthChild": 1, "stopBy": "neighbor"},
    }
    doc_code = {**doc, "not": {"precedes": {"any": imports, "stopBy": "neighbor"}}}
    return [
        (first, body + "\n\n$ANCHOR", None),
        (after_doc, "$DOC\n" + body + "\n\n$ANCHOR", docstring),
        (doc_code, doc_fix, None),
    ]


# What may come before a file's imports: comments, a docstring or a directive
# (`'use strict';`), Rust inner attributes (`#![…]`).
_PREAMBLE: dict[str, list[str]] = {
    "python": ["comment"],
    "javascript": ["comment"],
    "typescript": ["comment"],
    "tsx": ["comment"],
    "rust": ["line_comment", "block_comment", "inner_attribute_item"],
}


def _preamble(language: str) -> list[dict[str, Any]]:
    return [
        *({"kind": k} for k in _PREAMBLE[language]),
        {"kind": "expression_statement", "regex": "^[\"'`]"},
    ]


_JS_STATEMENTS = [
    "expression_statement",
    "function_declaration",
    "class_declaration",
    "lexical_declaration",
    "variable_declaration",
    "export_statement",
    "if_statement",
]
# The statements a file's first import may go before.
_STATEMENTS: dict[str, list[str]] = {
    "python": [
        "expression_statement",
        "function_definition",
        "class_definition",
        "decorated_definition",
        "if_statement",
        "try_statement",
        "with_statement",
        "for_statement",
    ],
    "javascript": _JS_STATEMENTS,
    "typescript": [*_JS_STATEMENTS, "interface_declaration", "type_alias_declaration"],
    "tsx": [*_JS_STATEMENTS, "interface_declaration", "type_alias_declaration"],
    "rust": [
        "function_item",
        "struct_item",
        "enum_item",
        "impl_item",
        "trait_item",
        "mod_item",
        "const_item",
        "static_item",
        "type_item",
        "attribute_item",
        "macro_invocation",
    ],
}


def _no_import_rule(new: str, language: str) -> tuple[dict[str, Any], str] | None:
    """A file without any import: the new one goes before its first statement (after the
    comments, docstring or directive that open it), a blank line between."""
    if language not in ("python", "javascript", "typescript", "tsx", "rust"):
        return None
    body = new.strip(" \t\n")
    rule = {
        # A kind for the CLI ("Rule must specify a set of AST kinds").
        "any": [{"kind": k} for k in _STATEMENTS[language]],
        "pattern": "$ANCHOR",
        "inside": {"kind": ROOT_KINDS[language], "stopBy": "neighbor"},
        "all": [
            {"not": {"any": _preamble(language)}},
            {
                "not": {
                    "follows": {
                        "regex": "[\\s\\S]",
                        "not": {"any": _preamble(language)},
                        "stopBy": "end",
                    }
                }
            },
            {
                "not": {
                    "inside": {
                        "kind": ROOT_KINDS[language],
                        "stopBy": "neighbor",
                        "has": {"any": _import_matchers(language)},
                    }
                }
            },
        ],
    }
    return rule, body + "\n\n$ANCHOR"


def _deleted_imports(rule: SynthRule, befores: Sequence[str]) -> list[SgNode] | None:
    """The import nodes a deletion rule matches in the examples (None: it deletes something
    that is not an import)."""
    found: list[SgNode] = []
    cfg = rule.as_rule().config()
    for text in befores:
        root = parse(text, rule.language)
        for node in root.find_all(cfg):
            if not is_import(node, rule.language):
                return None
            found.append(node)
    return found


def _names_in(text: str) -> set[str]:
    return {w for w in _WORD.findall(re.sub(r"\$\$?\$?[A-Z_][A-Z0-9_]*", " ", text))}


def _anchor_rules(language: str, statement: SgNode) -> list[tuple[dict[str, Any], str]]:
    """Where a needed import goes: after the file's last import (Go: after the last spec of
    a parenthesised list, or after a single-spec declaration as a declaration of its own)."""
    text = statement.text()
    # ast-grep indents a fix's further lines as written: give the new line the example's own
    # indentation (a tab in Go's import list).
    line_start = statement.range().start.column
    indent = " " * line_start
    parent = statement.parent()
    if language == "go" and parent is not None and parent.kind() == "import_spec_list":
        indent = "\t"
    text = indent + text if language == "go" else text
    if language == "go":
        spec = {
            "kind": "import_spec",
            "pattern": "$ANCHOR",
            "inside": {"kind": "import_spec_list", "stopBy": "neighbor"},
            "not": {"precedes": {"kind": "import_spec", "stopBy": "end"}},
        }
        single = {
            "kind": "import_declaration",
            "pattern": "$ANCHOR",
            "not": {"has": {"kind": "import_spec_list"}},
            "all": [{"not": {"precedes": {"kind": "import_declaration", "stopBy": "end"}}}],
        }
        return [(spec, "$ANCHOR\n" + text), (single, "$ANCHOR\nimport " + text.strip())]
    kinds = [
        k
        for k in IMPORT_KINDS[language]
        if k not in ("lexical_declaration", "variable_declaration")
    ]
    if statement.kind() not in kinds:  # a `require`: after the last one of its own kind
        kinds = [statement.kind()]
    parent = statement.parent()
    if parent is None:
        return []
    anchor = {
        "any": [{"kind": k} for k in kinds],
        "pattern": "$ANCHOR",
        "inside": {"kind": parent.kind(), "stopBy": "neighbor"},
        "not": {"precedes": {"any": [{"kind": k} for k in kinds], "stopBy": "end"}},
    }
    return [(anchor, "$ANCHOR\n" + text)]


def _import_edit(rule: SynthRule, befores: Sequence[str]) -> bool:
    """Whether the rule only edits imports (a spec added to Go's import list, learned as a
    rewrite of the list): every node it matches in the examples is an import or inside one."""
    cfg = rule.as_rule().config()
    seen = False
    lang = rule.language
    containers = {"import_spec_list", "import_declaration"}
    for text in befores:
        for node in parse(text, lang).find_all(cfg):
            seen = True
            if node.kind() in containers or is_import(node, lang):
                continue
            if any(
                a.kind() in IMPORT_KINDS[lang] or a.kind() in containers for a in node.ancestors()
            ):
                continue
            return False
    return seen


def manage_imports(
    result: SynthResult,
    examples: Sequence[tuple[str, str]],
    check: Callable[[SynthResult], bool],
) -> list[str]:
    """Rewrite ``result``'s import changes as follow-ups (see the module doc), in place, when
    the examples (``(before, after)`` pairs) are still reproduced (``check``); returns notes."""
    lang = result.language
    if lang not in IMPORT_KINDS or not result.rules:
        return []
    befores = [b for b, _ in examples]
    afters = [a for _, a in examples]
    # An after text that does not parse where its before text did: the edit broke it. A file
    # that does not parse elsewhere (Rust 2015's `try!`) keeps its imports managed (wave 3k).
    if any(has_error(parse(a, lang)) and not has_error(parse(b, lang)) for b, a in examples):
        return []
    rewrites: list[SynthRule] = []
    inserts: list[SynthRule] = []
    deletes: list[SynthRule] = []
    notes: list[str] = []
    inserted_names: set[str] = set()
    deleted_texts: set[str] = set()
    inserted_texts: set[str] = set()
    last_guard: dict[str, Any] | None = None
    # Per inserted import: where it sits in `inserts`, and its alternatives (rules, note).
    insert_choices: list[tuple[int, list[tuple[list[SynthRule], str]]]] = []
    # A deletion's layout companion comes before its rule (synth-exact, wave 3d: the same
    # statement with the wider gap before it); it takes the guard its rule gets.
    gap: SynthRule | None = None
    for i, r in enumerate(result.rules):
        nxt = result.rules[i + 1] if i + 1 < len(result.rules) else None
        if (
            r.companion
            and gap is None
            and nxt is not None
            and not nxt.companion
            and (nxt.expand_start or nxt.expand_end)
            and (r.expand_start is None) != (nxt.expand_start is None)
        ):
            gap = r
            continue
        new = _inserted(r, literal=True)
        if new is not None and _all_imports(new, lang):
            if new.strip() in inserted_texts:
                # The same import inserted at another anchor (one rule per example's
                # neighbour): one insertion into the import block covers both.
                continue
            inserted_texts.add(new.strip())
            names = bound_names(new, lang)
            inserted_names |= names
            choices = _insert_choices(r, new, lang, names, befores)
            if choices:
                # The first choice for now; `_choose` below keeps the first that
                # reproduces every example.
                insert_choices.append((len(inserts), choices))
                inserts.extend(choices[0][0])
                notes.append("")  # filled in by `_choose`
                continue
        if r.companion and last_guard is not None:
            # The same deletion first/last in a block (it may match nothing in the examples).
            deletes.append(replace(r, rule=_with(r.rule, last_guard), follow_up="import"))
            continue
        last_guard = None
        if (r.expand_start or r.expand_end) and not r.companion:
            # A name deleted from an import's list (wave 3l): only where nothing uses it.
            item_guard = _item_deletion_guard(r, befores, lang)
            if item_guard is not None:
                deletes.append(replace(r, rule=_with(r.rule, item_guard), follow_up="import"))
                notes.append(f"{r.id}: deletes a name from an import list only where unused")
                continue
        if r.expand_start or r.expand_end:
            nodes = _deleted_imports(r, befores)
            if nodes:
                sets = {frozenset(bound_names(n.text(), lang)) for n in nodes}
                guard: dict[str, Any] | None = None
                if len(sets) == 1 and next(iter(sets)):
                    guard = {"not": uses(sorted(next(iter(sets))), lang)}
                else:
                    var = _name_var(r, nodes, lang)
                    if var is not None:
                        guard = {"not": uses([], lang, var=var)}
                if guard is not None:
                    last_guard = guard
                    deleted_texts |= {n.text() for n in nodes}
                    if gap is not None:
                        deletes.append(
                            replace(gap, rule=_with(gap.rule, guard), follow_up="import")
                        )
                        gap = None
                    deletes.append(replace(r, rule=_with(r.rule, guard), follow_up="import"))
                    if not r.companion:
                        notes.append(f"{r.id}: deletes an import only where it is no longer used")
                    continue
        listed = _list_added(r, examples, lang) if gap is None else None
        list_choices = _list_rules(r, listed, examples, lang) if listed is not None else None
        if listed is not None and list_choices:
            # A name added to an import's list (wave 3l): into the file's own list of that
            # module, where it sorts, only where the name is used.
            inserted_names.add(listed)
            # Last, the rule as learned — but still only where the name is used (wave 3m: a
            # use-list insertion kept as learned added axum's `ready` to 23 files of the
            # repository that never use it); then as learned.
            # First where the file uses the name on its own (not `x::ready`) and no other
            # import binds it yet; then where it uses it on its own.
            # The rule as learned, guarded, the strictest guard the examples allow first: the
            # file uses the name on its own (not `x::ready`) and no other import binds it
            # yet; then it uses the name at all (a rewrite of the same change may unqualify
            # it: axum's `futures_util::ready!` -> `ready!`).
            unbound = {"not": bound_elsewhere(listed, lang)}
            guarded = []
            for guard, why in (
                (uses_unqualified([listed], lang), "is used on its own"),
                (uses([listed], lang), "is used"),
            ):
                used = replace(r, rule=_with(r.rule, guard))
                free = replace(used, rule=_with(used.rule, unbound))
                guarded += [
                    ([free], f"{r.id}: only where `{listed}` {why} and not imported yet"),
                    ([used], f"{r.id}: only where `{listed}` {why}"),
                ]
            insert_choices.append((len(inserts), [*list_choices, *guarded, ([r], "")]))
            inserts.extend(list_choices[0][0])
            notes.append("")
            continue
        one = _added_import(r, examples, lang)
        if gap is None and one is not None and not _introduces(result.rules, r, one, lang, befores):
            # An import list rewritten to hold one more import (Go's `import (...)`, learned
            # literally): the same insertion into any file's import block.
            choices = _insert_choices(r, one, lang, bound_names(one, lang), befores)
            inserted_names |= bound_names(one, lang)
            insert_choices.append((len(inserts), choices))
            inserts.extend(choices[0][0])
            notes.append("")
            continue
        if gap is not None:
            rewrites.append(gap)
            gap = None
        rewrites.append(r)
    # Imports a rewrite needs or leaves unused that no example inserts or deletes itself.
    added_for: list[SynthRule] = []
    dropped_for: list[SynthRule] = []
    drop_notes: list[str] = []
    renamed_for: list[SynthRule] = []
    rename_notes: list[str] = []
    renamed_pairs: set[tuple[str, str]] = set()
    needed_alone: set[str] = set()
    import_edits = [r for r in rewrites if _import_edit(r, befores)]
    for r in rewrites:
        if r.expand_start or r.expand_end or _inserted(r) is not None or r in import_edits:
            continue
        pattern = r.rule.get("pattern")
        pattern_text = str(
            pattern.get("context", "") if isinstance(pattern, dict) else pattern or ""
        )
        introduced = _names_in(r.fix) - _names_in(pattern_text)
        pair = _renamed(r, befores)
        if pair is not None and (
            pair in renamed_pairs
            or _renames_imports(r, pair[0], lang)  # the rule reaches the import's name itself
            or not any(_importable(b, pair[0], lang) for b in befores)
        ):
            pair = None
        follow = _rename_import(*pair, lang) if pair is not None else None
        if pair is not None and follow is not None:
            renamed_pairs.add(pair)
            renamed_for.append(_follow_up(r, follow, pair[1], lang))
            rename_notes.append(
                f"{r.id} renames `{pair[0]}`: renamed in the file's import where the file "
                "uses the new name only"
            )
        for name in sorted(introduced - inserted_names):
            for before, after in examples:
                imp = next(
                    (n for n in imports_of(after, lang) if name in bound_names(n.text(), lang)),
                    None,
                )
                if imp is None:
                    continue
                if imp.text() not in before and imp.text() in r.apply(before)[0]:
                    break  # the rewrite edits the import itself (a rename): nothing to add
                listed_for = _list_rules(r, name, [(before, after)], lang)
                no_list: list[dict[str, Any]] = []
                if listed_for:
                    # The example's list of that module gained the name (wave 3l): the file's
                    # own list gains it; a file without such a list gets the statement.
                    added_for.extend(listed_for[0][0])
                    found = _find_item(after, name, lang)
                    if found is not None:
                        root = {"kind": ROOT_KINDS[lang], "stopBy": "end"}
                        has = {**found[2], "stopBy": "end"}
                        no_list.append({"not": {"inside": {**root, "has": has}}})
                for rule, fix in _needed_placement(r, imp, before, after, lang):
                    rule = _with(
                        rule,
                        uses([name], lang),
                        {"not": _imports_already(imp.text(), lang)},
                        # Wave 3t: nor where another import binds the name already (warp's
                        # `use self::sealed::{…, Response}` got `use ::reply::{Reply,
                        # Response}` too: a second import of a name does not compile).
                        {"not": bound_elsewhere(name, lang)},
                        *no_list,
                    )
                    added_for.append(_follow_up(r, rule, fix, lang))
                    if bound_names(imp.text(), lang) == {name}:
                        needed_alone.add(name)
                inserted_names.add(name)
                notes.append(f"{r.id} needs `{imp.text().strip()[:60]}`: added where it is missing")
                break
        removed = _names_in(pattern_text) - _names_in(r.fix)
        list_losses = _names_lost(examples, lang) if removed else set()
        for before in befores:
            for imp in imports_of(before, lang):
                names = bound_names(imp.text(), lang)
                if not names or not names <= removed or imp.text() in deleted_texts:
                    continue
                deleted_texts.add(imp.text())
                # Wave 3t: the import goes with the line break before it, back to the
                # statement above: the blank lines below it stay (tomlkit 9cf42c61: joined
                # to the next statement, the last import took the two blank lines between
                # the imports and the class with it). The first statement of a file goes
                # with the line break after it, forward to the statement below.
                unused = {"not": uses(sorted(names), lang)}
                after_prev = {
                    "pattern": imp.text(),
                    "follows": {"pattern": "$PREV", "stopBy": "neighbor"},
                    "all": [unused],
                }
                first = {
                    "pattern": imp.text(),
                    "precedes": {"pattern": "$NEXT", "stopBy": "neighbor"},
                    "all": [
                        unused,
                        {"not": {"follows": {"pattern": "$ANY", "stopBy": "neighbor"}}},
                    ],
                }
                dropped_for.append(
                    replace(
                        _follow_up(r, after_prev, "$PREV", lang),
                        expand_start={"pattern": "$PREV"},
                    )
                )
                dropped_for.append(
                    replace(
                        _follow_up(r, first, "$NEXT", lang),
                        expand_end={"pattern": "$NEXT"},
                    )
                )
                drop_notes.append(
                    f"{r.id} may leave `{imp.text().strip()[:60]}` unused: dropped where it is"
                )
                drop_notes.append("")  # the same drop, for a file's first statement
            for imp in imports_of(before, lang):
                # A name of a list that keeps others (wave 3l): the name alone goes — where
                # an example shows a list losing it (a commit's other edits may keep it:
                # axum's `body::{self, BoxBody}` after `Response<BoxBody>` -> `Response`).
                names = bound_names(imp.text(), lang)
                for name in sorted(names & removed if names - removed else set()):
                    found = _find_item(imp.text(), name, lang) if lang != "go" else None
                    key = f"{imp.text()}\0{name}"
                    if found is None or key in deleted_texts or name not in list_losses:
                        continue
                    deleted_texts.add(key)
                    for extra in _item_drops(r, name, found[1], found[2], lang):
                        dropped_for.append(extra)
                        drop_notes.append(
                            f"{r.id} may leave `{name}` unused: dropped from its import list "
                            "where it is"
                        )
    if not (inserts or deletes or added_for or dropped_for or renamed_for):
        return []
    original = list(result.rules)
    n = len(original)
    fresh = []
    for extra in [*added_for, *renamed_for, *dropped_for]:
        n += 1
        fresh.append(replace(extra, id=f"synth-{n}"))
    k = len(added_for) + len(renamed_for)
    added_for, renamed_for, dropped_for = (
        fresh[: len(added_for)],
        fresh[len(added_for) : k],
        fresh[k:],
    )
    result.rules = rewrites + inserts + added_for + deletes
    if insert_choices:
        chosen = _choose(result, rewrites, inserts, added_for, deletes, insert_choices, check)
        if chosen is None:
            result.rules = original
            return []
        notes = [n for n in notes if n]
        notes += [n for _, choices in insert_choices for rules, n in choices[:1] if n]
    elif not check(result):
        result.rules = original
        return []
    # A rule learned as a rewrite of the import list (Go's `import (...)` with one more spec)
    # adds, literally, what a needed-import follow-up now adds where it is needed: drop it.
    for r in import_edits:
        if not needed_alone:
            break
        added = set().union(
            *(bound_names(n.text(), lang) for a in afters for n in imports_of(a, lang))
        )
        had = set().union(
            *(bound_names(n.text(), lang) for b in befores for n in imports_of(b, lang))
        )
        if not (added - had) or not (added - had) <= needed_alone:
            continue
        kept = list(result.rules)
        result.rules = [x for x in kept if x is not r]
        if check(result):
            notes.append(f"{r.id} (an edit of the import list) left to the import follow-up")
        else:
            result.rules = kept
    # Renamed imports and unused-import drops the examples do not show are kept only where
    # no example contradicts (a rename first: the drop's pattern is the old import's text).
    # A note-less entry belongs with the one before it (a drop's two placements): they are
    # kept or refused together.
    groups: list[tuple[list[SynthRule], str]] = []
    for extra, note in zip([*renamed_for, *dropped_for], [*rename_notes, *drop_notes], strict=True):
        if note or not groups:
            groups.append(([extra], note))
        else:
            groups[-1][0].append(extra)
    for extras, note in groups:
        kept = list(result.rules)
        result.rules = [*kept, *extras]
        if check(result):
            if note:
                notes.append(note)
        else:
            result.rules = kept
    return notes


def _renamed(r: SynthRule, befores: Sequence[str]) -> tuple[str, str] | None:
    """(old, new) when ``r`` renames one name: applied to the examples, its every change is
    that name replaced by the other, one for one (`UseStore<…>` -> `UseBoundStore<…>`; not
    `str` -> `t.Any`, not `%s` -> `{}`), at a value or type name (`obj.fetch` -> `obj.get`
    renames a member, no import's business)."""
    pairs: set[tuple[str, str]] = set()
    for before in befores:
        got = r.apply(before)[0]
        if got == before:
            continue
        a, b = _names_of(before, r.language), _names_of(got, r.language)
        ops = difflib.SequenceMatcher(None, [x for x, _ in a], [x for x, _ in b], False)
        for tag, i1, i2, j1, j2 in ops.get_opcodes():
            if tag == "equal":
                continue
            if tag != "replace" or i2 - i1 != j2 - j1:
                return None
            for (x, member_x), (y, member_y) in zip(a[i1:i2], b[j1:j2], strict=True):
                if member_x or member_y:
                    return None
                pairs.add((x, y))
    if len(pairs) != 1:
        return None
    old, new = pairs.pop()
    if old in _NOT_IMPORTED or new in _NOT_IMPORTED:
        return None
    return old, new


# The kinds of a member's name (Python's attribute names are identifiers: by position).
_MEMBER_KINDS: dict[str, tuple[str, ...]] = {
    "python": (),
    "javascript": ("property_identifier",),
    "typescript": ("property_identifier",),
    "tsx": ("property_identifier",),
    "go": ("field_identifier",),
    "rust": ("field_identifier",),
}


def _importable(text: str, name: str, language: str) -> bool:
    """``text`` defines ``name`` (a class, a function, a type: the node whose `name` it is) or
    imports it: a name another file may import. A local variable (`ctx` -> `input`) or an
    associated item (`i64::MAX`) gets no import follow-up."""
    if any(name in bound_names(n.text(), language) for n in imports_of(text, language)):
        return True
    for n in parse(text, language).find_all(regex="^" + re.escape(name) + "$"):
        up = n.parent()
        own = up.field("name") if up is not None else None
        if own is not None and own.range() == n.range() and not n.children():
            return True
    return False


def _names_of(text: str, language: str) -> list[tuple[str, bool]]:
    """The names of ``text`` in order, each with whether it names a member (a property, a
    field, a Python attribute) rather than a value or a type."""
    members = _MEMBER_KINDS.get(language, ())
    kinds = dict.fromkeys((*USE_KINDS[language], *members))
    out: list[tuple[str, bool]] = []
    for n in parse(text, language).find_all(any=[{"kind": k} for k in kinds]):
        member = n.kind() in members
        up = n.parent()
        if language == "python" and up is not None and up.kind() == "attribute":
            attr = up.field("attribute")
            member = attr is not None and attr.range() == n.range()
        elif language == "rust" and up is not None and up.kind() == "scoped_identifier":
            last = up.field("name")  # `i64::MAX`: reached through its path
            member = member or (last is not None and last.range() == n.range())
        out.append((n.text(), member))
    return out


# Names no import binds (`this` -> `ctx` is no rename of an imported name).
_NOT_IMPORTED = frozenset(
    "this self cls super Self crate None True False null undefined true false nil".split()
)


# An import of a name, per language (`{}`: the name), to see whether a rename reaches it.
_IMPORT_SAMPLES = {
    "python": "from m import {}\n",
    "javascript": "import {{ {} }} from 'm'\n",
    "typescript": "import {{ {} }} from 'm'\n",
    "tsx": "import {{ {} }} from 'm'\n",
    "rust": "use m::{{{}, Z}};\n",
}


def _renames_imports(r: SynthRule, old: str, language: str) -> bool:
    """``r`` rewrites an import of ``old`` itself (a rename of every such name): no
    follow-up needed."""
    sample = _IMPORT_SAMPLES.get(language)
    if sample is None:
        return True
    text = sample.format(old)
    try:
        return r.apply(text)[0] != text
    except Exception:
        return False


def _import_name(name: str, language: str) -> dict[str, Any] | None:
    """A rule: ``name`` where an import statement binds it under that very name (Python's
    `from m import name`, JS/TS `import {name} from` and `const {name} = require(…)`, Rust
    `use a::name` / `use a::{name}`); None for a language without named imports (Go)."""
    rx = "^" + re.escape(name) + "$"
    if language == "python":
        return {
            "kind": "dotted_name",
            "regex": rx,
            "inside": {"kind": "import_from_statement", "field": "name", "stopBy": "neighbor"},
        }
    if language in ("javascript", "typescript", "tsx"):
        return {
            "any": [
                {
                    "kind": "identifier",
                    "regex": rx,
                    "inside": {"kind": "import_specifier", "field": "name", "stopBy": "neighbor"},
                },
                {
                    "kind": "shorthand_property_identifier_pattern",
                    "regex": rx,
                    "inside": {
                        "kind": "object_pattern",
                        "stopBy": "neighbor",
                        "inside": {
                            "kind": "variable_declarator",
                            "stopBy": "neighbor",
                            "has": {"field": "value", "regex": r"^require\s*\("},
                        },
                    },
                },
            ]
        }
    if language == "rust":
        return {
            "kind": "identifier",
            "regex": rx,
            "inside": {"kind": "use_declaration", "stopBy": "end"},
            "not": {"inside": {"kind": "use_as_clause", "stopBy": "end"}},
            "any": [
                {"inside": {"kind": "use_list", "stopBy": "neighbor"}},
                {"inside": {"kind": "scoped_identifier", "field": "name", "stopBy": "neighbor"}},
            ],
        }
    return None


def _rename_import(old: str, new: str, language: str) -> dict[str, Any] | None:
    """The follow-up of a rename (wave 3r): the name in the file's import renamed too, where
    the file uses the new name, no longer the old one, and no import binds the new one yet
    (zustand's `import { EqualityChecker, UseStore } from 'zustand'` once `UseStore<…>` is
    `UseBoundStore<…>`; jinja's `from jinja2.environment import Template`)."""
    at = _import_name(old, language)
    if at is None:
        return None
    return _with(
        at,
        {"not": uses([old], language)},
        uses([new], language),
        {"not": bound_elsewhere(new, language)},
    )


def _all_imports(text: str, language: str) -> bool:
    root = parse(text, language)
    kids = [c for c in root.children() if c.is_named() and "comment" not in c.kind()]
    return bool(kids) and all(
        is_import(k, language) or k.kind() in ("import_declaration", "future_import_statement")
        for k in kids
    )


def _name_var(rule: SynthRule, nodes: list[SgNode], language: str) -> str | None:
    """A metavariable of the deletion rule that captures, in every match, the one name the
    import binds (a generalised `import $A`)."""
    pattern = rule.rule.get("pattern")
    if not isinstance(pattern, str):
        return None
    for var in re.findall(r"\$([A-Z_][A-Z0-9_]*)", pattern):
        ok = True
        for n in nodes:
            got = n.get_match(var)
            names = bound_names(n.text(), language)
            if got is None or len(names) != 1 or got.text() not in names:
                ok = False
                break
        if ok:
            return "$" + var
    return None


def _follow_up(of: SynthRule, rule: dict[str, Any], fix: str, language: str) -> SynthRule:
    # A copy of the rewrite with every field replaced (no import of core: it imports us).
    return replace(
        of,
        language=language,
        rule=rule,
        fix=fix,
        sites=0,
        constraints=None,
        transform=None,
        expand_start=None,
        expand_end=None,
        companion=False,
        follow_up="import",
    )


def _insert_choices(
    r: SynthRule, new: str, lang: str, names: set[str], befores: Sequence[str]
) -> list[tuple[list[SynthRule], str]]:
    """The ways to insert the import ``new`` that rule ``r`` inserts, narrowest and most
    structural first: into the file's import block (after its last import, or where it
    sorts), only where a name it binds is used; the same in every file of the shape; then
    ``r``'s own anchor, only where used (the wave 3c follow-up); ``r`` as learned. Each is
    once per file (not where the file imports it already)."""
    text = new.strip()
    future = lang == "python" and re.match(r"from\s+__future__\b", text) is not None
    if future:
        names = set()  # binds no name a file uses: it goes into every file
    already: dict[str, Any] = {"not": _imports_already(text, lang)}
    if names:
        # Nor where another import already binds one of its names (`KyError` imported from
        # another path): a second import of a name is an error in most languages.
        word = r"\b(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\b"
        bound = {
            "inside": {
                "kind": ROOT_KINDS[lang],
                "stopBy": "end",
                "has": {"any": _import_matchers(lang), "regex": word, "stopBy": "end"},
            }
        }
        # Wave 3t: unless an example inserts it where another import binds the name
        # (reqwest ba7b2a75 adds `use std::future::Future;` beside `use futures::Future;`, a
        # migration in progress): then the same choices without that guard, after them.
        alreadies = [{"all": [already, {"not": bound}]}, already]
    else:
        alreadies = [already]
    guards: list[tuple[list[dict[str, Any]], str]] = []
    if names:
        guards.append(
            (
                [uses(sorted(names), lang)],
                f" only where {', '.join(sorted(names))} is used",
            )
        )
    guards.append(([], ""))
    root_kind = ROOT_KINDS[lang]
    out: list[tuple[list[SynthRule], str]] = []
    labelled = _block_alternatives(new, lang, root_kind)
    # Within its section (wave 3k synth19): before the plain "where it sorts".
    sections = [
        (b, "where it sorts within its section of the file's imports")
        for b in _section_alternatives(new, lang, root_kind)
    ]
    # (rule, fix) each, or (rule, fix, expand_start) where the fix's range grows back.
    blocks: list[tuple[Sequence[tuple[Any, ...]], str]] = [*labelled[:1], *sections]
    blocks += labelled[1:]
    if future:
        blocks = [
            (_future_section(new), "first in the file (after its docstring), a blank line below"),
            (_future_alternative(new), "first in the file (after its docstring)"),
        ]
        blocks += labelled
    lone = _no_import_rule(new, lang)
    single = _go_single_rules(new) if lang == "go" else []
    for already in alreadies:
        for (conds, said), (block, where) in ((g, b) for g in guards for b in blocks):
            if conds and lone is not None:
                # Only where the name is used: a file without imports gets it too.
                block = [*block, lone]
            if conds and single:
                # Go: a lone `import "x"` becomes a parenthesised list (wave 3l).
                block = [*block, *single]
            rules = [
                replace(
                    r,
                    rule=_with(item[0], *conds, already),
                    fix=item[1],
                    constraints=None,
                    transform=None,
                    expand_start=item[2] if len(item) > 2 else None,
                    follow_up="import",
                    id=r.id if j == 0 else f"{r.id}-{j + 1}",
                )
                for j, item in enumerate(block)
            ]
            out.append((rules, f"{r.id}: inserts `{text[:60]}` {where}{said}, once a file"))
    if names:
        rule = _with(r.rule, uses(sorted(names), lang))
        out.append(
            (
                [replace(r, rule=rule, follow_up="import")],
                f"{r.id}: inserts `{text[:60]}` only where {', '.join(sorted(names))} "
                "is used and not imported yet",
            )
        )
    out.append(([r], ""))
    return out


def _choose(
    result: SynthResult,
    rewrites: list[SynthRule],
    inserts: list[SynthRule],
    added_for: list[SynthRule],
    deletes: list[SynthRule],
    insert_choices: list[tuple[int, list[tuple[list[SynthRule], str]]]],
    check: Callable[[SynthResult], bool],
) -> list[SynthRule] | None:
    """Each inserted import's first alternative with which the rule set reproduces every
    example (the others at their current choice); ``insert_choices`` is left with the chosen
    alternative first. None: no combination found."""
    # The insert list as segments: one per inserted import, the other rules alone.
    segments: list[list[SynthRule]] = []
    starts = {at: k for k, (at, _) in enumerate(insert_choices)}
    i = 0
    which: list[int | None] = []
    while i < len(inserts):
        if i in starts:
            k = starts[i]
            n = len(insert_choices[k][1][0][0])
            segments.append(inserts[i : i + n])
            which.append(k)
            i += n
        else:
            segments.append([inserts[i]])
            which.append(None)
            i += 1

    def flat() -> list[SynthRule]:
        return [x for seg in segments for x in seg]

    for s, w in enumerate(which):
        if w is None:
            continue
        at, choices = insert_choices[w]
        for c, (rules, _note) in enumerate(choices):
            segments[s] = rules
            result.rules = rewrites + flat() + added_for + deletes
            if check(result):
                insert_choices[w] = (at, [choices[c], *choices[:c], *choices[c + 1 :]])
                break
        else:
            return None
    return flat()


def _imports_around(
    r: SynthRule, examples: Sequence[tuple[str, str]], lang: str
) -> Iterator[tuple[list[str], list[str]]]:
    """For each example the rule applies to: its imports' texts before and after the rule."""
    for before, _after in examples:
        got, n = r.apply(before)
        if n:
            yield (
                [x.text() for x in imports_of(before, lang)],
                [x.text() for x in imports_of(got, lang)],
            )


def _added_import(r: SynthRule, examples: Sequence[tuple[str, str]], lang: str) -> str | None:
    """The one import a rewrite of an import list adds in every example it applies to, and
    nothing else it changes there (``\t"strings"`` for Go's list); None otherwise."""
    if r.expand_start or r.expand_end or r.companion or lang != "go":
        return None
    if not _import_edit(r, [b for b, _ in examples]):
        return None
    found: set[str] = set()
    for had, now in _imports_around(r, examples, lang):
        extra = list(now)
        for t in had:
            if t not in extra:
                return None  # it removes or rewrites an import too
            extra.remove(t)
        if len(extra) != 1:
            return None
        found.add(extra[0])
    if len(found) != 1:
        return None
    text = found.pop()
    spec = next((x for _, a in examples for x in imports_of(a, lang) if x.text() == text), None)
    if spec is None or (parent := spec.parent()) is None or parent.kind() != "import_spec_list":
        return None
    return "\t" + text


def _introduces(
    rules: Sequence[SynthRule],
    but: SynthRule,
    imp: str,
    lang: str,
    befores: Sequence[str],
) -> bool:
    """Whether a rewrite other than ``but`` brings a name ``imp`` binds (then the import is
    the one that rewrite needs, added where it puts the name: see `manage_imports`)."""
    names = bound_names(imp, lang)
    for r in rules:
        if r is but or _import_edit(r, befores):
            continue
        pattern = r.rule.get("pattern")
        text = str(pattern.get("context", "") if isinstance(pattern, dict) else pattern or "")
        if names & (_names_in(r.fix) - _names_in(text)):
            return True
    return False


# --- names added to an import's list (wave 3l synth27) ----------------------------------------
#
# A name added to an existing import's list (`task::{Context, Poll}` -> `task::{ready, Context,
# Poll}`, `import {a, c} from './m'` -> `import {a, b, c} …`, `from m import (a, c)` with `b`
# between) was learned as a rewrite of the whole statement (every file with a two-name list of
# that shape got `ready`) or, where a rewrite needs the name, as a second copy of the example's
# statement after the file's last import. The change is "the list of that module gains the
# name": here it becomes a follow-up that inserts the name into the file's own list of the same
# module (Rust: the same path in the same crate root; JS/TS: the same source, `import type` or
# not; a `require` destructuring; Python: the same `from` module), only where the file uses the
# name and binds it nowhere yet. Where it goes comes from the file: before the list's first
# name that sorts after it, else after its last, in the order the examples' lists keep
# (rustfmt's `self`, snake_case, CamelCase, UPPER_CASE; isort's CONSTANTS, Classes, others,
# case-folded; byte-wise; case-folded), else at the end; one-line lists get `, name`,
# one-per-line lists a line of their own at the list's indentation.

_RUST_ITEMS = [
    "identifier",
    "scoped_identifier",
    "use_as_clause",
    "scoped_use_list",
    "self",
    "use_wildcard",
]
_USE_PREFIX = r"^(?:pub(?:\([^)]*\))?\s+)?use\s+(?:::)?"


def _list_item_ctx(node: SgNode, lang: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """For a name in an import's list: (the rule of an item of such a list, the rule of the
    list itself, naming the module), or None where the node is no such item."""
    parent = node.parent()
    if parent is None:
        return None
    kind = node.kind()
    if lang == "python":
        if kind not in ("dotted_name", "aliased_import"):
            return None
        if parent.kind() != "import_from_statement":
            return None
        module = parent.field("module_name")
        if module is None or module.range() == node.range():
            return None
        item = {
            "any": [{"kind": "dotted_name"}, {"kind": "aliased_import"}],
            "not": {"precedes": {"regex": "^import$", "stopBy": "neighbor"}},
        }
        container = {
            "kind": "import_from_statement",
            "has": {"field": "module_name", "regex": "^" + re.escape(module.text()) + "$"},
        }
        return item, container
    if lang == "rust":
        if kind not in _RUST_ITEMS or parent.kind() != "use_list":
            return None
        scoped = parent.parent()
        decl = next((a for a in node.ancestors() if a.kind() == "use_declaration"), None)
        if scoped is None or decl is None or scoped.kind() != "scoped_use_list":
            return None
        path = scoped.field("path")
        arg = decl.field("argument")
        if path is None or arg is None:
            return None
        # The full path (`std::task` in `use std::{task::{…}}`): any nesting of it matches,
        # a list whose own path is a tail of it in a declaration of the same root.
        segs: list[str] = []
        for a in [scoped, *scoped.ancestors()]:
            p = a.field("path") if a.kind() == "scoped_use_list" else None
            if p is not None:
                segs = [x.strip() for x in p.text().lstrip(":").split("::")] + segs
        if not segs:
            return None
        root_seg = segs[0]
        tails = ["::".join(segs[i:]) for i in range(len(segs))]
        path_rx = (
            "^(?:" + "|".join(r"\s*::\s*".join(map(re.escape, t.split("::"))) for t in tails) + ")$"
        )
        container = {
            "kind": "use_list",
            "inside": {
                "kind": "scoped_use_list",
                "stopBy": "neighbor",
                "has": {"field": "path", "regex": path_rx},
                "inside": {
                    "kind": "use_declaration",
                    "stopBy": "end",
                    "regex": _USE_PREFIX + re.escape(root_seg) + r"(?:$|[^\w])",
                },
            },
        }
        return {"any": [{"kind": k} for k in _RUST_ITEMS]}, container
    if lang in ("javascript", "typescript", "tsx"):
        if kind == "import_specifier" and parent.kind() == "named_imports":
            stmt = next((a for a in node.ancestors() if a.kind() == "import_statement"), None)
            source = stmt.field("source") if stmt is not None else None
            if stmt is None or source is None:
                return None
            typed = r"^import\s+type\b"
            statement: dict[str, Any] = {
                "kind": "import_statement",
                "stopBy": "end",
                "has": {"field": "source", "regex": "^['\"]" + re.escape(source.text()[1:-1])},
            }
            if re.match(typed, stmt.text()):
                statement["regex"] = typed
            else:
                statement["not"] = {"regex": typed}
            container = {"kind": "named_imports", "inside": statement}
            return {"kind": "import_specifier"}, container
        if kind in ("shorthand_property_identifier_pattern", "pair_pattern"):
            decl = parent.parent()
            value = decl.field("value") if decl is not None else None
            if parent.kind() != "object_pattern" or decl is None or value is None:
                return None
            m = re.fullmatch(r"require\(\s*(['\"])(.*)\1\s*\)", value.text())
            if m is None:
                return None
            container = {
                "kind": "object_pattern",
                "inside": {
                    "kind": "variable_declarator",
                    "stopBy": "neighbor",
                    "has": {
                        "field": "value",
                        "regex": r"^require\(\s*['\"]" + re.escape(m.group(2)) + r"['\"]\s*\)$",
                    },
                },
            }
            kinds = ["shorthand_property_identifier_pattern", "pair_pattern"]
            return {"any": [{"kind": k} for k in kinds]}, container
    return None


def _item_key(text: str) -> str:
    text = re.sub(r"^type\s+", "", text.strip())
    return re.split(r"\s+as\s+|\s*:\s*(?!:)|\s*=", text)[0].strip()


def _item_name(text: str) -> str:
    """The name a list item binds (`x as y`: y; `a: b`: b; `d::e`: e)."""
    words = re.sub(r"^type\s+", "", text.strip()).split()
    if len(words) == 3 and words[1] == "as":
        return words[2]
    return text.split(":")[-1].strip().split("::")[-1].strip()


def _rust_class(key: str) -> int:
    if key in ("self", "super", "crate"):
        return 0
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", key.split("::")[0]):
        return 3
    return 2 if key[:1].isupper() else 1


def _isort_class(key: str) -> int:
    if len(key) > 1 and key.isupper():
        return 0
    return 1 if key[:1].isupper() else 2


# Per order: the key it sorts names by.
_ORDERS: dict[str, Callable[[str], Any]] = {
    "rustfmt": lambda k: (_rust_class(k), k),
    "isort": lambda k: (_isort_class(k), k.lower()),
    "bytes": lambda k: k,
    "folded": lambda k: k.lower(),
}
_ORDER_PREFERENCE: dict[str, tuple[str, ...]] = {
    "rust": ("rustfmt", "bytes"),
    "python": ("isort", "folded", "bytes"),
    "javascript": ("bytes", "folded"),
    "typescript": ("bytes", "folded"),
    "tsx": ("bytes", "folded"),
}
_WORD_END = r"(?:$|[^\w$])"


def _word_lt(key: str, fold: bool) -> str:
    """A regex an item's text matches when its leading word sorts before ``key``."""
    alts = []
    for i, c in enumerate(key):
        prefix = "".join(_same(x, fold) for x in key[:i])
        alts.append(prefix + _below(c, fold))
        if i:
            alts.append(prefix + _WORD_END)
    return "^(?:" + "|".join(alts) + ")"


def _class_rules(order: str) -> list[dict[str, Any]]:
    """The classes an order sorts names into first, in order, as rule objects."""
    if order == "rustfmt":
        own = {"regex": r"^(?:self|super|crate)" + _WORD_END}
        upper = {"regex": r"^[A-Z][A-Z0-9_]*" + _WORD_END}
        camel = {"all": [{"regex": "^[A-Z]"}, {"not": upper}]}
        return [own, {"not": {"any": [own, {"regex": "^[A-Z]"}]}}, camel, upper]
    if order == "isort":
        const = {"all": [{"regex": r"^[A-Z0-9_]{2,}" + _WORD_END}, {"regex": "^[A-Z0-9_]*[A-Z]"}]}
        cls = {"all": [{"regex": "^[A-Z]"}, {"not": const}]}
        return [const, cls, {"not": {"regex": "^[A-Z]"}}]
    return [{"regex": "[\\s\\S]"}]


def _sorts_before(name: str, order: str) -> dict[str, Any]:
    """A rule an item matches when it sorts before ``name`` in ``order``."""
    fold = order in ("isort", "folded")
    classes = _class_rules(order)
    if order == "rustfmt":
        at = _rust_class(name)
    elif order == "isort":
        at = _isort_class(name)
    else:
        at = 0
    same = {"all": [classes[at], {"regex": _word_lt(name, fold)}]}
    return {"any": [*classes[:at], same]}


def _orders_kept(keys: Sequence[str], lang: str) -> list[str]:
    return [
        o
        for o in _ORDER_PREFERENCE.get(lang, ())
        if len(keys) > 1 and [_ORDERS[o](k) for k in keys] == sorted(_ORDERS[o](k) for k in keys)
    ]


def _list_keys(node: SgNode, item: dict[str, Any]) -> list[str]:
    """The sort keys of the names in the list ``node`` sits in."""
    parent = node.parent()
    if parent is None:
        return []
    return [_item_key(c.text()) for c in parent.children() if c.matches(**item)]


def _list_insert_blocks(
    name: str, item: dict[str, Any], container: dict[str, Any], orders: Sequence[str]
) -> list[tuple[list[tuple[dict[str, Any], str]], str]]:
    """Rule sets (rule, fix) inserting ``name`` into the file's list of the same module: one
    per order the examples keep, then at the list's end."""
    kind = container["kind"]
    inside = {"inside": {**container, "stopBy": "neighbor"}}
    layouts = [
        ({"inside": {"kind": kind, "stopBy": "neighbor", "regex": r"^[^\n]*$"}}, ", "),
        ({"inside": {"kind": kind, "stopBy": "neighbor", "regex": r"\n"}}, ",\n"),
    ]
    out: list[tuple[list[tuple[dict[str, Any], str]], str]] = []
    for order in [*orders, None]:
        rules: list[tuple[dict[str, Any], str]] = []
        for layout, sep in layouts:
            if order is None:
                last = {
                    "pattern": "$ANCHOR",
                    "all": [item, inside, layout, {"not": {"precedes": {**item, "stopBy": "end"}}}],
                }
                rules.append((last, "$ANCHOR" + sep + name))
                continue
            after = {"all": [item, {"not": _sorts_before(name, order)}]}
            first_after = {
                "pattern": "$ANCHOR",
                "all": [
                    item,
                    inside,
                    layout,
                    after,
                    {"not": {"follows": {**after, "stopBy": "end"}}},
                ],
            }
            last = {
                "pattern": "$ANCHOR",
                "all": [
                    item,
                    inside,
                    layout,
                    {"not": {"precedes": {**item, "stopBy": "end"}}},
                    {"not": {"inside": {"kind": kind, "stopBy": "neighbor", "has": after}}},
                ],
            }
            rules.append((first_after, name + sep + "$ANCHOR"))
            rules.append((last, "$ANCHOR" + sep + name))
        where = f"where it sorts ({order})" if order else "at its end"
        out.append((rules, where))
    return out


def _name_guards(name: str, lang: str) -> list[dict[str, Any]]:
    """Where the file uses ``name`` and no import binds it yet."""
    word = r"(?:^|[^\w$])" + re.escape(name) + r"(?:$|[^\w$])"
    bound = {
        "inside": {
            "kind": ROOT_KINDS[lang],
            "stopBy": "end",
            "has": {"any": _import_matchers(lang), "regex": word, "stopBy": "end"},
        }
    }
    return [uses([name], lang), {"not": bound}]


def _find_item(
    text: str, name: str, lang: str
) -> tuple[SgNode, dict[str, Any], dict[str, Any]] | None:
    """The list item binding ``name`` in one of ``text``'s imports, with its rules."""
    for imp in imports_of(text, lang):
        if name not in bound_names(imp.text(), lang):
            continue
        for node in imp.find_all(any=[{"kind": k} for k in _LIST_ITEM_KINDS.get(lang, [])]):
            ctx = _list_item_ctx(node, lang)
            if ctx is None:
                continue
            if _item_name(node.text()) == name:
                return node, ctx[0], ctx[1]
    return None


_LIST_ITEM_KINDS: dict[str, list[str]] = {
    "python": ["dotted_name", "aliased_import"],
    "rust": _RUST_ITEMS,
    "javascript": ["import_specifier", "shorthand_property_identifier_pattern", "pair_pattern"],
    "typescript": ["import_specifier", "shorthand_property_identifier_pattern", "pair_pattern"],
    "tsx": ["import_specifier", "shorthand_property_identifier_pattern", "pair_pattern"],
}


def _list_rules(
    of: SynthRule, name: str, examples: Sequence[tuple[str, str]], lang: str
) -> list[tuple[list[SynthRule], str]] | None:
    """The ways to add ``name`` to the file's list of the module an example's list of it
    gained it in (None: no example shows such a list, one that held other names before)."""
    for before, after in examples:
        found = _find_item(after, name, lang)
        if found is None:
            continue
        node, item, container = found
        if not parse(before, lang).find_all(cast(Any, {"rule": container})):
            continue  # the list is new in this example
        keys = _list_keys(node, item)
        orders = _orders_kept(keys, lang)
        guards = _name_guards(name, lang)
        out = []
        for block, where in _list_insert_blocks(name, item, container, orders):
            rules = [_follow_up(of, _with(rule, *guards), fix, lang) for rule, fix in block]
            rules = [
                replace(x, id=of.id if j == 0 else f"{of.id}-{j + 1}") for j, x in enumerate(rules)
            ]
            out.append(
                (rules, f"{of.id}: adds `{name}` to the file's import list {where}, where used")
            )
        return out
    return None


def _list_added(r: SynthRule, examples: Sequence[tuple[str, str]], lang: str) -> str | None:
    """The one name an edit of an import list adds in every example it applies to, where it
    changes nothing but that list (and removes no name)."""
    if r.expand_start or r.expand_end or r.companion or lang == "go":
        return None
    if not _import_edit(r, [b for b, _ in examples]):
        return None
    found: set[str] = set()
    for had, now in _imports_around(r, examples, lang):
        if len(had) != len(now):
            return None
        # Statement by statement (wave 3m): the file may bind the name already through
        # another import the commit drops elsewhere (axum's `futures_util::ready` for
        # `std::task::ready`), so the file's union of names tells nothing.
        changed = [(h, n) for h, n in zip(had, now, strict=True) if h != n]
        if len(changed) != 1:
            return None
        names_had, names_now = (bound_names(t, lang) for t in changed[0])
        if names_had - names_now or len(names_now - names_had) != 1:
            return None
        found |= names_now - names_had
    return found.pop() if len(found) == 1 else None


def _item_drops(
    of: SynthRule, name: str, item: dict[str, Any], container: dict[str, Any], lang: str
) -> list[SynthRule]:
    """Follow-ups deleting ``name`` from the file's list of a module where nothing uses it
    any more, the list's layout kept: a later name with the comma before it; the first name
    up to the next one."""
    named = {
        "any": [
            {"regex": "^" + re.escape(name) + "$"},
            {"regex": r"\sas\s+" + re.escape(name) + "$"},
        ]
    }
    inside = {"inside": {**container, "stopBy": "neighbor"}}
    unused = {"not": uses([name], lang)}
    comma = {"regex": "^,$"}
    later = {
        "pattern": "$ANCHOR",
        "all": [item, named, inside, unused, {"follows": {**comma, "stopBy": "neighbor"}}],
    }
    first = {
        "pattern": "$ANCHOR",
        "all": [
            item,
            named,
            inside,
            unused,
            {"not": {"follows": {**comma, "stopBy": "neighbor"}}},
            {"precedes": {**comma, "stopBy": "neighbor"}},
            {"precedes": {"all": [item, {"pattern": "$NEXT"}], "stopBy": "end"}},
        ],
    }
    return [
        replace(_follow_up(of, later, "", lang), expand_start=comma),
        replace(_follow_up(of, first, "$NEXT", lang), expand_end=item),
    ]


def _item_deletion_guard(
    rule: SynthRule, befores: Sequence[str], lang: str
) -> dict[str, Any] | None:
    """Where a deletion rule deletes names from import lists only (every node it matches in
    the examples a list item): a rule that it holds only where the file uses none of them
    (one name), or not the name its metavariable captured; None otherwise."""
    cfg = rule.as_rule().config()
    names: set[str] = set()
    nodes: list[SgNode] = []
    for text in befores:
        for node in parse(text, lang).find_all(cfg):
            if _list_item_ctx(node, lang) is None:
                return None
            names.add(_item_name(node.text()))
            nodes.append(node)
    if not nodes or not all(_IDENT.match(n) for n in names):
        return None
    if len(names) == 1:
        return {"not": uses(sorted(names), lang)}
    pattern = rule.rule.get("pattern")
    if isinstance(pattern, str):
        for var in re.findall(r"\$([A-Z_][A-Z0-9_]*)", pattern):
            got = [n.get_match(var) for n in nodes]
            if all(
                g is not None and g.text() == _item_name(n.text())
                for g, n in zip(got, nodes, strict=True)
            ):
                return {"not": uses([], lang, var="$" + var)}
    return None


def _go_single_rules(new: str) -> list[tuple[dict[str, Any], str]]:
    """Go: a file whose one import declaration is a single `import "x"` gets a parenthesised
    list of the two, as goimports writes it: sorted within a group, the standard library's
    group first, a blank line between groups."""
    core = new.strip()
    at = _section_of(core, "go")
    key = _sort_key(core, "go")
    if at is None or key is None:
        return []
    sections = _section_rules("go")
    lt = {"regex": _lt_regex(key, "go")}
    decl = {"kind": "import_declaration", "stopBy": "end"}
    base: dict[str, Any] = {
        "kind": "import_declaration",
        "pattern": "$ANCHOR",
        "all": [
            {"not": {"has": {"kind": "import_spec_list"}}},
            {"not": {"follows": decl}},
            {"not": {"precedes": decl}},
        ],
    }

    def spec(*conds: dict[str, Any]) -> dict[str, Any]:
        return {"has": {"kind": "import_spec", "pattern": "$S", "all": list(conds)}}

    same = sections[at]
    other = sections[1 - at]
    return [
        (_with(base, spec(same, lt)), f"import (\n\t$S\n\t{core}\n)"),
        (_with(base, spec(same, {"not": lt})), f"import (\n\t{core}\n\t$S\n)"),
        (
            _with(base, spec(other)),
            f"import (\n\t$S\n\n\t{core}\n)" if at == 1 else f"import (\n\t{core}\n\n\t$S\n)",
        ),
    ]


def _import_region(text: str, lang: str) -> str:
    """The text from the file's first import to its last (their layout included)."""
    root = parse(text, lang)
    kinds = ["import_declaration"] if lang == "go" else None
    nodes = [
        c
        for c in root.children()
        if (c.kind() in kinds if kinds else is_import(c, lang))
        or c.kind() == "future_import_statement"
    ]
    if not nodes:
        return ""
    return text[nodes[0].range().start.index : nodes[-1].range().end.index]


def _needed_placement(
    r: SynthRule, imp: SgNode, before: str, after: str, lang: str
) -> list[tuple[dict[str, Any], str]]:
    """Where the import ``imp`` a rewrite needs goes (wave 3l): after the file's last import
    where that is where the example has it; else where it sorts within its section (gofmt's,
    isort's, rustfmt's, the JS sorters' groups), the first placement that gives the example's
    import block. Go: a lone `import "x"` becomes a parenthesised list of the two."""
    anchors = _anchor_rules(lang, imp)
    if lang == "go":
        anchors = anchors[:1] + _go_single_rules(imp.text())
    got = r.apply(before)[0]
    want = _import_region(after, lang)

    def fits(block: list[tuple[dict[str, Any], str]]) -> bool:
        text = got
        for rule, fix in block:
            probe = _follow_up(r, rule, fix, lang)
            text = probe.apply(text)[0]
        return _import_region(text, lang) == want

    if fits(anchors):
        return anchors
    new = ("\t" if lang == "go" else "") + imp.text().strip()
    for block in _section_alternatives(new, lang, ROOT_KINDS[lang]):
        if lang == "go":
            block = [*block, *_go_single_rules(new)]
        if fits(block):
            return block
    return anchors


def _names_lost(examples: Sequence[tuple[str, str]], lang: str) -> set[str]:
    """The names an example's imports bind before and no more after (imports that stay)."""
    out: set[str] = set()
    for before, after in examples:
        had = set().union(set(), *(bound_names(n.text(), lang) for n in imports_of(before, lang)))
        now = set().union(set(), *(bound_names(n.text(), lang) for n in imports_of(after, lang)))
        out |= had - now
    return out
