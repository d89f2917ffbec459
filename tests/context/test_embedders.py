"""The deterministic hashing embedder, and the lazy optional sentence-transformers one."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from oopav.context.embedders import Embedder, HashingEmbedder, SentenceTransformerEmbedder

TEXTS = [
    "rename fetch to fetch_page across the repo and keep the tests green",
    "Rename   FETCH to fetch_page in the repository",
    "add a docstring to every public function in utils.py",
    "",
    "naïve unicode — ok",
]

_DIGEST_SNIPPET = (
    "import hashlib; from oopav.context.embedders import HashingEmbedder; "
    "v = HashingEmbedder().embed(['rename fetch to fetch_page', 'ünïcode']); "
    "print(hashlib.sha256(v.tobytes()).hexdigest())"
)


def test_shape_norm_and_type() -> None:
    e = HashingEmbedder()
    assert isinstance(e, Embedder)
    v = e.embed(TEXTS)
    assert v.shape == (5, 512) and v.dtype == np.float32 and v.flags.c_contiguous
    norms = np.linalg.norm(v, axis=1)
    assert np.allclose(norms[[0, 1, 2, 4]], 1.0, atol=1e-6)
    assert norms[3] == 0.0  # no n-grams: the zero vector, which matches nothing
    assert e.embed([]).shape == (0, 512)


def test_deterministic_across_instances_batches_and_processes() -> None:
    a = HashingEmbedder().embed(TEXTS)
    b = HashingEmbedder().embed(list(reversed(TEXTS)))[::-1]
    singles = np.vstack([HashingEmbedder().embed([t]) for t in TEXTS])
    assert np.array_equal(a, b) and np.array_equal(a, singles)
    digests = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _DIGEST_SNIPPET], env=env, capture_output=True, check=True
        )
        digests.add(out.stdout.decode().strip())
    here = hashlib.sha256(
        HashingEmbedder().embed(["rename fetch to fetch_page", "ünïcode"]).tobytes()
    ).hexdigest()
    assert digests == {here}


def test_similarity_follows_shared_ngrams() -> None:
    v = HashingEmbedder().embed(TEXTS)
    sim = v @ v.T
    assert sim[0, 1] > 0.6  # same task, different case and spacing
    assert sim[0, 1] > sim[0, 2] + 0.3


def test_parameters_are_part_of_the_name() -> None:
    assert HashingEmbedder().name != HashingEmbedder(dim=256).name
    assert HashingEmbedder(ngrams=(3,)).name != HashingEmbedder().name
    assert HashingEmbedder(dim=256).embed(["x y z"]).shape == (1, 256)
    with pytest.raises(ValueError):
        HashingEmbedder(dim=0)


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="sentence-transformers is installed",
)
def test_sentence_transformer_embedder_says_what_to_install() -> None:
    with pytest.raises(RuntimeError, match="embed"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2")


def test_package_import_is_cheap() -> None:
    code = (
        "import sys, oopav.context as c; "
        "assert 'faiss' not in sys.modules and 'tree_sitter' not in sys.modules; "
        "c.SessionMemory; assert 'faiss' not in sys.modules; "
        "c.SessionMemory().query('x', 1); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stdout.decode().strip() == "ok"
