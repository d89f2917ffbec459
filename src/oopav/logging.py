"""structlog set-up: JSON lines when not on a TTY, readable console output when on one.

Handlers bind ``session_id``, ``event_id`` and ``handler`` so every line can be traced to the
event that caused it. ``configure(log_file=...)`` sends every line to a file as JSON and only
those at ``stderr_level`` or above to stderr: `oopav run` uses it so that its timeline is not
interleaved with handler logs.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, cast

import structlog

_LEVELS = logging.getLevelNamesMapping()


def _level(name: str | None, default: str = "INFO") -> int:
    return _LEVELS.get((name or default).upper(), _LEVELS[default])


class _Router:
    """The last processor: writes the event to the log file and/or stderr, then drops it."""

    def __init__(self, json: bool, log_file: Path | None, stderr_level: int) -> None:
        self._console = (
            structlog.processors.JSONRenderer()
            if json
            else structlog.dev.ConsoleRenderer(colors=False)
        )
        self._json = structlog.processors.JSONRenderer()
        self._stderr_level = stderr_level
        self._file = None
        self._lock = threading.Lock()
        if log_file is not None:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(log_file, "a", encoding="utf-8", buffering=1)

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
        level = _LEVELS.get(str(event.get("level", "info")).upper(), logging.INFO)
        if self._file is not None:
            # JSONRenderer's default serializer (json.dumps) returns str, never bytes.
            line = cast(str, self._json(logger, method, dict(event)))
            with self._lock:
                self._file.write(f"{line}\n")
        if level >= self._stderr_level:
            text = self._console(logger, method, dict(event))
            print(text, file=sys.stderr, flush=True)
        raise structlog.DropEvent

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


_router: _Router | None = None


def configure(
    level: str | None = None,
    json: bool | None = None,
    *,
    log_file: Path | None = None,
    stderr_level: str | None = None,
) -> None:
    """Set up structlog. ``level`` (default ``$OOPAV_LOG_LEVEL`` or INFO) filters every line;
    with ``log_file`` they all go there as JSON and stderr only gets ``stderr_level`` and
    above (default: the same as ``level``)."""
    global _router
    level_name = level or os.environ.get("OOPAV_LOG_LEVEL") or "INFO"
    if json is None:
        json = not sys.stderr.isatty()
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json or log_file is not None:
        processors.append(structlog.processors.dict_tracebacks)
    if _router is not None:
        _router.close()
    _router = _Router(json, log_file, _level(stderr_level or level_name))
    processors.append(_router)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_level(level_name)),
        # Resolved per logger: sys.stderr may be replaced after configure() (tests, daemons).
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )


def _stderr_logger(*_: object) -> structlog.PrintLogger:
    return structlog.PrintLogger(file=sys.stderr)


def get_logger(name: str = "oopav", **bound: object) -> structlog.typing.FilteringBoundLogger:
    # Lazy: a module-level logger must pick up the configuration made later by the CLI.
    return structlog.get_logger(name, **bound)
