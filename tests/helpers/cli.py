"""``oopav`` run as a user runs it: a child process of this interpreter."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any


def oopav_env(*, clean: bool = False, **settings: str) -> dict[str, str]:
    """The environment of an ``oopav`` child: this one's without ``OOPAV_NATS_URL`` (the test
    names its server on the command line) and quiet logs; ``clean`` drops every ``OOPAV_``
    setting of the test process (the data dir fixture's included)."""
    env = {k: v for k, v in os.environ.items() if not (clean and k.startswith("OOPAV_"))}
    env.pop("OOPAV_NATS_URL", None)
    env["OOPAV_LOG_LEVEL"] = "WARNING"
    env.update(settings)
    return env


def oopav_argv(*args: str, url: str | None = None, data_dir: Path | None = None) -> list[str]:
    argv = [sys.executable, "-m", "oopav.cli"]
    if url is not None:
        argv += ["--nats-url", url]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    return [*argv, *args]


async def spawn_oopav(
    *args: str,
    url: str | None = None,
    data_dir: Path | None = None,
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> asyncio.subprocess.Process:
    """The child with its stdout and stderr piped (``kwargs`` go to the process: cwd, stdin)."""
    return await asyncio.create_subprocess_exec(
        *oopav_argv(*args, url=url, data_dir=data_dir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=oopav_env() if env is None else env,
        **kwargs,
    )


async def run_oopav(
    *args: str,
    url: str | None = None,
    data_dir: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    **kwargs: Any,
) -> tuple[int, str, str]:
    """Run the command to its end (within ``timeout``): (exit code, stdout, stderr)."""
    proc = await spawn_oopav(*args, url=url, data_dir=data_dir, env=env, **kwargs)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def oopav(url: str, data_dir: Path, *args: str) -> tuple[int, str, str]:
    """``oopav --nats-url URL --data-dir DIR ARGS…`` against a test server."""
    return await run_oopav(*args, url=url, data_dir=data_dir)


@contextlib.asynccontextmanager
async def reaped(*procs: asyncio.subprocess.Process) -> AsyncIterator[None]:
    """On the way out, kill and wait for every child still running (a failed assertion must
    not leave an ``oopav`` behind)."""
    try:
        yield
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def run_oopav_sync(
    *args: str,
    url: str | None = None,
    data_dir: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> subprocess.CompletedProcess[str]:
    """The same from a synchronous test: the finished process, its output as text."""
    return subprocess.run(
        oopav_argv(*args, url=url, data_dir=data_dir),
        env=oopav_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
