"""Bad input at the CLI, as a user hits it: one clear line and a non-zero exit, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from oopav.cli import cli

DEAD = ("--nats-url", "nats://127.0.0.1:1")
BAD_YAML = "output_dir: [\n  bad"


@pytest.mark.parametrize(
    "args",
    [
        ("train", "sft", "--config", "{bad}"),
        ("train", "srl", "--config", "{bad}"),
        ("synth", "{bad}"),
        ("run", "--policy", "{bad}", "--repo", "{tmp}", "do something"),
        ("guidance", "seed", "m", "{bad}"),
        ("models", "check", "scripted:{bad}"),
        ("up", "--reflector-config", "{bad}"),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_malformed_yaml_file_is_one_line(args: tuple[str, ...], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML)
    argv = [a.format(bad=bad, tmp=tmp_path) for a in args]
    result = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path / "data"), "--nats-url", "nats://127.0.0.1:1", *argv]
    )
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    error = [line for line in lines if "bad.yaml" in line]
    # PyYAML's own message spans six lines with carets; the user gets the problem and where.
    assert len(error) == 1 and "line 2, column 6" in error[0], result.output
    assert not any(line.lstrip().startswith("^") for line in lines), result.output


@pytest.mark.parametrize("command", [("up",), ("handler", "actor")], ids=" ".join)
def test_sigterm_stops_a_process_waiting_for_a_server_that_is_down(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    # `oopav up` / `oopav handler` wait for a server that is down for as long as it takes; the
    # stop signal used to be caught and ignored meanwhile (`timeout 20 oopav up` ran forever).
    env = {**os.environ, "OOPAV_LOG_LEVEL": "INFO"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "oopav.cli", "--data-dir", str(tmp_path), *command, *DEAD],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "nats_unreachable_waiting" in line:
                break
        else:
            raise AssertionError("".join(seen))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait(5)
    assert proc.returncode == 1
    assert err.strip().splitlines()[-1] == (
        "Error: stopped while waiting for the NATS server nats://127.0.0.1:1"
    )


def test_eval_on_an_empty_split_and_a_count_below_one_are_refused(tmp_path: Path) -> None:
    suite = tmp_path / "tasks"
    suite.mkdir()
    (suite / "test.jsonl").write_text("")  # what `tasks generate --n 20` can leave
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", "--model", "synth:", "--suite", str(suite)])
    assert result.exit_code == 1
    assert "has no test tasks (its test split is empty)" in result.output, result.output
    for args in (
        ["eval", "--model", "synth:", "--suite", str(suite), "--n", "0"],
        ["tasks", "generate", "--n", "-5", "--out", str(tmp_path / "out")],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2 and "is not in the range x>=1" in result.output, args
    assert not (tmp_path / "out").exists()


def test_a_submission_nobody_answers_is_queued_not_rejected(tmp_path: Path) -> None:
    # With no intake running, OOPAV_INTAKE still stores the submission and a later `oopav up`
    # turns it into a session: "rejected" (exit 2) made users submit it twice.
    import asyncio

    import nats

    from oopav.bus.server import EmbeddedServer

    server = EmbeddedServer(tmp_path / "nats")
    url = server.start()
    try:
        repo = tmp_path / "repo"
        repo.mkdir()
        result = CliRunner().invoke(
            cli, ["--nats-url", url, "submit", "--repo", str(repo), "Rename f to g"]
        )
        assert result.exit_code == 1, result.output
        assert result.output.startswith("queued: no intake answered"), result.output
        assert "rejected" not in result.output

        async def stored() -> int:
            nc = await nats.connect(url)
            try:
                info = await nc.jetstream().stream_info("OOPAV_INTAKE")
                return int(info.state.messages)
            finally:
                await nc.close()

        assert asyncio.run(stored()) == 1
    finally:
        server.stop()


@pytest.mark.parametrize("command", ["run", "submit"])
def test_no_repository_is_a_usage_error_before_anything_starts(
    command: str, tmp_path: Path
) -> None:
    task = tmp_path / "task.json"
    task.write_text('{"instruction": "Rename f to g"}')
    for args in (["Rename f to g"], ["--task", str(task)]):
        result = CliRunner().invoke(
            cli, ["--data-dir", str(tmp_path / "data"), command, "--model", "synth:", *args]
        )
        assert result.exit_code == 2, result.output
        assert "no repository: pass --repo DIRECTORY" in result.output, result.output
        # Refused at the CLI: no embedded server was started to reject it.
        assert not (tmp_path / "data" / "nats").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("sessions", "--limit", "0"), "Invalid value for '--limit'"),
        (("sessions", "--limit", "-1"), "Invalid value for '--limit'"),
        (("dlq", "--limit", "0"), "Invalid value for '--limit'"),
        (("runs", "--limit", "-3"), "Invalid value for '--limit'"),
        (("models", "check", "--max-tokens", "0"), "Invalid value for '--max-tokens'"),
        (("cluster", "up", "--nodes", "2"), "odd number of nodes (1, 3, 5), not 2"),
        (("cluster", "up", "--replicas", "4"), "between 1 and the number of nodes (3), not 4"),
        (("streams", "create", "--replicas", "0"), "Invalid value for '--replicas'"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, tuple) else "",
)
def test_a_count_out_of_range_is_a_usage_error_before_anything_runs(
    args: tuple[str, ...], says: str, tmp_path: Path
) -> None:
    # `sessions --limit -1` listed nothing and said "no sessions yet" about a store that had
    # some; `cluster up --nodes 2` started and stopped a cluster before complaining.
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), *DEAD, *args])
    assert result.exit_code == 2, result.output
    assert says in result.output, result.output
    assert not (tmp_path / "data").exists()
