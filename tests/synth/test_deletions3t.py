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


MACRO_BEFORE = """deref!(CacheControl => Vec<CacheDirective>);
deref!(Cookie => Vec<CookiePair>);
"""
MACRO_AFTER = MACRO_BEFORE.replace("deref!", "__hyper__deref!")
MACRO_HELD = """#[macro_export]
macro_rules! deref(
    ($from:ty => $to:ty) => {
        impl Deref for $from {
            fn deref<'a>(&'a self) -> &'a $to { &self.0 }
        }
    }
);

macro_rules! bench_header(
    ($id:ident, $item:ty) => {
        deref!($id => Vec<$item>);
    }
);
fn f(x: &X) { x.deref(); }
"""
MACRO_WANT = MACRO_HELD.replace("        deref!($id", "        __hyper__deref!($id")


def test_a_macro_renamed_where_it_is_called_only() -> None:
    """hyper 62d96adc: `deref!(…)` -> `__hyper__deref!(…)`; the rename reached the `Deref`
    trait's `fn deref` and the kept `macro_rules! deref`. Every site names a macro where it
    is called: the rename stays in the macros' namespace (a call in a macro's body too)."""
    result = synthesize([Example(MACRO_BEFORE, MACRO_AFTER, path="a.rs")])
    assert result.apply(MACRO_BEFORE)[0] == MACRO_AFTER
    assert result.apply(MACRO_HELD)[0] == MACRO_WANT
