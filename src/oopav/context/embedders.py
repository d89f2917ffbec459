"""Text embedders for the session memory.

``HashingEmbedder`` is the default: hashed character n-grams, signed, L2-normalised, fixed
dimension. It needs no model, is a pure function of the text (integer hashing, no Python
``hash()`` and its per-process salt), and embeds a text the same way whatever batch it is in,
so an index rebuilt from the stream is bit-identical to the live one.

``SentenceTransformerEmbedder`` wraps a sentence-transformers model that is already on disk.
It is imported lazily, only when asked for, and never downloads (``local_files_only``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

_FNV_PRIME = np.uint64(0x100000001B3)
_FNV_OFFSET = 0xCBF29CE484222325
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 rows of width ``dim``. ``name`` identifies the
    embedding function (model and parameters): an index persisted by another is rebuilt."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_text(text: str) -> str:
    """Lower case, whitespace collapsed, one space of padding so words have edges."""
    return " " + " ".join(text.lower().split()) + " "


def _mix(h: np.ndarray) -> np.ndarray:
    # murmur3's 64-bit finaliser: spreads FNV's weak low bits before the modulo.
    h = h ^ (h >> np.uint64(33))
    h = h * _MIX1
    h = h ^ (h >> np.uint64(33))
    h = h * _MIX2
    return h ^ (h >> np.uint64(33))


class HashingEmbedder:
    """Signed feature hashing of the UTF-8 byte n-grams (default 3, 4 and 5) of the normalised
    text into ``dim`` buckets (default 512), then L2 normalisation.

    The sign comes from the hash's top bit, so colliding n-grams cancel on average instead of
    piling up. Everything is vectorised over the whole batch with numpy integer arithmetic
    (uint64 wraps around): 10k short texts embed in well under a second."""

    def __init__(self, dim: int = 512, ngrams: Sequence[int] = (3, 4, 5)) -> None:
        if dim <= 0 or not ngrams or min(ngrams) <= 0:
            raise ValueError("HashingEmbedder needs dim > 0 and positive n-gram sizes")
        self._dim = int(dim)
        self._ngrams = tuple(sorted(set(int(n) for n in ngrams)))

    @property
    def name(self) -> str:
        return f"hash-ngram-v1:d{self._dim}:n{'-'.join(map(str, self._ngrams))}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        n_docs = len(texts)
        counts = np.zeros(n_docs * self._dim, dtype=np.float64)
        if n_docs == 0:
            return counts.reshape(0, self._dim).astype(np.float32)
        encoded = [normalize_text(t).encode("utf-8") for t in texts]
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=n_docs)
        buf = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.uint64)
        doc = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        total = buf.shape[0]
        for n in self._ngrams:
            m = total - n + 1
            if m <= 0:
                continue
            # FNV-1a over the n bytes, seeded by n so a 3-gram and a 4-gram never share a hash.
            h = np.full(m, (_FNV_OFFSET + n) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
            for j in range(n):
                h = (h ^ buf[j : j + m]) * _FNV_PRIME
            h = _mix(h)
            # An n-gram that straddles two texts of the batch belongs to neither.
            inside = doc[:m] == doc[n - 1 : n - 1 + m]
            h = h[inside]
            bucket = (h % np.uint64(self._dim)).astype(np.int64)
            sign = np.where((h >> np.uint64(63)) == 1, -1.0, 1.0)
            flat = doc[:m][inside] * self._dim + bucket
            counts += np.bincount(flat, weights=sign, minlength=n_docs * self._dim)
        vecs = counts.reshape(n_docs, self._dim)
        norms = np.sqrt((vecs * vecs).sum(axis=1, keepdims=True))
        vecs = np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)
        return np.ascontiguousarray(vecs, dtype=np.float32)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model (a name already in the Hugging Face cache, or a
    directory). Needs the ``embed`` extra; never downloads. Embeddings of a neural model can
    vary in the last bits with batch composition and hardware, so rebuild equality is exact
    only for ``HashingEmbedder``; replay does not depend on it (hits are recorded in events)."""

    def __init__(self, model: str, *, device: str | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise RuntimeError(
                "SentenceTransformerEmbedder needs sentence-transformers: "
                "install oopav with the 'embed' extra, or use the default HashingEmbedder"
            ) from exc
        self._model_name = model
        self._model: Any = SentenceTransformer(model, device=device, local_files_only=True)
        dim = self._model.get_sentence_embedding_dimension()
        if not dim:
            raise RuntimeError(f"model {model!r} does not report an embedding dimension")
        self._dim = int(dim)

    @property
    def name(self) -> str:
        return f"st:{self._model_name}:d{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vecs = self._model.encode(
            list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)


def default_embedder() -> Embedder:
    return HashingEmbedder()
