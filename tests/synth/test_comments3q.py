"""Wave 3q of issue 26: a change right below a Rust line comment is a change of the code,
not of the block that holds both (docs/synth.md § Comments, wave 3q)."""

from __future__ import annotations

import pytest

from oopav.synth import Example, SynthesisError, synthesize


def test_a_path_removed_below_a_line_comment_is_learned_as_the_path() -> None:
    """reqwest 4eb98685 replaced `futures_core::ready!(…)` with `ready!(…)`; its one example
    site sat under `// check if the callback is canceled`. A `// comment`'s only token was
    its `//`, so the edit's region began inside the comment's words and the smallest node
    around it was the block: a literal rule of that block, 0 of the 5 held-out sites."""
    before = (
        "fn poll(cx: &mut Context) -> Poll<Option<()>> {\n    match x {\n"
        "        Poll::Pending => {\n            // check if the callback is canceled\n"
        "            futures_core::ready!(tx.poll_closed(cx));\n            Poll::Ready(None)\n"
        "        }\n    }\n}\n"
    )
    after = before.replace("futures_core::ready!", "ready!")
    result = synthesize([Example(before, after, path="src/blocking/client.rs")])
    held = (
        "fn poll_frame(cx: &mut Context) {\n"
        "    let item = futures_core::ready!(this.inner.poll_frame(cx))\n"
        "        .map(|c| c.map_err(crate::error::body));\n"
        "    match futures_core::ready!(Pin::new(&mut self.0).poll_frame(cx)) {\n"
        "        Some(f) => f,\n    }\n}\n"
    )
    assert result.apply(held)[0] == held.replace("futures_core::ready!", "ready!")


def test_a_line_comment_alone_changed_is_still_refused() -> None:
    """Read as one token, a line comment whose words change is still a change of a comment
    only, which no rule rewrites: refused with the same reason as before."""
    before = "fn a() {\n    // first draft\n    x();\n}\n"
    after = "fn a() {\n    // second draft\n    x();\n}\n"
    with pytest.raises(SynthesisError, match="changes a comment; comments are not rewritable"):
        synthesize([Example(before, after, path="src/a.rs")])
