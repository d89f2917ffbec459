"""The decision core through the real loop, continued (issue 17): the baseline-aware compile
gate, tests after every action of a required decision, competing plans, rejected attempts in
memory. Real nats-server, real sandbox, real git workspaces, scripted models."""

from __future__ import annotations

from pathlib import Path

from loop_harness import (
    action_answer,
    assert_replays,
    finish,
    finish_session,
    loop,
    of,
    plan_answer,
    rename_all,
    start,
    task,
)

# A tiny type check in mypy's output format: names used but defined nowhere.
TYPECHECK = '''import ast
import builtins
import pathlib
import sys

bad = 0
for f in sorted(pathlib.Path("webtool").rglob("*.py")):
    tree = ast.parse(f.read_text())
    known = set(dir(builtins))
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            known.add(n.name)
        elif isinstance(n, ast.alias):
            known.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.arg):
            known.add(n.arg)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            known.add(n.name)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            known.add(n.id)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in known:
            print(f'{f}:{n.lineno}: error: Name "{n.id}" is not defined  [name-defined]')
            bad += 1
print(f"Found {bad} error(s)" if bad else "Success: no issues found")
sys.exit(1 if bad else 0)
'''
LEGACY = "\n\ndef legacy_summary(pages: list[str]) -> str:\n    return legacy_format(pages)\n"
RAISE = "        raise PageNotFound(url) from None\n"


def adds_a_type_error() -> str:
    return action_answer(
        {
            "type": "search_replace",
            "edits": [
                {
                    "path": "webtool/client.py",
                    "search": RAISE,
                    "replace": "        report_missing(url)\n" + RAISE,
                }
            ],
        },
        "report missing pages (a helper that does not exist)",
    )


# -- §8 a baseline-aware compile / type-check gate ----------------------------------------------


async def test_the_compile_gate_fails_only_on_errors_the_baseline_did_not_have(
    nc, nats_url: str, data_dir: Path, repo: Path
) -> None:
    (repo / "typecheck.py").write_text(TYPECHECK)
    report = repo / "webtool" / "report.py"
    report.write_text(report.read_text() + LEGACY)  # a pre-existing type error
    script = {
        "planner": [plan_answer("a"), plan_answer("b")],
        "actor": [adds_a_type_error(), finish(), rename_all(), finish()],
    }
    policy = {"compile_command": ["python", "typecheck.py"]}
    async with loop(nats_url, script) as bus:
        sid = await start(bus, task(repo, policy=policy))
        state, events = await finish_session(bus, sid)
    assert state.outcome == "success", state.summary
    compiles = [g for g in of(events, "gate_evaluated") if g.gate == "compile"]
    assert [(g.passed, g.skipped) for g in compiles] == [(False, False), (True, False)]
    # The first change adds one error beside the baseline's: the gate names only the new one.
    first = compiles[0]
    assert "1 error(s) the baseline did not have (1 pre-existing)" in first.evidence
    assert 'Name "report_missing" is not defined' in first.evidence
    assert "legacy_format" not in first.evidence
    assert [x.purpose for x in first.execs] == ["gate_compile", "gate_compile_base"]
    assert all(x.exit_code == 1 for x in first.execs)
    # The replan's change (on a rolled-back workspace) adds none: the old error does not fail it.
    second = compiles[1]
    assert "1 error(s), all already in the baseline; none new" in second.evidence
    assert second.execs[0].exit_code == 1 and "legacy_format" in second.execs[0].stdout_tail
    assert of(events, "verification_completed")[0].failed_gate == "compile"
    assert "report_missing" not in state.diff and "+def fetch_page(" in state.diff
    await assert_replays(nats_url, sid)
