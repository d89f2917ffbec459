"""The project's environment: the interpreter and dependencies that the user's code runs with.

Commands that run the project's code (tests, lint, the model's exec actions) must see the
edited workspace first on the import path and the project's own packages, never oopav's own
interpreter and site-packages (DESIGN wave-2 note "The project's environment, not oopav's").

Resolution, first that applies:

1. ``environment`` of the task (or ``oopav run --env``): ``{"python": PATH}`` names a venv
   directory or an interpreter; ``{"build": "uv"}`` builds an isolated env with uv, cached by
   the hash of the dependency files, with the repository installed editable;
2. a ``.venv/`` or ``venv/`` in the repository;
3. ``$VIRTUAL_ENV`` of the submitting shell (recorded by the CLI as ``virtual_env``), unless
   it is oopav's own environment;
4. the host's base interpreter (the installation oopav's venv was made from, without oopav's
   site-packages).

Every form also takes ``env`` (extra variables) and ``pythonpath`` (extra import-path
entries, workspace-relative or absolute). The result is a ``ProjectEnv``: the trees to bind
read-only, the ``bin`` directory to put first on ``PATH``, the variables to set, and the trees
to hide (oopav's own prefix).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from oopav.logging import get_logger

log = get_logger("oopav.sandbox.environment")

Source = Literal["task", "repo", "virtual_env", "uv", "host"]
ENV_KEYS = (
    "python",
    "build",
    "env",
    "pythonpath",
    "extras",
    "packages",
    "virtual_env",
    "probe",
    "limits",
)
# Per-task resource limits of the commands (docs/operations.md "Limits"): key -> (min, max).
LIMIT_KEYS = {"memory_mb": (16, 1 << 20), "artifacts_mb": (1, 1 << 20)}
DEP_FILES = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "uv.lock",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "test-requirements.txt",
    "tox.ini",
)
# Where the runner binds a per-run writable folder for reports (junit XML).
OUT_DIR = "/tmp/oopav-out"
# Where single tool binaries (ruff) are bound when the project env has none of its own.
TOOLS_DIR = "/tmp/oopav-tools"
# Where oopav's own pytest plugins (``sandbox/pytest_plugins``: affected tests first) are bound
# read-only, on the import path only for a command that loads one with ``-p``.
PLUGINS_DIR = "/tmp/oopav-plugins"
# Where a `python` shim is bound when the project env's bin has only `python3` (a Debian
# system interpreter without python-is-python3): `python -m pytest` must run that env.
SHIM_DIR = "/tmp/oopav-shim"
PLUGINS_HOST = Path(__file__).resolve().parent / "pytest_plugins"
PYTEST_PLUGINS = ("oopav_first",)
# The per-test report (``pytest_plugins/oopav_report.py``) a direct pytest writes instead of
# junit XML, and the files either one leaves in a run's report folder.
REPORT_PLUGIN = "oopav_report"
REPORT_FILE = "report.json"
JUNIT_FILE = "junit.xml"


def wants_plugins(argv: list[str] | tuple[str, ...]) -> bool:
    """Whether the command loads one of oopav's pytest plugins (``-p oopav_first``)."""
    return any(a == "-p" and b in PYTEST_PLUGINS for a, b in itertools.pairwise(argv))


def direct_pytest(argv: list[str] | tuple[str, ...]) -> bool:
    """Whether the command is pytest itself (``pytest ...``, ``python -m pytest ...``) in the
    project's interpreter, so oopav's report plugin is on its import path for sure. Anything
    else (make, tox, nox, a shell, ``python -I``) may start its pytest with another path or
    environment, where ``-p oopav_report`` could not load and would stop the run: those keep
    pytest's junit XML, which needs nothing importable."""
    if not argv:
        return False
    head = os.path.basename(argv[0])
    if head in ("pytest", "py.test"):
        return True
    python = head == "python" or (head.startswith("python") and head[6:].replace(".", "").isdigit())
    return python and len(argv) >= 3 and argv[1] == "-m" and argv[2] in ("pytest", "py.test")


