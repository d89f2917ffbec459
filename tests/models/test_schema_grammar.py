"""`oopav schema export`: the answer language as JSON schema, GBNF and Lark, each checked by a
real recognizer (jsonschema, xgrammar's GBNF matcher, lark's Earley parser) against the strict
prompt-contract parser, on real answers, broken answers, mutations and random derivations."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from oopav.cli import cli
from oopav.models.cfg import Alt, Avoid, Chars, Grammar, GrammarError, Lit, Node, Ref, Rep, Seq
from oopav.models.prompt import AnswerError, output_schema, parse_role_answer, render_answer
from oopav.models.schema_grammar import GrammarOptions, _uint_range, answer_grammar

lark = pytest.importorskip("lark")
jsonschema = pytest.importorskip("jsonschema")
xgr = pytest.importorskip("xgrammar")

ROOT = Path(__file__).resolve().parents[2]
ROLE = {"action": "actor", "plan": "planner", "verdict": "critic"}


# --- recognizers ---------------------------------------------------------------------------


class Recognizers:
    def __init__(self, tag: str, options: GrammarOptions | None = None) -> None:
        self.tag = tag
        self.grammar = answer_grammar(tag, options)
        self.lark = lark.Lark(self.grammar.lark(), parser="earley", lexer="dynamic")
        compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
        self.gbnf = compiler.compile_grammar(xgr.Grammar.from_ebnf(self.grammar.gbnf()))

    def by_lark(self, text: str) -> bool:
        try:
            self.lark.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True

    def by_gbnf(self, text: str) -> bool:
        m = xgr.GrammarMatcher(self.gbnf, terminate_without_stop_token=True)
        return bool(m.accept_string(text)) and m.is_terminated()

    def by_parser(self, text: str) -> bool:
        try:
            parse_role_answer(ROLE[self.tag], text)
        except AnswerError:
            return False
        return True


@pytest.fixture(scope="module")
def actor() -> Recognizers:
    return Recognizers("action")


@pytest.fixture(scope="module")
def planner() -> Recognizers:
    return Recognizers("plan")


# --- the corpus ----------------------------------------------------------------------------

ACTIONS: list[dict[str, Any]] = [
    {"type": "ast_grep", "pattern": "foo($A)", "rewrite": "bar($A)", "language": "python"},
    {"language": "python", "rewrite": "bar($$$)", "pattern": "foo($$$)", "type": "ast_grep"},
    {"type": "ast_grep", "rule": "id: r\nlanguage: python\nrule: {pattern: x}\nfix: y\n"},
    {"type": "ast_grep", "rule": None, "pattern": "a", "rewrite": "b", "paths": ["src", "t"]},
    {"type": "search_replace", "edits": [{"path": "a.py", "search": "x = 1", "replace": "x=2"}]},
    {
        "edits": [
            {"search": "\tdef f():\n", "replace": "def g():\n", "path": "p/q.py"},
            {"path": "b.py", "replace": "", "search": '"quoted" \\ back'},
        ],
        "type": "search_replace",
    },
    {"type": "write_file", "path": "new.py", "content": "print('é ☃ 😀')\n"},
    {"type": "run_command", "argv": ["python", "-m", "pytest", "-q"]},
    {"type": "run_command", "argv": ["make"], "timeout_s": 0.25, "scopes": ["exec:make"]},
    {"type": "run_command", "argv": ["make"], "timeout_s": 3600},
    {"timeout_s": 12.5, "type": "run_command", "argv": ["x"], "scopes": []},
    {"type": "finish", "summary": "Renamed fetch to fetch_page everywhere."},
    {"summary": "", "type": "finish"},
    {"type": "read_file", "path": "a.py"},
    {"type": "read_file", "path": "a.py", "start_line": 10, "end_line": 2000},
    {"end_line": None, "start_line": 1, "type": "read_file", "path": "a.py"},
    {"type": "search", "pattern": "def fetch"},
    {"type": "search", "pattern": "f.*h", "regex": True, "max_results": 500, "paths": ["src"]},
    {"max_results": 1, "regex": False, "pattern": "x" * 500, "type": "search"},
    {"type": "ask", "question": "Which version should the API keep?"},
    {"type": "ask", "question": "Drop py3.8?", "options": ["yes", "no"]},
    {
        "type": "search_replace",
        "edits": [{"path": "a.py", "search": "x\n", "replace": "y\n", "context_hash": "1a2b3c4d"}],
    },
]
# SEARCH/REPLACE text blocks (models/blocks.py) in place of the JSON: lines that look like the
# markers but are not, a closing tag inside a block, empty parts, several blocks.
BLOCKS: list[str] = [
    "a.py\n<<<<<<< SEARCH\ndef f():\n=======\ndef g():\n>>>>>>> REPLACE",
    "src/p/q.py@1a2b3c4d\n<<<<<<< SEARCH\n    x = '</action>'\n========\n==\n=======\n"
    ">>>>>>> REPLAC no\n>>>>>>>\n\n>>>>>>> REPLACE\nb.py\n<<<<<<< SEARCH\n=======\n"
    ">>>>>>> REPLACE",
    "c.py\n<<<<<<< SEARCH\nx\t= 1 # é☃\n=======\n>>>>>>> REPLACE",
]
STATES: list[dict[str, Any] | None] = [
    {},
    {"history": "renamed", "next_focus": "finish"},
    {"goals": ["a", "b"], "resolved": [], "open_issues": ["c"], "history": None},
    {"next_focus": None, "decisions": ["x"], "constraints": ["y"], "hypotheses": ["z"]},
]


def real_actor_answers() -> list[str]:
    """The scripted example's answers, the training targets of the synthetic tasks, and every
    action kind rendered as the loop's scripted models render it."""
    from oopav.trainer.tasks import generate, target_text

    script = yaml.safe_load((ROOT / "examples/rename_fetch_scripted/policy.yaml").read_text())
    answers = list(script["actor"])
    answers += [target_text(t.rule) for t in generate(30, seed=5).tasks]
    for i, action in enumerate(ACTIONS):
        state = STATES[i % len(STATES)] or {}
        answers.append(render_answer("action", action, think=f"step {i}", state_update=state))
    for i, blocks in enumerate(BLOCKS):
        answers.append(
            f"<think>b{i}</think>\n<action>{blocks}</action>\n<state_update>{{}}</state_update>"
        )
    answers.append(
        f"<think></think><action>\n{BLOCKS[0]}\n</action><state_update>{{}}</state_update>"
    )
    # whitespace the parser allows between and inside blocks
    answers.append(
        '  <think>\n multi\n line < not a tag </think>\n\n<action>\n {\n  "type" : "finish" ,'
        '\n  "summary" : "ok"\n }\n</action>\t<state_update> { } </state_update>\n'
    )
    return answers


