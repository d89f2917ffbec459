"""Wave 3r of issue 26: an item removed next to one item kept is removed from a list of
any length (docs/synth.md § Removals learned where they happen, wave 3r)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.abstract import Template
from oopav.synth.removals import collapse_runs


def test_one_kept_item_is_the_rest_of_the_list() -> None:
    """itsdangerous 0e255fc2: `super().__init__(self, message)` -> `super().__init__(message)`
    in exc.py; the rule was `super().__init__(self, $A)`, one more argument exactly, and a
    call passing more arguments kept its `self`. The one kept item is the list's rest."""
    before = (
        "class BadData(Exception):\n    def __init__(self, message):\n"
        "        super().__init__(self, message)\n        self.message = message\n"
    )
    after = before.replace("(self, message)\n        self", "(message)\n        self")
    result = synthesize([Example(before, after, path="exc.py")])
    assert result.apply(before)[0] == after
    held = (
        "class BadHeader(BadData):\n    def __init__(self, message, payload=None, header=None):\n"
        "        super().__init__(self, message, payload)\n        self.header = header\n"
    )
    want = held.replace("(self, message, payload)", "(message, payload)")
    assert result.apply(held)[0] == want
    # Not done: a call laid out one argument a line keeps its `self` line's layout only in
    # part (the list's rest is re-emitted from its first item: docs/synth.md).


def test_the_template_collapse_needs_a_list_item_beside_the_removal() -> None:
    collapsed = collapse_runs(Template("f($A, x)", "f($A)", {}))
    assert collapsed is not None and (collapsed.pattern, collapsed.fix) == (
        "f($$$REST, x)",
        "f($$$REST)",
    )
    # The only item of its list, or not a list item at all: nothing to collapse.
    assert collapse_runs(Template("f($A)", "f()", {})) is None
    assert collapse_runs(Template("$A.unwrap()", "$A", {})) is None
