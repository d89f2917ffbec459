"""The repo map: the definitions that matter most in a repository, cut to a token budget.

How it is made (docs/context.md has the long version):

1. **Tags.** Every mappable file (a language with a tags query) is parsed with tree-sitter and
   its definitions and references are extracted (``oopav.context.tags``).
2. **Graph.** One node per file; an edge from each file that references an identifier to each
   file that defines it, weighted like aider's repo map (sqrt of the reference count; ×10 for
   identifiers the task names and for long snake/camel names; ×0.1 for ``_private`` names and
   for names defined in more than five files).
3. **Rank.** PageRank by power iteration (``pagerank``), personalized toward the files the task
   names, files whose path parts match a named identifier and files defining a named
   identifier. A definition's rank is the share of rank flowing into it along its edges.
4. **Order.** What the task names comes first (definitions of named identifiers that are
   specific enough, then definitions in named files), then everything else by rank; ties are
   broken by path and name, so the order is a pure function of the repository and the mentions.
5. **Cut.** The longest prefix of that order whose rendering fits ``token_budget`` is found by
   binary search; tokens are estimated as ``ceil(chars / 4)`` (``estimate_tokens``).
6. **Cache.** Results are cached under ``cache_dir`` by tree key (the git tree hash when the
   work tree is clean, else a hash of paths, sizes and mtimes) and extracted tags by file
   content hash; both are disposable.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import stat
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import numpy as np

from oopav.context.tags import Tag, extract_file_tags, queries_fingerprint, tags_language
from oopav.logging import get_logger

MAP_FORMAT_VERSION = 1
DEFAULT_TOKEN_BUDGET = 2048
CHARS_PER_TOKEN = 4
# Larger files are almost always generated or minified; parsing them costs more than they add.
MAX_FILE_BYTES = 512 * 1024
# Kept map results in the cache directory; older ones are pruned (it is only a cache).
MAX_CACHED_MAPS = 256
# A named identifier defined in more files than this is too generic to pin to the top.
SPECIFIC_DEFINERS = 5
_SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "target", "dist", "build", "vendor", "venv", ".venv"}
)


def _log() -> Any:
    # Looked up per call: a logger bound at import would keep the configuration of that moment.
    return get_logger("oopav.context.repomap")


class RepoMap(msgspec.Struct, frozen=True, kw_only=True):
    """A rendered repo map. ``hash`` is the sha256 of ``text``: the planner records it with its
    request so replay can tell whether the map it would send is the one that was sent."""

    text: str
    hash: str
    tokens: int
    files_ranked: tuple[str, ...]
    tree_key: str = ""
    from_cache: bool = False


class Mentions(NamedTuple):
    files: tuple[str, ...]
    idents: tuple[str, ...]


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one token per four characters, rounded up. Real
    tokenizers average 3.5 to 4.5 characters per token on code, and an estimate that needs no
    tokenizer keeps the map (and its hash) independent of the model."""
    return -(-len(text) // CHARS_PER_TOKEN)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- files and tree keys ---------------------------------------------------------------------


def _git(root: Path, *args: str) -> str | None:
    """Read-only git query. ``GIT_OPTIONAL_LOCKS=0`` keeps ``git status`` from refreshing the
    index, so mapping a workspace never writes to it."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            env=env,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", errors="surrogateescape")


def _walk_files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        # Hidden directories (.git, .oopav caches) and dependency folders are never the code
        # a task is about.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        rel_dir = Path(dirpath).relative_to(root)
        out.extend((rel_dir / name).as_posix() for name in filenames)
    return out


def _scan(root: Path) -> list[tuple[str, os.stat_result]]:
    """Mappable files with their ``lstat``, one system call per file."""
    listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    candidates = [p for p in listed.split("\0") if p] if listed is not None else _walk_files(root)
    out: list[tuple[str, os.stat_result]] = []
    for rel in sorted(set(candidates)):
        if tags_language(rel) is None:
            continue
        try:
            st = (root / rel).lstat()
        except OSError:
            continue  # deleted in the work tree but still in the index
        # Regular files only: a symlink may point outside the workspace.
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            continue
        out.append((rel, st))
    return out


def list_files(root: str | Path) -> list[str]:
    """Mappable files under ``root`` (posix paths relative to it, sorted). In a git work tree
    these are tracked and untracked-but-not-ignored files; elsewhere a walk that skips hidden
    and dependency directories. Symlinks and files over ``MAX_FILE_BYTES`` are left out."""
    return [rel for rel, _ in _scan(Path(root))]


def _fingerprint(scanned: Sequence[tuple[str, os.stat_result]]) -> str:
    h = hashlib.sha256()
    for rel, st in scanned:
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return "fs:" + h.hexdigest()


def _clean_git_key(root: Path) -> str | None:
    from oopav.sandbox.clean import clean_at
    from oopav.sandbox.workspace import head_tree

    # The top level of a work tree (a session's workspace) has no prefix, and its HEAD's tree
    # can be read from the files: one git process fewer per map.
    tree = head_tree(root) if os.path.lexists(root / ".git") else None
    prefix = ""
    if tree is None:
        out = _git(root, "rev-parse", "--show-prefix", "HEAD^{tree}")
        if out is None:
            return None
        prefix, _, rest = out.partition("\n")
        tree = rest.strip()
    if tree and not prefix and clean_at(root):
        # Provably HEAD's files (``sandbox.clean``): `git status` would print nothing.
        return f"git:{tree}:"
    status = _git(root, "status", "--porcelain", "-z", "--untracked-files=all", "--", ".")
    if tree and status == "":
        return f"git:{tree}:{prefix.strip()}"
    return None


def _tree_key_and_scan(root: Path) -> tuple[str, list[tuple[str, os.stat_result]] | None]:
    key = _clean_git_key(root)
    if key is not None:
        return key, None  # the files are only listed if the map has to be built
    scanned = _scan(root)
    return _fingerprint(scanned), scanned


def tree_key(root: str | Path) -> str:
    """What the map of ``root`` depends on. A clean git work tree is named by its tree hash
    (``git rev-parse HEAD^{tree}``) and the sub-directory mapped, so every worktree of one
    commit shares it; a dirty tree or a non-git directory by a hash of the mappable files'
    paths, sizes and mtimes (nanoseconds)."""
    return _tree_key_and_scan(Path(root))[0]


# --- mentions ------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATHLIKE = re.compile(r"[\w./-]+")
_STOPWORDS = frozenset(
    """the and for with from into that this then than when what where which while are was were
    will would should could can not but all any each every its it's our your their them they
    you use using used make makes made keep kept add adds added remove removes removed change
    changes changed update updates updated rename renames renamed fix fixes fixed file files
    code test tests new old also only just like more most some such there these those have has
    had does did done doing across repo so via per both out about after before over under
    please must need needs way sure""".split()
)


def mentions_from_instruction(instruction: str, files: Iterable[str]) -> Mentions:
    """Paths and identifiers a task text names, in order of first appearance.

    A file is mentioned when its path appears in the text, or its file name does as a whole
    word (``utils.py``). Identifiers are the words of the text of three characters or more that
    are not common English words; most will match no definition and then weigh nothing, which
    is cheaper and safer than guessing which words are code (``rename fetch to fetch_page``)."""
    text = instruction.replace("\\", "/")
    tokens = [t.strip("./-") for t in _PATHLIKE.findall(text)]
    token_set = set(tokens)
    found: list[tuple[int, str]] = []
    for rel in sorted(set(files)):
        pos = text.find(rel)
        if pos < 0 and Path(rel).name in token_set:
            pos = text.find(Path(rel).name)
        if pos >= 0:
            found.append((pos, rel))
    mentioned_files = tuple(rel for _, rel in sorted(found))
    idents: dict[str, None] = {}
    for word in _WORD.findall(text):
        if len(word) >= 3 and word.lower() not in _STOPWORDS:
            idents.setdefault(word, None)
    return Mentions(mentioned_files, tuple(idents))


# --- ranking -------------------------------------------------------------------------------


def pagerank(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    personalization: np.ndarray | None = None,
    *,
    alpha: float = 0.85,
    tol: float = 1e-8,
    max_iter: int = 200,
) -> np.ndarray:
    """Weighted, personalized PageRank by power iteration over an edge list.

    Same definition as networkx's ``pagerank`` with ``dangling=personalization``: a walker
    follows an out-edge with probability ``alpha`` (chosen by weight) and otherwise restarts
    from the personalization distribution; a node without out-edges always restarts. Returns
    ranks summing to 1. Edge-list form keeps memory linear in the edges (a dense matrix of a
    10k-file repository would be 800 MB)."""
    if n == 0:
        return np.zeros(0)
    if personalization is None or float(personalization.sum()) <= 0.0:
        p = np.full(n, 1.0 / n)
    else:
        p = personalization.astype(np.float64) / float(personalization.sum())
    out_w = np.bincount(src, weights=weight, minlength=n).astype(np.float64)
    dangling = out_w == 0.0
    share = np.divide(
        weight, out_w[src], out=np.zeros_like(weight, dtype=np.float64), where=out_w[src] > 0
    )
    r = p.copy()
    for _ in range(max_iter):
        flow = np.bincount(dst, weights=r[src] * share, minlength=n)
        nxt = alpha * flow + (alpha * float(r[dangling].sum()) + (1.0 - alpha)) * p
        err = float(np.abs(nxt - r).sum())
        r = nxt
        if err < n * tol:
            break
    return r / float(r.sum())


def _ident_multiplier(ident: str, mentioned: set[str], n_definers: int) -> float:
    mul = 1.0
    if ident in mentioned:
        mul *= 10.0
    is_snake = "_" in ident and any(c.isalpha() for c in ident)
    is_camel = any(c.isupper() for c in ident) and any(c.islower() for c in ident)
    # Long compound names are specific: a reference to one says more than a reference to `get`.
    if (is_snake or is_camel) and len(ident) >= 8:
        mul *= 10.0
    if ident.startswith("_"):
        mul *= 0.1
    if n_definers > 5:
        mul *= 0.1
    return mul


class _Ranked(NamedTuple):
    items: list[tuple[str, int | None]]  # (path, def line) in map order; None: file name only
    files: tuple[str, ...]


def rank(
    tags: dict[str, list[Tag]],
    mentioned_files: Iterable[str] = (),
    mentioned_idents: Iterable[str] = (),
) -> _Ranked:
    """Order the definitions of ``tags`` (path -> tags) for the map; see the module docstring."""
    paths = sorted(tags)
    index = {p: i for i, p in enumerate(paths)}
    m_files = {f for f in mentioned_files if f in index}
    m_idents = set(mentioned_idents)

    defines: dict[str, set[str]] = defaultdict(set)
    def_lines: dict[tuple[str, str], set[int]] = defaultdict(set)
    references: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        for t in tags[path]:
            if t.kind == "def":
                defines[t.name].add(path)
                def_lines[(path, t.name)].add(t.line)
            else:
                references[t.name].append(path)

    edges: dict[tuple[int, int, str], float] = {}
    for ident in sorted(defines):
        definers = sorted(defines[ident])
        if ident not in references:
            # A small self-edge keeps never-referenced definitions rankable (as aider does).
            for d in definers:
                edges[(index[d], index[d], ident)] = 0.1
            continue
        mul = _ident_multiplier(ident, m_idents, len(definers))
        for referencer, count in sorted(Counter(references[ident]).items()):
            for d in definers:
                edges[(index[referencer], index[d], ident)] = mul * math.sqrt(count)

    keys = list(edges)
    src = np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys))
    dst = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
    w = np.fromiter((edges[k] for k in keys), dtype=np.float64, count=len(keys))

    pers = np.zeros(len(paths))
    for path in paths:
        parts = set(Path(path).parts) | {Path(path).name, Path(path).stem}
        score = 0.0
        if path in m_files:
            score += 1.0
        if parts & m_idents:
            score += 1.0
        pers[index[path]] = score
    pinned_idents = {i for i in m_idents if i in defines and len(defines[i]) <= SPECIFIC_DEFINERS}
    for ident in pinned_idents:
        for d in defines[ident]:
            pers[index[d]] += 1.0

    ranks = pagerank(len(paths), src, dst, w, pers if pers.any() else None)

    # Spread each file's rank over its out-edges onto (definer, identifier).
    out_w = np.bincount(src, weights=w, minlength=len(paths)) if len(keys) else np.zeros(len(paths))
    def_rank: dict[tuple[str, str], float] = defaultdict(float)
    for (s, di, ident), weight in edges.items():
        def_rank[(paths[di], ident)] += float(ranks[s]) * weight / float(out_w[s])

    def tier(path: str, ident: str) -> int:
        if ident in pinned_idents:
            return 0
        if path in m_files:
            return 1
        return 2

    # Ranks are rounded before sorting so that last-bit float noise cannot reorder ties.
    ordered = sorted(
        def_rank.items(), key=lambda kv: (tier(*kv[0]), -round(kv[1], 12), kv[0][0], kv[0][1])
    )
    items: list[tuple[str, int | None]] = []
    seen_files: dict[str, None] = {}
    for (path, ident), _ in ordered:
        seen_files.setdefault(path, None)
        items.extend((path, line) for line in sorted(def_lines[(path, ident)]))
    by_rank = sorted(paths, key=lambda p: (p not in m_files, -round(float(ranks[index[p]]), 12), p))
    for path in by_rank:
        if path not in seen_files:
            seen_files[path] = None
            items.append((path, None))
    return _Ranked(items, tuple(seen_files))


# --- rendering and cutting -----------------------------------------------------------------


def render(items: Sequence[tuple[str, int | None]], code: dict[tuple[str, int], str]) -> str:
    """Group ``items`` by file in order of first appearance; a file's lines in line order.

    ``path:`` then ``<line>: <definition line>`` for files with definitions shown, the bare
    path for files without."""
    groups: dict[str, set[int]] = {}
    for path, line in items:
        lines = groups.setdefault(path, set())
        if line is not None:
            lines.add(line)
    out: list[str] = []
    for path, lines in groups.items():
        if not lines:
            out.append(path)
            continue
        out.append(f"{path}:")
        out.extend(f"{line + 1:>5}: {code[(path, line)]}" for line in sorted(lines))
    return "\n".join(out) + "\n" if out else ""


def cut_to_budget(
    items: Sequence[tuple[str, int | None]], code: dict[tuple[str, int], str], token_budget: int
) -> str:
    """The rendering of the longest prefix of ``items`` that fits ``token_budget``. Rendering
    grows with the prefix, so binary search finds it in log2(len(items)) renderings."""
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(render(items[:mid], code)) <= token_budget:
            lo = mid
        else:
            hi = mid - 1
    return render(items[:lo], code)


# --- caching -------------------------------------------------------------------------------


class _TagsCache(msgspec.Struct):
    entries: dict[str, list[Tag]] = msgspec.field(default_factory=dict)


def _cache_root(cache_dir: str | Path) -> Path:
    return Path(cache_dir) / f"repomap-v{MAP_FORMAT_VERSION}-{queries_fingerprint()}"


def _atomic_write(path: Path, data: bytes) -> None:
    """Best effort: the cache is disposable, and a failed write must not change what the map
    says (a prompt that quoted the error drifted on replay)."""
    from oopav.files import atomic_write

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except OSError as exc:
        _log().debug("repomap_cache_write_failed", path=str(path), error=str(exc))


def _load_tags_cache(root: Path) -> dict[str, list[Tag]]:
    try:
        return msgspec.msgpack.decode((root / "tags.msgpack").read_bytes(), type=_TagsCache).entries
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}  # missing or unreadable: it is a cache, rebuild


def _map_key(tkey: str, files: Sequence[str], idents: Sequence[str], budget: int) -> str:
    payload = msgspec.json.encode([tkey, sorted(set(files)), sorted(set(idents)), budget])
    return hashlib.sha256(payload).hexdigest()


def _prune(maps_dir: Path) -> None:
    try:
        entries = sorted(maps_dir.glob("*.json"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    except OSError:
        return
    for stale in entries[: max(0, len(entries) - MAX_CACHED_MAPS)]:
        stale.unlink(missing_ok=True)


def load_tags(
    root: str | Path, files: Sequence[str], cache_dir: str | Path | None = None
) -> dict[str, list[Tag]]:
    """Tags of ``files`` (relative to ``root``), reusing tags cached by file content hash so a
    dirty tree only re-parses the files that changed."""
    root = Path(root)
    cached = _load_tags_cache(_cache_root(cache_dir)) if cache_dir is not None else {}
    fresh: dict[str, list[Tag]] = {}
    out: dict[str, list[Tag]] = {}
    for rel in files:
        try:
            source = (root / rel).read_bytes()
        except OSError:
            continue
        key = f"{tags_language(rel)}:{hashlib.sha256(source).hexdigest()}"
        tags = cached.get(key)
        if tags is None:
            tags = extract_file_tags(rel, source)
        fresh[key] = tags
        out[rel] = tags
    if cache_dir is not None and fresh.keys() != cached.keys():
        # Only the entries of this tree are kept, which bounds the file's size.
        _atomic_write(
            _cache_root(cache_dir) / "tags.msgpack", msgspec.msgpack.encode(_TagsCache(fresh))
        )
    return out


def build_repo_map(
    root: str | Path,
    *,
    mentioned_files: Iterable[str] = (),
    mentioned_idents: Iterable[str] = (),
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    cache_dir: str | Path | None = None,
) -> RepoMap:
    """The repo map of ``root`` personalized toward the files and identifiers a task names.

    With ``cache_dir`` a map already built for the same tree key, mentions and budget is read
    back instead of rebuilt; deleting the directory only costs a rebuild."""
    root = Path(root).resolve()
    m_files = tuple(dict.fromkeys(mentioned_files))
    m_idents = tuple(dict.fromkeys(mentioned_idents))
    tkey, scanned = _tree_key_and_scan(root)
    map_path: Path | None = None
    if cache_dir is not None:
        map_path = (
            _cache_root(cache_dir)
            / "maps"
            / f"{_map_key(tkey, m_files, m_idents, token_budget)}.json"
        )
        try:
            hit = msgspec.json.decode(map_path.read_bytes(), type=RepoMap)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            hit = None
        if hit is not None and hit.tree_key == tkey and hit.hash == content_hash(hit.text):
            _log().debug("repo_map_cache_hit", tree_key=tkey)
            return msgspec.structs.replace(hit, from_cache=True)

    files = [rel for rel, _ in (scanned if scanned is not None else _scan(root))]
    tags = load_tags(root, files, cache_dir)
    ranked = rank(tags, m_files, m_idents)
    code = {(p, t.line): t.code for p, ts in tags.items() for t in ts if t.kind == "def"}
    text = cut_to_budget(ranked.items, code, max(0, token_budget))
    result = RepoMap(
        text=text,
        hash=content_hash(text),
        tokens=estimate_tokens(text),
        files_ranked=ranked.files,
        tree_key=tkey,
    )
    if map_path is not None:
        _atomic_write(map_path, msgspec.json.encode(result))
        _prune(map_path.parent)
    _log().debug("repo_map_built", tree_key=tkey, files=len(files), tokens=result.tokens)
    return result


def warm_repo_map(root: str | Path, cache_dir: str | Path) -> int:
    """Parse the tree's files into the tags cache of ``cache_dir`` (what ``build_repo_map``
    spends its time on in a fresh tree), so that the map built later only ranks and cuts.
    The observer runs it beside the baseline suite (issue 28: 0.1-0.4 s of a small project's
    first session, between orient and the planner's model call, moved into time the session
    waits anyway). The number of files read."""
    root = Path(root).resolve()
    _, scanned = _tree_key_and_scan(root)
    files = [rel for rel, _ in (scanned if scanned is not None else _scan(root))]
    return len(load_tags(root, files, cache_dir))


def repo_map_for_instruction(
    root: str | Path,
    instruction: str,
    *,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    cache_dir: str | Path | None = None,
) -> RepoMap:
    """``build_repo_map`` personalized by what ``instruction`` names (``mentions_from_instruction``)."""
    m = mentions_from_instruction(instruction, list_files(root))
    return build_repo_map(
        root,
        mentioned_files=m.files,
        mentioned_idents=m.idents,
        token_budget=token_budget,
        cache_dir=cache_dir,
    )