def real_plan_answers() -> list[str]:
    script = yaml.safe_load((ROOT / "examples/rename_fetch_scripted/policy.yaml").read_text())
    plan = {
        "steps": [
            {"id": 1, "description": "do it", "files": ["a.py"]},
            {"description": "x", "id": 2},
        ],
        "files": ["a.py"],
        "test_decision": "required",
        "rationale": "why",
    }
    return [*script["planner"], render_answer("plan", plan, state_update={"goals": ["g"]})]


BROKEN_ACTOR = {
    "wrong kind": '<think></think><action>{"type":"teleport","to":"x"}</action><state_update>{}</state_update>',
    "missing required field": '<think></think><action>{"type":"write_file","path":"a"}</action><state_update>{}</state_update>',
    "missing type": '<think></think><action>{"summary":"s"}</action><state_update>{}</state_update>',
    "bad enum (number as kind)": '<think></think><action>{"type":3,"summary":"s"}</action><state_update>{}</state_update>',
    "wrong field type": '<think></think><action>{"type":"finish","summary":3}</action><state_update>{}</state_update>',
    "unknown field": '<think></think><action>{"type":"finish","summary":"s","why":"x"}</action><state_update>{}</state_update>',
    "out of range": '<think></think><action>{"type":"search","pattern":"p","max_results":501}</action><state_update>{}</state_update>',
    "float for int": '<think></think><action>{"type":"read_file","path":"a","start_line":1.0}</action><state_update>{}</state_update>',
    "timeout 0": '<think></think><action>{"type":"run_command","argv":["a"],"timeout_s":0}</action><state_update>{}</state_update>',
    "timeout too long": '<think></think><action>{"type":"run_command","argv":["a"],"timeout_s":3600.5}</action><state_update>{}</state_update>',
    "empty argv": '<think></think><action>{"type":"run_command","argv":[]}</action><state_update>{}</state_update>',
    "empty pattern": '<think></think><action>{"type":"search","pattern":""}</action><state_update>{}</state_update>',
    "trailing garbage": '<think></think><action>{"type":"finish","summary":"s"}</action><state_update>{}</state_update> thanks!',
    "garbage in block": '<think></think><action>{"type":"finish","summary":"s"} ok</action><state_update>{}</state_update>',
    "unclosed action": '<think></think><action>{"type":"finish","summary":"s"}<state_update>{}</state_update>',
    "unclosed think": '<think>hmm <action>{"type":"finish","summary":"s"}</action><state_update>{}</state_update>',
    "unclosed state_update": '<think></think><action>{"type":"finish","summary":"s"}</action><state_update>{}',
    "no state_update": '<think></think><action>{"type":"finish","summary":"s"}</action>',
    "no think": '<action>{"type":"finish","summary":"s"}</action><state_update>{}</state_update>',
    "wrong tag": '<think></think><plan>{"type":"finish","summary":"s"}</plan><state_update>{}</state_update>',
    "trailing comma": '<think></think><action>{"type":"finish","summary":"s",}</action><state_update>{}</state_update>',
    "single quotes": "<think></think><action>{'type':'finish','summary':'s'}</action><state_update>{}</state_update>",
    "raw newline in string": '<think></think><action>{"type":"finish","summary":"a\nb"}</action><state_update>{}</state_update>',
    "lone surrogate": '<think></think><action>{"type":"finish","summary":"\\ud800"}</action><state_update>{}</state_update>',
    "bad state update": '<think></think><action>{"type":"finish","summary":"s"}</action><state_update>{"goals":"g"}</state_update>',
    "empty": "",
    "block without divider": "<think></think><action>a.py\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE</action><state_update>{}</state_update>",
    "block without path": "<think></think><action><<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE</action><state_update>{}</state_update>",
    "block with a bad hash": "<think></think><action>a.py@xyz\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE</action><state_update>{}</state_update>",
    "block with text after it": "<think></think><action>a.py\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE\nthanks</action><state_update>{}</state_update>",
    "block never closed": "<think></think><action>a.py\n<<<<<<< SEARCH\nx\n=======\ny\n</action><state_update>{}</state_update>",
}


