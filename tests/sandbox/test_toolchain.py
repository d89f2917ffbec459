"""The interpreter and its tools are visible read-only inside the real bwrap sandbox, and
exposing them reveals no secret, hidden path or other workspace next to or inside them."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from oopav.sandbox.runner import (
    HIDDEN_SYSTEM_DIRS,
    SandboxConfig,
    default_bin_dirs,
    default_config,
    default_exposed_paths,
    run_sandboxed,
    sandbox_env,
)


def run(argv: list[str], ws: Path, art: Path, cfg: SandboxConfig, **kw: object):
    return run_sandboxed(argv, workspace=ws, artifacts_dir=art, config=cfg, **kw)  # type: ignore[arg-type]


def test_defaults_expose_the_running_interpreter():
    exposed = default_exposed_paths()
    real_exe_dir = os.path.dirname(os.path.realpath(sys.executable))
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, real_exe_dir):
        real = os.path.realpath(p)
        assert any(real == e or real.startswith(e + "/") for e in exposed), p
    # Deduplicated to the outermost trees.
    assert len(set(exposed)) == len(exposed)
    env = sandbox_env(SandboxConfig(), {"PATH": "/usr/bin:/bin"})
    assert env["PATH"].split(":")[0] == os.path.dirname(os.path.abspath(sys.executable))
    assert env["PATH"].split(":")[: len(default_bin_dirs())] == list(default_bin_dirs())


def test_python_in_the_sandbox_is_the_venvs(workspace, artifacts, config):
    r = run(["python", "-c", "import sys; print(sys.prefix)"], workspace, artifacts, config)
    assert r.ok, r.stderr_tail
    assert r.stdout_tail.strip() == sys.prefix


def test_pytest_runs_in_the_sandbox(workspace, artifacts, config):
    (workspace / "test_tiny.py").write_text(
        "def test_adds():\n    assert 1 + 1 == 2\n\n\ndef test_reads_here():\n"
        "    assert open('test_tiny.py').read()\n"
    )
    r = run(
        ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], workspace, artifacts, config
    )
    assert r.ok, r.stdout_tail + r.stderr_tail
    assert "2 passed" in r.stdout_tail
    # A failing test is reported as a failing exit, not a sandbox error.
    (workspace / "test_tiny.py").write_text("def test_fails():\n    assert False\n")
    r = run(
        ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], workspace, artifacts, config
    )
    assert r.exit_code == 1
    assert "1 failed" in r.stdout_tail


def test_venv_scripts_resolve_first_on_path(workspace, artifacts, config):
    (workspace / "m.py").write_text("import os\n")
    r = run(["sh", "-c", "command -v python; command -v pytest"], workspace, artifacts, config)
    assert r.ok
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    assert r.stdout_tail.split() == [f"{bin_dir}/python", f"{bin_dir}/pytest"]
    if Path(bin_dir, "ruff").exists():
        lint = run(["ruff", "check", "--no-cache", "m.py"], workspace, artifacts, config)
        assert lint.exit_code == 1
        assert "F401" in lint.stdout_tail


def test_secrets_next_to_and_inside_an_exposed_tree_stay_hidden(
    workspace, artifacts, settings, outside
):
    home = outside / "home"
    prefix = home / ".pyenv" / "versions" / "3.x"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "lib" / "stdlib.py").write_text("VISIBLE")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("SSH-SECRET")
    (home / ".pyenv" / "token").write_text("SIBLING-SECRET")
    (prefix / ".aws").mkdir()
    (prefix / ".aws" / "credentials").write_text("AWS-SECRET")
    (prefix / "netrc").write_text("FILE-SECRET")
    cfg = default_config(
        settings,
        hidden_paths=(str(home),),  # hidden like a home directory
        exposed_paths=(str(prefix),),
        secret_paths=(str(home / ".ssh"), str(prefix / ".aws"), str(prefix / "netrc")),
    )
    r = run(
        [
            "sh",
            "-c",
            f"cat {prefix}/lib/stdlib.py; echo; cat {home}/.ssh/id_rsa {home}/.pyenv/token "
            f"{prefix}/.aws/credentials {prefix}/netrc; ls -A {home} {home}/.pyenv",
        ],
        workspace,
        artifacts,
        cfg,
    )
    assert r.stdout_tail.startswith("VISIBLE")
    for secret in ("SSH-SECRET", "SIBLING-SECRET", "AWS-SECRET", "FILE-SECRET"):
        assert secret not in r.stdout_tail
    assert "token" not in r.stdout_tail
    # The exposed tree itself is read-only.
    w = run(["sh", "-c", f"echo x > {prefix}/lib/new.py"], workspace, artifacts, cfg)
    assert w.exit_code != 0 and "Read-only file system" in w.stderr_tail
    assert not (prefix / "lib" / "new.py").exists()


def test_data_dir_inside_an_exposed_tree_stays_hidden(workspace, artifacts, settings, tmp_path):
    other = settings.workspace_for("other-session")
    other.mkdir(parents=True)
    (other / "theirs.txt").write_text("THEIRS")
    (tmp_path / "visible.txt").write_text("SHOWN")
    (workspace / "mine.txt").write_text("MINE")
    # Expose the directory that holds the data dir: the data dir is still masked, and the
    # session's own workspace is bound back on top.
    cfg = default_config(settings, exposed_paths=(str(tmp_path),))
    r = run(
        ["sh", "-c", f"cat {tmp_path}/visible.txt mine.txt; cat {other}/theirs.txt"],
        workspace,
        artifacts,
        cfg,
    )
    assert r.stdout_tail == "SHOWNMINE"
    assert "No such file" in r.stderr_tail


def test_planted_secret_next_to_the_real_base_prefix_stays_hidden(workspace, artifacts, config):
    """With the default exposure, a file planted beside the real interpreter tree (e.g. in
    ~/.pyenv/versions/) is not visible: only the tree itself is bound back."""
    base = Path(os.path.realpath(sys.base_prefix))
    if not any(base.is_relative_to(d) for d in HIDDEN_SYSTEM_DIRS):
        pytest.skip(f"base prefix {base} is not under a hidden directory")
    planted = base.parent / f"oopav-planted-{uuid.uuid4().hex[:8]}"
    try:
        planted.write_text("PLANTED-SECRET")
    except OSError:
        pytest.skip(f"cannot write next to {base}")
    try:
        r = run(
            ["sh", "-c", f"cat {planted}; python -c 'import os; print(os.__file__)'"],
            workspace,
            artifacts,
            config,
        )
        assert "PLANTED-SECRET" not in r.stdout_tail
        assert "No such file" in r.stderr_tail
        assert r.stdout_tail.strip().startswith(str(base))
    finally:
        planted.unlink()
