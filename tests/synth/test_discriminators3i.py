"""Wave 3i of issue 26 (synth12): rules right on their examples that kept held-out sites out
because a pattern or a constraint was more specific than the examples require — each a small
self-written reproduction of a class seen on real edits, failing on the branch start
(docs/synth.md § Too narrow, wave 3i)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.abstract import Template, collapse_chains


def test_a_member_chain_is_learned_at_any_depth() -> None:
    """express's `err.should.be.ok;` -> `err.should.be.ok()` (should.js assertions made
    calls): every identifier of the site is carried, so anti-unification kept the chain's
    depth, `$A.$B.$C.$D;`, and the held-out `should(req.called).be.ok;` (a chain of three)
    was left alone. The receiver is one metavariable now: `$A.$D;`."""
    before = (
        "it('renders', function(done){\n"
        "  app.render('x', function(err, str){\n"
        "    err.should.be.ok;\n"
        "    err.message.should.equal('err!');\n"
        "    done();\n"
        "  });\n"
        "});\n"
    )
    after = before.replace("err.should.be.ok;", "err.should.be.ok()")
    result = synthesize([Example(before, after, path="test/app.render.js")])
    assert len(result.rules) == 1
    held = (
        "it('calls', function(){\n"
        "  should(req.called).be.ok;\n"
        "  res.body.should.not.be.empty;\n"
        "  res.end();\n"
        "});\n"
    )
    want = held.replace("be.ok;", "be.ok()").replace("be.empty;", "be.empty()")
    assert result.apply(held)[0] == want
    # More metavariables but narrower: no "a more general rule fits" ambiguity.
    assert not result.ambiguous


def test_a_kept_shallower_chain_keeps_the_depth() -> None:
    """The collapsed rule is verified like any candidate: where the example keeps a
    shallower chain statement (`app.router;`, a getter read for its effect), the depth the
    sites show stays, and the example is reproduced byte for byte."""
    before = "err.should.be.ok;\napp.router;\n"
    after = "err.should.be.ok()\napp.router;\n"
    result = synthesize([Example(before, after, path="a.js")])
    assert result.apply(before)[0] == after
    assert result.apply("x.y.z.w;\n")[0] == "x.y.z.w()\n"


def test_collapse_chains_keeps_the_last_member_and_the_fix_in_step() -> None:
    """The unit: the receiver of a chain of metavariables becomes one metavariable, in the
    pattern and the fix alike; a receiver that the fix uses otherwise, or that is itself a
    member of a literal (`x.$A.$B`), is left as it is."""
    t = collapse_chains(Template("$A.$B.$C.$D;", "$A.$B.$C.$D()", {"A": "a", "B": "b"}))
    assert t is not None and (t.pattern, t.fix) == ("$A.$D;", "$A.$D()")
    t = collapse_chains(Template("$A.$B.close()", "$A.$B.shutdown()", {}))
    assert t is not None and (t.pattern, t.fix) == ("$A.close()", "$A.shutdown()")
    assert collapse_chains(Template("$A.$B;", "$A.$B()", {})) is None  # nothing to collapse
    assert collapse_chains(Template("$A.$B.$C;", "f($B, $A.$B.$C)", {})) is None
    assert collapse_chains(Template("x.$A.$B.$C;", "x.$A.$B.$C()", {})) is None


def test_a_literal_is_kept_to_the_name_it_is_bound_to() -> None:
    """cobra's `var EnablePrefixMatching = false` -> `= defaultPrefixMatching`, the `false`s
    of two `return`s kept: the context was the grandparent kind, `inside: {kind:
    expression_list, inside: {kind: var_spec}}`, which missed the held-out test's
    `EnablePrefixMatching = false` (an assignment) and would give every other `var X =
    false` the new constant. The literal is that variable's value: the rule keeps to the
    binders of that name, declaration or assignment."""
    before = (
        "package cobra\n\n"
        "var EnablePrefixMatching = false\n\n"
        "func stringInSlice(a string, list []string) bool {\n"
        "\tfor _, b := range list {\n\t\tif b == a {\n\t\t\treturn true\n\t\t}\n\t}\n"
        "\treturn false\n}\n\n"
        "func Eq(a, b bool) bool {\n\tif a {\n\t\treturn b\n\t}\n\treturn false\n}\n"
    )
    after = before.replace(
        "var EnablePrefixMatching = false", "var EnablePrefixMatching = defaultPrefixMatching"
    )
    result = synthesize([Example(before, after, path="cobra.go")])
    held = (
        "package cobra\n\n"
        "var EnableCommandSorting = false\n\n"
        "func TestPrefix(t *testing.T) {\n"
        "\tEnablePrefixMatching = true\n\tdefer func() {\n"
        "\t\tEnablePrefixMatching = false\n\t}()\n}\n"
    )
    want = held.replace(
        "\t\tEnablePrefixMatching = false", "\t\tEnablePrefixMatching = defaultPrefixMatching"
    )
    assert result.apply(held)[0] == want


def test_a_literal_bound_to_another_name_in_the_examples_keeps_the_kind() -> None:
    """Precision: where the positives are bound to different names (two `var`s changed),
    no name is the context; the kind that holds them is, as before."""
    before = "package a\n\nvar A = false\nvar B = false\n\nfunc f() bool {\n\treturn false\n}\n"
    after = before.replace("var A = false", "var A = off").replace("var B = false", "var B = off")
    result = synthesize([Example(before, after, path="a.go")])
    assert result.apply(before)[0] == after
    assert result.apply("package a\n\nvar C = false\n")[0] == "package a\n\nvar C = off\n"
