"""Wave 3i of issue 26 (synth11): a small token change inside a large node (a type
parameter, a `where` clause, a type) learned over the whole enclosing function, struct or
impl — each a small self-written reproduction of what a real commit did (see docs/synth.md
§ Too narrow: the changed sub-node)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_type_parameter_gaining_a_default_is_learned_at_the_type_parameter() -> None:
    """zustand's `CustomSetState extends SetState<S>` -> `… = SetState<S>` in a function's
    type parameters: the site is the type parameter, whose pattern parses only inside type
    parameters, so the rule was the whole function, literal, reaching no other function.
    The type parameter is selected in a generic function (and is no literal value wrapped:
    the same node, extended)."""
    before = (
        "export function devtools<\n  S extends State,\n  CustomSetState extends SetState<S>,\n"
        "  CustomGetState extends GetState<S>\n>(fn: (set: NamedSet<S>) => S, options?: string) {\n"
        "  return fn\n}\n\nconst x: Array<number> = []\n"
    )
    after = before.replace(
        "CustomSetState extends SetState<S>,", "CustomSetState extends SetState<S> = SetState<S>,"
    )
    result = synthesize([Example(before, after, path="devtools.ts")])
    [rule] = result.rules
    assert rule.rule["pattern"]["selector"] == "type_parameter"
    held = (
        "export const subscribeWithSelector = <\n  S extends State,\n"
        "  CustomSetState extends SetState<S>,\n  CustomGetState extends GetState<S>\n>(\n"
        "  fn: (set: CustomSetState, get: CustomGetState) => S\n) => fn\n"
    )
    want = held.replace(
        "CustomSetState extends SetState<S>,", "CustomSetState extends SetState<S> = SetState<S>,"
    )
    assert result.apply(held)[0] == want


def test_a_where_clause_gaining_a_trailing_comma_is_learned_at_the_clause() -> None:
    """serde's `pub struct IteratorRead<Iter> where Iter: Iterator<…> {` gaining a comma
    after the predicate: the rule was the whole struct, literal. The clause is selected in
    a function's signature, and it is not closed by the struct around the one site (the
    kind says where). A clause of two predicates is not the one-predicate pattern (ast-grep
    lets the second go unmatched, and the fix would drop it), nor is a clause laid out over
    two lines (the one-line fix would join them)."""
    before = (
        "use std::io;\n\npub struct IteratorRead<Iter> where Iter: Iterator<Item=io::Result<u8>> {\n"
        "    iter: LineColIterator<Iter>,\n    ch: Option<u8>,\n}\n\n"
        "impl<Iter> IteratorRead<Iter>\n    where Iter: Iterator<Item=io::Result<u8>>,\n{\n"
        "    pub fn new(iter: Iter) -> Self {\n        IteratorRead { iter: iter, ch: None }\n"
        "    }\n}\n"
    )
    after = before.replace("io::Result<u8>> {", "io::Result<u8>>, {")
    result = synthesize([Example(before, after, path="read.rs")])
    held = (
        "fn from_iter<I>(iter: I) -> Value where I: IntoIterator<Item=Value> {\n    todo!()\n}\n\n"
        "fn insert<S, F>(key: S, f: F) -> Value where S: Into<String>, F: Into<Vec<u8>> {\n"
        "    todo!()\n}\n\n"
        "fn push<F>(f: F) -> Value where\n    F: IntoIterator<Item=u8>\n{\n    todo!()\n}\n"
    )
    want = held.replace("IntoIterator<Item=Value> {", "IntoIterator<Item=Value>, {")
    assert result.apply(held)[0] == want


def test_the_sub_node_rules_run_in_the_cli_as_in_process() -> None:
    """The kind contexts and the where-clause guards (`nthChild` with `ofRule`, a `regex`
    under `not`) are rules the ast-grep CLI reads as the in-process rewriter does."""
    from oopav.synth.clicheck import check_rules

    ts = "function f<\n  S extends State,\n  C extends SetState<S>,\n>(a: S) {\n  return a\n}\n"
    ts_after = ts.replace("C extends SetState<S>,", "C extends SetState<S> = SetState<S>,")
    rs = (
        "struct R<I> where I: Iterator<Item=u8> {\n    i: I,\n}\n\n"
        "fn g<S, F>() where S: Into<String>, F: Fn() {}\n\n"
        "fn h<F>() where\n    F: Iterator<Item=u8>\n{\n}\n"
    )
    rs_after = rs.replace("Iterator<Item=u8> {", "Iterator<Item=u8>, {")
    for before, after, path, lang in (
        (ts, ts_after, "a.ts", "typescript"),
        (rs, rs_after, "a.rs", "rust"),
    ):
        result = synthesize([Example(before, after, path=path)])
        assert result.apply(before)[0] == after
        found = check_rules(result.rules, [(path, before)], lang)
        assert not found, "\n".join(f.line() for f in found)
