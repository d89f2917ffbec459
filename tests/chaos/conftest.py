"""The chaos harness lives next to its tests (bench/chaos.py imports it too)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
