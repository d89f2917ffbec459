"""Wave 3l of issue 26 (synth27): imports laid out as the languages' tools lay them out.

A name added to an existing import's list (Rust use-trees, JS/TS named imports and `require`
destructurings, Python `from m import (a, b)`) goes into the file's own list of that module,
where it sorts in the order the examples keep (rustfmt: `self`, snake_case, CamelCase,
UPPER_CASE; isort: CONSTANTS, Classes, others), one line or one per line as the file has it,
only where the file uses the name and binds it nowhere; a name a rewrite leaves unused leaves
its list; Go's grouped `import ( … )` blocks (standard library first) and a lone `import "x"`
turned into a list; a new `use crate::…` in rustfmt 1.x's order (docs/synth.md § Imports).
Each test fails on the branch start (31a6f61)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_rust_name_goes_into_the_files_own_use_tree_in_rustfmt_order() -> None:
    """axum's `task::{Context, Poll}` -> `task::{ready, Context, Poll}` where `ready!` comes
    in: learned as a rewrite of the example's whole `use std::{…}` statement and a second copy
    of it after the last `use`, a flat `use std::task::{Context, Poll};` got a duplicate
    import. rustfmt puts snake_case before CamelCase (`ready` first)."""
    before = (
        "use std::{\n    io,\n    task::{Context, Poll},\n};\n\nfn f() {\n    let x = g();\n}\n"
    )
    after = before.replace("task::{Context", "task::{ready, Context").replace(
        "g();", "ready!(g());"
    )
    result = synthesize([Example(before, after, path="a.rs")])
    assert result.apply(before)[0] == after
    held = "use std::io;\nuse std::task::{Context, Poll};\n\nfn h() {\n    let y = g();\n}\n"
    want = held.replace("{Context", "{ready, Context").replace("g();", "ready!(g());")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want  # bound already: not twice


def test_rust_self_stays_first_and_a_camel_case_name_sorts_among_its_class() -> None:
    before = "use std::io::{self, Read};\n\nfn f(r: R) {\n    let w = old(r);\n}\n"
    after = before.replace("Read}", "Read, Write}").replace("old(r)", "Write::new(r)")
    result = synthesize([Example(before, after, path="a.rs")])
    held = (
        "use std::io::{\n    self,\n    BufRead,\n    Seek,\n    Xyz,\n};\n\n"
        "fn g(r: R) {\n    old(r);\n}\n"
    )
    want = held.replace("    Seek,\n", "    Seek,\n    Write,\n").replace("old(r)", "Write::new(r)")
    assert result.apply(held)[0] == want


def test_typescript_named_import_gains_a_specifier_in_the_files_list() -> None:
    """A name added to `import { a, c } from './m'` where a rewrite brings it: into the
    file's own list of `./m` where it sorts (one line, or a line of its own), not a second
    `import { a, b, c } from './m'` after the last import; not into an `import type` list."""
    before = "import { a, c } from './m';\n\nexport function f() {\n  return old(1);\n}\n"
    after = before.replace("a, c", "a, b, c").replace("old(1)", "b(1)")
    result = synthesize([Example(before, after, path="a.ts")])
    held = (
        "import type { a } from './m';\nimport { x } from './z';\nimport { a2, d } from './m';\n\n"
        "export function g() {\n  return old(2);\n}\n"
    )
    want = held.replace("{ a2, d }", "{ a2, b, d }").replace("old(2)", "b(2)")
    assert result.apply(held)[0] == want
    lines = "import {\n  a,\n  c,\n} from './m';\n\nexport const h = () => old(3);\n"
    want = lines.replace("  a,\n", "  a,\n  b,\n").replace("old(3)", "b(3)")
    assert result.apply(lines)[0] == want


def test_javascript_require_destructuring_gains_a_name() -> None:
    before = "const { a, c } = require('m');\n\nfunction f() {\n  return old(1);\n}\n"
    after = before.replace("a, c", "a, b, c").replace("old(1)", "b(1)")
    result = synthesize([Example(before, after, path="a.js")])
    held = "const fs = require('fs');\nconst { c } = require('m');\n\nold(fs);\n"
    want = held.replace("{ c }", "{ b, c }").replace("old(fs)", "b(fs)")
    assert result.apply(held)[0] == want


def test_python_from_import_list_keeps_its_layout_and_isort_order() -> None:
    """`from m import (\n a,\n c,\n)` gaining `b` where a rewrite brings it: the held-out
    file's one-line `from m import Z, a` becomes `from m import Z, a, b` (isort: Classes
    before functions), not a second parenthesised `from m import (…)` below it."""
    before = "from m import (\n    a,\n    c,\n)\n\n\ndef f():\n    return old(1)\n"
    after = before.replace("    a,\n", "    a,\n    b,\n").replace("old(1)", "b(1)")
    result = synthesize([Example(before, after, path="a.py")])
    held = "import os\nfrom m import Z, a\n\n\ndef g():\n    return old(os)\n"
    want = held.replace("Z, a", "Z, a, b").replace("old(os)", "b(os)")
    assert result.apply(held)[0] == want
    paren = "from m import (\n    C,\n    d,\n)\n\n\ndef h():\n    return old(2)\n"
    want = paren.replace("    C,\n", "    C,\n    b,\n").replace("old(2)", "b(2)")
    assert result.apply(paren)[0] == want


def test_a_name_leaves_its_import_list_only_where_nothing_uses_it() -> None:
    """`join(a, b)` -> `a / b` with `join` dropped from `from os.path import exists, join`:
    learned as the deletion of the list item, it went from every file, also from one that
    still calls `join`."""
    before = "from os.path import exists, join\n\n\ndef f():\n    return join(a, b)\n"
    after = "from os.path import exists\n\n\ndef f():\n    return a / b\n"
    result = synthesize([Example(before, after, path="a.py")])
    assert result.apply(before)[0] == after
    used = (
        "from os.path import exists, join\n\n\ndef g():\n    return join(c, d)\n\n\n"
        "def h():\n    return join\n"
    )
    assert result.apply(used)[0] == used.replace("join(c, d)", "c / d")
    ts_before = "import { exists, join } from 'path';\n\nexport const f = () => join(a, b);\n"
    ts_after = "import { exists } from 'path';\n\nexport const f = () => a + b;\n"
    ts = synthesize([Example(ts_before, ts_after, path="a.ts")])
    held = "import { exists, join } from 'path';\n\nexport const g = () => join(c, d);\nexport const h = () => join;\n"
    assert ts.apply(held)[0] == held.replace("join(c, d)", "c + d")


GO_BEFORE = (
    'package a\n\nimport (\n\t"fmt"\n\t"os"\n\n\t"github.com/x/y"\n)\n\n'
    "func f(c *C) {\n\tc.JSON(200, x)\n\tfmt.Println(os.Args, y.Z)\n}\n"
)
GO_AFTER = GO_BEFORE.replace('\t"fmt"\n', '\t"fmt"\n\t"net/http"\n').replace("200", "http.StatusOK")


def test_go_import_goes_into_the_standard_library_group_where_it_sorts() -> None:
    """gofmt/goimports: the standard library's group first, sorted, a blank line before the
    others. "After the last import" put `"net/http"` after `"github.com/x/y"`."""
    result = synthesize([Example(GO_BEFORE, GO_AFTER, path="a.go")])
    assert result.apply(GO_BEFORE)[0] == GO_AFTER
    held = (
        'package b\n\nimport (\n\t"errors"\n\t"fmt"\n\n\t"github.com/x/y"\n)\n\n'
        "func g(c *C) {\n\tc.JSON(200, y.Z, errors.New(fmt.Sprint()))\n}\n"
    )
    want = held.replace('\t"fmt"\n', '\t"fmt"\n\t"net/http"\n').replace("200", "http.StatusOK")
    assert result.apply(held)[0] == want


def test_go_lone_import_becomes_a_grouped_list() -> None:
    """A file with one `import "x"`: goimports writes the two as a parenthesised list, the
    standard library's group first (before: a second `import "net/http"` line)."""
    result = synthesize([Example(GO_BEFORE, GO_AFTER, path="a.go")])
    std = 'package b\n\nimport "fmt"\n\nfunc g(c *C) {\n\tc.JSON(200, fmt.Sprint())\n}\n'
    assert result.apply(std)[0] == (
        'package b\n\nimport (\n\t"fmt"\n\t"net/http"\n)\n\n'
        "func g(c *C) {\n\tc.JSON(http.StatusOK, fmt.Sprint())\n}\n"
    )
    other = 'package b\n\nimport "github.com/x/y"\n\nfunc g(c *C) {\n\tc.JSON(200, y.Z)\n}\n'
    assert result.apply(other)[0] == (
        'package b\n\nimport (\n\t"net/http"\n\n\t"github.com/x/y"\n)\n\n'
        "func g(c *C) {\n\tc.JSON(http.StatusOK, y.Z)\n}\n"
    )


