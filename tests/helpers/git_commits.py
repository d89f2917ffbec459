"""A git repository made of one commit, for the tests of `--from-git`."""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_repo(tmp_path: Path, files: dict[str, tuple[str, str]]) -> Path:
    """A git repository whose HEAD commit turns each file's before into its after."""
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@x.invalid", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            timeout=60,
        )

    git("init", "-q", "-b", "main")
    for name, (before, _) in files.items():
        (repo / name).write_text(before)
    git("add", "-A")
    git("commit", "-qm", "one")
    for name, (_, after) in files.items():
        (repo / name).write_text(after)
    git("commit", "-qam", "two")
    return repo
