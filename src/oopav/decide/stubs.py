"""Stub markers: code that stands in for an implementation that was never written.

The observer records them at baseline and after every change, and the verifier's first gate
("no stubs") refuses to finish while a change has introduced any. A model that is out of ideas
tends to leave exactly these behind (``pass``, ``todo!()``, ``raise NotImplementedError``), so
they are cheap, reliable evidence that a step is not really done.

What counts as a stub (every finding has ``kind="stub"``; the message names the marker and the
enclosing function so that it stays stable when lines shift):

1. ``TODO`` / ``FIXME`` / ``XXX`` in a comment of a code file (upper case, whole word; taken from
   tree-sitter comment nodes, so the words inside strings do not count);
2. Python ``raise NotImplementedError`` (bare or called);
3. Python functions whose body is only ``pass`` / ``...`` / a docstring (docstring + ``pass``
   counts too), found on the tree-sitter tree, not by regex;
4. Rust ``todo!()`` / ``unimplemented!()`` (also path-qualified, ``std::todo!()``);
5. JavaScript / TypeScript ``throw new Error("not implemented")`` (any ``*Error`` constructor,
   with or without ``new``, any case and spacing of "not implemented").

Not stubs, because an empty body is the point there: methods decorated with ``@abstractmethod``
(and the ``abstract*`` variants) or ``@overload``, methods of a ``Protocol`` class, and anything
in a ``.pyi`` stub file (rules 2 and 3 only; a TODO comment is still a TODO).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from oopav.context.parsing import language_for_path, parse, parse_findings
from oopav.decide.files import RepoFiles
from oopav.events.catalog import Finding
from oopav.files import SKIP_DIRS  # re-exported: the gates and the tree store share it

STUB_KIND = "stub"
MAX_FILE_BYTES = 1 << 20
"""Files above 1 MiB are skipped: generated or vendored, and slow to parse for no insight."""

# Languages whose comments are scanned for markers. Data formats (JSON, TOML, YAML) are not:
# a TODO in a config comment is not unfinished code.
CODE_LANGUAGES: frozenset[str] = frozenset(
    {"python", "javascript", "typescript", "tsx", "java", "go", "rust", "c", "cpp", "ruby"}
)
JS_LANGUAGES: frozenset[str] = frozenset({"javascript", "typescript", "tsx"})


_MARKER_RE = re.compile(r"\b(TODO|FIXME|XXX)\b")
_NOT_IMPLEMENTED_RE = re.compile(r"not[\s_-]*implemented", re.IGNORECASE)
_EXEMPT_DECORATORS: frozenset[str] = frozenset(
    {
        "abstractmethod",
        "abstractproperty",
        "abstractclassmethod",
        "abstractstaticmethod",
        "overload",
    }
)
_RUST_STUB_MACROS: frozenset[str] = frozenset({"todo", "unimplemented"})
# Node types that give a finding its "where": the nearest enclosing named definition.
_NAMED_SCOPES: frozenset[str] = frozenset(
    {
        "function_definition",
        "class_definition",
        "function_item",
        "impl_item",
        "trait_item",
        "function_declaration",
        "generator_function_declaration",
        "method_definition",
        "class_declaration",
        "method_declaration",
    }
)


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", errors="replace")


def _walk(root: Any) -> Iterator[Any]:
    """Every node in document order, iteratively (deep trees must not hit the recursion limit)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _qualname(node: Any) -> str:
    """``Outer.method`` style name of the scopes around ``node``, or ``<module>``."""
    parts: list[str] = []
    cur = node
    while cur is not None:
        if cur.type in _NAMED_SCOPES:
            name = cur.child_by_field_name("name")
            if name is None and cur.type == "impl_item":
                name = cur.child_by_field_name("type")
            if name is not None:
                parts.append(_text(name))
        cur = cur.parent
    return ".".join(reversed(parts)) or "<module>"


def _stub(path: str, node: Any, message: str) -> Finding:
    return Finding(path=path, line=node.start_point[0] + 1, kind=STUB_KIND, message=message)


# --- comments ------------------------------------------------------------------------------


def _comment_findings(path: str, node: Any) -> list[Finding]:
    out: list[Finding] = []
    first_line = node.start_point[0] + 1
    for offset, line in enumerate(_text(node).splitlines()):
        match = _MARKER_RE.search(line)
        if match is None:
            continue
        # The rest of the line after the marker identifies this TODO among others in the file.
        detail = line[match.end() :].strip(" :-*/#\t")[:80]
        message = f"{match.group(1)} comment" + (f": {detail}" if detail else "")
        out.append(Finding(path=path, line=first_line + offset, kind=STUB_KIND, message=message))
    return out


