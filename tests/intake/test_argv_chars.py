"""argv elements may hold any character but NUL (issue 29, item 6): a ``python -c`` script with
newlines is a legitimate test command, and intake must take it and record it unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oopav.bus.store import EventStore
from oopav.bus.streams import INTAKE_SUBJECT
from oopav.events import catalog as ev
from oopav.handlers.intake import Intake
from oopav.handlers.support.submission import Accepted, parse_submission

SCRIPT = "import sys\nprint(1)\r\n\tprint('\x1b[1mbold\x1b[0m', '\x7f')"


# `repo` and `intake` come from tests/intake/conftest.py.


def _task(repo: Path, test_command: Any) -> bytes:
    return json.dumps(
        {"instruction": "rename fetch", "repo": str(repo), "test_command": test_command}
    ).encode()


def test_contract_takes_control_characters_in_argv(repo: Path) -> None:
    result = parse_submission(_task(repo, ["python", "-c", SCRIPT]), check_repo=False)
    assert isinstance(result, Accepted), result
    assert result.test_command == ["python", "-c", SCRIPT]
    # The string form keeps a quoted newline through the split.
    result = parse_submission(_task(repo, "python -c 'import sys\nprint(1)'"), check_repo=False)
    assert isinstance(result, Accepted), result
    assert result.test_command == ["python", "-c", "import sys\nprint(1)"]


def test_a_long_script_is_bounded_by_the_argv_total_not_the_string_limit(repo: Path) -> None:
    script = "x = 1\n" * 2000  # 12000 characters: over the generic 4096, under 64 KiB of argv
    result = parse_submission(_task(repo, ["python", "-c", script]), check_repo=False)
    assert isinstance(result, Accepted), result


def test_nul_is_still_refused(repo: Path) -> None:
    result = parse_submission(_task(repo, ["python", "-c", "a\nb\x00"]), check_repo=False)
    assert getattr(result, "code", None) == "control_character", result
    assert result.field == "test_command.2" and "NUL byte" in result.error  # type: ignore[union-attr]


async def test_newline_argv_accepted_and_recorded_through_intake(
    nc: Any, intake: Intake, repo: Path
) -> None:
    msg = await nc.request(INTAKE_SUBJECT, _task(repo, ["python", "-c", SCRIPT]), timeout=10)
    reply = json.loads(msg.data)
    assert "error" not in reply, reply
    events = await EventStore(nc).read("session", reply["session_id"])
    submitted = [e for _, e in events if isinstance(e, ev.TaskSubmitted)]
    assert submitted and submitted[0].test_command == ["python", "-c", SCRIPT]
