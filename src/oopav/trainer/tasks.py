"""Synthetic codemod tasks: templates applied to real code → (instruction, pre, post, gold rule).

The corpus is real code on this machine (the Python standard library by default; any directory
of ``.py`` / ``.js`` files with ``--corpus``). For each source file, functions short enough for
a prompt are the ``pre`` snippets; a template picks a call site in one (a function, a method,
a module attribute, an ``a && a.b`` guard) and writes the instruction and the gold ast-grep rule.
``post`` is what the gold rule produces, applied in-process with the same engine the sandbox
uses; a task is kept only when the rule rewrites something and ``post`` still parses.

Train and test are split by source file (a hash of its path), so a held-out task comes from
code the policy never saw.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import re
import sysconfig
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from oopav.events.actions import AstGrepAction, decode_action

MAX_LINES = 14
MAX_CHARS = 560
FAMILIES = (
    "rename_call",
    "rename_method",
    "add_kwarg",
    "swap_args",
    "wrap_call",
    "replace_api",
    "optional_chaining",
    "migrate_api",
)
# Families a caller asks for by name (not in the default mix, so the default split and the
# figures measured on it stay as they were). ``rename_attr`` shows ``$OBJ.name`` receivers with
# a renamed attribute: part b of the learning bench holds ``rename_method`` out, whose answer
# composes that with a rename (docs/benchmarks.md § Learning).
EXTRA_FAMILIES = ("rename_attr",)
_SUFFIXES = ("_v2", "_new", "_safe", "_impl", "_fast", "_checked")
_WRAPPERS = ("list", "tuple", "sorted", "repr", "str", "len")
_KWARGS = ("strict=True", "timeout=30", "check=False", "default=None", "verbose=False")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Task:
    id: str
    family: str
    language: str
    source: str
    split: str
    instruction: str
    pre: str
    post: str
    rule: dict[str, Any]
    rewrites: int

    def action(self) -> AstGrepAction:
        action = decode_action(json.dumps(self.rule))
        assert isinstance(action, AstGrepAction)
        return action

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Site:
    """One call site in a snippet, as the templates see it."""

    # "call" (f(...)), "method" (obj.m(...)), "module" (mod.f(...)), "guard" (a && a.b),
    # "attr" (obj.a read or written, not called; only when asked for)
    kind: str
    name: str
    receiver: str
    nargs: int


@dataclass
class Generated:
    tasks: list[Task]
    rejected: dict[str, int]


def stdlib_corpus() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path) -> list[Path]:
    skip = ("site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__", "node_modules")
    out = []
    for ext in ("*.py", "*.js"):
        for p in root.rglob(ext):
            rel = p.relative_to(root).parts
            if any(part in skip or part.startswith(".") for part in rel[:-1]):
                continue
            out.append(p)
    return sorted(out)


def split_of(source: str, holdout: float) -> str:
    h = int.from_bytes(hashlib.sha256(source.encode()).digest()[:8], "big") / 2**64
    return "test" if h < holdout else "train"


def language_of(path: Path) -> str:
    return "javascript" if path.suffix == ".js" else "python"


# --- snippets and sites ----------------------------------------------------------------------


def snippets(
    source: str, language: str, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS
) -> Iterator[str]:
    """Functions of ``source`` that fit a prompt, dedented, as standalone code."""
    for _first, _last, text in snippet_spans(source, language, max_lines, max_chars):
        yield text


def snippet_spans(
    source: str, language: str, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS
) -> Iterator[tuple[int, int, str]]:
    """``snippets`` with where each one is: (first line, last line) of ``source``, 0-based."""
    from ast_grep_py import SgRoot

    root = SgRoot(source, language).root()
    kinds = (
        ("function_definition",)
        if language == "python"
        else ("function_declaration", "method_definition")
    )
    for kind in kinds:
        for node in root.find_all(kind=kind):
            r = node.range()
            start = source.rfind("\n", 0, r.start.index) + 1
            text = source[start : r.end.index]
            if text.count("\n") + 1 > max_lines or len(text) > max_chars:
                continue
            text = textwrap.dedent(text) + "\n"
            if _parses(text, language):
                yield r.start.line, r.end.line, text


def _parses(code: str, language: str) -> bool:
    if language == "python":
        import ast

        try:
            ast.parse(code)
        except (SyntaxError, ValueError):
            return False
        return True
    from ast_grep_py import SgRoot

    return SgRoot(code, language).root().find(kind="ERROR") is None


def sites(code: str, language: str, attrs: bool = False) -> list[Site]:
    """Call sites of ``code`` (and, with ``attrs``, Python attribute accesses that are not
    calls: off by default, because more candidates reshuffle every existing split)."""
    from ast_grep_py import SgRoot

    root = SgRoot(code, language).root()
    out: list[Site] = []
    call_kind = "call" if language == "python" else "call_expression"
    attr_kind = "attribute" if language == "python" else "member_expression"
    for node in root.find_all(kind=call_kind):
        fn = node.field("function")
        args = node.field("arguments")
        if fn is None or args is None:
            continue
        nargs = sum(1 for c in args.children() if c.is_named() and c.kind() != "comment")
        if fn.kind() == "identifier":
            out.append(Site("call", fn.text(), "", nargs))
        elif fn.kind() == attr_kind:
            obj = fn.field("object")
            prop = fn.field("attribute" if language == "python" else "property")
            if obj is None or prop is None or not _IDENT.match(prop.text()):
                continue
            kind = "module" if obj.kind() == "identifier" and obj.text().islower() else "method"
            out.append(Site(kind, prop.text(), obj.text(), nargs))
    if attrs and language == "python":
        for node in root.find_all(kind="attribute"):
            parent = node.parent()
            fn = parent.field("function") if parent is not None else None
            if fn is not None and fn.range() == node.range():
                continue  # obj.m(...): a method site
            obj, prop = node.field("object"), node.field("attribute")
            if obj is None or prop is None or not _IDENT.match(prop.text()):
                continue
            out.append(Site("attr", prop.text(), obj.text(), 0))
    if language == "javascript":
        for node in root.find_all(pattern="$A && $A.$B"):
            a, b = node.get_match("A"), node.get_match("B")
            if a is not None and b is not None and a.kind() == "identifier":
                out.append(Site("guard", b.text(), a.text(), 0))
    return out


# --- templates -----------------------------------------------------------------------------

Template = Callable[[Site, random.Random, str], tuple[str, AstGrepAction] | None]


def _pick(rng: random.Random, options: Sequence[str]) -> str:
    return options[rng.randrange(len(options))]


def _rename_call(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "call" or s.name in _WRAPPERS or s.name in ("print", "super", "isinstance"):
        return None
    new = s.name + _pick(rng, _SUFFIXES)
    text = _pick(
        rng,
        (
            f"Rename calls to `{s.name}` to `{new}`.",
            f"Replace every call of `{s.name}(...)` with `{new}(...)`, keeping the arguments.",
            f"`{s.name}` is now called `{new}`: update the call sites.",
        ),
    )
    return text, AstGrepAction(
        pattern=f"{s.name}($$$ARGS)", rewrite=f"{new}($$$ARGS)", language=lang
    )


def _rename_method(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "method" or s.name.startswith("__"):
        return None
    new = s.name + _pick(rng, _SUFFIXES)
    text = _pick(
        rng,
        (
            f"Rename the method `{s.name}` to `{new}` at every call site.",
            f"Calls like `x.{s.name}(...)` should become `x.{new}(...)`.",
        ),
    )
    return text, AstGrepAction(
        pattern=f"$OBJ.{s.name}($$$ARGS)", rewrite=f"$OBJ.{new}($$$ARGS)", language=lang
    )


def _rename_attr(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "attr" or s.name.startswith("__"):
        return None
    new = s.name + _pick(rng, _SUFFIXES)
    text = _pick(
        rng,
        (
            f"Rename the attribute `{s.name}` to `{new}` everywhere it is used.",
            f"Accesses like `x.{s.name}` should become `x.{new}`.",
        ),
    )
    return text, AstGrepAction(pattern=f"$OBJ.{s.name}", rewrite=f"$OBJ.{new}", language=lang)


def _add_kwarg(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "call" or s.nargs < 1 or lang != "python" or s.name in _WRAPPERS:
        return None
    kw = _pick(rng, _KWARGS)
    text = _pick(
        rng,
        (
            f"Pass `{kw}` to every call of `{s.name}`.",
            f"Add the keyword argument `{kw}` to each `{s.name}(...)` call.",
        ),
    )
    return text, AstGrepAction(
        pattern=f"{s.name}($$$ARGS)", rewrite=f"{s.name}($$$ARGS, {kw})", language=lang
    )


def _swap_args(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind not in ("call", "method") or s.nargs != 2:
        return None
    if s.kind == "call":
        pattern, rewrite, what = f"{s.name}($A, $B)", f"{s.name}($B, $A)", f"`{s.name}`"
    else:
        pattern, rewrite = f"$OBJ.{s.name}($A, $B)", f"$OBJ.{s.name}($B, $A)"
        what = f"the method `{s.name}`"
    text = _pick(
        rng,
        (
            f"Swap the two arguments of every two-argument call to {what}.",
            f"The parameters of {what} were reversed: swap the arguments of its two-argument calls.",
        ),
    )
    return text, AstGrepAction(pattern=pattern, rewrite=rewrite, language=lang)


def _wrap_call(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "call" or lang != "python" or s.name in _WRAPPERS:
        return None
    w = _pick(rng, _WRAPPERS)
    text = _pick(
        rng,
        (
            f"Wrap every call to `{s.name}` in `{w}(...)`.",
            f"Each `{s.name}(...)` call should be passed through `{w}`.",
        ),
    )
    return text, AstGrepAction(
        pattern=f"{s.name}($$$ARGS)", rewrite=f"{w}({s.name}($$$ARGS))", language=lang
    )


def _replace_api(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "module":
        return None
    new = f"{s.receiver}_{s.name}"
    text = _pick(
        rng,
        (
            f"Replace `{s.receiver}.{s.name}(...)` with the helper `{new}(...)`, same arguments.",
            f"Stop calling `{s.receiver}.{s.name}` directly: call `{new}` instead.",
        ),
    )
    return text, AstGrepAction(
        pattern=f"{s.receiver}.{s.name}($$$ARGS)", rewrite=f"{new}($$$ARGS)", language=lang
    )


def _optional_chaining(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if s.kind != "guard" or lang != "javascript":
        return None
    text = _pick(
        rng,
        (
            f"Use optional chaining instead of `{s.receiver} && {s.receiver}.{s.name}`.",
            "Replace `a && a.b` guards with `a?.b`.",
        ),
    )
    return text, AstGrepAction(pattern="$A && $A.$B", rewrite="$A?.$B", language=lang)


# Fixed API migrations found in real code: (site kind, receiver, name, nargs or -1 for any) ->
# (pattern, rewrite, how the instruction names them).
_MIGRATIONS: tuple[tuple[str, str, str, int, str, str, str], ...] = (
    ("call", "", "len", 1, "len($X)", "size($X)", "`len(x)` with `size(x)`"),
    (
        "call",
        "",
        "isinstance",
        2,
        "isinstance($A, $B)",
        "is_a($A, $B)",
        "`isinstance(a, b)` with `is_a(a, b)`",
    ),
    ("call", "", "print", -1, "print($$$ARGS)", "log($$$ARGS)", "`print(...)` with `log(...)`"),
    (
        "module",
        "os.path",
        "join",
        -1,
        "os.path.join($$$ARGS)",
        "join_path($$$ARGS)",
        "`os.path.join(...)` with `join_path(...)`",
    ),
    (
        "method",
        "",
        "startswith",
        1,
        "$S.startswith($P)",
        "starts_with($S, $P)",
        "`s.startswith(p)` with `starts_with(s, p)`",
    ),
    (
        "method",
        "",
        "endswith",
        1,
        "$S.endswith($P)",
        "ends_with($S, $P)",
        "`s.endswith(p)` with `ends_with(s, p)`",
    ),
    (
        "call",
        "",
        "getattr",
        3,
        "getattr($O, $N, $D)",
        "get_attr($O, $N, default=$D)",
        "`getattr(o, n, d)` with `get_attr(o, n, default=d)`",
    ),
    ("method", "", "items", 0, "$D.items()", "iter_items($D)", "`d.items()` with `iter_items(d)`"),
)


def _migrate_api(s: Site, rng: random.Random, lang: str) -> tuple[str, AstGrepAction] | None:
    if lang != "python":
        return None
    for kind, receiver, name, nargs, pattern, rewrite, words in _MIGRATIONS:
        if s.name != name or (nargs >= 0 and s.nargs != nargs):
            continue
        if kind == "call" and s.kind != "call":
            continue
        if kind == "method" and s.kind not in ("method", "module"):
            continue
        if kind == "module" and not (s.kind == "method" and s.receiver == receiver):
            continue
        text = _pick(
            rng,
            (f"Replace {words}.", f"Migrate the API: replace {words} everywhere here."),
        )
        return text, AstGrepAction(pattern=pattern, rewrite=rewrite, language=lang)
    return None


TEMPLATES: dict[str, Template] = {
    "rename_call": _rename_call,
    "rename_method": _rename_method,
    "add_kwarg": _add_kwarg,
    "swap_args": _swap_args,
    "wrap_call": _wrap_call,
    "replace_api": _replace_api,
    "optional_chaining": _optional_chaining,
    "migrate_api": _migrate_api,
    "rename_attr": _rename_attr,
}


def apply_rule(action: AstGrepAction, code: str) -> tuple[str, int]:
    """Apply an ast-grep action to one snippet in-process (RuleError when it is malformed)."""
    from oopav.sandbox.astgrep import rewrite_source, rule_from_action

    return rewrite_source(code, rule_from_action(action))


# --- generation ----------------------------------------------------------------------------


def generate(
    n: int,
    *,
    seed: int = 0,
    holdout: float = 0.2,
    corpus: Path | None = None,
    families: Sequence[str] = FAMILIES,
    max_per_snippet: int = 2,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
) -> Generated:
    """``n`` verified tasks (fewer if the corpus runs out), balanced over families and
    languages as far as the corpus allows, deterministic for a seed and corpus."""
    unknown = set(families) - set(TEMPLATES)
    if unknown:
        raise ValueError(f"unknown task families: {', '.join(sorted(unknown))}")
    root = corpus or stdlib_corpus()
    files = corpus_files(root)
    if not files:
        raise ValueError(f"no .py or .js files under {root}")
    rng = random.Random(seed)
    rng.shuffle(files)
    tasks: list[Task] = []
    seen: set[str] = set()
    rejected: dict[str, int] = {}
    per_family: dict[str, int] = dict.fromkeys(families, 0)
    for path in files:
        if len(tasks) >= n:
            break
        lang = language_of(path)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        rel = str(path.relative_to(root))
        split = split_of(rel, holdout)
        for code in snippets(source, lang, max_lines, max_chars):
            if len(tasks) >= n:
                break
            candidates = sites(code, lang, attrs="rename_attr" in families)
            rng.shuffle(candidates)
            made = 0
            # Least-represented families first: balance without discarding the corpus.
            for fam in sorted(families, key=lambda f: (per_family[f], f)):
                if made >= max_per_snippet or len(tasks) >= n:
                    break
                for site in candidates:
                    got = TEMPLATES[fam](site, rng, lang)
                    if got is None:
                        continue
                    instruction, action = got
                    task = _verify(fam, lang, rel, split, instruction, code, action, rejected)
                    if task is None or task.id in seen:
                        continue
                    seen.add(task.id)
                    tasks.append(task)
                    per_family[fam] += 1
                    made += 1
                    break
    return Generated(ensure_test_split(tasks, holdout), rejected)


def ensure_test_split(tasks: list[Task], holdout: float) -> list[Task]:
    """A small set can fall entirely on the train side of the by-file split (a few files, all
    hashing above ``holdout``), and an evaluation on it would quietly report n=0. Move the
    source file with the fewest tasks to test: the split stays disjoint by file."""
    if holdout <= 0 or any(t.split == "test" for t in tasks):
        return tasks
    files: dict[str, int] = {}
    for t in tasks:
        files[t.source] = files.get(t.source, 0) + 1
    if len(files) < 2:
        return tasks
    moved = min(files, key=lambda f: (files[f], f))
    return [dataclasses.replace(t, split="test") if t.source == moved else t for t in tasks]


def _verify(
    family: str,
    lang: str,
    source: str,
    split: str,
    instruction: str,
    pre: str,
    action: AstGrepAction,
    rejected: dict[str, int],
) -> Task | None:
    from oopav.sandbox.astgrep import RuleError

    try:
        post, count = apply_rule(action, pre)
    except RuleError:
        rejected["rule_error"] = rejected.get("rule_error", 0) + 1
        return None
    if count == 0 or post == pre:
        rejected["no_change"] = rejected.get("no_change", 0) + 1
        return None
    if not _parses(post, lang):
        rejected["post_unparsable"] = rejected.get("post_unparsable", 0) + 1
        return None
    import msgspec

    rule = msgspec.to_builtins(action)
    tid = hashlib.sha256(json.dumps([instruction, pre, rule], sort_keys=True).encode()).hexdigest()
    return Task(
        id=tid[:16],
        family=family,
        language=lang,
        source=source,
        split=split,
        instruction=instruction,
        pre=pre,
        post=post,
        rule=rule,
        rewrites=count,
    )


def write_tasks(result: Generated, out: str | Path) -> dict[str, int]:
    """``out/<split>.jsonl`` and ``out/manifest.json``; returns counts per split."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for split in ("train", "test"):
        rows = [t for t in result.tasks if t.split == split]
        counts[split] = len(rows)
        data = "".join(json.dumps(t.to_json(), sort_keys=True) + "\n" for t in rows)
        (directory / f"{split}.jsonl").write_text(data, encoding="utf-8")
    families: dict[str, dict[str, int]] = {}
    for t in result.tasks:
        families.setdefault(t.family, {}).setdefault(t.split, 0)
        families[t.family][t.split] += 1
    manifest = {
        "counts": counts,
        "families": families,
        "languages": sorted({t.language for t in result.tasks}),
        "rejected": result.rejected,
        "sources": {
            s: len({t.source for t in result.tasks if t.split == s}) for s in ("train", "test")
        },
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, indent=1) + "\n")
    return counts


def load_tasks(directory: str | Path, split: str = "train") -> list[Task]:
    path = Path(directory) / f"{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no {split} tasks at {path}: run `oopav tasks generate`")
    return [Task(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


# --- prompts and targets -------------------------------------------------------------------

TASK_DIRECTIVE = "Answer with one ast_grep action that makes the change."


def task_messages(instruction: str, pre: str, language: str = "python") -> list[dict[str, str]]:
    """The compact prompt the small policies are trained and evaluated on (the loop's actor
    prompt carries the full static prefix; a 3M-parameter model on CPU cannot afford it)."""
    return [
        {
            "role": "user",
            "content": f"{instruction}\n{TASK_DIRECTIVE}\n```{language}\n{pre}```",
        }
    ]


def target_text(action: AstGrepAction | dict[str, Any]) -> str:
    """The answer the policy should give: the prompt-contract envelope with an empty think and
    the action without its default fields (shorter targets, same parsed action)."""
    import msgspec

    data = msgspec.to_builtins(action) if isinstance(action, AstGrepAction) else dict(action)
    body = {k: v for k, v in data.items() if v is not None and (k != "paths" or v != ["."])}
    return (
        "<think></think>\n<action>"
        + json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        + "</action>\n<state_update>{}</state_update>"
    )