# --- Python --------------------------------------------------------------------------------


def _decorator_names(definition: Any) -> set[str]:
    """Last dotted segment of each decorator, call or not (``abc.abstractmethod`` → ``abstractmethod``)."""
    parent = definition.parent
    if parent is None or parent.type != "decorated_definition":
        return set()
    names: set[str] = set()
    for child in parent.children:
        if child.type != "decorator":
            continue
        expr = _text(child).lstrip("@").strip()
        expr = expr.split("(", 1)[0]
        names.add(expr.rsplit(".", 1)[-1].strip())
    return names


def _is_protocol_class(cls: Any) -> bool:
    bases = cls.child_by_field_name("superclasses")
    if bases is None:
        return False
    for base in bases.named_children:
        # Protocol, typing.Protocol, Protocol[T], typing_extensions.Protocol[T]
        head = _text(base).split("[", 1)[0].rsplit(".", 1)[-1].strip()
        if head == "Protocol":
            return True
    return False


def _enclosing_class(func: Any) -> Any | None:
    """The class a function is defined directly in (through its decorators), else None."""
    outer = func.parent
    if outer is not None and outer.type == "decorated_definition":
        outer = outer.parent
    if outer is None or outer.type != "block":
        return None
    owner = outer.parent
    return owner if owner is not None and owner.type == "class_definition" else None


def _is_exempt_python(func: Any) -> bool:
    if _decorator_names(func) & _EXEMPT_DECORATORS:
        return True
    cls = _enclosing_class(func)
    return cls is not None and _is_protocol_class(cls)


def _enclosing_function(node: Any) -> Any | None:
    cur = node.parent
    while cur is not None:
        if cur.type == "function_definition":
            return cur
        cur = cur.parent
    return None


def _empty_body_kind(block: Any) -> str | None:
    """``pass`` / ``...`` / ``docstring`` when the block does nothing else, otherwise None."""
    statements = [c for c in block.named_children if c.type != "comment"]
    # Older grammars wrap bare expressions in expression_statement; newer ones do not.
    statements = [
        s.named_children[0] if s.type == "expression_statement" and s.named_children else s
        for s in statements
    ]
    if not statements:
        return None
    has_doc = statements[0].type in ("string", "concatenated_string")
    rest = statements[1:] if has_doc else statements
    if not rest:
        return "docstring only"
    if all(s.type in ("pass_statement", "ellipsis") for s in rest):
        return "pass" if rest[-1].type == "pass_statement" else "..."
    return None


def _is_not_implemented_raise(node: Any) -> bool:
    exprs = [c for c in node.named_children if c.type not in ("comment",)]
    if not exprs:
        return False
    target = exprs[0]
    if target.type == "call":
        target = target.child_by_field_name("function") or target
    return _text(target).rsplit(".", 1)[-1].strip() == "NotImplementedError"


def _python_findings(path: str, root: Any) -> list[Finding]:
    out: list[Finding] = []
    is_stub_file = path.endswith(".pyi")
    for node in _walk(root):
        if node.type == "comment":
            out.extend(_comment_findings(path, node))
        elif is_stub_file:
            continue
        elif node.type == "function_definition":
            body = node.child_by_field_name("body")
            kind = _empty_body_kind(body) if body is not None else None
            if kind is not None and not _is_exempt_python(node):
                out.append(_stub(path, node, f"empty body ({kind}) in `{_qualname(node)}`"))
        elif node.type == "raise_statement" and _is_not_implemented_raise(node):
            func = _enclosing_function(node)
            if func is None or not _is_exempt_python(func):
                out.append(_stub(path, node, f"raise NotImplementedError in `{_qualname(node)}`"))
    return out


# --- Rust, JavaScript / TypeScript, other languages -----------------------------------------


def _rust_findings(path: str, root: Any) -> list[Finding]:
    out: list[Finding] = []
    for node in _walk(root):
        if node.type.endswith("comment"):
            out.extend(_comment_findings(path, node))
        elif node.type == "macro_invocation":
            macro = node.child_by_field_name("macro")
            name = _text(macro).rsplit("::", 1)[-1] if macro is not None else ""
            if name in _RUST_STUB_MACROS:
                out.append(_stub(path, node, f"{name}!() in `{_qualname(node)}`"))
    return out


def _is_not_implemented_throw(node: Any) -> bool:
    for child in node.named_children:
        if child.type not in ("new_expression", "call_expression"):
            continue
        ctor = child.child_by_field_name("constructor") or child.child_by_field_name("function")
        args = child.child_by_field_name("arguments")
        if ctor is None or args is None or not _text(ctor).endswith("Error"):
            continue
        if _NOT_IMPLEMENTED_RE.search(_text(args)):
            return True
    return False


