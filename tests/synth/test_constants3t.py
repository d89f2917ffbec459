"""Wave 3t of issue 26: a rule that names nothing, whose every site binds one constant's name,
is closed by the constants' family (docs/synth.md § A constant stands for its family), not
pinned to the one name; a variable's name shared by the sites stays pinned."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

BEFORE = """fn a() {
    let (count, out) = search("Sherlock", &*SHERLOCK, |s| s);
    let x = search("Holmes", &*SHERLOCK, |s| s.count(true));
}
"""
AFTER = BEFORE.replace("&*SHERLOCK", "SHERLOCK")
HELD = """fn b() {
    let (count, out) = search("stdin", &*CODE, |s| s);
    let y = search("a", &*SHERLOCK_2, |s| s);
    let z = take(&*guard);
    let w = take(&*Self::inner(v));
}
"""
WANT = """fn b() {
    let (count, out) = search("stdin", CODE, |s| s);
    let y = search("a", SHERLOCK_2, |s| s);
    let z = take(&*guard);
    let w = take(&*Self::inner(v));
}
"""


def test_a_constant_stands_for_its_family() -> None:
    """ripgrep f83cd63b: `&*SHERLOCK` -> `SHERLOCK` at 31 example sites, `&*CODE` held out
    (20/23 sites before: the rule was pinned to `SHERLOCK`). A variable's deref (`&*guard`)
    and a call's stay."""
    result = synthesize([Example(BEFORE, AFTER, path="a.rs")])
    assert result.apply(BEFORE)[0] == AFTER
    assert result.apply(HELD)[0] == WANT
    files = [("a.rs", BEFORE), ("b.rs", HELD)]
    assert check_rules(result.rules, files, "rust") + check_file(result.rules, files, "rust") == []


JS_BEFORE = """app.use(function(next) {
  return next();
});
app.use(function(next) {
  return next(1);
});
"""
JS_AFTER = JS_BEFORE.replace("function(next)", "function *(next)")
JS_HELD = """app.use(function(next) {
  return next(2);
});
it('x', function(done) {
  done();
});
"""
JS_WANT = JS_HELD.replace("function(next)", "function *(next)")


def test_a_variable_shared_by_the_sites_stays_pinned() -> None:
    """koa's middleware made generators (wave 3g): every site binds `next`, which is what
    they share; the tests' `function(done)` stay functions."""
    result = synthesize([Example(JS_BEFORE, JS_AFTER, path="a.js")])
    assert result.apply(JS_BEFORE)[0] == JS_AFTER
    assert result.apply(JS_HELD)[0] == JS_WANT
