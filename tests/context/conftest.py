from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from oopav.context.synthetic import generate_repo

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "oopav tests",
    "GIT_AUTHOR_EMAIL": "tests@oopav.invalid",
    "GIT_COMMITTER_NAME": "oopav tests",
    "GIT_COMMITTER_EMAIL": "tests@oopav.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    """Test set-up only: builds fixture repositories (the code under test reads them)."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV}, capture_output=True, check=True
    )
    return proc.stdout.decode().strip()


def commit_all(repo: Path, message: str = "snapshot") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


class Git:
    """Fixture-side git (building repositories to map); the code under test only reads them."""

    def __call__(self, cwd: Path, *args: str) -> str:
        return git(cwd, *args)

    def commit_all(self, repo: Path, message: str = "snapshot") -> None:
        commit_all(repo, message)


@pytest.fixture
def gitcmd() -> Git:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return Git()


@pytest.fixture(scope="session")
def repo100_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo100")
    generate_repo(root, 100, seed=7)
    return root


@pytest.fixture
def repo100(repo100_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the generated 100-file repository (not a git repository)."""
    dest = tmp_path / "repo"
    shutil.copytree(repo100_template, dest)
    return dest


@pytest.fixture
def git_repo100(repo100: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(repo100, "init", "-q", "-b", "main")
    commit_all(repo100, "generated")
    return repo100
