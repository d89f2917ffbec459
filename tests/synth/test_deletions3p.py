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


def test_tokens_changed_inside_macro_bodies_are_learned_by_their_token_tree() -> None:
    """reqwest 11d835dc widened `#[cfg(target_arch = "wasm32")]` inside its `macro_rules!`
    bodies, where everything is a token tree, and kept one in a function. No pattern parses
    as those tokens (`(target_arch = "wasm32")` is an expression to a parser), so synth found
    no candidate at all ("no rule rewrites …"). The token tree by its text is the fallback,
    narrowed by the kept copy like any candidate."""
    old, new = '(target_arch = "wasm32")', '(all(target_arch = "wasm32", target_os = "unknown"))'
    before = (
        "macro_rules! if_wasm {\n    ($($item:item)*) => {$(\n"
        f"        #[cfg{old}]\n        $item\n    )*}}\n}}\n\n"
        "macro_rules! if_hyper {\n    ($($item:item)*) => {$(\n"
        f"        #[cfg(not{old})]\n        $item\n    )*}}\n}}\n\n"
        f"fn test() {{\n    #[cfg(not{old})]\n    {{\n        check();\n    }}\n}}\n"
    )
    after = before.replace(f"cfg{old}", f"cfg{new}").replace(
        f"#[cfg(not{old})]\n        $item", f"#[cfg(not{new})]\n        $item"
    )
    result = synthesize([Example(before, after, path="src/lib.rs")])
    assert result.apply(before)[0] == after  # the function's copy is kept
    held = f"macro_rules! if_tls {{\n    ($($i:item)*) => {{$(\n        #[cfg{old}]\n        $i\n    )*}}\n}}\n"
    assert result.apply(held)[0] == held.replace(old, new)


def test_an_item_appended_after_the_same_last_item_whatever_owns_the_list() -> None:
    """uvicorn 2cfbf003 appended `timeout_response=60,` after `timeout_keep_alive=5,` to the
    parameters of `def run(…)` and of a protocol's `__init__(…)`, and kept the CLI's
    `main(…, timeout_keep_alive: int)`. The owners' names are no class (every class has an
    `__init__`); the item the new one follows is, by its key and kind: the held-out
    protocol's `__init__` gets it, a typed `timeout_keep_alive: int` does not."""
    main = (
        "def main(\n    app,\n    limit_concurrency: int,\n    timeout_keep_alive: int,\n):\n"
        "    run(app)\n\n\ndef run(\n    app,\n    limit_concurrency=None,\n"
        "    timeout_keep_alive=5,\n):\n    pass\n"
    )
    h11 = (
        "class H11Protocol:\n    def __init__(\n        self,\n        config,\n"
        "        timeout_keep_alive=5,\n    ):\n        self.config = config\n\n"
        "    def data_received(self, data):\n        pass\n\n\n"
        "class FlowControl:\n    def __init__(\n        self,\n        transport,\n    ):\n"
        "        self.transport = transport\n"
    )
    new = "timeout_keep_alive=5,\n    timeout_response=60,\n"
    result = synthesize(
        [
            Example(main, main.replace("timeout_keep_alive=5,\n", new), path="main.py"),
            Example(
                h11,
                h11.replace("timeout_keep_alive=5,\n", new.replace("\n    t", "\n        t")),
                path="h11_impl.py",
            ),
        ]
    )
    held = (
        "class HttpToolsProtocol:\n    def __init__(\n        self,\n        loop=None,\n"
        "        timeout_keep_alive=5,\n    ):\n        self.loop = loop\n"
    )
    want = held.replace("=5,\n", "=5,\n        timeout_response=60,\n")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want  # not twice
