"""The repo map: budget, ranking, personalization, caching, determinism."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from oopav.context.repomap import (
    RepoMap,
    build_repo_map,
    cut_to_budget,
    estimate_tokens,
    list_files,
    load_tags,
    mentions_from_instruction,
    pagerank,
    rank,
    render,
    repo_map_for_instruction,
    tree_key,
    warm_repo_map,
)
from oopav.context.synthetic import LANGUAGES
from oopav.context.tags import tags_language

if TYPE_CHECKING:
    from conftest import Git


def first_file(m: RepoMap) -> str:
    return m.text.split("\n", 1)[0].rstrip(":")


def test_100_files_map_under_3k_tokens(repo100: Path) -> None:
    files = list_files(repo100)
    assert len(files) == 100
    m = build_repo_map(repo100)
    assert 0 < m.tokens <= 2048 < 3000
    assert m.tokens == estimate_tokens(m.text) == -(-len(m.text) // 4)
    assert m.hash == hashlib.sha256(m.text.encode()).hexdigest()
    assert sorted(m.files_ranked) == files
    assert {tags_language(f) for f in m.files_ranked} >= set(LANGUAGES)
    # The map uses its budget: it is not trivially short.
    assert m.tokens > 1500


@pytest.mark.parametrize("budget", [0, 40, 300, 2900])
def test_map_fits_the_budget(repo100: Path, budget: int) -> None:
    m = build_repo_map(repo100, token_budget=budget)
    assert m.tokens <= budget
    if budget == 0:
        assert m.text == ""


def test_binary_search_finds_the_longest_prefix(repo100: Path) -> None:
    files = list_files(repo100)
    tags = load_tags(repo100, files)
    ranked = rank(tags)
    code = {(p, t.line): t.code for p, ts in tags.items() for t in ts if t.kind == "def"}
    for budget in (50, 333, 1000):
        text = cut_to_budget(ranked.items, code, budget)
        n = next(i for i in range(len(ranked.items) + 1) if render(ranked.items[:i], code) == text)
        assert estimate_tokens(text) <= budget
        assert estimate_tokens(render(ranked.items[: n + 1], code)) > budget


def test_hubs_rank_above_leaves(repo100: Path) -> None:
    m = build_repo_map(repo100)
    # Files are generated so that early files of each language are referenced the most and
    # the last ones by nobody: the first ranked file is a hub, the last ones are leaves.
    index = {f: int("".join(c for c in Path(f).stem if c.isdigit())) for f in m.files_ranked}
    top = [index[f] for f in m.files_ranked[:6]]
    bottom = [index[f] for f in m.files_ranked[-6:]]
    assert max(top) < min(bottom)


def test_mentioned_file_ranks_first(repo100: Path) -> None:
    plain = build_repo_map(repo100)
    target = plain.files_ranked[-1]
    assert first_file(plain) != target
    m = build_repo_map(repo100, mentioned_files=[target])
    assert m.files_ranked[0] == target
    assert first_file(m) == target
    assert m.hash != plain.hash


def test_mentioned_identifier_ranks_its_definer_first(repo100: Path) -> None:
    plain = build_repo_map(repo100)
    target = plain.files_ranked[-3]
    tags = load_tags(repo100, [target])[target]
    ident = next(t for t in tags if t.kind == "def" and t.category == "function")
    m = build_repo_map(repo100, mentioned_idents=[ident.name])
    assert m.files_ranked[0] == target
    first_block = m.text.split("\n\n")[0].split("\n")
    assert first_block[0] == f"{target}:"
    assert any(ident.code in line for line in m.text.split(f"{target}:\n", 1)[1].split("\n")[:8])


def test_mentions_from_instruction(repo100: Path) -> None:
    files = list_files(repo100)
    py = next(f for f in files if f.endswith(".py"))
    go = next(f for f in files if f.endswith(".go"))
    text = f"Rename `parse_invoice_0_0` to parse_bill in {py} and update {Path(go).name} too, then fix the tests."
    got = mentions_from_instruction(text, files)
    assert got.files == (py, go)
    assert "parse_invoice_0_0" in got.idents and "parse_bill" in got.idents
    assert got.idents.index("parse_invoice_0_0") < got.idents.index("parse_bill")
    assert not {"the", "and", "then", "fix", "tests", "to", "in"} & set(got.idents)
    assert mentions_from_instruction("nothing named here", files).files == ()


def test_repo_map_for_instruction_puts_the_named_file_first(repo100: Path) -> None:
    plain = build_repo_map(repo100)
    target = plain.files_ranked[-2]
    m = repo_map_for_instruction(repo100, f"Add docstrings to every function in {target}")
    assert m.files_ranked[0] == target


def test_map_is_deterministic_and_location_independent(repo100: Path, tmp_path: Path) -> None:
    a = build_repo_map(repo100, mentioned_idents=["Model3"])
    b = build_repo_map(repo100, mentioned_idents=["Model3"])
    other = tmp_path / "elsewhere" / "copy"
    shutil.copytree(repo100, other)
    c = build_repo_map(other, mentioned_idents=["Model3"])
    assert a.text == b.text == c.text
    assert a.hash == b.hash == c.hash


def test_cache_hit_by_git_tree_hash(git_repo100: Path, tmp_path: Path, gitcmd: Git) -> None:
    cache = tmp_path / "cache"
    tree = gitcmd(git_repo100, "rev-parse", "HEAD^{tree}")
    assert tree_key(git_repo100) == f"git:{tree}:"
    first = build_repo_map(git_repo100, cache_dir=cache)
    assert not first.from_cache and first.tree_key == f"git:{tree}:"
    second = build_repo_map(git_repo100, cache_dir=cache)
    assert second.from_cache
    assert (second.text, second.hash, second.files_ranked) == (
        first.text,
        first.hash,
        first.files_ranked,
    )
    # Another checkout of the same commit (other path, other mtimes) shares the entry.
    clone = tmp_path / "clone"
    gitcmd(tmp_path, "clone", "-q", str(git_repo100), str(clone))
    third = build_repo_map(clone, cache_dir=cache)
    assert third.from_cache and third.hash == first.hash
    # Other mentions or another budget are other entries.
    assert not build_repo_map(git_repo100, cache_dir=cache, token_budget=1000).from_cache


def test_cache_invalidated_when_a_file_changes(
    git_repo100: Path, tmp_path: Path, gitcmd: Git
) -> None:
    cache = tmp_path / "cache"
    first = build_repo_map(git_repo100, cache_dir=cache)
    target = first_file(first)
    tags = load_tags(git_repo100, [target])[target]
    shown = next(t for t in tags if t.kind == "def" and t.category == "function")
    path = git_repo100 / target
    path.write_text(path.read_text().replace(shown.name, shown.name + "_renamed"))

    dirty = build_repo_map(git_repo100, cache_dir=cache)
    assert dirty.tree_key.startswith("fs:") and dirty.tree_key != first.tree_key
    assert not dirty.from_cache
    assert shown.name + "_renamed" in dirty.text
    assert build_repo_map(git_repo100, cache_dir=cache).from_cache

    gitcmd.commit_all(git_repo100, "rename")
    committed = build_repo_map(git_repo100, cache_dir=cache)
    assert committed.tree_key == "git:" + gitcmd(git_repo100, "rev-parse", "HEAD^{tree}") + ":"
    assert not committed.from_cache
    assert committed.hash == dirty.hash  # same content, whatever the key


def test_cache_in_a_plain_directory_uses_mtimes_and_sizes(repo100: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = build_repo_map(repo100, cache_dir=cache)
    assert first.tree_key.startswith("fs:")
    assert build_repo_map(repo100, cache_dir=cache).from_cache
    victim = repo100 / first_file(first)
    victim.write_text(victim.read_text() + "\n")
    assert not build_repo_map(repo100, cache_dir=cache).from_cache


def test_a_damaged_cache_is_rebuilt(repo100: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = build_repo_map(repo100, cache_dir=cache)
    damaged = list(cache.rglob("*.json")) + list(cache.rglob("*.msgpack"))
    assert len(damaged) == 2
    for p in damaged:
        p.write_bytes(b"\x00garbage")
    again = build_repo_map(repo100, cache_dir=cache)
    assert not again.from_cache and again.hash == first.hash
    shutil.rmtree(cache)
    assert build_repo_map(repo100, cache_dir=cache).hash == first.hash


def test_writers_of_one_key_at_once_and_an_unwritable_cache_never_change_the_map(
    git_repo100: Path, tmp_path: Path
) -> None:
    """Handlers in one process build the same map at once (chaos found a rename of a
    temporary file another thread had already renamed, quoted into a prompt as
    '(unavailable: …)'); a cache that cannot be written is skipped, not reported."""
    from concurrent.futures import ThreadPoolExecutor

    expected = build_repo_map(git_repo100).text
    cache = tmp_path / "cache"
    with ThreadPoolExecutor(8) as pool:
        texts = list(
            pool.map(lambda _: build_repo_map(git_repo100, cache_dir=cache).text, range(16))
        )
    assert set(texts) == {expected}
    assert not [p for p in cache.rglob("*.tmp")]
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be\n")
    assert build_repo_map(git_repo100, cache_dir=blocked).text == expected


def test_tags_cache_reparses_only_changed_files(
    repo100: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    build_repo_map(repo100, cache_dir=cache)
    victim = list_files(repo100)[0]
    (repo100 / victim).write_text((repo100 / victim).read_text() + "\n// touched\n")
    parsed: list[str] = []
    import oopav.context.repomap as repomap

    real = repomap.extract_file_tags

    def spy(path: str, source: bytes) -> list:  # type: ignore[type-arg]
        parsed.append(path)
        return real(path, source)

    monkeypatch.setattr(repomap, "extract_file_tags", spy)
    build_repo_map(repo100, cache_dir=cache, mentioned_idents=["anything"])
    assert parsed == [victim]


def test_file_listing_respects_gitignore_and_skips_junk(
    git_repo100: Path, tmp_path: Path, gitcmd: Git
) -> None:
    (git_repo100 / ".gitignore").write_text("generated/\n")
    (git_repo100 / "generated").mkdir()
    (git_repo100 / "generated" / "big.py").write_text("def ignored_fn(): pass\n")
    (git_repo100 / "new_module.py").write_text("def brand_new(): pass\n")  # untracked, kept
    files = list_files(git_repo100)
    assert "new_module.py" in files and "generated/big.py" not in files

    plain = tmp_path / "plain"
    (plain / "node_modules" / "x").mkdir(parents=True)
    (plain / "node_modules" / "x" / "index.js").write_text("function dep() {}\n")
    (plain / ".hidden").mkdir()
    (plain / ".hidden" / "h.py").write_text("def h(): pass\n")
    (plain / "src").mkdir()
    (plain / "src" / "app.py").write_text("def app(): pass\n")
    (plain / "README.md").write_text("# readme\n")
    assert list_files(plain) == ["src/app.py"]


def _dense_pagerank(
    n: int, edges: list[tuple[int, int, float]], p: np.ndarray, alpha: float
) -> np.ndarray:
    """Reference: solve r = alpha * (M^T r + dangling(r) * p) + (1 - alpha) * p exactly."""
    w = np.zeros((n, n))
    for s, d, x in edges:
        w[s, d] += x
    out = w.sum(axis=1)
    m = np.divide(w, out[:, None], out=np.zeros_like(w), where=out[:, None] > 0)
    dangling = (out == 0).astype(float)
    g = alpha * (m.T + np.outer(p, dangling)) + (1 - alpha) * np.outer(p, np.ones(n))
    vals, vecs = np.linalg.eig(g)
    r = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    return r / r.sum()


def test_pagerank_matches_the_stationary_distribution() -> None:
    edges = [(0, 1, 1.0), (1, 2, 2.0), (2, 0, 1.0), (2, 1, 0.5), (3, 2, 1.0), (0, 3, 0.1)]
    n = 5  # node 4 is isolated (dangling)
    src = np.array([e[0] for e in edges])
    dst = np.array([e[1] for e in edges])
    w = np.array([e[2] for e in edges])
    uniform = np.full(n, 1 / n)
    assert np.allclose(
        pagerank(n, src, dst, w), _dense_pagerank(n, edges, uniform, 0.85), atol=1e-7
    )
    pers = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    got = pagerank(n, src, dst, w, pers)
    assert np.allclose(got, _dense_pagerank(n, edges, pers, 0.85), atol=1e-7)
    assert got[4] == 0.0 and got[3] > pagerank(n, src, dst, w)[3]
    assert pagerank(0, src[:0], dst[:0], w[:0]).shape == (0,)


def test_empty_repository(tmp_path: Path) -> None:
    m = build_repo_map(tmp_path, cache_dir=tmp_path / ".cache")
    assert m.text == "" and m.tokens == 0 and m.files_ranked == ()


def test_a_warmed_cache_leaves_the_map_nothing_to_parse(
    repo100: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observer warms the tags cache beside the baseline suite (issue 28): the planner's
    map then parses no file, and it is the map a cold cache gives."""
    cold = build_repo_map(repo100, mentioned_idents=["anything"])
    cache = tmp_path / "cache"
    assert warm_repo_map(repo100, cache) == len(list_files(repo100))
    parsed: list[str] = []
    import oopav.context.repomap as repomap

    real = repomap.extract_file_tags

    def spy(path: str, source: bytes) -> list:  # type: ignore[type-arg]
        parsed.append(path)
        return real(path, source)

    monkeypatch.setattr(repomap, "extract_file_tags", spy)
    warm = build_repo_map(repo100, cache_dir=cache, mentioned_idents=["anything"])
    assert parsed == []
    assert (warm.text, warm.hash) == (cold.text, cold.hash)
