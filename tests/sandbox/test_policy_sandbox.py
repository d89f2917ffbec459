"""The policy's sandbox section (issue 30): the backend, extra read-only mounts, dependency
directories bound read-only, the git.fetch / net.http.read scopes and the read-only actions'
deadline. Real bubblewrap through the sandbox port."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
from pathlib import Path

import pytest

from oopav.config import Settings
from oopav.events.actions import RunCommandAction, SearchAction
from oopav.handlers.ports import BwrapSandbox
from oopav.handlers.support.retrieval import read_only
from oopav.sandbox.apply import ActionPlan, plan_action
from oopav.sandbox.capabilities import GrantState, ScopeError, check, covers, parse_scope
from oopav.sandbox.policy import policy_from

NETNS = ["python", "-c", "import os; print(os.readlink('/proc/self/ns/net'))"]


def run(settings: Settings, ws: Path, argv: list[str], env: dict[str, object]) -> object:
    sandbox = BwrapSandbox(settings)
    return asyncio.run(
        sandbox.run(
            argv, workspace=ws, session_id="s1", key=os.urandom(6).hex(), purpose="action",
            timeout_s=60, environment=env,
        )
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose node_modules is ignored (so a worktree of it lacks it)."""
    r = tmp_path / "repo"
    (r / "node_modules" / "left-pad").mkdir(parents=True)
    (r / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 'pad';\n")
    (r / ".gitignore").write_text("node_modules/\n")
    (r / "app.js").write_text("require('left-pad');\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(r)], check=True)
    subprocess.run(["git", "-C", str(r), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(r), "-c", "user.name=t", "-c", "user.email=t@x.invalid", "commit",
         "-qm", "base"], check=True,
    )  # fmt: skip
    return r


@pytest.fixture
def ws(settings: Settings, repo: Path) -> Path:
    w = settings.workspace_for("s1")
    w.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(w)], check=True)
    assert not (w / "node_modules").exists()
    return w


def test_an_ignored_dependency_directory_is_mounted_read_only(
    settings: Settings, repo: Path, ws: Path
) -> None:
    env: dict[str, object] = {"repo": str(repo)}  # the default: node_modules, vendor, .venv
    seen = run(settings, ws, ["cat", "node_modules/left-pad/index.js"], env)
    assert seen.exit_code == 0 and "module.exports = 'pad'" in seen.stdout_tail, seen  # type: ignore[attr-defined]  # an ExecRecord
    write = ["sh", "-c", "echo evil > node_modules/left-pad/index.js"]
    refused = run(settings, ws, write, env)
    assert refused.exit_code != 0 and "Read-only file system" in refused.stderr_tail, refused  # type: ignore[attr-defined]  # an ExecRecord
    assert (repo / "node_modules/left-pad/index.js").read_text() == "module.exports = 'pad';\n"
    # The mount point bwrap made in the workspace is gone afterwards (no stray directory).
    assert not (ws / "node_modules").exists()
    # A policy that names no dependency directories leaves it out of the sandbox altogether.
    off = {"repo": str(repo), "sandbox": {"dependency_dirs": []}}
    absent = run(settings, ws, ["cat", "node_modules/left-pad/index.js"], off)
    assert absent.exit_code != 0  # type: ignore[attr-defined]  # an ExecRecord


