"""History that grows linearly (issue 27 §4): bytes stored per session, prompts whole (as
before) against prompts as blobs + deltas (history/prompts.py).

A scripted 100-call actor session with a realistic prompt: the real static prefix (system
text, output schemas, policy) and request builder of ``oopav.models.prompt``, a context of the
example repository's files (a 3-4k-token prompt), the last actions and a fresh command output
at every call. Both forms are appended as chained ``model_called`` events to a real embedded
nats-server; the stored forms' blobs go to its Object Store. Measured: the bytes the stream
(and the blob bucket) grew by, per session and per call; the unique prompt content (the first
prompt, then the lines each call adds over the previous one); the time to rebuild every whole
prompt, checked equal to what was sent.

    python bench/history.py [--calls 100] [--runs 3] [--quick]
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Figure, arepeat, conclude, parser, report, runs_of

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "rename_fetch"

FIGURES = [
    Figure("prompt_tokens", "prompt size (estimated tokens)", "tok", fmt=",.0f"),
    Figure("before_bytes", "session bytes, whole prompts (today)", "B", fmt=",.0f"),
    Figure("after_bytes", "session bytes, blobs + deltas", "B", fmt=",.0f"),
    Figure("before_per_call", "bytes per call, today", "B", fmt=",.0f"),
    Figure("after_per_call", "bytes per call, blobs + deltas", "B", fmt=",.0f"),
    Figure("ratio_today", "after / today", "%", target=10.0, higher=False, fmt=".2f"),
    Figure("signed_bytes", "2nd session, signed (blobs shared)", "B", fmt=",.0f"),
    Figure("ratio_signed", "2nd session signed / today", "%", fmt=".1f"),
    Figure("unique_bytes", "unique prompt content", "B", fmt=",.0f"),
    Figure("ratio_unique", "stored prompts / unique content", "x", target=1.3, higher=False),
    Figure("expand_ms", "rebuild every whole prompt", "ms", fmt=",.1f"),
]


def _noise(i: int, n: int) -> str:
    """Deterministic, incompressible-looking text: a command's output at call ``i``."""
    out, seed = [], hashlib.sha256(str(i).encode()).hexdigest()
    while sum(len(x) for x in out) < n:
        seed = hashlib.sha256(seed.encode()).hexdigest()
        out.append(f"  {seed[:32]} {seed[32:48]} ok\n")
    return "".join(out)


def session_requests(calls: int) -> list[dict[str, Any]]:
    from oopav.models.base import request_to_builtins
    from oopav.models.prompt import build_request, static_prefix

    prefix = static_prefix({"allow": ["exec:python -m pytest"], "deny": ["net:*"]})
    files = sorted(
        p
        for p in EXAMPLE.rglob("*")
        if p.suffix in (".py", ".md", ".toml") and "__pycache__" not in p.parts
    )
    repo = "".join(f"### {p.relative_to(EXAMPLE)}\n{p.read_text()}\n" for p in files)
    actions: list[str] = []
    out = []
    for i in range(calls):
        actions.append(
            f"{i}: search_replace webtool/m{i % 7}.py: fetch -> fetch_page (ok, 1 file, +1 -1)"
        )
        context = (
            "## Repository\n"
            + repo
            + "\n## Recent actions\n"
            + "\n".join(actions[-8:])
            + "\n## Last command output\n"
            + _noise(i, 600)
        )
        req = build_request(
            "actor",
            prefix=prefix,
            context=context,
            task="Rename the function `fetch` to `fetch_page` everywhere and keep tests green.",
        )
        out.append(request_to_builtins(req))
    return out


def unique_content(requests: list[dict[str, Any]]) -> int:
    """The first prompt whole, then the lines each prompt adds over the one before."""
    total, prev = 0, set()
    for r in requests:
        lines = json.dumps(r, sort_keys=True, indent=0).replace("\\n", "\n").splitlines(True)
        total += sum(len(x.encode()) for x in lines if x not in prev)
        prev = set(lines)
    return total


async def _bytes(js: Any, stream: str) -> int:
    try:
        return int((await js.stream_info(stream)).state.bytes)
    except Exception:
        return 0


