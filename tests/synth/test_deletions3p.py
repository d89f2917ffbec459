"""Wave 3p of issue 26: a deleted token narrowed by the code the examples keep
(docs/synth.md § Too general, wave 3p)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_modifier_deleted_at_some_bindings_is_narrowed_by_the_name() -> None:
    """reqwest a19eb341 dropped `mut` from `let mut rt = …` (a runtime no longer borrowed
    mutably) and kept every other `let mut` and `&mut self` of its files. Deleting every
    `mut` is too general; the rule is narrowed to the binding named `rt`. Before, the
    narrowing budget went to patterns ast-grep cannot run (`mut` in `fn _f() { mut }`) and
    the deleted site's range (`mut ` with its space) held no matched node, so no narrowing
    was ever tried: "no rule rewrites 'mut' into ''"."""
    client = (
        "impl Client {\n    fn call(&mut self) {\n        let mut buf = Vec::new();\n"
        "        let mut rt = runtime::Builder::new().build();\n        rt.block_on(buf);\n"
        "    }\n}\n"
    )
    test = (
        "fn test_text() {\n    let mut n = 0;\n"
        '    let mut rt = tokio::runtime::Builder::new().build().expect("rt");\n'
        "    n += 1;\n    rt.block_on(async move { n });\n}\n"
    )
    result = synthesize(
        [
            Example(client, client.replace("let mut rt", "let rt"), path="src/client.rs"),
            Example(test, test.replace("let mut rt", "let rt"), path="tests/blocking.rs"),
        ]
    )
    held = (
        "fn spawn() {\n    thread::spawn(move || {\n        let mut rt = runtime::Builder::new()\n"
        "            .basic_scheduler()\n            .build();\n"
        "        let mut count = 0;\n        rt.block_on(count);\n    });\n}\n"
    )
    got, _ = result.apply(held)
    assert got == held.replace("let mut rt", "let rt")
    assert "let mut count" in got  # the other bindings keep their `mut`


def test_a_line_added_after_the_module_docstring_is_an_insertion_at_the_top() -> None:
    """uvicorn 32fa92fb put `from __future__ import annotations` and a blank line right
    after each module's docstring. A new statement there is the top of the file's code, as
    line 1 is for a file without a docstring: an insertion before the first statement, not a
    rewrite of the whole module ("not a rewrite of one syntax node")."""
    before = '"""Spawning child processes."""\nimport multiprocessing\nimport os\n\nX = 1\n'
    after = before.replace('"""\n', '"""\nfrom __future__ import annotations\n\n', 1)
    result = synthesize([Example(before, after, path="uvicorn/_subprocess.py")])
    held = "import asyncio\nimport inspect\n\n\ndef main():\n    pass\n"
    got, _ = result.apply(held)
    assert got == "from __future__ import annotations\n\n" + held
    assert result.apply(after)[0] == after  # once a file
