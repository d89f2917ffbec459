"""Wave 3d of issue 26 (synth-precision): where the examples cannot decide, the narrower rule
that still covers every example site. Each test is a small self-written reproduction of a
real commit's precision loss (see docs/synth.md § Constraints and negatives)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_rule_narrowed_by_kept_names_is_closed_by_what_every_site_binds() -> None:
    """pluggy's `self.x = …` -> `self.x: "Final" = …` in `__init__`, with other assignments
    kept: a list of the kept names alone (`A` not `count|name|…`) would also rewrite a
    module-level `_T = TypeVar("_T")` in another file. Every site binds an attribute, so the
    rule says so too."""
    before = (
        "class M:\n"
        "    def __init__(self, name):\n"
        "        self.name = name\n"
        "        self._cache = {}\n"
        "        self.hook = Relay()\n"
        "        count = 0\n"
        "\n"
        "    def run(self):\n"
        "        res = self.hook()\n"
        "        total = len(res)\n"
        "        return total\n"
    )
    after = before.replace("self.name =", 'self.name: "Final" =').replace(
        "self.hook =", 'self.hook: "Final" ='
    )
    result = synthesize([Example(before, after, path="m.py")])
    [rule] = result.rules
    assert rule.constraints is not None and rule.constraints["A"]["kind"] == "attribute"
    held = "_T = TypeVar('_T')\n\n\nclass H:\n    def __init__(self, spec):\n        self.spec = spec\n"
    assert result.apply(held)[0] == held.replace("self.spec =", 'self.spec: "Final" =')


def test_a_metavariable_every_site_binds_alike_stays_that_value_when_kept_code_differs() -> None:
    """serde's `de::Deserializer` -> `de::Deserializer<'de>` in `where` bounds, with
    `de::Error` and `io::Write` kept there and `impl de::Visitor for V` kept: `$A::$B` -> `$A::$B<'$A>`
    narrowed by the kept names only would also give `fmt::Display<'fmt>` and rewrite
    `impl de::Deserializer for X` headers the examples never show changed. Every site binds
    `A` to `de` and sits in a trait bound, so the rule keeps to both."""
    before = (
        "impl de::Visitor for V {\n"
        "    fn visit<D>(self, d: D) -> Result<()>\n"
        "        where D: de::Deserializer\n"
        "    {\n"
        "        Ok(())\n"
        "    }\n"
        "    fn visit_map<M>(self, m: M) -> Result<()>\n"
        "        where M: de::MapVisitor\n"
        "    {\n"
        "        Ok(())\n"
        "    }\n"
        "    fn err<E>(self, e: E) -> Result<()>\n"
        "        where E: de::Error\n"
        "    {\n"
        "        Ok(())\n"
        "    }\n"
        "    fn write<W>(self, w: W) where W: io::Write {}\n"
        "}\n"
    )
    after = before.replace("de::Deserializer\n", "de::Deserializer<'de>\n").replace(
        "de::MapVisitor\n", "de::MapVisitor<'de>\n"
    )
    result = synthesize([Example(before, after, path="map.rs")])
    [rule] = result.rules
    assert rule.constraints is not None and rule.constraints["A"] == {"regex": "^de$"}
    held = (
        "impl fmt::Display for Number {\n"
        "    fn f<T>(self) where T: fmt::Write {}\n"
        "}\n"
        "impl de::Deserializer for Value {\n"
        "    fn g<V>(self) where V: de::SeqVisitor {}\n"
        "}\n"
    )
    want = held.replace("de::SeqVisitor {", "de::SeqVisitor<'de> {")
    assert result.apply(held)[0] == want


def test_changed_in_as_many_functions_as_kept_names_the_changed_ones() -> None:
    """rich's `Console(…)` -> `Console(…, _environ={})` in three test functions, kept in three
    others of the same files: as many kept as changed, so the examples cannot say that the
    commit changed every other function — the rule names the changed ones (precision
    first), instead of rewriting every `Console(…)` outside the three kept."""

    def fn(name: str, extra: str) -> str:
        return f"def {name}():\n    console = Console(width=1{extra})\n    check(console)\n\n\n"

    before = "".join(
        fn(n, "") for n in ("test_a", "test_b", "test_c", "test_x", "test_y", "test_z")
    )
    after = "".join(fn(n, ", _environ={}") for n in ("test_a", "test_b", "test_c")) + "".join(
        fn(n, "") for n in ("test_x", "test_y", "test_z")
    )
    result = synthesize([Example(before, after, path="test_m.py")])
    [rule] = result.rules
    assert "not" not in rule.rule
    assert result.apply(fn("test_other", ""))[0] == fn("test_other", "")
