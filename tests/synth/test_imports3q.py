"""Wave 3q of issue 26: imports added where real commits put them (docs/synth.md § Imports
where real commits put them, wave 3q): `from __future__ import …` laid out as isort lays out
its section; an import into the first of a file's sorted groups that has a later module."""

from __future__ import annotations

from oopav.synth import Example, synthesize

FUTURE = "from __future__ import annotations\n"


def test_future_import_gets_a_blank_line_below_it_as_the_examples_show() -> None:
    """uvicorn 32fa92fb added `from __future__ import annotations` to 17 files: after a
    docstring that an import followed directly (a blank line added below the new line) and
    after one that a blank line followed (kept below it), and at the top of every file
    without a docstring, a blank line below. "Right after the docstring" kept the layout
    the docstring had, so the first example refused it, and every held-out file got the
    line with no blank below: 0 of 15."""
    sub = '"""\nLight wrappers.\n"""\nimport multiprocessing\nimport os\n\n\ndef f():\n    pass\n'
    sub_after = sub.replace('"""\nimport', '"""\n' + FUTURE + "\nimport")
    types = '"""\nCopyright.\n"""\n\nimport sys\nimport types\n\nX = 1\n'
    types_after = types.replace('"""\n\n', '"""\n' + FUTURE + "\n")
    result = synthesize(
        [
            Example(sub, sub_after, path="uvicorn/_subprocess.py"),
            Example(types, types_after, path="uvicorn/_types.py"),
        ]
    )
    for got, want in ((sub, sub_after), (types, types_after)):
        assert result.apply(got)[0] == want
    held = "import asyncio\nimport inspect\n\n\nclass Config:\n    pass\n"
    assert result.apply(held)[0] == FUTURE + "\n" + held
    # Once a file: a file that has it is left alone.
    assert result.apply(sub_after)[0] == sub_after
    # A docstring that code follows: the lines between it and the code stay as they were.
    code = '"""Doc."""\n\n\nclass A:\n    pass\n'
    assert result.apply(code)[0] == '"""Doc."""\n' + FUTURE + "\n\nclass A:\n    pass\n"


def test_future_import_without_a_blank_line_where_the_examples_have_none() -> None:
    """A project whose examples put the next import right below the new line (no isort)
    keeps that layout: the blank line comes from the examples, not from a convention."""
    a = '"""A."""\nimport os\n'
    b = "import sys\n\nX = 1\n"
    result = synthesize(
        [
            Example(a, a.replace('"""\n', '"""\n' + FUTURE), path="a.py"),
            Example(b, FUTURE + b, path="b.py"),
        ]
    )
    held = "import json\n"
    assert result.apply(held)[0] == FUTURE + held


def test_rust_use_goes_before_the_first_use_that_sorts_after_it() -> None:
    """reqwest ba7b2a75's `use std::future::Future;`: in a file with a `std` group and a
    later `bytes`/`futures` group it went into the std group where it sorts; in a file
    without a std group, after its last `use`. "After the last `use` that sorts before it"
    reached past the std group into the later one (`use futures…` sorts before `std`), and
    the std section of its own that rustfmt's grouping gives was refused by the file without
    one."""
    a1 = "use bytes::Bytes;\nuse serde::Deserialize;\n\nfn main() { let f: Box<dyn Future> = x(); }\n"
    b1 = a1.replace("Deserialize;\n", "Deserialize;\nuse std::future::Future;\n")
    a2 = (
        "use std::fmt;\nuse std::fs::File;\nuse std::io::{self, Read};\n\n"
        "use bytes::Bytes;\nuse futures::try_ready;\n\nfn g() -> impl Future { 1 }\n"
    )
    b2 = a2.replace("File;\n", "File;\nuse std::future::Future;\n")
    result = synthesize(
        [Example(a1, b1, path="examples/a.rs"), Example(a2, b2, path="src/body.rs")]
    )
    connect = (
        "use futures::Poll;\nuse native_tls::TlsConnector;\n\nuse std::io;\nuse std::net::IpAddr;\n"
        "\nfn h() -> Box<dyn Future> { 1 }\n"
    )
    got, _ = result.apply(connect)
    assert got == connect.replace("\nuse std::io;", "\nuse std::future::Future;\nuse std::io;")
    wait = "use std::sync::Arc;\nuse std::thread;\n\nfn w(f: impl Future) {}\n"
    assert result.apply(wait)[0] == "use std::future::Future;\n" + wait
    client = "use std::fmt;\nuse std::net::IpAddr;\n\nfn c(f: impl Future) {}\n"
    want = client.replace("fmt;\n", "fmt;\nuse std::future::Future;\n")
    assert result.apply(client)[0] == want
    # Where `Future` is not used, nothing is imported.
    unused = "use std::fmt;\n\nfn u() {}\n"
    assert result.apply(unused)[0] == unused
