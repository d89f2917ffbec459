"""Every `console` block marked `<!-- runnable -->` in README.md, examples/*/README.md and
docs/*.md runs as written (issue 15 §2): each block is one bash script from the repository
root, `set -e`, with a fresh data directory and no server configured. `$ ` lines are
commands (a trailing backslash continues one); other lines are shown output, ignored."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- runnable -->"
BLOCK = re.compile(r"^" + re.escape(MARKER) + r"\s*\n```console\n(.*?)\n```", re.DOTALL | re.M)


def runnable_blocks() -> list[tuple[str, str]]:
    docs = [ROOT / "README.md", *sorted(ROOT.glob("examples/*/README.md"))]
    docs += sorted((ROOT / "docs").glob("*.md"))
    out = []
    for doc in docs:
        text = doc.read_text()
        for n, match in enumerate(BLOCK.finditer(text), 1):
            out.append((f"{doc.relative_to(ROOT)}#{n}", commands(match.group(1))))
        # A marker must sit right before a console block: a typo would silently skip a block.
        markers = re.findall(r"^" + re.escape(MARKER) + r"\s*$", text, flags=re.MULTILINE)
        assert len(markers) == len(BLOCK.findall(text)), f"{doc}: stray {MARKER}"
    return out


def commands(block: str) -> str:
    lines: list[str] = []
    continuing = False
    for line in block.splitlines():
        if continuing:
            lines.append(line)
        elif line.startswith("$ "):
            lines.append(line[2:])
        else:
            continue
        continuing = line.endswith("\\")
    return "\n".join(lines)


def test_runnable_blocks_exist() -> None:
    names = [name for name, _ in runnable_blocks()]
    assert "README.md#1" in names and any(n.startswith("examples/") for n in names)


@pytest.mark.parametrize(("name", "script"), runnable_blocks(), ids=lambda v: v if "#" in v else "")
def test_runnable_block(name: str, script: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OOPAV_")}
    env["OOPAV_DATA_DIR"] = str(tmp_path / "data")
    # The commands of this environment first: `oopav`, `python`, `nats-server`.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    before = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (
        f"{name} failed:\n{script}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )
    after = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert after == before, f"{name} changed the checkout:\n{after}"
