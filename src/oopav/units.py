"""Sizes as people write and read them (``512M``, ``2GiB``, ``1.5 GiB``): one parser and one
printer for the storage watermark, the artifact budget and ``oopav gc``."""

from __future__ import annotations

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``1.5GiB``, ``1048576`` -> bytes; ValueError with the expected form."""
    raw = text.strip().upper().removesuffix("IB").removesuffix("B")
    mult = 1
    if raw and raw[-1] in _UNITS:
        mult, raw = _UNITS[raw[-1]], raw[:-1]
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a size; use e.g. 512M, 2G or a number of bytes"
        ) from None
    if value < 0:
        raise ValueError(f"{text!r}: a size cannot be negative")
    return int(value * mult)


def human_size(n: int) -> str:
    """Bytes in the largest binary unit that keeps the number >= 1 (``1.5 GiB``)."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
