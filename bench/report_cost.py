"""What a per-test report costs one pytest run (issue 28), by hand and in oopav's sandbox.

    python bench/report_cost.py SDIST ENV_PYTHON RUNS [EXTRA PYTEST ARGS...]
    e.g. python bench/report_cost.py /tmp/idna-3.20 /tmp/projenv/bin/python 3 \\
        --ignore=tests/test_idna_properties.py --ignore=tests/test_idna_fuzz_targets.py

SDIST is an unpacked source distribution with a ``tests`` folder (see ``bench/realtime.py``
for getting them; fetched code is never committed), ENV_PYTHON a Python with pytest. Six
variants of ``python -m pytest -q -p no:cacheprovider tests``, interleaved RUNS times: by
hand bare, with ``--junitxml``, with oopav's report plugin (``-p oopav_report``); the same
three in oopav's bwrap sandbox (the project's environment, as the gates run it). Printed per
variant: the median wall time and the median CPU (user + sys) of the pytest process — by
hand from rusage, in the sandbox from bash's ``times`` around it (bwrap's own processes are
not counted: its start shows in the wall time). CPU is what the machine's load does not
inflate; the load is printed. Info only: no target.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    from oopav.config import Settings
    from oopav.handlers.ports import BwrapSandbox
    from oopav.sandbox.environment import PLUGINS_HOST

    src, py, n, extra = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    root = Path(tempfile.mkdtemp(prefix="report-cost-"))
    repo = root / "repo"
    shutil.copytree(src, repo)
    pytest = f"python -m pytest -q -p no:cacheprovider tests {' '.join(extra)}"
    srcdir = "src" if (repo / "src").is_dir() else "."

    def hand(opts: list[str], env_extra: dict[str, str]) -> tuple[float, float]:
        env = {
            **os.environ,
            "PYTHONPATH": f"{srcdir}{os.pathsep}{PLUGINS_HOST}",
            "PYTHONDONTWRITEBYTECODE": "1",
            **env_extra,
        }
        env.pop("PYTEST_ADDOPTS", None)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        argv = [py, *pytest.split()[1:], *opts]
        subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=False)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        return time.perf_counter() - t, cpu

    sandbox = BwrapSandbox(Settings(data_dir=root / "data"))
    spec = {"python": py, "repo": str(repo)}

    async def boxed(opts: str, pre: str = "") -> tuple[float, float]:
        cmd = f"{pre}{pytest} {opts} >/dev/null 2>&1; times"
        t = time.perf_counter()
        # "-p oopav_first" after the script: bash ignores it, the port binds the plugins.
        rec = await sandbox.run(
            ["bash", "-c", cmd, "-p", "oopav_first"],
            workspace=repo,
            session_id="s",
            key=f"k{time.time_ns()}",
            purpose="report_cost",
            timeout_s=600,
            environment=spec,
        )
        wall = time.perf_counter() - t
        children = rec.stdout_tail.strip().splitlines()[-1].split()

        def secs(x: str) -> float:
            m, s = x.split("m")
            return float(m) * 60 + float(s.rstrip("s"))

        return wall, secs(children[0]) + secs(children[1])

    report = "/tmp/oopav-report.json"
    variants: dict[str, Callable[[], tuple[float, float]]] = {
        "by hand": lambda: hand([], {}),
        "by hand + junit": lambda: hand([f"--junitxml={root}/h.xml"], {}),
        "by hand + plugin": lambda: hand(
            ["-p", "oopav_report"], {"OOPAV_REPORT": f"{root}/h.json"}
        ),
        "sandbox": lambda: asyncio.run(boxed("")),
        "sandbox + junit": lambda: asyncio.run(boxed("--junitxml=/tmp/j.xml")),
        "sandbox + plugin": lambda: asyncio.run(
            boxed("-p oopav_report", f"OOPAV_REPORT={report} ")
        ),
    }
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    load = os.getloadavg()[0]
    for _ in range(n):
        for name, run in variants.items():
            results[name].append(run())
    print(f"{src.name}: load {load:.1f} -> {os.getloadavg()[0]:.1f}, {n} runs interleaved")
    for name, runs in results.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(
            f"  {name:18} wall median {wall:6.2f} s   CPU median {cpu:6.2f} s   "
            f"(CPU {', '.join(f'{c:.2f}' for _, c in runs)}) info"
        )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
