"""A guidance-sensitive fake policy: a small OpenAI-compatible chat-completions server.

It plays planner and actor for one kind of task ("write the answer to answer.txt"). The actor
writes the right answer only when the prompt's guidance holds the ``magic`` line, or when the
request's seed is one of ``lucky_seeds`` (so a group at temperature > 0 can disagree); a
``harmful`` line makes it wrong whatever else is there. Everything is deterministic: the
answer depends on the prompt and the seed only. Used by the reflector tests and
``bench/reflection.py``.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from oopav.models.base import estimate_tokens
from oopav.models.prompt import render_answer

# helpers/ sits in tests/, which bench/reflection.py (importing this server) does not put on the
# path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.openai_api import completion, send_json

MAGIC = "the answer file holds 42"
HARMFUL = "the answer file holds 41"
TEST_COMMAND = [
    "python",
    "-c",
    "import pathlib, sys; sys.exit(0 if pathlib.Path('answer.txt').read_text().strip() == '42' else 1)",
]
INSTRUCTION = "Write the answer to answer.txt and keep the tests green."


def guidance_of(prompt: str) -> str:
    start = prompt.find("## Guidance\n")
    if start < 0:
        return ""
    end = prompt.find("\n\n## Context", start)
    return prompt[start : end if end > 0 else None].lower()


class PolicyServer:
    def __init__(
        self,
        *,
        magic: str = MAGIC,
        harmful: str = HARMFUL,
        lucky_seeds: tuple[int, ...] = (),
    ) -> None:
        self.magic = magic.lower()
        self.harmful = harmful.lower()
        self.lucky_seeds = set(lucky_seeds)
        self.calls = 0
        self.tokens = 0
        self.guided_calls = 0
        self.proposals = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def spec(self) -> str:
        return f"openai:{self.url}#fake-policy"

    def start(self) -> PolicyServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size) or b"{}")
                text = server.answer(body)
                usage = {
                    "prompt_tokens": sum(
                        estimate_tokens(m.get("content", "")) for m in body.get("messages", [])
                    ),
                    "completion_tokens": estimate_tokens(text),
                }
                with server._lock:
                    server.calls += 1
                    server.tokens += usage["prompt_tokens"] + usage["completion_tokens"]
                    answer = completion(
                        text, usage, id=f"fake-{server.calls}", model=body.get("model", "fake")
                    )
                send_json(self, 200, json.dumps(answer).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> PolicyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the policy -------------------------------------------------------------------------

    def correct(self, prompt: str, seed: int | None) -> bool:
        guidance = guidance_of(prompt)
        if self.harmful and self.harmful in guidance:
            return False
        if self.magic in guidance:
            with self._lock:
                self.guided_calls += 1
            return True
        return seed in self.lucky_seeds

    def consolidate(self, prompt: str) -> str:
        """The playing consolidator: the first proposal is the harmful line (the holdout must
        reject it), later ones the helpful line; nothing once the library has it."""
        library = prompt[prompt.find("## Current library") : prompt.find("## Group")].lower()
        if self.magic in library:
            return json.dumps(
                {"action": "noop", "summary": "the library has the rule", "critique": "-"}
            )
        with self._lock:
            self.proposals += 1
            first = self.proposals == 1
        text = (self.harmful if first else self.magic).capitalize() + "."
        return json.dumps(
            {
                "action": "refine",
                "summary": "add the value rule",
                "critique": "attempts guessed the value",
                "operations": [{"op": "upsert", "text": text, "rationale": "tests"}],
                "evidence_group_ids": [],
            }
        )

    def answer(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        if "Role: planner" in prompt:
            return render_answer(
                "plan",
                {
                    "steps": [
                        {
                            "id": 1,
                            "description": "Write answer.txt, then run the test command `"
                            + " ".join(TEST_COMMAND)
                            + "` and check it passes",
                            "files": ["answer.txt"],
                        }
                    ],
                    "files": ["answer.txt"],
                    "test_decision": "required",
                    "rationale": "one file",
                },
                think="plan",
                state_update={"next_focus": "answer.txt"},
            )
        if "You are the critic of a coding agent" in "\n".join(
            str(m.get("content", "")) for m in messages
        ):
            return json.dumps(
                {
                    "summary": "wrote the wrong value" if "label_match False" in prompt else "ok",
                    "critique": "The tests compare answer.txt with a fixed value; guessing fails.",
                    "root_cause": "no rule about the expected value",
                }
            )
        if "You maintain the experience library" in prompt:
            return self.consolidate(prompt)
        if "Role: actor" in prompt:
            value = "42" if self.correct(prompt, body.get("seed")) else "41"
            return render_answer(
                "action",
                {"type": "write_file", "path": "answer.txt", "content": value + "\n"},
                think="write",
                state_update={"history": "wrote answer.txt"},
            )
        return "{}"
