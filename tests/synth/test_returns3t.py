"""Wave 3t of issue 26: a rule that adds a "returns nothing" annotation (`-> None`, `: void`)
applies only where the definition returns no value and yields none (docs/synth.md § Returns
nothing only where nothing is returned)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

PY_BEFORE = """class Lifespan:
    async def startup(self):
        await self.started.wait()

    async def shutdown(self):
        self.stopped.set()
"""
PY_AFTER = PY_BEFORE.replace("(self):", "(self) -> None:")
PY_HELD = """class On:
    async def main(self):
        await self.run()

    async def receive(self):
        return await self.queue.get()

    async def close(self):
        if self.closed:
            return
        return None

    async def stream(self):
        yield 1

    async def later(self):
        def inner():
            return 1
        self.cb = inner
"""
PY_WANT = PY_HELD.replace("def main(self):", "def main(self) -> None:").replace(
    "def close(self):", "def close(self) -> None:"
)


def test_none_only_where_nothing_is_returned() -> None:
    """uvicorn a9a46e87: `-> None` on the lifespan's methods; before, the held-out
    `receive`, which returns the queue's next message, got `-> None` too. A generator and a
    definition whose nested function returns a value are left alone (precision first)."""
    result = synthesize([Example(PY_BEFORE, PY_AFTER, path="off.py")])
    assert result.apply(PY_BEFORE)[0] == PY_AFTER
    assert result.apply(PY_HELD)[0] == PY_WANT
    files = [("off.py", PY_BEFORE), ("on.py", PY_HELD)]
    assert (
        check_rules(result.rules, files, "python") + check_file(result.rules, files, "python") == []
    )


TS_BEFORE = """function stop(a: Server) {
  a.closed = true;
}
function go(b: Server) {
  b.open = true;
}
"""
TS_AFTER = TS_BEFORE.replace("Server) {", "Server): void {")
TS_HELD = """function size(c: Server) {
  return c.size;
}
function reset(d: Server) {
  d.size = 0;
  return;
}
"""
TS_WANT = TS_HELD.replace("function reset(d: Server) {", "function reset(d: Server): void {")


def test_void_only_where_nothing_is_returned() -> None:
    result = synthesize([Example(TS_BEFORE, TS_AFTER, path="a.ts")])
    assert result.apply(TS_BEFORE)[0] == TS_AFTER
    assert result.apply(TS_HELD)[0] == TS_WANT
