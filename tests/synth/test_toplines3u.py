"""Wave 3u of issue 26: a directive added at the top of each file, or below its header
comment (docs/synth.md § A directive added at the top of a file, wave 3u): JavaScript's
`'use strict';`, Rust's `#![…]` inner attributes (synth/toplines.py)."""

from __future__ import annotations

import pytest

from oopav.synth import Example, SynthesisError, synthesize

STRICT = "'use strict';\n"


def test_use_strict_at_the_top_above_the_first_comment() -> None:
    """supertest 64c8e797 put `'use strict';` and a blank line at the top of each file, above
    its first comment; no insertion site anchors to a comment, so the examples failed ("not
    a rewrite of one syntax node"). One example file began with a blank line, which lies
    before the first token where no rule writes: reproduced up to it, the other example
    showing the layout."""
    a = "/**\n * Deps.\n */\n\nconst x = require('x');\n"
    b = "\n/**\n * Deps.\n */\n\nfunction f() {}\n"
    result = synthesize(
        [
            Example(a, STRICT + "\n" + a, path="index.js"),
            Example(b, STRICT + b, path="lib/agent.js"),
        ]
    )
    assert result.apply(a)[0] == STRICT + "\n" + a
    held = "const request = require('..');\n\nrequest();\n"
    assert result.apply(held)[0] == STRICT + "\n" + held
    # Once a file: either quote.
    done = '"use strict";\n\nconst y = 1;\n'
    assert result.apply(done)[0] == done
    assert result.apply(STRICT + "\n" + a)[0] == STRICT + "\n" + a
    # A `#!` line stays first: such a file is left alone.
    bang = "#!/usr/bin/env node\nconst z = 1;\n"
    assert result.apply(bang)[0] == bang
    # With only examples that start with blank lines the layout is nowhere shown exactly:
    # no rule from them.
    c = "\nvar q = 1;\n"
    with pytest.raises(SynthesisError):
        synthesize([Example(b, STRICT + b, path="b.js"), Example(c, STRICT + c, path="c.js")])


def test_use_strict_below_the_licence_header() -> None:
    """express e71014f5 put `'use strict';` below each file's `/*! … */` licence, a blank
    line above and below it — whether a blank line followed the licence already (kept) or
    the lines between were laid out anew. The header's range is grown over (expandStart)
    so the lines between are the examples' layout."""
    lic = "/*!\n * lib\n * MIT Licensed\n */\n"
    a = lic + "\nmodule.exports = require('./lib');\n"
    b = lic + "\n/**\n * Module dependencies.\n */\n\nvar a = require('a');\n"
    a_after = lic + "\n" + STRICT + "\nmodule.exports = require('./lib');\n"
    b_after = lic + "\n" + STRICT + "\n/**\n * Module dependencies.\n */\n\nvar a = require('a');\n"
    result = synthesize([Example(a, a_after, path="index.js"), Example(b, b_after, path="app.js")])
    assert result.apply(a)[0] == a_after
    assert result.apply(b)[0] == b_after
    tight = lic + "var c = 1;\n"
    assert result.apply(tight)[0] == lic + "\n" + STRICT + "\nvar c = 1;\n"
    # No header: at the top.
    code = "var d = 1;\n"
    assert result.apply(code)[0] == STRICT + "\n" + code
    # A first comment of another kind than the examples' headers: left alone.
    doc = "/** Doc. */\nvar e = 1;\n"
    assert result.apply(doc)[0] == doc
    # Once a file.
    assert result.apply(a_after)[0] == a_after


def test_typescript_directive_at_the_top() -> None:
    """The same for another directive and TypeScript: `'use client';`."""
    a = "import { x } from './x';\n\nexport const y = x;\n"
    b = "// A comment.\nexport type T = number;\n"
    client = "'use client';\n\n"
    result = synthesize([Example(a, client + a, path="a.ts"), Example(b, client + b, path="b.ts")])
    held = "interface I {\n  a: number;\n}\n"
    assert result.apply(held)[0] == client + held


def test_rust_inner_attribute_first_in_the_file() -> None:
    """warp 127b3687 added `#![deny(warnings)]` first in each example; "before the first
    `extern crate`" went between `#[macro_use]` and the `extern crate` it annotates in a
    held-out file. First in the file is first, whatever the file opens with."""
    deny = "#![deny(warnings)]\n"
    a = "extern crate env_logger;\nextern crate warp;\n\nfn main() {}\n"
    b = "extern crate serde;\n#[macro_use] extern crate serde_derive;\n\nfn main() {}\n"
    result = synthesize(
        [Example(a, deny + a, path="examples/a.rs"), Example(b, deny + b, path="examples/b.rs")]
    )
    held = "#[macro_use] extern crate log;\nextern crate warp;\n\nfn main() {}\n"
    assert result.apply(held)[0] == deny + held
    assert result.apply(deny + held)[0] == deny + held