# --- the grammars against real and broken answers ------------------------------------------


def test_every_action_kind_and_real_answer_is_accepted_by_every_format(
    actor: Recognizers,
) -> None:
    answers = real_actor_answers()
    kinds = set()
    validator = jsonschema.Draft202012Validator(output_schema("actor"))
    for text in answers:
        parsed = parse_role_answer("actor", text)
        kinds.add(parsed.payload.type)
        assert actor.by_lark(text), text
        assert actor.by_gbnf(text), text
        payload = text[text.index("<action>") + 8 : text.index("</action>")]
        if payload.lstrip().startswith("{"):
            validator.validate(json.loads(payload))
        else:
            assert parsed.payload.type == "search_replace" and parsed.payload.edits
    assert kinds == {
        "ast_grep",
        "search_replace",
        "write_file",
        "run_command",
        "finish",
        "read_file",
        "search",
        "ask",
    }


def test_plan_answers_are_accepted(planner: Recognizers) -> None:
    for text in real_plan_answers():
        assert planner.by_parser(text) and planner.by_lark(text) and planner.by_gbnf(text)
    bad = real_plan_answers()[-1].replace('"required"', '"maybe"')
    assert not planner.by_parser(bad)
    assert not planner.by_lark(bad) and not planner.by_gbnf(bad)


@pytest.mark.parametrize("case", sorted(BROKEN_ACTOR))
def test_broken_answers_are_rejected_by_every_format(actor: Recognizers, case: str) -> None:
    text = BROKEN_ACTOR[case]
    assert not actor.by_parser(text)
    assert not actor.by_lark(text), case
    assert not actor.by_gbnf(text), case


def test_json_schema_rejects_broken_payloads() -> None:
    validator = jsonschema.Draft202012Validator(output_schema("actor"))
    for case in (
        "wrong kind",
        "missing required field",
        "bad enum (number as kind)",
        "unknown field",
        "out of range",
        "timeout 0",
        "empty argv",
        "empty pattern",
    ):
        text = BROKEN_ACTOR[case]
        payload = json.loads(text[text.index("<action>") + 8 : text.index("</action>")])
        assert not validator.is_valid(payload), case


def test_compact_form_is_what_render_answer_writes() -> None:
    compact = Recognizers("action", GrammarOptions(compact=True))
    for i, action in enumerate(ACTIONS):
        text = render_answer("action", action, think="t", state_update=STATES[i % len(STATES)])
        assert compact.by_gbnf(text) and compact.by_lark(text), text
    spaced = render_answer("action", ACTIONS[0], state_update={}).replace('":"', '": "')
    assert not compact.by_gbnf(spaced) and not compact.by_lark(spaced)


