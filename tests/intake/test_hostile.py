"""Hostile submissions over a real nats-server: every payload gets a specific answer and a
``task_rejected`` event, and the intake keeps serving good submissions afterwards."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oopav.bus.store import EventStore
from oopav.bus.streams import INTAKE_SUBJECT
from oopav.events import catalog as ev
from oopav.handlers.intake import Intake
from oopav.handlers.support.repo_check import filesystem_type, repo_problem
from oopav.handlers.support.submission import Rejected, parse_submission


async def request(nc: Any, payload: bytes) -> dict[str, Any]:
    msg = await nc.request(INTAKE_SUBJECT, payload, timeout=10)
    return json.loads(msg.data)


def task(repo: Path, **fields: Any) -> bytes:
    return json.dumps({"instruction": "rename fetch", "repo": str(repo), **fields}).encode()


def hostile(repo: Path) -> list[Any]:
    r = str(repo)
    return [
        pytest.param(
            b'{"instruction": "x", "repo": "'
            + r.encode()
            + b'", "policy": '
            + b"[" * 10_000
            + b"]" * 10_000
            + b"}",
            None,
            "too_deep",
            "nested too deeply",
            id="10000-deep",
        ),
        pytest.param(
            b'{"instruction": "x", "repo": "'
            + r.encode()
            + b'", "budgets": {"iterations": '
            + b"9" * 5000
            + b"}}",
            "budgets.iterations",
            "number_too_large",
            "integer of 5000 digits",
            id="5000-digit-int",
        ),
        pytest.param(
            json.dumps({"instruction": "x", "repo": "/" + "a" * 5000}).encode(),
            "repo",
            "path_too_long",
            "the limit is 4095",
            id="5000-char-path",
        ),
        pytest.param(
            json.dumps({"instruction": "x", "repo": r + "/" + "b" * 300}).encode(),
            "repo",
            "path_too_long",
            "300-byte component",
            id="300-char-component",
        ),
        pytest.param(
            b'{"instruction": "x\\ud800y", "repo": "' + r.encode() + b'"}',
            "instruction",
            "invalid_unicode",
            "lone UTF-16 surrogate",
            id="lone-surrogate",
        ),
        pytest.param(
            task(repo, test_command="python\u0000 -m pytest"),
            "test_command",
            "control_character",
            "NUL byte",
            id="nul-test-command",
        ),
        pytest.param(
            task(repo, test_command=["python", "-c", "print(1)\u0000"]),
            "test_command.2",
            "control_character",
            "NUL byte",
            id="nul-test-argv",
        ),
        pytest.param(
            task(repo, model="scripted:/x\u0000.yaml"),
            "model",
            "control_character",
            "NUL byte",
            id="nul-model",
        ),
        pytest.param(
            task(repo, examples=[{"before": "a", "after": "b", "path": "a\u0000.py"}]),
            "examples.0.path",
            "control_character",
            "NUL byte",
            id="nul-example-path",
        ),
        pytest.param(
            task(repo, policy={"allow": ["exec:pytest\u0000"]}),
            "policy.allow.0",
            "control_character",
            "NUL byte",
            id="nul-policy",
        ),
        pytest.param(
            task(repo, mission="m\u001bx"),
            "mission",
            "control_character",
            "U+001B",
            id="escape-in-mission",
        ),
        pytest.param(
            task(repo, test_command=["a"] * 10_000),
            "test_command",
            "too_many_arguments",
            "10000 arguments; the limit is 256",
            id="10000-args",
        ),
        pytest.param(
            task(repo, test_command=" ".join(["a"] * 1000)),
            "test_command",
            "too_many_arguments",
            "1000 arguments",
            id="1000-args-as-string",
        ),
        pytest.param(
            task(repo, examples=[{"before": "a", "after": "b"}] * 21),
            "examples",
            "too_large",
            "21 entries; the limit is 20",
            id="21-examples",
        ),
        pytest.param(
            task(repo, examples=[{"before": "a" * 60_000, "after": "b" * 60_000}] * 5),
            "examples",
            "too_large",
            "more than 524288 bytes",
            id="examples-total-size",
        ),
        pytest.param(
            task(repo, policy={"ask_unknown": "no"}),
            "policy.ask_unknown",
            "wrong_type",
            "must be true or false, got a string",
            id="enum-not-coerced",
        ),
        pytest.param(
            task(repo, budgets={"wall_seconds_per_phase": 12345.5}).replace(b"12345.5", b"1e999"),
            "budgets.wall_seconds_per_phase",
            "number_too_large",
            "not a finite number",
            id="infinite-number",
        ),
        pytest.param(
            b'{"instruction": "x", "repo": "' + r.encode() + b'", "\\udc00": 1}',
            None,
            "invalid_unicode",
            "a field name holds a lone UTF-16 surrogate",
            id="surrogate-key",
        ),
    ]


@pytest.mark.parametrize(("payload", "field", "code", "error"), hostile(Path("/tmp/x")))
def test_contract_names_the_problem(
    payload: bytes, field: str | None, code: str, error: str
) -> None:
    # The pure core, with a placeholder repo that is never reached (each case fails earlier).
    result = parse_submission(payload, check_repo=False)
    assert getattr(result, "code", None) == code, result
    assert result.field == field and error in result.error  # type: ignore[union-attr]


async def test_every_hostile_case_is_answered_and_recorded(
    nc: Any, intake: Intake, repo: Path
) -> None:
    events = EventStore(nc)
    for param in hostile(repo):
        payload, field, code, error = param.values
        reply = await request(nc, payload)
        assert reply.get("code") == code, (param.id, reply)
        assert reply["field"] == field and error in reply["error"], (param.id, reply)
        # The message names the field once, never "field: field ...".
        if field:
            assert not reply["error"].startswith(f"{field}: {field}"), reply
        [(_, rejected)] = await events.read("session", reply["session_id"])
        assert isinstance(rejected, ev.TaskRejected) and rejected.code == code
        good = await request(nc, task(repo))
        assert "error" not in good, (param.id, good)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/", "system directory"),
        ("/proc", "system directory"),
        ("/proc/self", "under /proc"),
        ("/sys", "system directory"),
        ("/dev", "system directory"),
        ("/etc", "system directory"),
        ("/boot", "system directory"),
        ("/run", "system directory"),
    ],
)
def test_system_directories_are_refused(path: str, why: str) -> None:
    if not Path(path).exists():
        pytest.skip(f"{path} does not exist here")
    problem = repo_problem(path)
    assert problem is not None and problem.code == "forbidden_path" and why in str(problem)


def test_home_directory_itself_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    problem = repo_problem(str(home))
    assert problem is not None and "home directory" in str(problem)
    assert repo_problem(str(home / "project")) is None


def test_symlink_loop_is_a_clear_refusal(tmp_path: Path) -> None:
    # pathlib raises RuntimeError (no strerror) for a loop; it used to escape as AttributeError.
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    problem = repo_problem(str(loop))
    assert problem is not None and problem.code == "invalid_path"
    assert "cannot be resolved" in str(problem) and "loop" in str(problem).lower()


def test_pseudo_filesystem_found_from_the_mount_table(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(
        "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "2 1 0:5 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n"
    )
    assert filesystem_type(Path("/mnt/my cgroups/a/b"), table) == "cgroup2"
    assert filesystem_type(Path("/home/me/repo"), table) == "ext4"


def test_allowlist_of_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside = tmp_path / "work" / "repo"
    outside = tmp_path / "elsewhere"
    inside.mkdir(parents=True)
    outside.mkdir()
    monkeypatch.setenv("OOPAV_REPO_ROOTS", str(tmp_path / "work"))
    assert repo_problem(str(inside)) is None
    problem = repo_problem(str(outside))
    assert problem is not None and "OOPAV_REPO_ROOTS" in str(problem)


async def test_repo_proc_is_rejected_over_nats(nc: Any, intake: Intake, repo: Path) -> None:
    reply = await request(nc, json.dumps({"instruction": "x", "repo": "/proc"}).encode())
    assert reply["field"] == "repo" and reply["code"] == "forbidden_path"
    assert "error" not in await request(nc, task(repo))


# -- the property: any input gets an answer ------------------------------------------------

_any_text = st.text(st.characters(blacklist_categories=()), max_size=40)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_any_text, inner, max_size=4),
    max_leaves=12,
)
_fields = st.sampled_from(
    ["instruction", "repo", "mission", "budgets", "policy", "model", "test_command", "examples"]
)


def _submissions(repo: str) -> st.SearchStrategy[bytes]:
    shaped = st.dictionaries(_fields, _json, max_size=6).map(
        lambda d: {"instruction": "x", "repo": repo, **d}
    )
    deep = st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n)
    digits = st.integers(1, 6000).map(
        lambda n: (
            b'{"instruction": "x", "repo": "' + repo.encode() + b'", "mission": ' + b"7" * n + b"}"
        )
    )
    return st.one_of(
        st.binary(max_size=200),
        _json.map(lambda v: json.dumps(v).encode()),
        shaped.map(lambda d: json.dumps(d).encode()),
        shaped.map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")),
        deep,
        digits,
    )


async def test_property_any_payload_gets_an_answer(nc: Any, intake: Intake, repo: Path) -> None:
    loop = asyncio.get_running_loop()
    good = task(repo)
    answered: list[dict[str, Any]] = []

    def ask(payload: bytes) -> dict[str, Any]:
        return asyncio.run_coroutine_threadsafe(request(nc, payload), loop).result(timeout=20)

    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(_submissions(str(repo)))
    def prop(payload: bytes) -> None:
        reply = ask(payload)
        assert "session_id" in reply
        if "error" in reply:
            assert set(reply) >= {"error", "field", "code"} and reply["error"], reply
        answered.append(reply)
        after = ask(good)
        assert "error" not in after and after["session_id"] != reply["session_id"]

    await asyncio.to_thread(prop)
    assert len(answered) >= 30
    # Every answer is backed by its event: a rejection by task_rejected, a task by task_submitted.
    events = EventStore(nc)
    for reply in answered[:20]:
        [(_, event)] = await events.read("session", reply["session_id"])
        want = ev.TaskRejected if "error" in reply else ev.TaskSubmitted
        assert isinstance(event, want)


@pytest.mark.parametrize("path", ["/proc", "/sys/fs/cgroup", "/"])
async def test_observer_never_walks_a_pseudo_filesystem(tmp_path: Path, path: str) -> None:
    """A task that reached the stream without the intake (an old stream, a raw publish)."""
    from oopav.config import Settings
    from oopav.events.factory import root_event
    from oopav.handlers.observer import Observer
    from oopav.handlers.ports import Ports
    from oopav.projections.session import fold

    submitted = root_event(ev.TaskSubmitted, handler="test", instruction="x", repo=path)
    ports = Ports(settings=Settings(data_dir=tmp_path))
    out = await Observer().handle(submitted, fold([(1, submitted)]), ports, None)
    assert [e.type for e in out] == ["session_completed"]
    done = out[0]
    assert isinstance(done, ev.SessionCompleted) and done.outcome == "aborted"
    assert done.reason == "workspace" and path in done.summary


def test_repo_inside_the_data_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "workspaces" / "s1").mkdir(parents=True)
    monkeypatch.setenv("OOPAV_DATA_DIR", str(data))
    problem = repo_problem(str(data / "workspaces" / "s1"))
    assert problem is not None and "data directory" in str(problem)
    sibling = tmp_path / "project"
    sibling.mkdir()
    assert repo_problem(str(sibling)) is None


def test_a_repo_that_holds_the_data_directory_is_refused_unless_git_ignores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace of a directory that holds oopav's data directory would copy oopav's state
    into itself: `"repo": "."` in a task file kept in /tmp, with the data directory in /tmp too,
    filled a 250 GB disk with copies of copies."""
    data = tmp_path / "state"
    (data / "workspaces").mkdir(parents=True)
    monkeypatch.setenv("OOPAV_DATA_DIR", str(data))
    problem = repo_problem(str(tmp_path))
    assert problem is not None and problem.code == "forbidden_path"
    assert "is inside repo" in str(problem) and "OOPAV_DATA_DIR" in str(problem)
    # A git repository that ignores it: neither its worktree nor its untracked files hold it.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert repo_problem(str(tmp_path)) is not None  # not ignored yet: its snapshot would copy it
    (tmp_path / ".gitignore").write_text("/state/\n")
    assert repo_problem(str(tmp_path)) is None


def test_a_task_too_large_for_the_server_is_rejected_not_lost(repo: Path) -> None:
    from oopav.events.clock import SYSTEM_CLOCK
    from oopav.handlers.intake import decide

    payload = task(repo, instruction="x" * 60_000)
    ok = decide(payload, 1, 0, SYSTEM_CLOCK, max_event_bytes=1024 * 1024)
    assert isinstance(ok, ev.TaskSubmitted)
    small = decide(payload, 1, 0, SYSTEM_CLOCK, max_event_bytes=32 * 1024)
    assert isinstance(small, ev.TaskRejected) and small.code == "too_large"
    assert "max_payload" in small.error


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("gpt4", "bad model spec"),
        ("openai:localhost#m", "bad openai base URL"),
        ("scripted:/nonexistent/policy.yaml", "does not exist"),
    ],
)
def test_bad_model_spec_is_rejected_at_submission(tmp_path: Path, model: str, message: str) -> None:
    body = {"instruction": "x", "repo": str(tmp_path), "model": model}
    result = parse_submission(json.dumps(body).encode())
    assert isinstance(result, Rejected), result
    assert message in result.error
    assert result.field == "model" and result.code == "bad_model"
