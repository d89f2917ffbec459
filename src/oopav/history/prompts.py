"""History that grows linearly (issue 27 §4): a model call's prompt is stored as references
to content-addressed blobs and a line delta against the previous call of the same role.

A loop that resends its whole, growing prompt at every call stores the prompt again each
time: the history grows with the square of the number of calls. Here ``model_called.request``
holds a *stored request* instead of the whole one::

    {"$stored": 1,
     "base": "<id of the session's previous model_called of this role>" | null,
     "head": "<blob: the request without its messages (role, schema, sampling, ...)>",
                                               # absent: the same as the base call's
     "messages": [
        {"role": "system", "blob": "<sha256>"}                    # a whole message, by hash
        {"same": 0}                                               # the base's message 0
        {"role": "user", "from": 1, "ops": [[0, 40], "new\\n", [41, 90]]},  # a delta
        {"role": "user", "text": "short"}]}                       # a short one, inline

A delta copies line ranges of message ``from`` of the base request and inserts new text, so
a call stores what is *new* in its prompt; the static parts (system prompt, schema) are blobs
stored once for every call and every session. ``request_hash`` still hashes the whole request,
and ``expand`` checks it, so a stored request that does not rebuild exactly is an error.

Readers that need the prompt (replay, ``show --json``, the learner's datasets, forks, diffs)
call ``expand`` on a session's events; the stored events themselves (and the hash chain over
them) are never changed.
"""

from __future__ import annotations

import difflib
import json
from collections import OrderedDict
from typing import Any

import msgspec

from oopav.events import catalog as ev

STORED = "$stored"
INLINE_BYTES = 256  # a message shorter than this stays inline: a hash would not save much
MIN_COPY_LINES = 1


def is_stored(request: Any) -> bool:
    return isinstance(request, dict) and request.get(STORED) == 1