def test_rust_crate_use_sorts_after_super_as_rustfmt_does() -> None:
    """axum's `use crate::BoxError;`: rustfmt 1.x sorts `self::`, `super::`, `crate::` paths
    before the others; byte-wise it went after `use bytes::…` (`b` < `c`)."""
    b1 = "use crate::Error;\n\npub fn f() -> BoxError {\n    todo!()\n}\n"
    a1 = b1.replace("use crate::Error;\n", "use crate::BoxError;\nuse crate::Error;\n")
    b2 = "use super::A;\nuse crate::Error;\nuse std::fmt;\n\npub fn g() -> BoxError {\n    todo!()\n}\n"
    a2 = b2.replace("use crate::Error;\n", "use crate::BoxError;\nuse crate::Error;\n")
    result = synthesize([Example(b1, a1, path="a.rs"), Example(b2, a2, path="b.rs")])
    held = (
        "use super::{FromRequest, RequestParts};\nuse bytes::Bytes;\nuse std::fmt;\n\n"
        "pub fn h() -> BoxError {\n    todo!()\n}\n"
    )
    want = held.replace("RequestParts};\n", "RequestParts};\nuse crate::BoxError;\n")
    assert result.apply(held)[0] == want


def test_rust_crate_use_sorts_before_std_in_one_rustfmt_block() -> None:
    """rustfmt 1.x sorts one block of `use`s with `crate::` paths first, `std` among the
    others, and leaves a `pub use` re-export group apart: the sections (std, then the rest)
    and byte order both fail such examples, and the rule stayed the literal "before the
    first `use`"."""
    b1 = "use std::fmt;\n\npub fn f() -> BoxError {\n    todo!()\n}\n"
    a1 = "use crate::BoxError;\n" + b1
    b2 = "use crate::Error;\n\npub use bytes::Bytes;\n\npub fn g() -> BoxError {\n    todo!()\n}\n"
    a2 = "use crate::BoxError;\n" + b2
    result = synthesize([Example(b1, a1, path="a.rs"), Example(b2, a2, path="b.rs")])
    held = (
        "use super::A;\nuse crate::{body::B, C};\nuse bytes::Bytes;\nuse std::fmt;\n\n"
        "pub fn h() -> BoxError {\n    todo!()\n}\n"
    )
    want = held.replace("use super::A;\n", "use super::A;\nuse crate::BoxError;\n")
    assert result.apply(held)[0] == want
