"""Wave 3u of issue 26: a Rust attribute inserted beside another (`#[test]` ->
`#[cfg(unix)]\\n#[test]`, `#[cfg(feature = "std")]` -> the same and a `#[cfg_attr(…)]`
below it) or removed from an item's run (`#[derive(Debug)]` deleted) takes its context from
the item it annotates — the next sibling past the run of attributes and comments — not from
its parent, which every attribute of the file shares (docs/synth.md § Attributes beside
attributes). Each a small self-written reproduction of what a real commit did."""

from __future__ import annotations

from oopav.synth import Example, synthesize

STD = '#[cfg(feature = "std")]'
DOC = '#[cfg_attr(doc_cfg, doc(cfg(feature = "std")))]'


def test_an_attribute_after_another_goes_on_the_items_of_the_kinds_shown() -> None:
    """anyhow dc099d2e: `#[cfg_attr(doc_cfg, …)]` right after `#[cfg(feature = "std")]` on
    items, kept off the gated `use`s. Learned "after `#[cfg(feature = "std")]` above a
    struct" — the item's kind, read past the attributes between."""
    before = (
        f"{STD}\nuse std::error::Error as StdError;\n\n"
        f"/// A chain.\n{STD}\n#[derive(Clone)]\npub struct Chain {{\n    next: u8,\n}}\n\n"
        f"{STD}\npub struct Buffered;\n"
    )
    after = before.replace(f"{STD}\n#[derive", f"{STD}\n{DOC}\n#[derive").replace(
        f"{STD}\npub struct Buffered", f"{STD}\n{DOC}\npub struct Buffered"
    )
    result = synthesize([Example(before, after, path="lib.rs")])
    held = (
        f"{STD}\nuse std::vec;\n\n"
        f"{STD}\n#[derive(Debug)]\npub struct Report {{\n    inner: u8,\n}}\n\n"
        "pub struct Plain;\n"
    )
    want = held.replace(f"{STD}\n#[derive", f"{STD}\n{DOC}\n#[derive")
    assert result.apply(held)[0] == want


def test_an_attribute_after_a_derive_goes_on_the_generic_items() -> None:
    """ripgrep 67dd809a: `#[allow(dead_code)]` after `#[derive(Clone, Debug)]` on
    `IgnoreMatch<'a>` and `IgnoreMatchInner<'a>` (a tuple struct and an enum), kept off the
    other derived structs: "no rule" (every `#[derive(Clone, Debug)]` is alike). The items
    being generic tells them apart."""
    derive = "#[derive(Clone, Debug)]"
    before = (
        f"{derive}\npub struct Match<'a>(Inner<'a>);\n\n"
        f"{derive}\nenum Inner<'a> {{\n    Glob(&'a str),\n}}\n\n"
        f"{derive}\npub struct Options {{\n    hidden: bool,\n}}\n\n"
        f"{derive}\npub struct Builder(Options);\n"
    )
    after = before.replace(
        f"{derive}\npub struct Match", f"{derive}\n#[allow(dead_code)]\npub struct Match"
    )
    after = after.replace(f"{derive}\nenum Inner", f"{derive}\n#[allow(dead_code)]\nenum Inner")
    result = synthesize([Example(before, after, path="dir.rs")])
    held = (
        f"{derive}\npub struct Glob<'a>(GlobInner<'a>);\n\n"
        f"{derive}\nenum GlobInner<'a> {{\n    Matched(&'a str),\n}}\n\n"
        f"{derive}\npub struct Override(Options);\n"
    )
    want = held.replace(
        f"{derive}\npub struct Glob", f"{derive}\n#[allow(dead_code)]\npub struct Glob"
    )
    want = want.replace(
        f"{derive}\nenum GlobInner", f"{derive}\n#[allow(dead_code)]\nenum GlobInner"
    )
    assert result.apply(held)[0] == want


def test_a_lone_attribute_above_another_is_learned_by_its_item() -> None:
    """mio 22b26298: `#[cfg(unix)]` inserted above one test's `#[test]`, the file's other
    `#[test]`s kept: "no rule" (the example could not even be reproduced). One site: by its
    item's name, no other `#[test]` gains it."""
    before = (
        "#[test]\nfn send() {\n    run();\n}\n\n"
        "#[test]\npub fn send_recv_bufs() {\n    run();\n}\n\n"
        "#[test]\nfn recv() {\n    run();\n}\n"
    )
    after = before.replace("#[test]\npub fn send_recv", "#[cfg(unix)]\n#[test]\npub fn send_recv")
    result = synthesize([Example(before, after, path="test_udp.rs")])
    assert result.apply(before)[0] == after
    held = "#[test]\nfn other() {\n    run();\n}\n"
    assert result.apply(held)[0] == held


def test_an_attribute_removed_from_some_items_goes_where_the_items_are_public() -> None:
    """http 525a6180's shape: `#[derive(Debug)]` deleted above some structs, kept above
    others: "no rule" (every `#[derive(Debug)]` is alike). Here the public structs lose it,
    the private ones keep it: the items tell them apart."""
    before = (
        "#[derive(Debug)]\npub struct InvalidName {\n    _priv: (),\n}\n\n"
        "#[derive(Debug)]\nstruct Repr(u8);\n\n"
        "#[derive(Debug)]\npub struct InvalidValue {\n    _priv: (),\n}\n\n"
        "#[derive(Debug)]\nstruct Custom(u8);\n"
    )
    after = before.replace("#[derive(Debug)]\npub struct", "pub struct")
    result = synthesize([Example(before, after, path="name.rs")])
    held = (
        "#[derive(Debug)]\npub struct InvalidMethod {\n    _priv: (),\n}\n\n"
        "#[derive(Debug)]\nstruct Inner(u8);\n"
    )
    want = held.replace("#[derive(Debug)]\npub struct", "pub struct")
    assert result.apply(held)[0] == want


def test_an_attribute_line_goes_above_the_item_it_annotates() -> None:
    """reqwest 0a87d3d7: `#[cfg(feature = "cookies")]` added above `pub mod cookie;` (after
    `mod connect;`) was learned "after `mod connect;`" — whatever item comes next gains it.
    It annotates `pub mod cookie;`: learned there."""
    before = "pub mod blocking;\nmod connect;\npub mod cookie;\npub mod redirect;\n"
    after = before.replace("pub mod cookie;", '#[cfg(feature = "cookies")]\npub mod cookie;')
    result = synthesize([Example(before, after, path="lib.rs")])
    held = "mod connect;\nmod proxy;\npub mod cookie;\n"
    want = held.replace("pub mod cookie;", '#[cfg(feature = "cookies")]\npub mod cookie;')
    assert result.apply(held)[0] == want


def test_a_lone_attribute_beside_another_above_a_nameless_item() -> None:
    """warp 1a484ca1: `#[allow(deprecated)]` after the `#[doc(hidden)]` of one `pub use
    …::{…}`, the other `#[doc(hidden)]` re-exports kept: "no rule". A `use` has no name:
    by its first line."""
    before = (
        "#[doc(hidden)]\npub use self::filters::{\n    any,\n    path,\n};\n\n"
        "#[doc(hidden)]\npub use self::reply::{reply, Reply};\n"
    )
    after = before.replace(
        "#[doc(hidden)]\npub use self::filters",
        "#[doc(hidden)]\n#[allow(deprecated)]\npub use self::filters",
    )
    result = synthesize([Example(before, after, path="lib.rs")])
    assert result.apply(before)[0] == after