# --- soundness: whatever a grammar accepts, the parser accepts -----------------------------


def _mutations(text: str, rng: random.Random, n: int) -> list[str]:
    pieces = [
        '"',
        "{",
        "}",
        ",",
        ":",
        "[",
        "]",
        "<",
        ">",
        "/",
        " ",
        "\\",
        "0",
        "9",
        "-",
        ".",
        "e",
        "null",
        "true",
        '"type"',
        '"x"',
        "</think>",
        "</action>",
        "\\u",
        "\n",
    ]
    out = []
    for _ in range(n):
        s = text
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(s) + 1)
            op = rng.random()
            if op < 0.35 and s:
                s = s[:i] + s[i + 1 :]
            elif op < 0.7:
                s = s[:i] + rng.choice(pieces) + s[i:]
            else:
                j = rng.randrange(len(s) + 1)
                a, b = sorted((i, j))
                s = s[:a] + s[b:] + s[a:b]  # move a slice
        out.append(s)
    return out


def test_grammar_accepts_only_what_the_parser_accepts_on_mutations(actor: Recognizers) -> None:
    rng = random.Random(11)
    seeds = real_actor_answers()
    accepted = rejected = 0
    for text in seeds:
        for m in _mutations(text, rng, 10):
            by_gbnf = actor.by_gbnf(m)
            assert by_gbnf == actor.by_lark(m), m  # the two renderings are one language
            if by_gbnf:
                assert actor.by_parser(m), m
                accepted += 1
            else:
                rejected += 1
    # the corpus exercises both sides
    assert accepted > 25 and rejected > 200


class Sampler:
    """Random derivations of the grammar IR: strings the grammar generates by construction."""

    POOL = "aZ09 _-.,:;/\\'\"<>{}[]()é☃😀\t"

    def __init__(self, g: Grammar, rng: random.Random) -> None:
        self.g, self.rng = g, rng

    def char(self, c: Chars) -> str:
        def inside(ch: str) -> bool:
            return any(lo <= ord(ch) <= hi for lo, hi in c.ranges)

        if c.negate:
            return self.rng.choice([ch for ch in self.POOL if not inside(ch)])
        lo, hi = self.rng.choice(c.ranges)
        return chr(self.rng.randint(lo, hi))

    def node(self, n: Node) -> str:
        if isinstance(n, Lit):
            return n.text
        if isinstance(n, Chars):
            return self.char(n)
        if isinstance(n, Ref):
            return self.node(self.g.rules[n.name])
        if isinstance(n, Seq):
            return "".join(self.node(i) for i in n.items)
        if isinstance(n, Alt):
            return self.node(self.rng.choice(n.items))
        if isinstance(n, Rep):
            hi = n.lo + 3 if n.hi is None else min(n.hi, n.lo + 3)
            return "".join(self.node(n.item) for _ in range(self.rng.randint(n.lo, hi)))
        assert isinstance(n, Avoid)
        while True:
            s = "".join(
                self.rng.choice([*self.POOL, "</think", "<", "</"])
                for _ in range(self.rng.randint(1, 12))
            )
            if n.text not in s:
                return s


@pytest.mark.parametrize("compact", [False, True])
def test_random_derivations_parse(actor: Recognizers, compact: bool) -> None:
    rec = (
        actor
        if not compact
        else Recognizers("action", GrammarOptions(compact=True, think_chars=40))
    )
    sampler = Sampler(rec.grammar, random.Random(3))
    kinds = set()
    for _ in range(150):
        text = sampler.node(Ref("root"))
        kinds.add(parse_role_answer("actor", text).payload.type)
        assert rec.by_lark(text) and rec.by_gbnf(text), text
    assert len(kinds) == 8


def test_think_text_is_anything_without_the_closing_tag(actor: Recognizers) -> None:
    rng = random.Random(5)
    for _ in range(300):
        think = "".join(
            rng.choice(["<", "/", "t", "h", "i", "n", "k", ">", "a", "</think", "<<"])
            for _ in range(rng.randint(0, 8))
        )
        text = f'<think>{think}</think><action>{{"type":"finish","summary":"s"}}</action><state_update>{{}}</state_update>'
        expected = actor.by_parser(text)
        assert actor.by_gbnf(text) == expected == actor.by_lark(text), think
        assert expected == ("</think>" not in think)


