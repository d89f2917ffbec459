"""Rules by example: learn ast-grep rewrite rules from before/after pairs (pure, no I/O).

The API other code uses::

    from oopav.synth import Example, SynthesisError, synthesize

    result = synthesize([Example(before="x = fetch(u)\\n", after="x = fetch_page(u)\\n",
                                 path="a.py")])
    result.rules          # list[SynthRule]: .rule (ast-grep rule object), .fix, .to_yaml()
    result.to_yaml()      # a rule file `ast-grep scan --rule FILE --update-all DIR` accepts
    result.to_json()      # {"rules", "examples_reproduced", "ambiguous", "notes"}
    result.apply(source)  # (new source, rewrites): the rules applied in order
    result.actions()      # one {"type": "ast_grep", "rule": YAML, "paths": ["."]} per rule

``synthesize(examples, language=None)`` takes :class:`Example` objects or plain dicts
(``before``, ``after``, optional ``language`` / ``path``; the language comes from the path's
extension when not given) and returns a :class:`SynthResult` whose rules reproduce every example
byte for byte and change nothing else in them; otherwise it raises :class:`SynthesisError`
(``.example`` is the 1-based example at fault, ``.reason`` one line saying why).

How: each example is diffed as tree-sitter tokens; every change is lifted to the smallest named
node whose rewrite is again one node (a *site*); sites are anti-unified (subtrees carried to the
after side or differing between sites become ``$A`` / ``$$$A``); candidates are tried from the most
general (an identifier rename by kind and regex) to the most specific (the literal node), and the
one that rewrites the most sites with no wrong rewrite in any example wins. Changes that no single
rule covers give a rule set, applied in order. Examples that no one rule set reproduces together
are learned in the fewest groups that each get a rule set (``synth.partition``); the union is
returned only when it still reproduces every example (``result.groups``, each rule's
``examples``). See docs/synth.md.

From history: :func:`oopav.synth.gitlearn.learn_commit` (``repo``, ``rev``) gives one
``HunkResult`` per hunk of a commit (``learnable``, ``reason``, ``rules``), each rule verified on
the parent tree.
"""

from oopav.synth.core import (
    Example,
    SynthesisError,
    SynthResult,
    SynthRule,
    language_of,
    synthesize,
)

__all__ = ["Example", "SynthResult", "SynthRule", "SynthesisError", "language_of", "synthesize"]
