"""``scripted:<file>``: responses from a list (in order) or a dict of lists keyed by role.

For tests and examples. Each item is either the answer text, or a mapping with ``text`` (and
optionally ``finish_reason``, ``prompt_tokens``, ``completion_tokens``) or ``error``
(``"kind: message"``, raised as a :class:`ModelError`). Running out is an ``exhausted`` error.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from oopav.config import yaml_error
from oopav.models.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    estimate_tokens,
    prompt_token_estimate,
)

ScriptItem = str | Mapping[str, Any]
Script = Sequence[ScriptItem] | Mapping[str, Sequence[ScriptItem]]


class ScriptedBackend:
    """Serves scripted responses; with a role-keyed script each role has its own queue."""

    def __init__(self, script: Script, *, spec: str = "scripted:<inline>") -> None:
        self.spec = spec
        from oopav.models.capabilities import DECLARED

        self.capabilities = DECLARED["scripted"]
        self._ordered: list[ScriptItem] | None = None
        self._by_role: dict[str, list[ScriptItem]] | None = None
        if isinstance(script, Mapping):
            if "responses" in script and len(script) == 1:
                self._ordered = _items(script["responses"], "responses")
            else:
                self._by_role = {str(k): _items(v, str(k)) for k, v in script.items()}
        else:
            self._ordered = _items(script, "responses")
        self._served: dict[str, int] = {}
        # The latest requests (for inspection); bounded, a long-running process serves many.
        self.calls: deque[ModelRequest] = deque(maxlen=256)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedBackend:
        p = Path(path)
        try:
            raw = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelError("invalid_spec", f"cannot read script {p}: {exc.strerror}") from exc
        try:
            data = json.loads(raw) if p.suffix == ".json" else yaml.safe_load(raw)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise ModelError(
                "invalid_spec", f"script {p} is not valid JSON/YAML: {yaml_error(exc)}"
            ) from exc
        if not isinstance(data, list | dict):
            raise ModelError(
                "invalid_spec",
                f"script {p} must hold a list of responses or a mapping of role to list",
            )
        return cls(data, spec=f"scripted:{p}")

    def remaining(self, role: str | None = None) -> int:
        queue, key = self._queue(role or "")
        return len(queue) - self._served.get(key, 0) if queue is not None else 0

    def _queue(self, role: str) -> tuple[list[ScriptItem] | None, str]:
        if self._ordered is not None:
            return self._ordered, ""
        assert self._by_role is not None
        return self._by_role.get(role), role

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(request)
        queue, key = self._queue(request.role)
        if queue is None:
            raise ModelError(
                "exhausted",
                f"the script has no responses for role {request.role!r} "
                f"(roles: {', '.join(sorted(self._by_role or {}))})",
            )
        index = self._served.get(key, 0)
        if index >= len(queue):
            where = f" for role {request.role!r}" if key else ""
            raise ModelError(
                "exhausted",
                f"the script ran out of responses{where} after {len(queue)}; add more to it",
            )
        self._served[key] = index + 1
        item = queue[index]
        if isinstance(item, str):
            item = {"text": item}
        if item.get("error"):
            raise ModelError.from_recorded(str(item["error"]))
        text = str(item.get("text", ""))
        return ModelResponse(
            text=text,
            prompt_tokens=int(item.get("prompt_tokens", prompt_token_estimate(request))),
            completion_tokens=int(item.get("completion_tokens", estimate_tokens(text))),
            latency_ms=0.0,
            finish_reason=str(item.get("finish_reason", "stop")),
        )

    async def aclose(self) -> None:
        return None


def _items(value: Any, where: str) -> list[ScriptItem]:
    if not isinstance(value, list):
        raise ModelError("invalid_spec", f"script entry {where!r} must be a list of responses")
    out: list[ScriptItem] = []
    for i, item in enumerate(value):
        if isinstance(item, str | Mapping):
            out.append(item)
        else:
            raise ModelError(
                "invalid_spec", f"script entry {where}[{i}] must be a string or a mapping"
            )
    return out
