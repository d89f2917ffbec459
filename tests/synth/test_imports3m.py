"""A name added to an import list goes only where the file uses it (wave 3m).

axum's commit replaced `futures_util::ready!` with `std::task::ready!` and added `ready` to
`use std::task::{Context, Poll};`. One example file already bound `ready` in a nested test
module (`use std::future::ready;`), so the file's union of imported names did not change and
the insertion was kept as learned: it added `ready` to 23 files of the repository that never
use it. The list is now compared statement by statement, and the insertion is guarded by the
strictest use the examples allow."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.core import SynthResult

B1 = (
    "use std::task::{Context, Poll};\n\nfn f(cx: &mut Context<'_>) -> Poll<()> {\n"
    "    futures_util::ready!(g(cx));\n    Poll::Ready(())\n}\n"
)
B2 = (
    "use std::{\n    pin::Pin,\n    task::{Context, Poll},\n};\n\n"
    "fn k(p: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<()> {\n"
    "    let x = futures_util::ready!(p.poll(cx));\n    Poll::Ready(x)\n}\n\n"
    "#[cfg(test)]\nmod tests {\n    use std::future::ready;\n\n    fn t() {\n"
    "        let _ = ready(());\n    }\n}\n"
)


def _after(before: str) -> str:
    return before.replace("{Context, Poll}", "{ready, Context, Poll}").replace(
        "futures_util::ready!", "ready!"
    )


def _rules() -> SynthResult:
    return synthesize([Example(B1, _after(B1), path="a.rs"), Example(B2, _after(B2), path="b.rs")])


def test_the_import_goes_only_where_the_name_is_used() -> None:
    result = _rules()
    assert result.apply(B1)[0] == _after(B1) and result.apply(B2)[0] == _after(B2)
    unused = (
        "use std::task::{Context, Poll};\n\nfn h(cx: &mut Context<'_>) -> Poll<()> {\n"
        "    Poll::Pending\n}\n"
    )
    assert result.apply(unused)[0] == unused
    qualified = unused.replace("Poll::Pending", "std::future::ready(()).await;\n    Poll::Pending")
    assert result.apply(qualified)[0] == qualified  # a qualified use needs no import
    used = unused.replace("Poll::Pending", "futures_util::ready!(q(cx));\n    Poll::Pending")
    got = result.apply(used)[0]
    assert "use std::task::{ready, Context, Poll};" in got
    assert "    ready!(q(cx));" in got
    assert any("only where `ready` is used" in n for n in result.notes)
