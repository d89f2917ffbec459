"""A small repository with a real git history for mined tasks: a rename across files, an
argument swap, and an addition no rule describes."""

from __future__ import annotations

import subprocess
from pathlib import Path

FILES_1 = {
    "pkg/net.py": (
        "def fetch(url):\n"
        "    return url.strip()\n"
        "\n"
        "\n"
        "def load(items):\n"
        "    out = []\n"
        "    for x in items:\n"
        "        out.append(fetch(x))\n"
        "    return out\n"
    ),
    "app/main.py": (
        "from pkg.net import fetch\n"
        "\n"
        "\n"
        "def main(urls):\n"
        "    first = fetch(urls[0])\n"
        "    return first\n"
    ),
    "tools/files.py": (
        "import shutil\n\n\ndef backup(src, dst):\n    shutil.copy(src, dst)\n    return dst\n"
    ),
    "tools/report.py": (
        "def report(rows):\n"
        "    total = count(rows)\n"
        "    label = 'n'\n"
        "    return fmt(label, total)\n"
    ),
}


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_history(repo: Path) -> list[str]:
    """Five commits; returns their shas, oldest first."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    shas = [commit(repo, FILES_1, "Initial import")]
    renamed = {k: v.replace("fetch", "fetch_page") for k, v in FILES_1.items() if "fetch" in v}
    shas.append(commit(repo, renamed, "Rename fetch to fetch_page"))
    swapped = {
        "tools/files.py": FILES_1["tools/files.py"].replace("copy(src, dst)", "copy(dst, src)")
    }
    shas.append(commit(repo, swapped, "Swap the arguments of shutil.copy"))
    added = {
        "tools/files.py": swapped["tools/files.py"]
        + "\n\ndef restore(dst, src):\n    return backup(dst, src)\n"
    }
    shas.append(commit(repo, added, "Add restore"))
    # Two changes in one function: each hunk's rule makes only half of the function's change.
    tidy = FILES_1["tools/report.py"].replace("count(", "tally(").replace("fmt(", "render(")
    shas.append(commit(repo, {"tools/report.py": tidy}, "Tidy report"))
    return shas