class EnvironmentError_(ValueError):
    """The environment spec is wrong or cannot be found/built; the message says what to do."""


class ProjectEnv(msgspec.Struct, kw_only=True, frozen=True):
    source: Source
    python: str  # the interpreter as seen inside the sandbox (absolute)
    prefix: str  # the env's prefix (venv directory or installation prefix)
    exposed: tuple[str, ...] = ()
    bin_dirs: tuple[str, ...] = ()
    env: dict[str, str] = msgspec.field(default_factory=dict)
    pythonpath: tuple[str, ...] = ()  # extra entries after the workspace's own
    hidden: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"{self.python} ({self.source})"


def normalize_spec(raw: Any) -> dict[str, Any]:
    """The task's ``environment`` as a dict; raises EnvironmentError_ with the problem."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        if not raw.strip():
            raise EnvironmentError_("environment is blank; give a venv/interpreter path or 'uv'")
        if raw.strip() == "uv":
            return {"build": "uv"}
        raw = {"python": raw.strip()}
    if not isinstance(raw, dict):
        raise EnvironmentError_(
            f"environment must be a path, 'uv' or an object, got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - set(ENV_KEYS))
    if unknown:
        raise EnvironmentError_(
            f"unknown environment key(s) {', '.join(unknown)}; valid: {', '.join(ENV_KEYS)}"
        )
    out = dict(raw)
    if "build" in out and out["build"] not in ("uv", None):
        raise EnvironmentError_(f"environment.build must be 'uv', got {out['build']!r}")
    if "python" in out and "build" in out and out.get("build"):
        raise EnvironmentError_("environment takes either python or build, not both")
    for key in ("python", "virtual_env"):
        if key in out and not (isinstance(out[key], str) and out[key].strip()):
            raise EnvironmentError_(f"environment.{key} must be a non-empty path")
        if key in out and not os.path.isabs(os.path.expanduser(out[key])):
            raise EnvironmentError_(f"environment.{key} must be an absolute path, got {out[key]!r}")
    env = out.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise EnvironmentError_("environment.env must map variable names to strings")
    for key in ("pythonpath", "extras", "packages"):
        val = out.get(key, [])
        if not isinstance(val, list) or not all(isinstance(v, str) and v for v in val):
            raise EnvironmentError_(f"environment.{key} must be a list of non-empty strings")
    limits = out.get("limits")
    if limits is not None:
        if not isinstance(limits, dict):
            raise EnvironmentError_(
                'environment.limits must be an object, e.g. {"memory_mb": 1024}'
            )
        for key, value in limits.items():
            if key not in LIMIT_KEYS:
                raise EnvironmentError_(
                    f"unknown environment.limits key {key!r}; valid: {', '.join(LIMIT_KEYS)}"
                )
            lo, hi = LIMIT_KEYS[key]
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise EnvironmentError_(
                    f"environment.limits.{key} must be a whole number from {lo} to {hi}"
                )
    probe = out.get("probe")
    if probe is not None and not isinstance(probe, str | bool):
        raise EnvironmentError_("environment.probe must be a package name or false")
    return out


def own_prefixes() -> tuple[str, ...]:
    """oopav's own environment: the trees project commands must never see."""
    if sys.prefix != sys.base_prefix:
        return (os.path.realpath(sys.prefix),)
    return ()


def _venv_of(path: Path) -> Path | None:
    """The venv directory for a venv dir or an interpreter inside one."""
    if path.is_dir() and (path / "pyvenv.cfg").is_file():
        return path
    if path.is_file() or path.is_symlink():
        cand = path.parent.parent
        if (cand / "pyvenv.cfg").is_file():
            return cand
    return None


