"""``oopav doctor``: is everything oopav needs in place? One line per check, pass or fail,
and for a failure the fix. Exits 1 when any check fails (warnings do not)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from oopav import health
from oopav.config import Settings

MIN_FREE_BYTES = 1 << 30


@dataclass
class Check:
    name: str
    status: Literal["ok", "FAIL", "warn"]
    detail: str
    fix: str = ""


def _version(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    text = (proc.stdout or proc.stderr).strip().splitlines()
    return text[0] if text else f"exit {proc.returncode}"


def check_nats(settings: Settings) -> Check:
    from oopav.bus.server import ServerError, nats_server_binary

    try:
        binary = nats_server_binary()
    except ServerError as exc:
        if settings.nats_url:
            return Check("nats-server", "warn", f"not installed; using {settings.nats_url}")
        return Check("nats-server", "FAIL", "not found", str(exc).split(": ", 1)[-1])
    return Check("nats-server", "ok", f"{_version([binary, '--version'])} ({binary})")


def check_bwrap(settings: Settings) -> Check:
    from oopav.sandbox.runner import (
        SandboxUnavailable,
        default_config,
        find_bwrap,
        run_sandboxed,
    )

    try:
        binary = find_bwrap()
    except SandboxUnavailable as exc:
        return Check("bwrap", "FAIL", "not found", str(exc).split("Fix: ", 1)[-1])
    version = _version([binary, "--version"])
    with tempfile.TemporaryDirectory(prefix="oopav-doctor-") as tmp:
        ws, art = Path(tmp) / "ws", Path(tmp) / "art"
        ws.mkdir()
        try:
            result = run_sandboxed(
                ["true"],
                workspace=ws,
                artifacts_dir=art,
                config=default_config(settings),
                timeout_s=20,
            )
        except SandboxUnavailable as exc:
            return Check(
                "bwrap",
                "FAIL",
                f"{version}: cannot start a sandbox: {exc}",
                "allow unprivileged user namespaces: `sudo sysctl -w "
                "kernel.unprivileged_userns_clone=1` (Debian) or `sudo sysctl -w "
                "kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 24.04)",
            )
    if result.exit_code != 0:
        tail = (result.stderr_tail or result.stdout_tail).strip().splitlines()
        return Check(
            "bwrap",
            "FAIL",
            f"{version}: `true` in the sandbox exited {result.exit_code}: "
            + (tail[-1] if tail else ""),
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or "
            "kernel.apparmor_restrict_unprivileged_userns=0)",
        )
    return Check("bwrap", "ok", f"{version}, user namespaces work ({binary})")


def check_astgrep(settings: Settings) -> Check:
    from oopav.sandbox.astgrep import find_cli

    try:
        binary = find_cli()
    except FileNotFoundError:
        return Check("ast-grep", "FAIL", "CLI not found", "pip install ast-grep-cli")
    try:
        import ast_grep_py  # noqa: F401
    except ImportError:
        return Check("ast-grep", "FAIL", "Python binding missing", "pip install ast-grep-py")
    return Check("ast-grep", "ok", f"{_version([binary, '--version'])} ({binary})")


def check_git(settings: Settings) -> Check:
    binary = shutil.which("git")
    if binary is None:
        return Check("git", "FAIL", "not found", "install git (`apt install git`)")
    return Check("git", "ok", _version([binary, "--version"]))


def check_disk(settings: Settings) -> Check:
    where = settings.data_dir
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    detail = f"{free / (1 << 30):.1f} GiB free for {where}"
    if not os.access(probe, os.W_OK):
        return Check("disk", "FAIL", f"{probe} is not writable", "pass --data-dir DIR")
    if free < MIN_FREE_BYTES:
        return Check("disk", "FAIL", detail, "free some space or pass --data-dir on a larger disk")
    return Check("disk", "ok", detail)


def check_batch_staging(settings: Settings) -> Check:
    from oopav.bus import staging

    if settings.nats_url:
        return Check(
            "batch staging", "ok", "the server at --nats-url keeps its own (docs/operations.md)"
        )
    if os.environ.get("OOPAV_NATS_BATCH_STAGING", "memory") == "disk":
        return Check("batch staging", "ok", "on disk (OOPAV_NATS_BATCH_STAGING=disk)")
    if not staging.enabled():
        return Check(
            "batch staging",
            "warn",
            f"on disk: no {staging.SHM}; each multi-event decision costs ~2 ms more",
        )
    return Check("batch staging", "ok", f"atomic batches staged in memory ({staging.SHM})")


def check_model(settings: Settings, spec: str | None = None) -> Check:
    from oopav.models.registry import check_spec

    spec = spec or settings.model
    if not spec:
        return Check(
            "model",
            "warn",
            "no default model (OOPAV_MODEL unset); tasks must name one (tasks with examples use synth:)",
            "set OOPAV_MODEL, e.g. openai:http://localhost:11434/v1#qwen2.5-coder",
        )
    problem = check_spec(spec)
    if problem is not None:
        return Check("model", "FAIL", problem, "fix the spec (docs/models.md)")
    if spec.startswith("openai:"):
        import urllib.error
        import urllib.request

        base_url = spec.removeprefix("openai:").rpartition("#")[0].rstrip("/")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=3) as resp:
                code = resp.status
        except urllib.error.HTTPError as exc:
            code = exc.code
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return Check(
                "model",
                "FAIL",
                f"{spec}: cannot reach {base_url}: {reason}",
                "start the server, or fix the URL",
            )
        return Check(
            "model",
            "ok",
            f"{spec}: server answers (HTTP {code}); `oopav models check` tries a request",
        )
    if spec.startswith(("hf:", "vllm:")):
        module = "transformers" if spec.startswith("hf:") else "vllm"
        import importlib.util

        if importlib.util.find_spec(module) is None:
            extra = "train" if module == "transformers" else "gpu"
            return Check(
                "model",
                "FAIL",
                f"{spec}: {module} is not installed",
                f'pip install -e ".[{extra}]"',
            )
    return Check("model", "ok", spec)


CHECKS: tuple[Callable[[Settings], Check], ...] = (
    check_nats,
    check_bwrap,
    check_astgrep,
    check_git,
    check_disk,
    check_batch_staging,
    lambda s: Check("memory limit", *health.memory_limit(s)),
    lambda s: Check("storage", *health.storage(s)),
)
