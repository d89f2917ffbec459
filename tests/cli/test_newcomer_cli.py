"""The CLI as a new user meets it (issue 15 §2–§4): global options anywhere and honoured by
every command, model specs resolved and checked at the CLI, a readable `oopav run`, aligned
`sessions`, honest outcomes, `oopav doctor`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import oopav.cli as cli_module
from oopav.cli import cli, hoist_global_options

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rename_fetch"
DEAD = "nats://127.0.0.1:1"


def leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    cli_module.register_all()  # commands load on demand (OopavGroup)
    out = []
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out += leaf_commands(cmd, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


def test_hoisting_leaves_a_passed_on_argv_alone() -> None:
    h = hoist_global_options
    assert h(["show", "--nats-url=U", "s", "--verbose"]) == [
        "--nats-url=U",
        "--verbose",
        "show",
        "s",
    ]
    assert h(["sessions", "--data-dir", "D", "--log-level", "ERROR"]) == [
        "--data-dir", "D", "--log-level", "ERROR", "sessions",
    ]  # fmt: skip
    # After `--`, or in `sandbox exec` once the command's argv starts, nothing is taken.
    assert h(["sandbox", "exec", "--data-dir", "D", "--", "echo", "--data-dir", "x"]) == [
        "--data-dir", "D", "sandbox", "exec", "--", "echo", "--data-dir", "x",
    ]  # fmt: skip
    assert h(["sandbox", "exec", "--workspace", ".", "pytest", "-v", "--verbose"]) == [
        "sandbox", "exec", "--workspace", ".", "pytest", "-v", "--verbose",
    ]  # fmt: skip
    assert h(["run", "-v", "--task", "t.json"]) == ["-v", "run", "--task", "t.json"]


@pytest.mark.parametrize("path", leaf_commands(cli), ids=" ".join)
def test_every_command_accepts_global_options_after_it(
    path: tuple[str, ...], tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        [*path, "--data-dir", str(tmp_path), "--nats-url", DEAD, "--log-level", "ERROR", "--help"],
    )
    assert result.exit_code == 0, result.output
    assert "no such option" not in result.output.lower()


# Every command that talks to NATS, with the URL written after the command: the error must name
# that URL (the option reached the command, not a default or a running server).
NATS_COMMANDS = [
    ("streams", "init"),
    ("submit", "--repo", ".", "rename x"),
    ("sessions",),
    ("show", "abc"),
    ("replay", "abc"),
    ("dlq",),
    ("grant", "abc", "net.any"),
    ("deny", "abc", "net.any"),
    # Long-running commands wait for a server that is down (docs/operations.md, "Outages");
    # --give-up-after bounds the wait.
    ("handler", "intake", "--give-up-after", "1"),
    ("up", "--give-up-after", "1"),
    ("run", "--repo", ".", "rename x"),
    ("gc",),
    ("fsck",),
    ("tui",),
    ("models", "check", "replay:abc"),
]


@pytest.mark.parametrize(
    "args",
    NATS_COMMANDS,
    ids=lambda a: a[0] + (f" {a[1]}" if a[0] in ("streams", "models") else ""),
)
def test_every_command_honours_nats_url_after_it(args: tuple[str, ...], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OOPAV_")}
    proc = subprocess.run(
        [sys.executable, "-m", "oopav.cli", *args, "--nats-url", DEAD, "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"cannot reach NATS at {DEAD}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_data_dir_is_honoured_by_commands_without_a_server(tmp_path: Path) -> None:
    """apply, gc --all and doctor read the data directory given after the command (apply
    ignored `oopav --data-dir X apply` before)."""
    from oopav.config import Settings
    from oopav.sandbox.workspace import prepare_workspace

    repo = tmp_path / "plain"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    data = tmp_path / "elsewhere"
    info = prepare_workspace(repo, "sess-dd", Settings(data_dir=data))
    (Path(info.path) / "a.py").write_text("A = 2\n")
    runner = CliRunner()
    for args in (
        ["apply", "sess-dd", "--data-dir", str(data)],
        ["--data-dir", str(data), "apply", "sess-dd"],
    ):
        result = runner.invoke(
            cli, [*args[:-1], args[-1], "--check"] if args[0] == "apply" else [*args, "--check"]
        )
        assert result.exit_code == 0, result.output
        assert "would apply 1 file(s)" in result.output
    result = runner.invoke(cli, ["doctor", "--data-dir", str(data)])
    assert f"for {data}" in result.output
    result = runner.invoke(cli, ["gc", "--all", "--dry-run", "--data-dir", str(data)])
    assert result.exit_code == 0 and f"would remove {info.path}" in result.output
    # The option does not leak into the process once the command is done.
    assert os.environ.get("OOPAV_DATA_DIR") != str(data)


def test_model_spec_checked_and_resolved_at_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    # A bad spec is a usage error before anything is submitted or started (no server needed).
    for args in (
        ["submit", "--repo", ".", "--model", "scripted:nope.yaml", "x"],
        ["run", "--repo", ".", "--model", "scripted:nope.yaml", "x"],
        ["replay", "abc", "--fork-at", "3", "--model", "scripted:nope.yaml"],
        ["up", "--model", "bogus:thing"],
    ):
        result = runner.invoke(cli, [*args, "--nats-url", DEAD])
        assert result.exit_code == 2, (args, result.output)
        assert "--model" in result.output
        assert "nope.yaml does not exist" in result.output or "bad model spec" in result.output
        assert "cannot reach NATS" not in result.output
    # A relative script path is made absolute against the caller's directory.
    shutil.copy(
        ROOT / "examples" / "rename_fetch_scripted" / "policy.yaml", tmp_path / "other.yaml"
    )
    body = cli_module._submission(None, "x", tmp_path, None, "scripted:other.yaml", None, ())
    assert body["model"] == f"scripted:{tmp_path / 'other.yaml'}"
    # A task file's relative model path is resolved against the task file's directory.
    result = runner.invoke(cli, ["submit", str(EXAMPLE / "task.json"), "--nats-url", DEAD])
    assert result.exit_code == 1 and "cannot reach NATS" in result.output


def test_submit_takes_a_task_file_as_its_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    body = cli_module._submission(
        None, "examples/rename_fetch/task.json", None, None, None, None, ()
    )
    assert body["repo"] == str(EXAMPLE) and body["model"] == "synth:"
    assert body["instruction"].startswith("Rename the function `fetch`")


def test_models_check_scripted_without_envelope(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT / "examples" / "rename_fetch_scripted")
    result = CliRunner().invoke(cli, ["models", "check", "scripted:policy.yaml"])
    assert result.exit_code == 0, result.output
    assert '"type": "ast_grep"' in result.output


def test_sessions_columns_stay_aligned(
    nc: Any, nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {
            "session_id": "a" * 36,
            "phase": "waiting_permission",
            "outcome": None,
            "events": 7,
            "instruction": "one",
        },
        {
            "session_id": "b" * 36,
            "phase": "completed",
            "outcome": "success_unverified",
            "events": 12,
            "instruction": "two",
        },
        {
            "session_id": "c" * 36,
            "phase": "completed",
            "outcome": "success",
            "events": 1234,
            "instruction": "three",
        },
    ]

    async def fake_list(bus: Any, limit: int = 50) -> list[dict[str, Any]]:
        return rows

    monkeypatch.setattr("oopav.services.list_sessions", fake_list)
    result = CliRunner().invoke(
        cli, ["sessions", "--nats-url", nats_url, "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    header, *body = result.output.splitlines()
    outcome_col, instr_col = header.index("OUTCOME"), header.index("INSTRUCTION")
    for line, row in zip(body, rows, strict=True):
        assert line.index(row["outcome"] or "-", 37 + 2) == outcome_col, (header, line)
        assert line.index(row["instruction"]) == instr_col, (header, line)


def test_only_success_is_success(capsys: pytest.CaptureFixture[str]) -> None:
    from oopav.projections.session import SessionState

    state = SessionState(
        session_id="s1",
        phase="completed",
        outcome="success_unverified",
        summary="tests denied by policy",
    )
    assert cli_module._exit_status("success_unverified") == 4
    assert cli_module._exit_status("success") == 0
    assert cli_module._exit_status(None) == 1
    cli_module._print_outcome(state, as_json=False)
    out = capsys.readouterr().out
    assert "success_unverified" in out and "not a verified success" in out
    cli_module._print_outcome(state, as_json=True)
    assert json.loads(capsys.readouterr().out)["ok"] is False


def test_doctor_reports_each_tool_with_a_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(
        cli, ["doctor", "--data-dir", str(tmp_path), "--model", "scripted:nope.yaml"]
    )
    lines = result.output.splitlines()
    for name in ("nats-server", "bwrap", "ast-grep", "git", "disk", "model"):
        assert any(line.split()[1:2] == [name] for line in lines if line[:4].strip()), (name, lines)
    assert any(line.startswith("ok    bwrap") and "user namespaces work" in line for line in lines)
    assert "FAIL  model" in result.output and "fix:" in result.output
    assert result.exit_code == 1
    # A missing tool fails with its fix.
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("shutil.which", lambda *_a, **_k: None)
    result = CliRunner().invoke(cli, ["doctor", "--data-dir", str(tmp_path)])
    assert "FAIL  git" in result.output and "apt install git" in result.output
    assert result.exit_code == 1


def test_a_budget_that_is_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["run", "--repo", str(tmp_path), "x", "--budget", "iterations=abc", "--nats-url", DEAD]
    )
    assert result.exit_code == 2, result.output
    assert "iterations must be a number, got 'abc'" in result.output
    assert "Traceback" not in result.output


def test_every_command_loads_on_demand_from_the_module_the_table_names() -> None:
    """``COMMAND_MODULES`` (which module registers a command, so that `oopav synth` imports
    only what it needs) matches what the modules really register."""
    import importlib

    for module in cli_module.GROUP_MODULES:
        group = click.Group("probe")
        if module == "bus":
            importlib.import_module("oopav.cli.serve").register(group)
            before = set(group.commands)
        else:
            before = set()
        importlib.import_module(f"oopav.cli.{module}").register(group)
        for name in set(group.commands) - before:
            assert cli_module.COMMAND_MODULES.get(name) == module, (name, module)
    cli_module.register_all()
    assert set(cli.commands) == set(cli_module.COMMAND_MODULES)


def test_oopav_synth_starts_without_the_loop_s_heavy_modules(tmp_path: Path) -> None:
    """`oopav synth` (issue 26: ≤ 400 ms a call) imports the synthesiser, ast-grep and click —
    not the sandbox's runner and workspaces, the event catalog, pydantic, structlog or asyncio
    (each was imported at start-up before and together cost most of a call)."""
    examples = tmp_path / "ex.json"
    examples.write_text(
        '[{"before": "x = fetch(u)\\n", "after": "x = fetch_page(u)\\n", "path": "a.py"}]'
    )
    probe = (
        "import sys; sys.argv = ['oopav', 'synth', sys.argv[1]]\n"
        "from oopav.cli import main\n"
        "try:\n    main()\n"
        "except SystemExit:\n    pass\n"
        "heavy = ['oopav.sandbox.apply', 'oopav.sandbox.runner', 'oopav.sandbox.workspace',\n"
        "         'oopav.events', 'pydantic', 'structlog', 'asyncio', 'oopav.config']\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(examples)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "fix: fetch_page" in proc.stdout, proc.stderr
    assert "LOADED []" in proc.stdout, proc.stdout


def test_a_task_file_kept_away_from_its_project_warns_which_tree_repo_dot_means(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`"repo": "."` in a task file means the task file's directory; kept in /tmp while the
    user stands in their project, that is the wrong tree (session 13 filled a disk that way):
    one line says so and how to get the other. Beside its project, nothing is said."""
    from oopav.cli.common import _submission

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    elsewhere = tmp_path / "tasks"
    elsewhere.mkdir()
    task = elsewhere / "t.json"
    task.write_text(json.dumps({"instruction": "rename a to b", "repo": "."}))
    monkeypatch.chdir(project)
    body = _submission(task, None, None, None, None, None, ())
    assert body["repo"] == str(elsewhere.resolve())
    err = capsys.readouterr().err
    assert "resolved against the task file's directory" in err
    assert "pass --repo ." in err and str(project.resolve()) in err
    # Beside its project: no note.
    beside = project / "t.json"
    beside.write_text(json.dumps({"instruction": "rename a to b", "repo": "."}))
    body = _submission(beside, None, None, None, None, None, ())
    assert body["repo"] == str(project.resolve())
    assert capsys.readouterr().err == ""
