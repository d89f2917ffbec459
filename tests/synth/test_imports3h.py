"""Wave 3h of issue 26 (synth10): an import inserted into a file's import block is learned
as "into the import block" — after the block's last import, or where it sorts when the
examples show sorted blocks — once per file, not anchored to the example's literal
neighbouring statement (docs/synth.md § Imports). Small self-written reproductions per
language, each failing on the branch start (509266c)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_python_import_goes_where_it_sorts_not_next_to_the_examples_neighbour() -> None:
    """`import types` inserted after `import functools` in one file and after `import sys`
    in another (sorted blocks): learned as the name regex `^(?:functools|sys)$`, a file
    importing `abc` and `zlib` got nothing."""
    b1 = "import functools\nimport os\n\nfrom x import y\n\n\ndef f():\n    return types.A()\n"
    a1 = b1.replace("import os\n", "import os\nimport types\n").replace(
        "import os\nimport types\n", "import os\nimport types\n"
    )
    a1 = "import functools\nimport os\nimport types\n\nfrom x import y\n\n\ndef f():\n    return types.A()\n"
    b2 = "import sys\nimport zipfile\n\n\ndef g():\n    return types.B()\n"
    a2 = "import sys\nimport types\nimport zipfile\n\n\ndef g():\n    return types.B()\n"
    result = synthesize([Example(b1, a1, path="a.py"), Example(b2, a2, path="b.py")])
    held = "import abc\nimport zlib\n\n\ndef h():\n    return types.C\n"
    assert result.apply(held)[0] == held.replace("import abc\n", "import abc\nimport types\n")
    # Once a file: not where it is imported already; only where the name is used.
    done = held.replace("import abc\n", "import abc\nimport types\n")
    assert result.apply(done)[0] == done
    unused = "import abc\nimport zlib\n\n\ndef h():\n    return 1\n"
    assert result.apply(unused)[0] == unused
    # Sorting before every import: before the first one.
    first = "import zlib\n\n\ndef h():\n    return types.C\n"
    assert result.apply(first)[0] == "import types\nimport zlib\n\n\ndef h():\n    return types.C\n"