async def measure(calls: int, workdir: Path) -> dict[str, float]:
    from oopav.bus.server import EmbeddedServer
    from oopav.bus.store import EventStore, connect
    from oopav.bus.streams import EVENTS_STREAM, ensure_streams
    from oopav.events import catalog as ev
    from oopav.events.factory import caused_event, root_event
    from oopav.history.blobs import BUCKET, BlobStore
    from oopav.history.prompts import expand, store_request
    from oopav.models.base import estimate_tokens, request_hash

    requests = session_requests(calls)
    server = EmbeddedServer(workdir / "nats", write_info=False)
    server.start()
    try:
        nc = await connect(server.url, name="bench-history")
        js = nc.jetstream()
        await ensure_streams(js)
        store, blobs = EventStore(nc), BlobStore(nc)
        await blobs.bucket()
        result: dict[str, float] = {}
        for form in ("before", "after", "signed"):
            if form == "signed":  # every event also carries its handler's signature header
                from oopav.history.signing import Keyring, attach

                attach(nc, Keyring(workdir / "keys"))
            ev0, ob0 = await _bytes(js, EVENTS_STREAM), await _bytes(js, f"OBJ_{BUCKET}")
            task = root_event(ev.TaskSubmitted, handler="intake", instruction="bench", repo="/r")
            await store.append(task, expected=0)
            last: Any = task
            base_id, base = None, None
            for whole in requests:
                stored = whole
                if form != "before":
                    stored = await store_request(blobs, whole, base_id, base)
                    base_id, base = None, whole
                e = caused_event(
                    ev.ModelCalled,
                    last,
                    handler="actor",
                    index=0,
                    role="actor",
                    backend="scripted",
                    request_hash=request_hash(whole),
                    request=stored,
                    response='<action>{"type": "finish", "summary": "done"}</action>',
                    prompt_tokens=estimate_tokens(str(whole)),
                    completion_tokens=20,
                    # A real call's latency (a default 0.0 would be left out of the JSON).
                    latency_ms=812.5 + len(last.id) % 7,
                )
                if form != "before":
                    base_id = e.id
                await store.append(e)
                last = e
            grown = (await _bytes(js, EVENTS_STREAM) - ev0) + (
                await _bytes(js, f"OBJ_{BUCKET}") - ob0
            )
            result[f"{form}_bytes"] = grown
            result[f"{form}_per_call"] = grown / calls
            if form == "after":
                events = await store.read("session", task.aggregate_id)
                t = time.perf_counter()
                from oopav.history import prompts

                prompts.CACHE.items.clear()  # a cold rebuild: every blob read from the store
                whole_events = await expand(BlobStore(nc), events)
                result["expand_ms"] = (time.perf_counter() - t) * 1000
                got = [e.request for _, e in whole_events if isinstance(e, ev.ModelCalled)]
                if got != requests:
                    raise SystemExit("FAIL: the rebuilt prompts differ from what was sent")
                stored_prompts = sum(
                    len(json.dumps(e.request).encode())
                    for _, e in events
                    if isinstance(e, ev.ModelCalled)
                ) + (await _bytes(js, f"OBJ_{BUCKET}") - ob0)
                result["stored_prompt_bytes"] = stored_prompts
        await nc.close()
    finally:
        server.stop()
    unique = unique_content(requests)
    result["unique_bytes"] = unique
    result["ratio_unique"] = result["stored_prompt_bytes"] / unique
    result["ratio_today"] = 100.0 * result["after_bytes"] / result["before_bytes"]
    result["ratio_signed"] = 100.0 * result["signed_bytes"] / result["before_bytes"]
    result["prompt_tokens"] = estimate_tokens(str(requests[-1]["messages"]))
    return result


async def main() -> None:
    ap = parser(__doc__, runs=3)
    ap.add_argument("--calls", type=int, default=100)
    args = ap.parse_args()
    calls = 10 if args.quick else args.calls
    print(f"history bench: {calls} model calls, load {os.getloadavg()[0]:.2f}")

    async def one(_: int) -> dict[str, float]:
        with tempfile.TemporaryDirectory(prefix="oopav-bench-history-") as t:
            return await measure(calls, Path(t))

    results = await arepeat(one, runs_of(args))
    conclude(report(f"history: {calls}-call session, stored bytes", FIGURES, results))


if __name__ == "__main__":
    asyncio.run(main())