def _js_findings(path: str, root: Any) -> list[Finding]:
    out: list[Finding] = []
    for node in _walk(root):
        if node.type == "comment":
            out.extend(_comment_findings(path, node))
        elif node.type == "throw_statement" and _is_not_implemented_throw(node):
            out.append(_stub(path, node, f"throw not-implemented error in `{_qualname(node)}`"))
    return out


def _comment_only_findings(path: str, root: Any) -> list[Finding]:
    out: list[Finding] = []
    for node in _walk(root):
        if node.type.endswith("comment"):
            out.extend(_comment_findings(path, node))
    return out


def scan_stubs(path: str, source: bytes) -> list[Finding]:
    """Stub findings of one file, in line order; empty for files oopav does not parse or for
    data formats. ``path`` is only used to pick the language and to label the findings."""
    language = language_for_path(path)
    if language is None or language not in CODE_LANGUAGES:
        return []
    root = parse(source, language).root_node
    if language == "python":
        found = _python_findings(path, root)
    elif language == "rust":
        found = _rust_findings(path, root)
    elif language in JS_LANGUAGES:
        found = _js_findings(path, root)
    else:
        found = _comment_only_findings(path, root)
    return sorted(found, key=lambda f: (f.line, f.message))


# --- trees ---------------------------------------------------------------------------------


def tree_files(root: RepoFiles) -> list[str]:
    """The files ``scan_tree(root)`` considers, in its order (``scan_tree(root,
    listed=tree_files(root))`` is ``scan_tree(root)``): listed first, so the reading can go on
    while something else runs (the observer scans beside the baseline's test run)."""
    return list(root.scan(skip=SKIP_DIRS, skip_virtualenvs=True))


def _read_text_file(root: RepoFiles, rel: str) -> bytes | None:
    """The file's bytes, or None when it is too large, binary (a NUL byte in its first 8 KiB)
    or unreadable."""
    data = root.read_bytes(rel, MAX_FILE_BYTES)
    return None if data is None or b"\x00" in data[:8192] else data


def _explicit_files(root: RepoFiles, files: Iterable[str]) -> Iterator[str]:
    for rel in sorted(set(files)):
        # A path that escapes the root (``../x``, a symlink out) is not part of the tree:
        # the interface reads it as absent.
        if root.is_symlink(rel) or not root.is_file(rel):
            continue
        yield PurePosixPath(Path(rel).as_posix()).as_posix()


def scan_tree(
    root: RepoFiles, files: list[str] | None = None, *, listed: list[str] | None = None
) -> tuple[list[Finding], list[Finding], dict[str, int], int]:
    """Scan a repository: ``(stubs, parse_errors, languages, files_total)``.

    ``files`` limits the scan to those paths (relative to ``root``; missing ones, e.g. deleted
    by the change, are ignored). ``files_total`` counts the files considered, binary and huge
    ones included, since they are part of the repository; ``languages`` counts the parsed files
    by tree-sitter language. Findings are ordered by path, then line. ``root``: the workspace
    interface (``RepoFiles``), SKIP_DIRS, virtualenvs and symlinks left out of a whole scan.
    """
    if listed is not None:  # the whole tree, listed earlier by ``tree_files``
        paths = list(listed)
    else:
        paths = list(_explicit_files(root, files)) if files is not None else tree_files(root)
    stubs: list[Finding] = []
    errors: list[Finding] = []
    languages: Counter[str] = Counter()
    for rel in paths:
        language = language_for_path(rel)
        if language is None:
            continue
        source = _read_text_file(root, rel)
        if source is None:
            continue
        languages[language] += 1
        errors.extend(parse_findings(rel, source, language))
        stubs.extend(scan_stubs(rel, source))
    return stubs, errors, dict(sorted(languages.items())), len(paths)


def finding_key(finding: Finding) -> tuple[str, str, str]:
    """What identifies a finding across a change: lines shift when code above moves."""
    return (finding.path, finding.kind, finding.message)


def new_findings(before: Iterable[Finding], after: Iterable[Finding]) -> list[Finding]:
    """Findings of ``after`` that ``before`` did not have, compared as a multiset of
    ``(path, kind, message)``: a second identical TODO in a file is new, a moved one is not.
    Order follows ``after``; of several identical findings the later ones are the new ones."""
    remaining = Counter(finding_key(f) for f in before)
    out: list[Finding] = []
    for finding in after:
        key = finding_key(finding)
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            out.append(finding)
    return out
