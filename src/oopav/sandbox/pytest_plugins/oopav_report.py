"""A pytest plugin oopav loads into the project's own test run (``-p oopav_report`` in
``PYTEST_ADDOPTS``) instead of asking for pytest's junit XML: it writes only what oopav keeps
of a run (``events.catalog.TestReport``: the counts, the ids that did not pass, the session's
own time) as one small JSON file, where junit XML builds an element tree of every test
(issue 28: ~1 s more CPU per run on a 6,400-test suite).

The ids and the verdicts are the ones oopav read from junit XML (``parse_junit``), so a report
of either kind means the same (a cached baseline from one compares with a run of the other):
one entry per junit ``<testcase>``, opened and closed as pytest's junitxml plugin does (a test
failing in its call and erroring in teardown is two entries; a collection error is one, named
by its module), named ``classname::name`` from pytest's own ``mangle_test_address`` and
``bin_xml_escape``, and judged error > failure > skipped > passed.

It runs in the project's interpreter, not oopav's: it imports nothing of oopav and only what
every pytest since 3.4 has. It writes to the path in ``OOPAV_REPORT`` and takes that variable
out of the environment, so a pytest the tests start themselves writes nothing over it.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

FORMAT = 1
ENV = "OOPAV_REPORT"

try:  # the very functions junit XML names its test cases with, in this pytest
    from _pytest.junitxml import bin_xml_escape as _escape
    from _pytest.junitxml import mangle_test_address as _mangle
except ImportError:  # pragma: no cover - a pytest without them: the same rules, written here
    _ILLEGAL = re.compile(
        "[^\u0009\u000a\u000d\u0020-\u007e\u0080-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
    )

    def _escape(arg: object) -> str:
        return _ILLEGAL.sub(
            lambda m: (
                f"#x{ord(m.group()):02X}" if ord(m.group()) <= 0xFF else f"#x{ord(m.group()):04X}"
            ),
            str(arg),
        )

    def _mangle(address: str) -> list[str]:
        path, bracket, params = address.partition("[")
        names = path.split("::")
        names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
        names[-1] += bracket + params
        return names


class _Report:
    def __init__(self, path: str, prefix: str | None) -> None:
        self.path = path
        self.prefix = prefix
        # [nodeid, tags] per junit <testcase>, in the order junit opens them.
        self.cases: list[list[Any]] = []
        self.open: dict[Any, list[Any]] = {}  # junit's node_reporters: (nodeid, worker node)
        self.failed_calls: set[Any] = set()  # junit's open_reports: a call failed, teardown due
        self.start = time.perf_counter()
        self.durations = 0.0
        self.internal = False

    def _case(self, report: Any) -> list[Any]:
        key = (report.nodeid, getattr(report, "node", None))
        case = self.open.get(key)
        if case is None:
            case = [report.nodeid, set()]
            self.open[key] = case
            self.cases.append(case)
        return case

    def pytest_sessionstart(self, session: Any) -> None:
        self.start = time.perf_counter()

    def pytest_runtest_logreport(self, report: Any) -> None:
        node = getattr(report, "node", None)
        call_key = (
            report.nodeid,
            getattr(report, "item_index", None),
            getattr(report, "worker_id", None),
        )
        if report.failed and report.when == "teardown" and call_key in self.failed_calls:
            # junit closes the failed call's test case; the teardown error is a new one.
            self.open.pop((report.nodeid, node), None)
        case = self._case(report)  # junit opens a case for every report (its duration)
        if report.failed:
            if report.when == "call":
                case[1].add("failure")
                self.failed_calls.add(call_key)
            else:
                case[1].add("error")
        elif report.skipped:
            case[1].add("skipped")
        self.durations += float(getattr(report, "duration", 0.0) or 0.0)
        if report.when == "teardown":
            self.open.pop((report.nodeid, node), None)
            self.failed_calls.discard(call_key)

    def pytest_collectreport(self, report: Any) -> None:
        if not report.passed:
            self._case(report)[1].add("error" if report.failed else "skipped")

    def pytest_internalerror(self, excrepr: Any) -> None:
        self.internal = True

    def _id(self, nodeid: str) -> str:
        names = _mangle(nodeid)
        classnames = names[:-1]
        if self.prefix:
            classnames.insert(0, self.prefix)
        cls, name = ".".join(classnames), _escape(names[-1])
        return f"{cls}::{name}" if cls else name

    def pytest_sessionfinish(self, session: Any) -> None:
        elapsed = time.perf_counter() - self.start
        out: dict[str, Any] = {"v": FORMAT, "total": 0, "passed": 0, "skipped": 0}
        failed: list[str] = []
        errors: list[str] = []
        skipped: list[str] = []
        for nodeid, tags in self.cases:
            if not tags:
                out["passed"] += 1
            elif "error" in tags:
                errors.append(self._id(nodeid))
            elif "failure" in tags:
                failed.append(self._id(nodeid))
            else:
                skipped.append(self._id(nodeid))
        if self.internal:
            errors.append("pytest::internal")
        out["total"] = out["passed"] + len(failed) + len(errors) + len(skipped)
        out["skipped"] = len(skipped)
        out.update(failed=failed, errors=errors, skipped_ids=skipped)
        # junit's <testsuite time> (written with 3 decimals), else the tests' own durations.
        out["time_s"] = round(elapsed, 3) or round(self.durations, 3)
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(out, fh, separators=(",", ":"))
        os.replace(tmp, self.path)


def pytest_configure(config: Any) -> None:
    path = os.environ.pop(ENV, None)
    if not path or getattr(config, "workerinput", None) is not None:
        return  # no report asked for, or an xdist worker (the controller writes it)
    prefix = getattr(config.option, "junitprefix", None)
    config.pluginmanager.register(_Report(path, prefix), "oopav-report")
