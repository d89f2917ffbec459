"""The ports through which handlers reach the world: models, the sandbox, workspaces, time.

Handlers decide; ports execute (invariant 6). A live run gets ``LivePorts``; replay gets ports
that serve recorded model responses and sandbox results instead of calling the world
(invariant 5), so the same handlers reproduce the same events.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from oopav.config import Settings
from oopav.events.catalog import Event, ExecRecord
from oopav.events.clock import SYSTEM_CLOCK, Clock
from oopav.models.base import Backend, ModelError


def exec_key(cause_id: str, purpose: str, argv: list[str]) -> str:
    digest = hashlib.sha256("\x1f".join([cause_id, purpose, *argv]).encode()).hexdigest()
    return digest[:24]


class Sandbox(Protocol):
    async def run(
        self,
        argv: list[str],
        *,
        workspace: Path,
        session_id: str,
        key: str,
        purpose: str,
        timeout_s: float,
        network: bool = False,
        environment: dict[str, Any] | None = None,
        report: bool = False,
        stdin: bytes | None = None,
    ) -> ExecRecord: ...


class BwrapSandbox:
    """Runs commands with the bwrap runner (in a worker thread: it blocks), in the project's
    environment (``environment``: the task's spec plus its ``repo``; see
    sandbox/environment.py), never in oopav's own. ``report``: collect the per-test results
    into ``ExecRecord.report`` (oopav's pytest plugin for pytest itself, junit XML for a pytest
    that make or tox starts; sandbox/environment.py ``direct_pytest``)."""

    def __init__(self, settings: Settings, config: Any = None) -> None:
        self.settings = settings
        self.config = config
        self._envs: dict[str, Any] = {}

    def project_env(self, environment: dict[str, Any] | None) -> Any:
        """The resolved ProjectEnv for a spec, cached per process (a uv build runs once)."""
        import json

        from oopav.sandbox.environment import resolve

        spec = dict(environment or {})
        repo = spec.pop("repo", None)
        spec.pop("sandbox", None)  # the policy's sandbox section: run() applies it
        key = json.dumps([spec, repo], sort_keys=True, default=str)
        if key not in self._envs:
            self._envs[key] = resolve(
                spec,
                Path(repo) if repo else None,
                cache_root=self.settings.data_dir / "envs",
            )
        return self._envs[key]

    async def run(
        self,
        argv: list[str],
        *,
        workspace: Path,
        session_id: str,
        key: str,
        purpose: str,
        timeout_s: float,
        network: bool = False,
        environment: dict[str, Any] | None = None,
        report: bool = False,
        stdin: bytes | None = None,
    ) -> ExecRecord:
        import msgspec

        from oopav.sandbox.environment import (
            JUNIT_FILE,
            REPORT_FILE,
            EnvironmentError_,
            direct_pytest,
            limits_for,
            read_report,
            sandbox_config_for,
            wants_plugins,
        )
        from oopav.sandbox.runner import default_config, run_sandboxed

        base = self.config or default_config(self.settings)
        artifacts = self.settings.artifacts_for(session_id)
        out_dir = artifacts / "reports" / key if report else None
        try:
            penv = await asyncio.to_thread(self.project_env, environment)
        except (EnvironmentError_, OSError, ValueError) as exc:
            return ExecRecord(
                key=key,
                purpose=purpose,
                argv=list(argv),
                exit_code=125,
                stderr_tail=f"oopav: cannot use the project environment: {exc}",
            )
        config = sandbox_config_for(
            base,
            penv,
            workspace,
            out_dir=out_dir,
            plugins=wants_plugins(argv),
            report_plugin=direct_pytest(argv),
        )
        config = msgspec.structs.replace(config, limits=limits_for(config.limits, environment))
        # The policy's sandbox section (its defaults when the task sets none: the
        # repository's dependency directories are bound read-only all the same).
        from oopav.sandbox.policy import SandboxPolicy, sandbox_config_with

        repo = (environment or {}).get("repo")
        try:
            config = sandbox_config_with(
                config,
                SandboxPolicy.model_validate((environment or {}).get("sandbox") or {}),
                workspace,
                Path(repo) if repo else None,
            )
        except ValueError as exc:
            return ExecRecord(
                key=key,
                purpose=purpose,
                argv=list(argv),
                exit_code=125,
                stderr_tail=f"oopav: cannot set up the policy's sandbox: {exc}",
            )
        if out_dir is not None:
            for name in (REPORT_FILE, JUNIT_FILE):
                (out_dir / name).unlink(missing_ok=True)
        result = await asyncio.to_thread(
            run_sandboxed,
            argv,
            workspace=workspace,
            artifacts_dir=artifacts,
            config=config,
            timeout_s=timeout_s,
            network=network,
            run_id=key,
            stdin=stdin,
        )
        parsed = read_report(out_dir) if out_dir is not None else None
        return ExecRecord(
            key=key,
            purpose=purpose,
            argv=list(argv),
            exit_code=result.exit_code,
            signal=result.signal,
            timed_out=result.timed_out,
            stdout_tail=result.stdout_tail,
            stderr_tail=result.stderr_tail,
            stdout_bytes=result.stdout_bytes,
            stderr_bytes=result.stderr_bytes,
            truncated=result.truncated,
            duration_ms=result.duration_ms,
            artifact=result.artifact,
            report=parsed,
        )


class RecordedSandbox:
    """Serves executions from recorded events by key; a miss is a replay divergence."""

    def __init__(self, records: dict[str, ExecRecord]) -> None:
        self.records = records
        self.misses: list[str] = []

    @classmethod
    def from_events(cls, events: list[Event]) -> RecordedSandbox:
        records: dict[str, ExecRecord] = {}
        for e in events:
            for rec in getattr(e, "execs", None) or []:
                records[rec.key] = rec
        return cls(records)

    async def run(
        self,
        argv: list[str],
        *,
        workspace: Path,
        session_id: str,
        key: str,
        purpose: str,
        timeout_s: float,
        network: bool = False,
        environment: dict[str, Any] | None = None,
        report: bool = False,
        stdin: bytes | None = None,
    ) -> ExecRecord:
        rec = self.records.get(key)
        if rec is None:
            self.misses.append(key)
            raise ReplayMiss(f"no recorded execution for {purpose} {argv!r} (key {key})")
        return rec


class ReplayMiss(RuntimeError):
    pass


ModelFactory = Callable[[str | None], Backend]


@dataclass
class Ports:
    settings: Settings
    clock: Clock = SYSTEM_CLOCK
    # None at construction means the default: __post_init__ puts a BwrapSandbox there.
    sandbox: Sandbox = None  # type: ignore[assignment]  # never None after __post_init__
    model_factory: ModelFactory | None = None
    default_model: str | None = None
    # Replay: the recorded timestamp of each event id, served instead of the clock.
    recorded_ts: dict[str, Any] | None = None
    # Replay: the recorded base commit per session; workspaces become private clones at it.
    pinned_base: dict[str, str] | None = None
    # The server this process uses (a fork reads its parent session from it).
    nats_url: str | None = None
    # Mission experience libraries (``handlers.guidance.StreamGuidance``); replay: the
    # recorded guidance step of each model_called event id.
    guidance: Any = None
    recorded_guidance: dict[str, int] | None = None
    # Content-addressed blobs (``history.blobs.BlobStore``) and the event store, set by the
    # handler runtime: the observer stores each starting tree and reads a fork's parent's.
    blobs: Any = None
    store: Any = None
    # Replay: each session's starting tree restored from the blob store (``RestoredTree``):
    # the workspace starts from it, never from the user's repository.
    restored_trees: dict[str, Any] | None = None
    # Whole requests of recent model calls by event id (a delta's base; disposable: a miss
    # rebuilds it from the stream).
    prompts: dict[str, Any] = field(default_factory=dict)
    # Baseline reuse (handlers/support/baseline_cache.py): the live cache with the bwrap
    # sandbox, the recorded reuses in replay, None to measure every baseline.
    baselines: Any = None
    # Answered questions of a mission (handlers/support/asks.py): None reads them from the
    # stream; replay serves the ones the recording reused (``RecordedAnswers``).
    answers: Any = None
    _models: dict[str, Backend] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sandbox is None:
            self.sandbox = BwrapSandbox(self.settings)
        if self.baselines is None and isinstance(self.sandbox, BwrapSandbox):
            from oopav.handlers.support.baseline_cache import BaselineCache

            self.baselines = BaselineCache(
                self.settings.data_dir / "cache" / "baselines", self.sandbox
            )

    def model(self, spec: str | None) -> Backend:
        """The backend for a session: its own ``model`` spec, else the default."""
        chosen = spec or self.default_model or self.settings.model
        if not chosen:
            raise ModelError(
                "invalid_spec",
                "no model configured: pass --model, set OOPAV_MODEL, or put `model` in the task",
            )
        if chosen not in self._models:
            if self.model_factory is not None:
                self._models[chosen] = self.model_factory(chosen)
            elif chosen.startswith("fork:"):
                from oopav.models.fork import fork_backend_factory

                self._models[chosen] = fork_backend_factory(chosen, nats_url=self.nats_url)
            else:
                from oopav.models.registry import load_backend

                self._models[chosen] = load_backend(chosen)
        return self._models[chosen]

    async def aclose(self) -> None:
        for backend in self._models.values():
            try:
                await backend.aclose()
            except Exception:
                pass
        self._models.clear()
