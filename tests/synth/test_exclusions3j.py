"""Kept-value exclusion lists ranked below the sites' own types (issue 26, wave 3j
synth17): "any type but the ones kept" generalises to every type the examples never show.
Self-written examples only."""

from __future__ import annotations

from oopav.synth import Example, synthesize

BEFORE = """fn a(x: &Log) {}
fn b(x: Box<Source>) {}
fn c(x: &Error) {}
fn d(x: Box<Value>) {}
fn e(x: Inner) -> Error { x }
fn f(x: Box<Inner>) {}
"""
AFTER = BEFORE.replace("&Log", "&dyn Log").replace("<Source>", "<dyn Source>")


def test_two_trait_names_are_a_list_of_their_own_not_every_type_but_the_kept() -> None:
    """Two trait names made `dyn` (`&Log`, `Box<Source>`), four other types kept beside them
    (rust-lang/log's `Log` -> `dyn Log`). Before: `A` not one of the kept `Box|Error|Inner|
    Value`, closed by the parents the sites sit in, ranked first: `Box<Thing>` and `&Config`
    of another file became `dyn` too. Now the sites' own names, `Log|Source`, rank above
    any exclusion list: the unseen types are left alone, the shown ones still rewritten."""
    result = synthesize([Example(BEFORE, AFTER, path="src/a.rs")])
    held = "fn g(x: &Log, y: Box<Source>, z: Box<Thing>, w: &Config) {}\n"
    assert result.apply(held)[0] == (
        "fn g(x: &dyn Log, y: Box<dyn Source>, z: Box<Thing>, w: &Config) {}\n"
    )
    assert result.apply(BEFORE)[0] == AFTER
