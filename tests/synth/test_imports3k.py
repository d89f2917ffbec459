"""Wave 3k of issue 26 (synth19): commits whose only change in a file is an import added.
An inserted import goes where it sorts within its *section* of the import block (isort's
standard library / third party / local groups, rustfmt's `std` group), opening its section
with a blank line where the file has none; `from __future__ import …` goes first in every
file (after the module docstring); a file that does not parse elsewhere (Rust 2015's `try!`)
still gets its import managed; an import inserted at two literal anchors is one insertion
(docs/synth.md § Imports). Each test fails on the branch start (23613ad)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_python_stdlib_import_sorts_within_its_section_and_opens_one() -> None:
    """attrs' `import types`: after `import functools` (a relative import after a blank
    line) and after `import sys` (`from . import _config` below: `.` sorts before `t`, so
    "where it sorts" over the whole block put it after the relative import). Learned as the
    neighbours' names `^(?:functools|sys)$`: a file with only `import pytest` got nothing;
    it needs a standard-library section of its own before the third-party one."""
    b1 = "import functools\n\nfrom ._compat import new_class\n\n\ndef f():\n    return types.A\n"
    a1 = b1.replace("import functools\n", "import functools\nimport types\n")
    b2 = (
        "import linecache\nimport sys\nimport typing\n\nfrom . import _config\n\n\n"
        "def g():\n    return types.B\n"
    )
    a2 = b2.replace("import sys\n", "import sys\nimport types\n")
    result = synthesize([Example(b1, a1, path="a.py"), Example(b2, a2, path="b.py")])
    held = "# SPDX-License-Identifier: MIT\n\nimport pytest\n\n\ndef test():\n    types.C\n"
    want = held.replace("import pytest\n", "import types\n\nimport pytest\n")
    assert result.apply(held)[0] == want
    # Where it sorts among the standard library, not after the relative import.
    other = "import abc\nimport zlib\n\nfrom . import b\n\n\ndef h():\n    return types.D\n"
    assert result.apply(other)[0] == other.replace("import abc\n", "import abc\nimport types\n")
    # Once a file; not where the name is unused.
    assert result.apply(want)[0] == want
    unused = "import pytest\n\n\ndef test():\n    pass\n"
    assert result.apply(unused)[0] == unused


def test_python_from_import_goes_after_the_sections_straight_imports() -> None:
    """requests' `from unittest import mock`: at the end of the standard-library block
    (`import re`, `import warnings` before it: isort puts `import m` lines first), and as a
    new section before `from requests.help import info`. A file whose standard library
    block holds `from` imports gets it where it sorts among them."""
    b1 = "from requests.help import info\n\n\ndef test():\n    mock.patch(info)\n"
    a1 = "from unittest import mock\n\n" + b1
    b2 = (
        '"""Tests."""\n\nimport io\nimport re\nimport warnings\n\nimport pytest\n\n'
        "import requests\n\n\ndef test():\n    mock.Mock()\n"
    )
    a2 = b2.replace("import warnings\n", "import warnings\nfrom unittest import mock\n")
    result = synthesize([Example(b1, a1, path="tests/a.py"), Example(b2, a2, path="tests/b.py")])
    held = (
        "import copy\nimport os\nfrom collections import deque\nfrom io import BytesIO\n\n"
        "import pytest\n\nfrom requests import compat\n\n\ndef test():\n    mock.Mock()\n"
    )
    want = held.replace("BytesIO\n", "BytesIO\nfrom unittest import mock\n")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want
    # A file that imports `mock` otherwise keeps its import.
    other = "import os\nimport mock\n\n\ndef test():\n    mock.Mock()\n"
    assert result.apply(other)[0] == other


def test_python_future_import_goes_first_in_every_file() -> None:
    """urllib3's `from __future__ import absolute_import` before every file's first line: it
    binds no name a file uses, so "where it is used" never held, and "after the last import"
    is not where a `__future__` import may go. First in the file (after its docstring),
    whatever the file starts with; once; not before a `#!` line."""
    b1 = "from collections import Mapping\ntry:\n    import x\nexcept ImportError:\n    x = None\n"
    a1 = "from __future__ import absolute_import\n" + b1
    b2 = "import datetime\nimport sys\n\nX = 1\n"
    a2 = "from __future__ import absolute_import\n" + b2
    result = synthesize([Example(b1, a1, path="a.py"), Example(b2, a2, path="b.py")])
    docstring = '"""\nNTLM pool.\n"""\n\ntry:\n    import y\nexcept ImportError:\n    pass\n'
    want = docstring.replace('"""\n\n', '"""\nfrom __future__ import absolute_import\n\n')
    assert result.apply(docstring)[0] == want
    starts = "try:\n    from urllib.parse import urlencode\nexcept ImportError:\n    pass\n"
    assert result.apply(starts)[0] == "from __future__ import absolute_import\n" + starts
    comment = "# For backwards compatibility.\nfrom .c import d\n"
    assert result.apply(comment)[0] == "from __future__ import absolute_import\n" + comment
    assert result.apply(a2)[0] == a2
    shebang = "#!/usr/bin/env python\nimport os\n"
    assert result.apply(shebang)[0] == shebang


def test_rust_use_opens_a_group_after_std_in_a_file_that_does_not_parse_elsewhere() -> None:
    """http's `use HttpTryFrom;` (Rust 2015, `try!` does not parse): before `use
    self::Inner::*;` (it sorts first among the crate's uses) and, where a file has only `std`
    uses, as a group of its own after them. A file with a parse error anywhere had no import
    management, so the rules stayed the two literal neighbours."""
    b1 = (
        "//! The method\n\nuse self::Inner::*;\n\nuse std::fmt;\nuse std::error::Error;\n\n"
        "fn f() -> Result<(), ()> { let x = try!(g()); Ok(x) }\n"
    )
    a1 = b1.replace("use self::", "use HttpTryFrom;\nuse self::")
    b2 = "//! Status\n\nuse std::fmt;\nuse std::str::FromStr;\n\n/// A code.\npub struct S(u16);\n"
    a2 = b2.replace("FromStr;\n", "FromStr;\n\nuse HttpTryFrom;\n")
    result = synthesize([Example(b1, a1, path="src/a.rs"), Example(b2, a2, path="src/b.rs")])
    held = (
        "//! URI\n\nuse byte_str::ByteStr;\n\nuse bytes::Bytes;\n\nuse std::fmt;\n\n"
        "fn h() { try!(k()); }\n"
    )
    want = held.replace("use byte_str", "use HttpTryFrom;\nuse byte_str")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want
    # One insertion, not one per literal neighbour.
    said = [n for n in result.notes if "use HttpTryFrom;" in n]
    assert len(said) == 1, result.notes


def test_typescript_import_goes_into_its_group_before_the_first_that_sorts_after_it() -> None:
    """got's `import {createRawHttpServer} from './helpers/server-tools.js';`: among the
    sibling imports (eslint's groups: Node built-ins, packages, `../`, `./`), before the first
    that sorts after it — one file's siblings are not sorted (`./helpers/invalid-url.js` last),
    so "after the last that sorts before it" put it at the end there. Learned as the
    neighbours, a file whose parent import differs got nothing."""
    b1 = (
        "import net from 'node:net';\nimport test from 'ava';\n"
        "import got from '../source/index.js';\nimport withServer from './helpers/with-server.js';"
        "\n\ntest('a', () => createRawHttpServer());\n"
    )
    new = "import {createRawHttpServer} from './helpers/server-tools.js';\n"
    a1 = b1.replace("import withServer", new + "import withServer")
    b2 = (
        "import {Buffer} from 'node:buffer';\nimport is from '@sindresorhus/is';\n"
        "import got, {RequestError} from '../source/index.js';\n"
        "import withServer from './helpers/with-server.js';\n"
        "import invalidUrl from './helpers/invalid-url.js';\n\n"
        "test('b', () => createRawHttpServer(invalidUrl));\n"
    )
    a2 = b2.replace("import withServer", new + "import withServer")
    result = synthesize([Example(b1, a1, path="test/a.ts"), Example(b2, a2, path="test/b.ts")])
    held = (
        "import process from 'node:process';\nimport test from 'ava';\n"
        "import type {Handler} from 'express';\nimport got, {type Headers} from "
        "'../source/index.js';\nimport withServer from './helpers/with-server.js';\n\n"
        "test('c', () => createRawHttpServer());\n"
    )
    want = held.replace("import withServer", new + "import withServer")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want
    unused = held.replace("createRawHttpServer()", "got()")
    assert result.apply(unused)[0] == unused
    # A file with no sibling import: after the parent ones (no blank line in JS/TS).
    parent = "import got from '../source/index.js';\n\ntest('d', () => createRawHttpServer());\n"
    assert result.apply(parent)[0] == parent.replace("js';\n", "js';\n" + new, 1)


def test_typescript_second_import_of_a_module_goes_after_the_first() -> None:
    """got's `import {URL} from 'url';` among the Node built-ins (sorted: after `stream`,
    before `util`; a file without built-ins: before its first package import). A file with
    `import url = require('url');` got it before that import (the same module does not sort
    before itself); it goes after it."""
    b1 = (
        "import http = require('http');\nimport stream = require('stream');\n"
        "import {promisify} from 'util';\nimport is from '@sindresorhus/is';\n\n"
        "export const u = new URL('x');\n"
    )
    a1 = b1.replace("import {promisify}", "import {URL} from 'url';\nimport {promisify}")
    b2 = "import is from '@sindresorhus/is';\nimport {Merge} from 'type-fest';\n\nnew URL('y');\n"
    a2 = "import {URL} from 'url';\n" + b2
    result = synthesize([Example(b1, a1, path="a.ts"), Example(b2, a2, path="b.ts")])
    held = "import url = require('url');\nimport test from 'ava';\n\ntest(() => new URL('z'));\n"
    want = held.replace("('url');\n", "('url');\nimport {URL} from 'url';\n")
    assert result.apply(held)[0] == want
