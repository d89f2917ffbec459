"""structlog set-up: JSON lines when not on a TTY, readable console output when on one.

Handlers bind ``session_id``, ``event_id`` and ``handler`` so every line can be traced to the
event that caused it.
"""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure(level: str | None = None, json: bool | None = None) -> None:
    level_name = (level or os.environ.get("OOPAV_LOG_LEVEL") or "INFO").upper()
    if json is None:
        json = not sys.stderr.isatty()
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json:
        processors += [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
    else:
        processors.append(structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level_name, logging.INFO)
        ),
        # Resolved per logger: sys.stderr may be replaced after configure() (tests, daemons).
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )


def _stderr_logger(*_: object) -> structlog.PrintLogger:
    return structlog.PrintLogger(file=sys.stderr)


def get_logger(name: str = "oopav", **bound: object) -> structlog.typing.FilteringBoundLogger:
    # Lazy: a module-level logger must pick up the configuration made later by the CLI.
    return structlog.get_logger(name, **bound)