def prompt_refs(event: Any) -> list[str]:
    """The blobs a model call's stored request names."""
    if not isinstance(event, ev.ModelCalled) or not is_stored(event.request):
        return []
    out = [event.request["head"]] if event.request.get("head") else []
    out += [m["blob"] for m in event.request.get("messages", []) if "blob" in m]
    return out


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _delta(base: list[str], new: list[str]) -> list[Any]:
    """Ops that rebuild ``new`` from ``base``: ``[i, j]`` copies base[i:j], a string inserts."""
    ops: list[Any] = []
    sm = difflib.SequenceMatcher(a=base, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" and i2 - i1 >= MIN_COPY_LINES:
            ops.append([i1, i2])
        elif j2 > j1:
            text = "".join(new[j1:j2])
            if ops and isinstance(ops[-1], str):
                ops[-1] += text
            else:
                ops.append(text)
    return ops


def _apply(base: list[str], ops: list[Any]) -> str:
    out: list[str] = []
    for op in ops:
        if isinstance(op, str):
            out.append(op)
        else:
            out.extend(base[op[0] : op[1]])
    return "".join(out)


def _head_bytes(request: dict[str, Any]) -> bytes:
    head = {k: v for k, v in request.items() if k != "messages"}
    return json.dumps(head, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


async def store_request(
    blobs: Any, request: dict[str, Any], base_id: str | None, base: dict[str, Any] | None
) -> dict[str, Any]:
    """The stored form of ``request`` (whole builtins), its blobs put in ``blobs``; ``base``:
    the whole request of the previous call of this role (event ``base_id``), or None."""
    head_bytes = _head_bytes(request)
    # The head (role, schema, sampling) rarely changes between calls of a role: "same as the
    # base" then, else a blob (shared by every call and session with that head).
    same_head = base_id is not None and base is not None and _head_bytes(base) == head_bytes
    head = None if same_head else await blobs.put(head_bytes)
    base_msgs = list((base or {}).get("messages") or []) if base_id else []
    messages: list[dict[str, Any]] = []
    to_put: list[bytes] = []
    for i, m in enumerate(request.get("messages") or []):
        meta = {k: v for k, v in m.items() if k != "content"}
        content = m.get("content", "")
        j = i if i < len(base_msgs) and base_msgs[i].get("role") == m.get("role") else None
        if j is not None and base_msgs[j] == m:
            messages.append({"same": j})  # the base's message j as it was (a system prompt)
            continue
        if len(content.encode()) < INLINE_BYTES:
            messages.append({**meta, "text": content})
            continue
        if j is not None:
            ops = _delta(_lines(base_msgs[j].get("content", "")), _lines(content))
            inserted = sum(len(op.encode()) for op in ops if isinstance(op, str))
            if inserted < len(content.encode()) // 2:  # a delta only where it saves
                messages.append({**meta, "from": j, "ops": ops})
                continue
        data = content.encode()
        to_put.append(data)
        from oopav.history.blobs import digest_of

        messages.append({**meta, "blob": digest_of(data)})
    if to_put:
        await blobs.put_many(to_put)
    out: dict[str, Any] = {STORED: 1, "base": base_id if (base_msgs or same_head) else None}
    if head is not None:  # no "head": the base call's (most calls; a key less per call)
        out["head"] = head
    out["messages"] = messages
    return out


class _BlobCache:
    """Blobs are immutable: a process keeps the recent ones (prompt heads and system
    prompts are read again by every expansion)."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self.items: OrderedDict[str, bytes] = OrderedDict()

    def get(self, digest: str) -> bytes | None:
        data = self.items.get(digest)
        if data is not None:
            self.items.move_to_end(digest)
        return data

    def put(self, digest: str, data: bytes) -> None:
        self.items[digest] = data
        if len(self.items) > self.size:
            self.items.popitem(last=False)


CACHE = _BlobCache()


class PromptError(ValueError):
    """A stored request that cannot be rebuilt (missing base or blob, or a wrong hash)."""


async def expand_request(
    blobs: Any, stored: dict[str, Any], base: dict[str, Any] | None
) -> dict[str, Any]:
    """The whole request from its stored form and the base call's whole request."""
    needed = [m["blob"] for m in stored["messages"] if "blob" in m]
    if stored.get("head"):
        needed.append(stored["head"])
    missing = [d for d in dict.fromkeys(needed) if CACHE.get(d) is None]
    if missing:
        for d, data in (await blobs.get_many(missing)).items():
            CACHE.put(d, data)
    if stored.get("head"):
        head = json.loads(CACHE.get(stored["head"]) or b"{}")
    elif base is not None:
        head = {k: v for k, v in base.items() if k != "messages"}
    else:
        raise PromptError("a stored request without a head names no base call")
    messages = []
    for m in stored["messages"]:
        if "same" in m:
            if base is None:
                raise PromptError("a message kept from the base names no base call")
            messages.append(dict(base["messages"][m["same"]]))
            continue
        meta = {k: v for k, v in m.items() if k not in ("text", "blob", "from", "ops")}
        if "text" in m:
            content = m["text"]
        elif "blob" in m:
            content = (CACHE.get(m["blob"]) or b"").decode()
        else:
            if base is None:
                raise PromptError("a delta names a base call that is not in the session")
            content = _apply(_lines(base["messages"][m["from"]]["content"]), m["ops"])
        messages.append({**meta, "content": content})
    return {**head, "messages": messages}


async def expand(blobs: Any, events: list[Any]) -> list[Any]:
    """``events`` (or ``(seq, event)`` pairs) with every stored request made whole again, in
    stream order (a delta's base comes before it). Checked against ``request_hash``."""
    from oopav.models.base import request_hash

    whole: dict[str, dict[str, Any]] = {}
    out: list[Any] = []
    for item in events:
        e = item[1] if isinstance(item, tuple) else item
        if isinstance(e, ev.ModelCalled) and is_stored(e.request):
            base_id = e.request.get("base")
            base = whole.get(base_id) if base_id else None
            if base_id and base is None:
                raise PromptError(
                    f"model_called {e.id}: its base call {base_id} is not before it in the session"
                )
            request = await expand_request(blobs, e.request, base)
            if request_hash(request) != e.request_hash:
                raise PromptError(f"model_called {e.id}: the stored request does not rebuild")
            e = msgspec.structs.replace(e, request=request)
        if isinstance(e, ev.ModelCalled):
            whole[e.id] = e.request
        out.append((item[0], e) if isinstance(item, tuple) else e)
    return out


def stored_bytes(event: Any) -> int:
    """How many bytes an event takes in the stream (its encoding)."""
    from oopav.events.codec import REGISTRY

    return len(REGISTRY.encode(event))