def _venv_home(venv: Path) -> str | None:
    try:
        for line in (venv / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                return value.strip()
    except OSError:
        return None
    return None


def _python_in(venv: Path) -> Path:
    for name in ("python", "python3"):
        p = venv / "bin" / name
        if p.exists():
            return p
    raise EnvironmentError_(f"{venv} has no bin/python; is it a virtual environment?")


def from_interpreter(path: str | Path, source: Source) -> ProjectEnv:
    """A ProjectEnv for a venv directory or an interpreter path."""
    p = Path(os.path.expanduser(str(path)))
    if not p.exists():
        raise EnvironmentError_(
            f"environment {p} does not exist; give a venv directory or an interpreter path"
        )
    venv = _venv_of(p)
    if venv is not None:
        python = _python_in(venv) if p.is_dir() else p
        exposed = [str(venv)]
        home = _venv_home(venv)
        if home:
            exposed.append(str(Path(home).parent))
        real = Path(os.path.realpath(python))
        exposed.append(str(real.parent.parent))
        return ProjectEnv(
            source=source,
            python=str(python),
            prefix=str(venv),
            exposed=tuple(dict.fromkeys(exposed)),
            bin_dirs=(str(venv / "bin"),),
            env={"VIRTUAL_ENV": str(venv)},
        )
    if p.is_dir():
        raise EnvironmentError_(
            f"{p} is a directory without pyvenv.cfg; give a venv directory or an interpreter"
        )
    real = Path(os.path.realpath(p))
    prefix = real.parent.parent
    return ProjectEnv(
        source=source,
        python=str(p),
        prefix=str(prefix),
        exposed=tuple(dict.fromkeys((str(prefix), str(p.parent)))),
        bin_dirs=(str(p.parent),),
    )


def host_interpreter() -> Path:
    """The base installation oopav's venv was made from (no oopav site-packages), else the
    system python3."""
    if sys.prefix != sys.base_prefix:
        for name in (f"python{sys.version_info[0]}.{sys.version_info[1]}", "python3", "python"):
            cand = Path(sys.base_prefix) / "bin" / name
            if cand.exists():
                return cand
    for cand in (Path("/usr/bin/python3"), Path("/usr/local/bin/python3")):
        if cand.exists():
            return cand
    raise EnvironmentError_(
        "no project environment found and no host python3; pass environment / --env"
    )


def dependency_hash(repo: Path, spec: Mapping[str, Any], python: str) -> str:
    h = hashlib.sha256()
    h.update(python.encode())
    h.update(json.dumps({k: spec.get(k) for k in ("extras", "packages")}, sort_keys=True).encode())
    for name in DEP_FILES:
        f = repo / name
        if f.is_file():
            h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:20]


# Threads of one process share the file lock's descriptor semantics badly (flock is per open
# file description, so two threads opening the lock file each get their own): the thread lock
# keeps one builder per process, the file lock one builder per cache across processes.
_build_lock = threading.Lock()
BUILT_MARKER = ".oopav-built"


