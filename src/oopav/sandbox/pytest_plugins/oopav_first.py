"""A pytest plugin oopav loads into the project's own test run (``-p oopav_first``): the tests
of the files named by ``--oopav-first`` run first, and when one of them fails the run stops
after them, before the rest of the suite (issue 28 §2: a break is caught in the time of the
affected tests, one interpreter start-up for a passing change instead of two).

It runs in the project's interpreter, not oopav's: it imports nothing of oopav and only what
every pytest since 3.4 has. The sandbox binds this folder read-only and puts it on the import
path only for a command that asks for the plugin. When it stops, it says so on stderr (the
``STOPPED`` line), which is how oopav tells a stopped run from a whole one.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

STOPPED = "oopav-first: stopped"

_state: dict[str, Any] = {"session": None, "first": set(), "last": None, "failed": 0}


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--oopav-first",
        action="append",
        default=[],
        metavar="PATH",
        help="oopav: run the tests of this file first; stop after them when one fails",
    )


def pytest_sessionstart(session: Any) -> None:
    _state["session"] = session


def _path(item: Any) -> str:
    path = getattr(item, "path", None) or getattr(item, "fspath", None)
    return os.path.realpath(str(path)) if path is not None else ""


@pytest.hookimpl(trylast=True)  # after any other plugin's reordering: this order wins
def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    wanted = {os.path.realpath(os.path.abspath(p)) for p in config.getoption("oopav_first") or []}
    if not wanted:
        return
    first = [i for i in items if _path(i) in wanted]
    rest = [i for i in items if _path(i) not in wanted]
    items[:] = first + rest
    _state["first"] = {i.nodeid for i in first}
    _state["last"] = first[-1].nodeid if first and rest else None
    _state["rest"] = len(rest)


def pytest_runtest_logreport(report: Any) -> None:
    if report.failed and report.nodeid in _state["first"]:
        _state["failed"] += 1


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    session = _state["session"]
    if nodeid != _state["last"] or not _state["failed"] or session is None:
        return
    why = (
        f"{_state['failed']} failure(s) in the affected tests; "
        f"{_state['rest']} other test(s) not run"
    )
    sys.stderr.write(f"{STOPPED}: {why}\n")
    sys.stderr.flush()
    session.shouldfail = f"oopav: {why}"
