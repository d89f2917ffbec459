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


def test_one_kept_type_among_more_changed_is_the_exception_to_a_sweep() -> None:
    """Two types made `dyn`, ONE kept: the sites show more types than the kept code, so the
    commit reads as a sweep with an exception (zustand's trailing commas on every
    `=> StateCreator<…>` but one): the kept type excluded still comes first and an unseen
    `&Thing` is rewritten too. (Without the bound — the sites' own list first whenever they
    show two types — it was left alone.)"""
    before = "fn a(x: &Log) {}\nfn b(x: &Source) {}\nfn c(x: &Error) {}\n"
    after = before.replace("&Log", "&dyn Log").replace("&Source", "&dyn Source")
    result = synthesize([Example(before, after, path="src/a.rs")])
    held = "fn g(x: &Log, z: &Thing, w: &Error) {}\n"
    assert result.apply(held)[0] == "fn g(x: &dyn Log, z: &dyn Thing, w: &Error) {}\n"
