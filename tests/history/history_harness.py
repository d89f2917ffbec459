"""The CLI as a user runs it, for the history tests."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


async def oopav(
    url: str | None, data_dir: Path, *args: str, timeout: float = 300
) -> tuple[int, str, str]:
    """``oopav ARGS`` in a subprocess (``url`` None: the data dir's embedded server)."""
    env = {**os.environ, "OOPAV_LOG_LEVEL": "WARNING"}
    env.pop("OOPAV_NATS_URL", None)
    env.pop("OOPAV_DATA_DIR", None)
    head = ["--nats-url", url] if url else []
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "oopav.cli",
        *head,
        "--data-dir",
        str(data_dir),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
