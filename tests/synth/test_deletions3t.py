"""Wave 3t of issue 26: a deleted keyword or modifier goes from the kind of place the examples'
went from (docs/synth.md § A deleted modifier, from its kind of place)."""

from __future__ import annotations

from oopav.synth import Example, synthesize

RS_BEFORE = """impl Service for Svc {
    fn call(&mut self, req: Request) -> Self::Future {
        self.inner(req)
    }
}
"""
RS_AFTER = RS_BEFORE.replace("&mut self", "&self")
RS_HELD = """impl Service for Other {
    fn call(&mut self, mut req: Request) -> Self::Future {
        let mut n = 0;
        take(&mut n);
        self.inner(req)
    }
}
"""
RS_WANT = RS_HELD.replace("&mut self", "&self")


def test_a_deleted_modifier_goes_from_its_kind_of_place_only() -> None:
    """hyper d894439e: `&mut self` -> `&self`; the deletion of `mut` reached every `mut` of
    the held-out files (`let mut n`, `mut req`, `&mut n`: 185 wrong sites). A deleted keyword
    or modifier is deleted where the examples' sit first (`self_parameter`)."""
    result = synthesize([Example(RS_BEFORE, RS_AFTER, path="a.rs")])
    assert result.apply(RS_BEFORE)[0] == RS_AFTER
    assert result.apply(RS_HELD)[0] == RS_WANT