# --- pieces of the generator ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("lo", "hi"), [(0, 9), (1, 500), (7, 1234), (0, 0), (95, 105), (3600, 3600)]
)
def test_integer_ranges_are_exact(lo: int, hi: int) -> None:
    g = Grammar(rules={"root": _uint_range(lo, hi)}, tokens={"root": ""})
    rx = re.compile(g.lark().splitlines()[-1].split(": /", 1)[1][:-1])
    top = max(hi * 10 + 20, 100)
    got = {i for i in range(top) if rx.fullmatch(str(i))}
    assert got == set(range(lo, hi + 1))
    assert not rx.fullmatch("0" + str(max(lo, 1)))  # no leading zeros


def test_bounds_make_the_decoding_grammar_finite() -> None:
    opts = GrammarOptions(
        compact=True, think_chars=8, max_string_length=4, max_items=1, max_escapes=1
    )
    assert answer_grammar("action", GrammarOptions(compact=True)).max_bytes() is None
    size = answer_grammar("action", opts).max_bytes()
    assert size is not None and 200 < size < 2000
    rec = Recognizers("action", opts)
    ok = '<think>abc</think>\n<action>{"type":"finish","summary":"abcd"}</action>\n<state_update>{"goals":["g"]}</state_update>'
    assert rec.by_gbnf(ok) and rec.by_lark(ok)
    one_escape = ok.replace("abcd", "ab\\ncd")  # runs of <= 4 around <= 1 escape
    assert rec.by_gbnf(one_escape) and rec.by_lark(one_escape) and rec.by_parser(one_escape)
    too_long = (
        ok.replace("abcd", "a\\nb\\nc"),
        ok.replace("abcd", "abcde"),
        ok.replace('["g"]', '["g","h"]'),
        ok.replace("<think>abc", "<think>" + "x" * 9),
    )
    for bad in too_long:
        assert not rec.by_gbnf(bad) and not rec.by_lark(bad), bad
    # the minimum length of a field survives a bound below it
    search = Recognizers("action", GrammarOptions(compact=True, max_string_length=0))
    assert not search.by_gbnf(
        '<think>a</think>\n<action>{"type":"search","pattern":""}</action>\n<state_update>{}</state_update>'
    )


def test_unsupported_schema_keywords_are_refused() -> None:
    from oopav.models.schema_grammar import _Builder

    b = _Builder(GrammarOptions())
    with pytest.raises(GrammarError, match="pattern"):
        b.document({"type": "string", "pattern": "^a$"}, "x")
    with pytest.raises(GrammarError, match="allOf"):
        b.document({"allOf": [{"type": "string"}]}, "y")
    with pytest.raises(GrammarError, match="non-negative whole-number"):
        b.document({"type": "number", "minimum": -1.5}, "z")
    with pytest.raises(GrammarError, match="unknown tag"):
        answer_grammar("teleport")


# --- the command ---------------------------------------------------------------------------


def test_schema_export_command_writes_each_format(tmp_path: Path) -> None:
    runner = CliRunner()
    for fmt, name in (("json-schema", "a.json"), ("gbnf", "a.gbnf"), ("lark", "a.lark")):
        out = tmp_path / name
        r = runner.invoke(cli, ["schema", "export", "--format", fmt, "--out", str(out)])
        assert r.exit_code == 0, r.output
        assert out.stat().st_size > 500
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["$schema"].endswith("2020-12/schema")
    jsonschema.Draft202012Validator.check_schema(doc)
    assert set(doc["discriminator"]["mapping"]) >= {"ast_grep", "finish", "search"}
    # the files are the grammars the recognizers above were built from
    assert (tmp_path / "a.gbnf").read_text() == answer_grammar("action").gbnf()
    lark.Lark((tmp_path / "a.lark").read_text(), parser="earley", lexer="dynamic")

    r = runner.invoke(
        cli,
        [
            "schema",
            "export",
            "--format",
            "gbnf",
            "--tag",
            "plan",
            "--compact",
            "--max-string",
            "64",
        ],
    )
    assert r.exit_code == 0 and r.output.startswith(
        "# The oopav answer grammar for <plan> (compact)"
    )
    assert '"\\"" [^\\u0000-\\u001F"\\\\]{0,64} (' in r.output
    assert '"</plan>\\n<state_update>"' in r.output
    r = runner.invoke(cli, ["schema", "export", "--format", "json-schema", "--compact"])
    assert r.exit_code != 0 and "gbnf and lark only" in r.output
    r = runner.invoke(cli, ["schema", "export", "--format", "yaml"])
    assert r.exit_code != 0 and "json-schema" in r.output
