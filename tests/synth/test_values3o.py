"""Wave 3o of issue 26: what a metavariable binds, generalised to its type where the
examples show several kinds of one type (docs/synth.md § Too narrow, wave 3o)."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_bool_annotations_reach_every_bool_valued_attribute() -> None:
    """click 9149ebcc78 annotated its bool attributes (`self.is_bool_flag = is_flag and
    isinstance(…)`, `self.allow_interspersed_args = True` -> `…: bool = …`) and kept the
    others. The examples' values are three kinds of bool; the rule was a list of the three
    names, which reached none of the held-out file's (`self.autowidth = width == 0`,
    `self.is_hidden = not isatty(…)`). The whole family of bool kinds: main had the names."""
    core = (
        "class Option:\n    def __init__(self, is_flag, flag_value, name):\n"
        "        self.name = name\n        self.is_flag = is_flag\n"
        "        self.is_bool_flag = is_flag and isinstance(self.type, BoolParamType)\n"
        "        self.flag_value = flag_value\n        self.count = 0\n"
        "        self.secondary = []\n"
    )
    parser = (
        "class Parser:\n    def __init__(self, ctx=None):\n        self.ctx = ctx\n"
        "        self.allow_interspersed_args = True\n"
        "        self.ignore_unknown_options = False\n        self._short_opt = {}\n"
    )
    result = synthesize(
        [
            Example(core, core.replace("bool_flag =", "bool_flag: bool ="), path="core.py"),
            Example(
                parser,
                parser.replace("args = True", "args: bool = True").replace(
                    "options = False", "options: bool = False"
                ),
                path="parser.py",
            ),
        ]
    )
    [rule] = result.rules
    assert rule.fix == "$A: bool = $B"
    assert "regex" not in repr(rule.constraints)  # no list of the examples' names
    held = (
        "class Bar:\n    def __init__(self, width, file):\n        self.width = width\n"
        "        self.autowidth = width == 0\n        self.finished = False\n"
        "        self.is_hidden = not isatty(file)\n        self.items = []\n"
    )
    want = (
        held.replace("autowidth =", "autowidth: bool =")
        .replace("finished =", "finished: bool =")
        .replace("is_hidden =", "is_hidden: bool =")
    )
    assert result.apply(held)[0] == want


def test_a_kept_bool_value_leaves_the_family_out() -> None:
    """Where the examples keep an attribute bound to a bool, the type is not what the commit
    annotated: no family (it would rewrite the kept one)."""
    before = (
        "class A:\n    def __init__(self, x):\n        self.a = x > 1\n        self.b = True\n"
        "        self.c = False\n        self.d = x\n"
    )
    after = before.replace("self.a =", "self.a: bool =").replace("self.b =", "self.b: bool =")
    result = synthesize([Example(before, after, path="a.py")])
    assert "comparison_operator" not in repr([r.constraints for r in result.rules])
    assert result.apply(before)[0] == after