def test_read_only_mounts_show_a_hidden_host_path_read_only(
    settings: Settings, repo: Path, ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    sdk = tmp_path_factory.mktemp("sdk")  # under /tmp, which the sandbox replaces
    (sdk / "VERSION").write_text("sdk 1.2\n")
    cat = ["cat", str(sdk / "VERSION")]
    hidden = run(settings, ws, cat, {"repo": str(repo)})
    assert hidden.exit_code != 0  # type: ignore[attr-defined]  # an ExecRecord
    env = {"repo": str(repo), "sandbox": {"read_only_mounts": [str(sdk)]}}
    shown = run(settings, ws, cat, env)
    assert shown.exit_code == 0 and "sdk 1.2" in shown.stdout_tail  # type: ignore[attr-defined]  # an ExecRecord
    write = run(settings, ws, ["sh", "-c", f"echo x > {sdk}/VERSION"], env)
    assert write.exit_code != 0 and (sdk / "VERSION").read_text() == "sdk 1.2\n"  # type: ignore[attr-defined]  # an ExecRecord
    missing = run(
        settings, ws, cat, {"repo": str(repo), "sandbox": {"read_only_mounts": ["/nope/x"]}}
    )
    assert missing.exit_code == 125 and "/nope/x does not exist" in missing.stderr_tail  # type: ignore[attr-defined]  # an ExecRecord


def test_the_policy_names_the_backend(settings: Settings, repo: Path, ws: Path) -> None:
    host = os.readlink("/proc/self/ns/net")
    isolated = run(settings, ws, NETNS, {"repo": str(repo), "sandbox": {"backend": "bwrap"}})
    assert isolated.stdout_tail.strip() != host  # type: ignore[attr-defined]  # an ExecRecord
    settings_none = Settings(data_dir=settings.data_dir)
    from oopav.sandbox.runner import default_config

    # backend none isolates nothing (on a root host without a pids cgroup it must be told
    # that processes go uncapped): the command shares the host's network namespace.
    sandbox = BwrapSandbox(
        settings_none, default_config(settings_none, allow_unlimited_processes=True)
    )
    rec = asyncio.run(
        sandbox.run(
            NETNS, workspace=ws, session_id="s1", key="none1", purpose="action", timeout_s=60,
            environment={"repo": str(repo), "sandbox": {"backend": "none"}},
        )
    )  # fmt: skip
    assert rec.exit_code == 0 and rec.stdout_tail.strip() == host, rec


def test_network_scopes_parse_cover_and_turn_the_namespace_on() -> None:
    assert str(parse_scope("net.http.read:PyPI.org")) == "net.http.read:pypi.org"
    assert str(parse_scope("git.fetch:origin")) == "git.fetch:origin"
    assert str(parse_scope("git.fetch:https://github.com/o/r.git")).endswith("o/r.git")
    for bad, words in [
        ("git.fetch:../up", "git.fetch needs a remote name"),
        ("net.http.read:pypi.org/simple", "net.http.read needs a host name"),
        ("git.fetch", "needs an argument"),
    ]:
        with pytest.raises(ScopeError, match=words):
            parse_scope(bad)
    assert covers(parse_scope("net.http:pypi.org"), parse_scope("net.http.read:pypi.org"))
    assert not covers(parse_scope("net.http.read:pypi.org"), parse_scope("net.http:pypi.org"))
    assert covers(parse_scope("net.any"), parse_scope("git.fetch:origin"))
    assert covers(parse_scope("git.fetch:*"), parse_scope("git.fetch:upstream"))
    assert not covers(parse_scope("git.fetch:origin"), parse_scope("git.fetch:upstream"))

    def planned(argv: list[str], scopes: list[str] | None = None) -> ActionPlan:
        p = plan_action(Path("."), RunCommandAction(argv=argv, scopes=scopes or []))
        assert isinstance(p, ActionPlan), p
        return p

    fetch = planned(["git", "fetch", "upstream", "main"])
    assert fetch.scopes == ["git.fetch:upstream"] and fetch.network
    assert planned(["git", "fetch", "--all"]).scopes == ["git.fetch:*"]
    assert planned(["git", "fetch"]).scopes == ["git.fetch:origin"]
    assert not planned(["git", "status"]).network
    assert planned(["curl", "https://pypi.org/simple/"], ["net.http.read:pypi.org"]).network
    # A policy allowing git.fetch:origin lets `git fetch origin` run and asks for upstream.
    policy = policy_from({"allow": ["git.fetch:origin"], "ask_unknown": True})
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    assert check(planned(["git", "fetch"]).scopes, GrantState(), policy, now).allowed
    assert check(fetch.scopes, GrantState(), policy, now).outcome == "ask"


def test_the_policy_sandbox_section_is_validated() -> None:
    for section, words in [
        ({"backend": "docker"}, "backend"),
        ({"read_only_mounts": ["relative/dir"]}, "absolute paths"),
        ({"read_only_mounts": ["/proc"]}, "cannot mount"),
        ({"dependency_dirs": [".git/objects"]}, "outside .git"),
        ({"read_timeout_s": 30}, "less than or equal to 5"),
        ({"read_timeout_s": 0.5}, "greater than or equal to 2"),
    ]:
        with pytest.raises(ValueError, match=words):
            policy_from({"sandbox": section})
    # Unset, the section stays out of the prompt's policy (request hashes unchanged).
    assert "sandbox" not in policy_from({}).model_dump()


def test_a_search_past_its_deadline_stops_and_says_so(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"m{i:02}.py").write_text(f"def f{i}(): pass\n")
    ticks = itertools.count()  # a clock that moves one second per reading

    ok, text = read_only(
        tmp_path, SearchAction(pattern="def "), timeout_s=5, clock=lambda: float(next(ticks))
    )
    assert not ok and "stopped at its 5 s deadline" in text, text
    assert 0 < text.count("def f") < 20  # what it found before the deadline
    ok, text = read_only(tmp_path, SearchAction(pattern="def "), timeout_s=5)
    assert ok and text.count("def f") == 20


def test_the_workspace_interface_reads_only_inside_its_root(tmp_path: Path) -> None:
    from oopav.sandbox.files import WorkspaceFiles

    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("s3cret\n")
    (root / "out.txt").symlink_to(tmp_path / "secret.txt")
    files = WorkspaceFiles(root)
    assert files.text("pkg/a.py") == "x = 1\n" and files.is_dir("pkg")
    for outside in ("../secret.txt", str(tmp_path / "secret.txt"), "out.txt"):
        assert files.text(outside) is None and not files.exists(outside), outside
    assert list(files.scan()) == ["pkg/a.py"]  # the symlink is not listed
    assert files.find("**/*.py") == ["pkg/a.py"]
    assert files.read_bytes("pkg/a.py", max_bytes=2) is None  # over the cap