@contextlib.contextmanager
def file_lock(path: Path, timeout_s: float, what: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` across processes, waited for at most ``timeout_s``.
    The kernel drops it when its holder dies, so a crashed builder never leaves it stale."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise EnvironmentError_(
                        f"{what}: another process held {path} for more than {timeout_s:.0f}s; "
                        "is a build stuck? (the lock goes when its process ends)"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the description releases the lock


def _finished(link: Path) -> Path | None:
    """The finished environment published under ``link``, or None."""
    if (link / BUILT_MARKER).is_file():
        return Path(os.path.realpath(link))
    return None


def find_uv() -> str:
    with contextlib.suppress(Exception):
        import uv

        return str(uv.find_uv_bin())
    found = shutil.which("uv")
    if found:
        return found
    raise EnvironmentError_("environment build 'uv' needs uv: `pip install uv` in oopav's env")


def build_uv(repo: Path, spec: Mapping[str, Any], cache_root: Path, timeout_s: float = 900) -> Path:
    """An isolated venv for ``repo``, built once per dependency-file hash, with the repository
    installed editable (plus ``extras`` and ``packages``). Returns the venv directory.

    This runs on the host, not in the sandbox: it is oopav preparing the tool, like creating the
    workspace, and it needs the package index. The project's code runs only in the sandbox.

    Several processes (observers of different sessions, or of different hosts sharing the data
    directory) may ask for the same environment at once: one builds under a file lock, in a
    fresh directory of its own (``builds/<key>-<token>/``, snapshot and venv), and publishes it
    by atomically renaming a symlink ``<key>`` onto it; the others wait for the lock and find
    it finished. A venv is not relocatable (its scripts' shebangs name its path), so the
    directory never moves: the symlink is what is renamed. A build that failed or was killed
    leaves only its own directory, removed by the next builder."""
    base = str(host_interpreter())
    key = dependency_hash(repo, spec, base)
    link = cache_root / key
    found = _finished(link)
    if found is not None:
        return found
    uv = find_uv()
    with _build_lock, file_lock(cache_root / f".{key}.lock", timeout_s, "environment build"):
        found = _finished(link)
        if found is not None:
            return found
        builds = cache_root / "builds"
        builds.mkdir(parents=True, exist_ok=True)
        # Under the lock no one else builds this key: any directory of it is a dead build's.
        for old in builds.glob(f"{key}-*"):
            shutil.rmtree(old, ignore_errors=True)
        if link.is_dir() and not link.is_symlink():  # an unfinished build of an older layout
            shutil.rmtree(link, ignore_errors=True)
        work = builds / f"{key}-{os.getpid()}-{secrets.token_hex(4)}"
        work.mkdir()
        try:
            venv = _build_into(work, repo, spec, uv, base, cache_root, timeout_s)
            (venv / BUILT_MARKER).write_text(key)
            tmp_link = cache_root / f".{key}.link-{work.name}"
            os.symlink(os.path.relpath(venv, cache_root), tmp_link)
            os.replace(tmp_link, link)  # the publication: atomic on POSIX
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        log.info("environment.built", repo=str(repo), venv=str(venv), key=key)
    return Path(os.path.realpath(link))


def _build_into(
    work: Path,
    repo: Path,
    spec: Mapping[str, Any],
    uv: str,
    base: str,
    cache_root: Path,
    timeout_s: float,
) -> Path:
    venv = work / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.setdefault("UV_CACHE_DIR", str(cache_root / "uv-cache"))
    # Build from a snapshot beside the env: an editable build writes into its source tree
    # (egg-info, build/), and the user's repository is never written. Imports resolve to
    # the session's workspace anyway (it comes first on PYTHONPATH).
    snapshot = work / "src"
    shutil.copytree(
        repo,
        snapshot,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox"
        ),
    )
    target = str(snapshot)
    extras = spec.get("extras") or []
    if extras:
        target += "[" + ",".join(extras) + "]"
    steps = [
        [uv, "venv", "--quiet", "--python", base, str(venv)],
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            "-e",
            target,
            *(spec.get("packages") or []),
        ],
    ]
    for argv in steps:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s)
        if proc.returncode != 0:
            raise EnvironmentError_(
                f"building the project environment failed: `{' '.join(argv)}` exited "
                f"{proc.returncode}: {(proc.stderr or proc.stdout).strip()[-1500:]}"
            )
    return venv


def resolve(
    spec: Mapping[str, Any] | None,
    repo: Path | None,
    *,
    cache_root: Path,
) -> ProjectEnv:
    """Find or build the project environment for ``repo`` (see the module docstring)."""
    spec = normalize_spec(dict(spec or {}))
    own = own_prefixes()
    env: ProjectEnv | None = None
    if spec.get("python"):
        env = from_interpreter(spec["python"], "task")
    elif spec.get("build") == "uv":
        if repo is None:
            raise EnvironmentError_("environment build 'uv' needs the repository path")
        env = from_interpreter(build_uv(repo, spec, cache_root), "uv")
    if env is None and repo is not None:
        for name in (".venv", "venv"):
            if (repo / name / "pyvenv.cfg").is_file():
                env = from_interpreter(repo / name, "repo")
                break
    if env is None and spec.get("virtual_env"):
        ve = os.path.realpath(os.path.expanduser(spec["virtual_env"]))
        if ve not in own and Path(ve, "pyvenv.cfg").is_file():
            env = from_interpreter(ve, "virtual_env")
    if env is None:
        env = from_interpreter(host_interpreter(), "host")
    chosen = {os.path.realpath(p) for p in env.exposed}
    # oopav's own prefix stays hidden unless the user chose it as the project's env.
    hidden = tuple(p for p in own if p not in chosen)
    return msgspec.structs.replace(
        env,
        env={**env.env, **(spec.get("env") or {})},
        pythonpath=tuple(spec.get("pythonpath") or ()),
        hidden=hidden,
    )


def import_roots(workspace: Path) -> list[str]:
    """Where the workspace's packages live: ``src/`` for a src layout, then the root."""
    roots = []
    src = workspace / "src"
    if src.is_dir() and any((d / "__init__.py").is_file() for d in src.iterdir() if d.is_dir()):
        roots.append(str(src))
    roots.append(str(workspace))
    return roots


def pythonpath_for(env: ProjectEnv, workspace: Path) -> str:
    extra = [p if os.path.isabs(p) else str(workspace / p) for p in env.pythonpath]
    return os.pathsep.join(dict.fromkeys([*import_roots(workspace), *extra]))


def top_level_package(workspace: Path) -> str | None:
    """The project's importable top-level package, guessed from the layout and pyproject."""
    import tomllib

    candidates: list[str] = []
    for root in import_roots(workspace):
        base = Path(root)
        for d in sorted(base.iterdir()):
            if (
                d.is_dir()
                and (d / "__init__.py").is_file()
                and d.name.isidentifier()
                and d.name not in ("tests", "test", "docs", "examples", "benchmarks", "bench")
            ):
                candidates.append(d.name)
        if candidates:
            break
    name = None
    with contextlib.suppress(Exception):
        data = tomllib.loads((workspace / "pyproject.toml").read_text())
        name = data.get("project", {}).get("name")
    if isinstance(name, str):
        norm = name.lower().replace("-", "_").replace(".", "_")
        for c in candidates:
            if c.lower() == norm:
                return c
    return candidates[0] if len(candidates) == 1 else (candidates[0] if candidates else None)


# Run inside the sandbox, whose working directory is the workspace: "inside" is decided there,
# so the recorded answer means the same when a replay's workspace lies elsewhere.
PROBE_CODE = (
    "import importlib.util, json, os, sys\n"
    "name = sys.argv[1]\n"
    "err = None\n"
    "try:\n"
    "    spec = importlib.util.find_spec(name)\n"
    "except Exception as exc:\n"
    "    spec = None; err = repr(exc)\n"
    "origin = None\n"
    "if spec is not None:\n"
    "    locs = list(spec.submodule_search_locations or [])\n"
    "    origin = spec.origin if spec.origin not in (None, 'namespace') else (locs or [None])[0]\n"
    "ws = os.path.realpath(os.getcwd())\n"
    "real = os.path.realpath(origin) if origin else ''\n"
    "inside = bool(real) and (real == ws or real.startswith(ws.rstrip('/') + '/'))\n"
    "print(json.dumps({'package': name, 'origin': origin, 'inside': inside, 'error': err,"
    " 'executable': sys.executable}))\n"
)


def probe_argv(package: str) -> list[str]:
    return ["python", "-c", PROBE_CODE, package]


def read_probe(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        with contextlib.suppress(Exception):
            data = json.loads(line)
            if isinstance(data, dict) and "origin" in data:
                return data
    return None


def limits_for(base: Any, spec: Mapping[str, Any] | None) -> Any:
    """``base`` (a sandbox ``Limits``) with the task's ``environment.limits`` applied."""
    raw = (spec or {}).get("limits") or {}
    changes: dict[str, int] = {}
    if "memory_mb" in raw:
        changes["memory_bytes"] = int(raw["memory_mb"]) * 1024 * 1024
    if "artifacts_mb" in raw:
        changes["artifacts_bytes"] = int(raw["artifacts_mb"]) * 1024 * 1024
    return msgspec.structs.replace(base, **changes) if changes else base


def spec_for_task(task: Any) -> dict[str, Any] | None:
    """What a handler passes to the sandbox port: the task's environment plus its repo."""
    if task is None:
        return None
    raw = getattr(task, "environment", None) or {}
    spec = {**raw, "repo": getattr(task, "repo", None)}
    # The policy's sandbox section travels with the spec to the port (only when set, so the
    # spec, and what is keyed on it, stays as it was for every other task).
    sandbox = (getattr(task, "policy", None) or {}).get("sandbox")
    if sandbox:
        spec["sandbox"] = sandbox
    return spec


def tool_binary(name: str) -> str | None:
    """A standalone tool binary of oopav's own environment (ruff), bound file-by-file into the
    sandbox when the project's env has none: a single executable, no site-packages."""
    with contextlib.suppress(Exception):
        if name == "ruff":
            from ruff.__main__ import find_ruff_bin

            return str(find_ruff_bin())
    cand = Path(sys.executable).parent / name
    return str(cand) if cand.is_file() else None


PYRIGHT_ENTRY = f"{TOOLS_DIR}/pyright/index.js"
"""Where pyright's bundle (oopav's own dependency: JavaScript run by ``node``) is seen inside
the sandbox: its directory is bound read-only there, nothing else of oopav's environment."""


def tool_tree(name: str) -> str | None:
    """A tool of oopav's own environment that is a directory rather than one binary (pyright's
    JavaScript bundle), bound whole into the sandbox at ``TOOLS_DIR/<name>``."""
    with contextlib.suppress(Exception):
        if name == "pyright":
            import pyright

            tree = Path(pyright.__file__).parent / "dist"
            return str(tree) if (tree / "index.js").is_file() else None
    return None


def python_shim(penv: ProjectEnv) -> Path | None:
    """A host file ``.../python`` that execs the env's interpreter, when no ``bin_dirs`` entry
    of the env has a ``python`` (only ``python3``): without it, a test command ``python -m
    pytest`` and the baseline probe end in ``bwrap: execvp python`` (or run whatever other
    ``python`` comes later on PATH). A script, not a symlink: bwrap binds a symlink's target,
    and a venv-less interpreter finds its prefix from its own path either way. Written once per
    interpreter under the user's temporary directory (rewritten if it differs)."""
    if any(Path(d, "python").exists() for d in penv.bin_dirs):
        return None
    import tempfile

    key = hashlib.sha256(penv.python.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"oopav-shim-{os.getuid()}" / key
    shim = folder / "python"
    quoted = penv.python.replace("'", "'\\''")
    text = f"#!/bin/sh\nexec '{quoted}' \"$@\"\n"
    try:
        if not shim.is_file() or shim.read_text() != text:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".python.{os.getpid()}"
            tmp.write_text(text)
            tmp.chmod(0o755)
            os.replace(tmp, shim)
    except OSError:
        return None  # no shim: the command runs as before (the probe says what is missing)
    return shim


def sandbox_config_for(
    base: Any,
    penv: ProjectEnv,
    workspace: Path,
    *,
    out_dir: Path | None = None,
    tools: tuple[str, ...] = ("ruff", "pyright"),
    plugins: bool = False,
    report_plugin: bool = False,
) -> Any:
    """``base`` (a SandboxConfig) with the project env's trees exposed instead of oopav's, its
    bin first on PATH, the workspace first on the import path, and the report folder bound.
    ``plugins``: oopav's pytest plugins bound read-only and put last on the import path.
    ``report_plugin`` (with ``out_dir``; see ``direct_pytest``): the per-test report comes from
    oopav's plugin; without it, from pytest's junit XML."""
    report_plugin = report_plugin and out_dir is not None
    plugins = plugins or report_plugin
    binds: list[tuple[str, str, bool]] = list(base.binds)
    path_append: list[str] = list(base.path_append)
    env = dict(base.env)
    env.update(penv.env)
    env["PYTHONPATH"] = pythonpath_for(penv, workspace)
    env["PYTHONNOUSERSITE"] = "1"
    in_sandbox = base.backend == "bwrap"
    if plugins:
        if in_sandbox:
            binds.append((str(PLUGINS_HOST), PLUGINS_DIR, False))
        env["PYTHONPATH"] += os.pathsep + (PLUGINS_DIR if in_sandbox else str(PLUGINS_HOST))
    for name in tools:
        tree = tool_tree(name)
        if tree is not None:
            if in_sandbox:
                binds.append((tree, f"{TOOLS_DIR}/{name}", False))
            continue
        if any(Path(d, name).exists() for d in penv.bin_dirs):
            continue
        found = tool_binary(name)
        if found and in_sandbox:
            binds.append((found, f"{TOOLS_DIR}/{name}", False))
            path_append.append(TOOLS_DIR)
        elif found:
            path_append.append(str(Path(found).parent))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        target = OUT_DIR if in_sandbox else str(out_dir)
        if in_sandbox:
            binds.append((str(out_dir), OUT_DIR, True))
        if report_plugin:
            # The lean report: only what oopav keeps, in the pytest the command is.
            env["OOPAV_REPORT"] = f"{target}/{REPORT_FILE}"
            report_opt = f"-p {REPORT_PLUGIN}"
        else:
            # Any pytest the command starts (through make or tox) writes junit XML.
            report_opt = f"--junitxml={target}/{JUNIT_FILE}"
        env["PYTEST_ADDOPTS"] = (
            env.get("PYTEST_ADDOPTS", "") + f" {report_opt} -p no:cacheprovider"
        ).strip()
    bin_dirs = penv.bin_dirs
    shim = python_shim(penv)
    if shim is not None:
        if in_sandbox:
            binds.append((str(shim), f"{SHIM_DIR}/python", False))
            bin_dirs = (SHIM_DIR, *bin_dirs)
        else:
            bin_dirs = (str(shim.parent), *bin_dirs)
    extra_abs = tuple(p for p in penv.pythonpath if os.path.isabs(p))
    return msgspec.structs.replace(
        base,
        exposed_paths=tuple(dict.fromkeys((*penv.exposed, *extra_abs))),
        bin_dirs=bin_dirs,
        hidden_paths=tuple(dict.fromkeys((*base.hidden_paths, *penv.hidden))),
        env=env,
        binds=tuple(binds),
        path_append=tuple(dict.fromkeys(path_append)),
    )


MAX_REPORT_IDS = 5000


def _test_report(
    total: int,
    passed: int,
    skipped: int,
    failed: list[str],
    errors: list[str],
    skipped_ids: list[str],
    seconds: float,
) -> Any:
    """The recorded TestReport, the same whichever report it came from: ids sorted, capped."""
    from oopav.events.catalog import TestReport

    return TestReport(
        total=total,
        passed=passed,
        skipped=skipped,
        failed=sorted(failed)[:MAX_REPORT_IDS],
        errors=sorted(errors)[:MAX_REPORT_IDS],
        truncated=len(failed) > MAX_REPORT_IDS or len(errors) > MAX_REPORT_IDS,
        skipped_ids=sorted(skipped_ids)[:MAX_REPORT_IDS],
        time_s=round(seconds, 3),
    )


def read_report(out_dir: Path) -> Any:
    """The TestReport of a run's report folder: oopav's plugin report when the run wrote one,
    else pytest's junit XML, else None (the run never got to the end of a pytest session)."""
    return parse_plugin_report(out_dir / REPORT_FILE) or parse_junit(out_dir / JUNIT_FILE)


def parse_plugin_report(path: Path) -> Any:
    """A TestReport from ``oopav_report``'s JSON, or None when there is none or it is not one."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    try:
        if not isinstance(data, dict) or data.get("v") != 1:
            return None
        failed, errors, skipped = data["failed"], data["errors"], data["skipped_ids"]
        lists = (failed, errors, skipped)
        if not all(isinstance(x, list) and all(isinstance(i, str) for i in x) for x in lists):
            return None
        return _test_report(
            int(data["total"]),
            int(data["passed"]),
            int(data["skipped"]),
            failed,
            errors,
            skipped,
            float(data["time_s"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def parse_junit(path: Path) -> Any:
    """A TestReport from pytest's junit XML, or None when there is none or it does not parse."""
    import xml.etree.ElementTree as ET

    if not path.is_file():
        return None
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return None
    total = passed = skipped = 0
    seconds = 0.0
    failed: list[str] = []
    errors: list[str] = []
    skipped_ids: list[str] = []
    for case in root.iter("testcase"):
        total += 1
        with contextlib.suppress(TypeError, ValueError):
            seconds += float(case.get("time") or 0.0)
        cls, name = case.get("classname") or "", case.get("name") or ""
        tid = f"{cls}::{name}" if cls else name
        tags = {child.tag for child in case}
        if "error" in tags:
            errors.append(tid)
        elif "failure" in tags:
            failed.append(tid)
        elif "skipped" in tags:
            skipped += 1
            skipped_ids.append(tid)
        else:
            passed += 1
    # pytest's <testsuite time>: the session from collection to the last test, without the
    # interpreter's and pytest's own start (the test cases' sum when it is missing).
    suites = 0.0
    for suite in root.iter("testsuite"):
        with contextlib.suppress(TypeError, ValueError):
            suites += float(suite.get("time") or 0.0)
    return _test_report(total, passed, skipped, failed, errors, skipped_ids, suites or seconds)


def with_environment(
    body: dict[str, Any],
    env: str | None,
    env_vars: tuple[str, ...] = (),
    *,
    base: Path | None = None,
    virtual_env: str | None = None,
) -> dict[str, Any]:
    """Fold ``--env`` / ``--env-var`` and the submitting shell's ``$VIRTUAL_ENV`` into a
    submission body (for ``oopav run`` / ``oopav submit``). Relative paths are made absolute
    here, because the handlers resolve them on their own host."""
    raw = body.get("environment")
    here = base or Path.cwd()
    if isinstance(raw, str) and raw.strip() not in ("", "uv"):
        raw = str((here / Path(raw.strip()).expanduser()).absolute())
    elif isinstance(raw, dict) and isinstance(raw.get("python"), str):
        raw = {**raw, "python": str((here / Path(raw["python"]).expanduser()).absolute())}
    spec: dict[str, Any] = dict(normalize_spec(raw)) if raw is not None else {}
    if env:
        spec.pop("python", None)
        spec.pop("build", None)
        spec.update(normalize_spec(env if env == "uv" else str(Path(env).expanduser().absolute())))
    for item in env_vars:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise EnvironmentError_(f"--env-var takes NAME=VALUE, got {item!r}")
        spec.setdefault("env", {})[key] = value
    ve = virtual_env if virtual_env is not None else os.environ.get("VIRTUAL_ENV")
    if ve and "python" not in spec and "build" not in spec:
        spec["virtual_env"] = ve
    out = dict(body)
    if spec:
        out["environment"] = spec
    return out
