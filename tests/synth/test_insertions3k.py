"""Wave 3k of issue 26 (synth21): insertions into lists learned with a literal list or call
head as context (class 1, "too narrow") — each a small self-written reproduction of what a
real commit did (docs/synth.md § Too narrow: an item appended to lists of one owner)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_name_added_to_every_destructuring_of_one_module() -> None:
    """fastify's `kLogController` added to the `const {…} = require('./symbols.js')` of
    each file: the example's list held other names (and another count of them), the held-out
    file requires the same module by another path (two examples: a change made once is no
    recurring one, and the rule learned from one site stays as it was). Before, the rule was the example's list
    literal, item by item; now the last item of any such list gains the name."""
    before = (
        "const {\n  kA,\n  kB,\n  kC\n} = require('./symbols.js')\n"
        "const {\n  x,\n  y\n} = require('./other.js')\n"
        "function f () { return kA }\n"
    )
    after = before.replace("  kC\n}", "  kC,\n  kNew\n}")
    other = "'use strict'\nconst {\n  kB\n} = require('./lib/symbols.js')\n"
    result = synthesize(
        [
            Example(before, after, path="lib/a.js"),
            Example(other, other.replace("  kB\n", "  kB,\n  kNew\n"), path="b.js"),
        ]
    )
    held = (
        "'use strict'\n\nconst {\n  kD,\n  kE\n} = require('../../lib/symbols')\n"
        "const {\n  p,\n  q\n} = require('./util')\n"
    )
    want = held.replace("  kE\n}", "  kE,\n  kNew\n}")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want  # not twice


def test_a_name_added_to_import_lists_of_one_module_in_each_layout_shown() -> None:
    """fastify's `SafePromiseLike` added to `import … from '../../fastify'`: one example's
    list on one line, the other's one name a line. Before, each rule kept its example's
    count of names (`import $A, { $B, $C } from $D`); now one rule per layout, any names."""
    one = (
        "import fastify, { FastifyInstance, FastifyPluginOptions } from '../../fastify'\n"
        "import * as http from 'http'\n"
    )
    many = "import {\n  FastifyError,\n  FastifyErrorCodes\n} from '../../fastify'\nf()\n"
    examples = [
        Example(one, one.replace("Options }", "Options, SafePromiseLike }"), path="a.ts"),
        Example(many, many.replace("Codes\n}", "Codes,\n  SafePromiseLike\n}"), path="b.ts"),
    ]
    result = synthesize(examples)
    held = (
        "import { expectType } from 'tsd'\n"
        "import fastify, {\n  RouteHandler,\n  RawRequest,\n  RouteHandlerMethod\n"
        "} from '../../fastify'\n"
        "import { FastifyInstance } from '../../fastify'\n"
    )
    want = held.replace("Method\n}", "Method,\n  SafePromiseLike\n}").replace(
        "{ FastifyInstance }", "{ FastifyInstance, SafePromiseLike }"
    )
    assert result.apply(held)[0] == want


def test_a_field_inserted_after_the_field_of_one_key_in_struct_literals() -> None:
    """urfave/cli's `ArgsUsage: "…",` added after the `Usage:` field of `cli.App{…}`
    literals (tab-indented Go): before, the rule was the example's whole literal, field by
    field; now the field of that key is the anchor, in any literal of that type with any
    other fields, at the depth the examples show (a fix with tabs is written out)."""
    a = (
        'func NewApp() *App {\n\treturn &App{\n\t\tName:    "x",\n'
        '\t\tUsage:   "a new app",\n\t\tVersion: "0.0.0",\n\t}\n}\n'
    )
    b = 'func other() *App {\n\treturn &App{\n\t\tUsage: "b",\n\t\tAction: run,\n\t}\n}\n'
    new = '\t\tArgsUsage: "[arguments...]",\n'
    examples = [
        Example(a, a.replace('app",\n', 'app",\n' + new), path="app.go"),
        Example(b, b.replace('"b",\n', '"b",\n' + new), path="other.go"),
    ]
    result = synthesize(examples)
    held = (
        'func help() *App {\n\treturn &App{\n\t\tName:  "help",\n'
        '\t\tUsage: "shows help",\n\t\tFlags: flags,\n\t}\n}\n'
        'func f() {\n\tg(Options{\n\t\tUsage: "u",\n\t})\n}\n'
    )
    want = held.replace('"shows help",\n', '"shows help",\n' + new)
    assert result.apply(held)[0] == want


def test_a_kept_list_of_the_same_owner_in_another_layout_refuses_the_append_rule() -> None:
    """The examples' kept lists are negatives in any layout: `kNew` added to the multi-line
    destructurings of `./symbols` while the example keeps a one-line one of the same module
    unchanged says the change is not about every such list (the commit chose some), though
    a multi-line rule would never match that one. No append rule is learned (the rule
    learned instead leaves the kept list alone)."""
    before = (
        "const {\n  kA,\n  kB\n} = require('./symbols')\n"
        "function f () {\n  const {\n    kC,\n    kD\n  } = require('./symbols')\n}\n"
        "const { kE } = require('./symbols')\n"
    )
    after = before.replace("  kB\n}", "  kB,\n  kNew\n}").replace("    kD\n", "    kD,\n    kNew\n")
    result = synthesize([Example(before, after, path="lib/a.js")])
    assert not any("nthChild" in str(r.rule) for r in result.rules)
    assert result.apply(before)[0] == after


def test_a_field_appended_to_struct_literals_brings_the_comma_the_list_lacked() -> None:
    """bytes' `mark: None,` added to every `ByteBuf { … }` literal (a Rust struct's literals
    must all name a new field), where the last field had no comma: `lim: capacity` ->
    `lim: capacity,\\n mark: None,`. Before, the rule was the example's literal, field by
    field; now the last field of any such literal, not followed by a comma, gains both."""
    before = (
        "fn a() -> ByteBuf {\n    ByteBuf {\n        ptr: p,\n        lim: capacity\n    }\n}\n"
        "fn b() -> ByteBuf {\n    ByteBuf {\n        lim: 0\n    }\n}\n"
    )
    after = before.replace("lim: capacity\n", "lim: capacity,\n        mark: None,\n").replace(
        "lim: 0\n", "lim: 0,\n        mark: None,\n"
    )
    result = synthesize([Example(before, after, path="src/buf/byte.rs")])
    held = (
        "fn c() -> ByteBuf {\n    let b = ByteBuf {\n        pos: 0,\n        len: 0,\n"
        "        cap: 4\n    };\n    b\n}\n"
        "fn d() -> Other {\n    Other {\n        len: 0\n    }\n}\n"
    )
    want = held.replace("cap: 4\n", "cap: 4,\n        mark: None,\n")
    assert result.apply(held)[0] == want


def test_a_name_inserted_after_a_name_in_import_lists_of_any_path() -> None:
    """bytes' `MutBufExt` imported next to `MutBuf` (`use traits::{Buf, MutBuf, ByteStr}`
    -> `{Buf, MutBuf, MutBufExt, ByteStr}`) in two files; the held-out file's list has no
    path (`pub use {Buf, BufExt, MutBuf, ByteStr};`) and other names. Before, the rule was
    the example's whole `use` list; now the name it follows is the context, in any use list
    (not where it is already imported, nor a list without `MutBuf`)."""
    a = "use traits::{Buf, MutBuf, ByteStr};\n\nfn a() {}\n"
    b = "use std::io;\nuse traits::{Buf, MutBuf, ByteStr};\n"
    examples = [
        Example(a, a.replace("MutBuf,", "MutBuf, MutBufExt,"), path="src/byte_buf.rs"),
        Example(b, b.replace("MutBuf,", "MutBuf, MutBufExt,"), path="src/byte_str.rs"),
    ]
    result = synthesize(examples)
    held = "mod traits {\n    pub use {Buf, BufExt, MutBuf, ByteStr};\n}\nuse x::{Buf, Other};\n"
    want = held.replace("MutBuf, ByteStr", "MutBuf, MutBufExt, ByteStr")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want
