"""Wave 3t of issue 26: a rename of a value's name leaves a variable of the same name alone —
a parameter, a loop variable, a local — where no example site is one (docs/synth.md § A
rename never reaches a variable that shadows the name)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

RS_BEFORE = """use glob;

pub fn build(pat: &str) -> Result<Matcher, glob::Error> {
    let m = glob::Pattern::new(pat)?;
    Ok(m)
}
"""
RS_AFTER = RS_BEFORE.replace("glob", "globset")
RS_HELD = """use glob;

fn all(globs: &[String]) -> Result<(), glob::Error> {
    for glob in globs {
        check(glob)?;
    }
    let concat = glob::concat(globs);
    Ok(concat)
}

fn one(glob: &str) -> usize {
    glob.len()
}
"""
RS_WANT = """use globset;

fn all(globs: &[String]) -> Result<(), globset::Error> {
    for glob in globs {
        check(glob)?;
    }
    let concat = globset::concat(globs);
    Ok(concat)
}

fn one(glob: &str) -> usize {
    glob.len()
}
"""


def test_a_crate_renamed_not_the_loop_variable() -> None:
    """ripgrep fdf24317: the crate `glob` -> `globset`; the held-out `for glob in globs`
    (and a parameter `glob`) kept — before, every `glob` identifier was renamed. A path's
    segment inside that loop (`glob::concat`) is the crate still."""
    result = synthesize([Example(RS_BEFORE, RS_AFTER, path="a.rs")])
    assert result.apply(RS_BEFORE)[0] == RS_AFTER
    assert result.apply(RS_HELD)[0] == RS_WANT
    files = [("a.rs", RS_BEFORE), ("b.rs", RS_HELD)]
    assert check_rules(result.rules, files, "rust") + check_file(result.rules, files, "rust") == []


GO_BEFORE = """package router

func New() *Router {
	return &Router{}
}
"""
GO_AFTER = GO_BEFORE.replace("package router", "package httprouter")
GO_HELD = """package router

func TestRouter(t *testing.T) {
	router := New()
	router.Add("/user/:name", nil)
}
"""
GO_WANT = GO_HELD.replace("package router", "package httprouter")


def test_a_package_renamed_not_a_local_of_its_name() -> None:
    """httprouter 48110743: `package router` -> `package httprouter`; a test's local
    `router := New()` was renamed with its uses (the block's statements sit in a
    `statement_list`)."""
    result = synthesize([Example(GO_BEFORE, GO_AFTER, path="router.go")])
    assert result.apply(GO_HELD)[0] == GO_WANT


PY_BEFORE = """def run(cfg):
    return cfg.port


def stop(cfg):
    cfg.close()
"""
PY_AFTER = PY_BEFORE.replace("cfg", "config")
PY_HELD = """def start(cfg):
    cfg.open()
    return cfg
"""
PY_WANT = PY_HELD.replace("cfg", "config")


def test_a_local_rename_still_reaches_its_scopes() -> None:
    """Where the examples rename the parameter itself, the rename is of such variables: the
    guard does not hold on the examples and is not taken."""
    result = synthesize([Example(PY_BEFORE, PY_AFTER, path="a.py")])
    assert result.apply(PY_BEFORE)[0] == PY_AFTER
    assert result.apply(PY_HELD)[0] == PY_WANT


GIN_BEFORE = """package binding

func setByFile(value Value) (isSetted bool, err error) {
	isSetted, err = setArray(value)
	return isSetted, err
}
"""
GIN_AFTER = GIN_BEFORE.replace("isSetted", "isSet")
GIN_HELD = """package binding

func tryMap(v Value) (bool, error) {
	isSetted, err := mapping(v)
	return isSetted, err
}
"""


def test_a_variable_the_examples_declare_is_renamed_wherever_it_is_declared() -> None:
    """gin 1a2bc0e7: `isSetted` -> `isSet`, a named result in the examples: the rename is of
    variables, so a held-out `isSetted, err := …` is renamed too (no guard)."""
    result = synthesize([Example(GIN_BEFORE, GIN_AFTER, path="a.go")])
    assert result.apply(GIN_HELD)[0] == GIN_HELD.replace("isSetted", "isSet")


PLUGGY_BEFORE = """from ._hooks import _HookSpecOpts


def parse(opts: _HookSpecOpts) -> None:
    pass
"""
PLUGGY_AFTER = PLUGGY_BEFORE.replace("_HookSpecOpts", "HookSpecOpts")
PLUGGY_HELD = """class HookSpec:
    def __init__(self, name: str, opts: _HookSpecOpts) -> None:
        self.opts: _HookSpecOpts = opts
"""


def test_a_type_in_a_parameters_annotation_is_no_binder() -> None:
    """pluggy 04e9a9b9: `_HookSpecOpts` -> `HookSpecOpts`; a parameter annotated with the type
    binds `opts`, not the type, so the annotation is renamed."""
    result = synthesize([Example(PLUGGY_BEFORE, PLUGGY_AFTER, path="a.py")])
    assert result.apply(PLUGGY_HELD)[0] == PLUGGY_HELD.replace("_HookSpecOpts", "HookSpecOpts")


PFLAG_BEFORE = """package pflag

import "strings"

func wrap(result, sep, to string) string {
	result = strings.Replace(result, sep, to, -1)
	return result
}
"""
PFLAG_AFTER = PFLAG_BEFORE.replace("strings.Replace(", "strings.ReplaceAll(")
PFLAG_HELD = """package pflag

import "strings"

type Replacer interface {
	Replace([]string) error
}

func indent(s string, r Replacer) string {
	_ = r.Replace(nil)
	return strings.Replace(s, "\\n", "\\n  ", -1)
}
"""
PFLAG_WANT = PFLAG_HELD.replace("strings.Replace(", "strings.ReplaceAll(")


def test_a_packages_function_renamed_not_every_member_of_its_name() -> None:
    """pflag d6bb2cc8: `strings.Replace` -> `strings.ReplaceAll`; the rename reached every
    field or method named `Replace` (an interface's method, `r.Replace`). Every site reaches
    it through the imported package: the rename of that package's function."""
    result = synthesize([Example(PFLAG_BEFORE, PFLAG_AFTER, path="flag_test.go")])
    assert result.apply(PFLAG_BEFORE)[0] == PFLAG_AFTER
    assert result.apply(PFLAG_HELD)[0] == PFLAG_WANT


IMMER_BEFORE = """import immer from "../src/immer"

const next = immer(base, draft => {
    draft.a = 1
})
"""
IMMER_AFTER = IMMER_BEFORE.replace("immer(", "produce(").replace("import immer", "import produce")
IMMER_HELD = """describe("auto freeze", () => {
    const immer = lib.default
    const next = immer(base, draft => {
        draft.c = 2
    })
})
"""


def test_a_value_renamed_reaches_a_local_of_its_name() -> None:
    """immer e3eaceac: `immer` -> `produce`, the function; a held-out test binds it under its
    old name (`const immer = lib.default`), renamed with it: the guard against locals is for
    a module's or a path's name only (a crate, a package, a path's segment)."""
    result = synthesize([Example(IMMER_BEFORE, IMMER_AFTER, path="a.js")])
    assert result.apply(IMMER_BEFORE)[0] == IMMER_AFTER
    assert result.apply(IMMER_HELD)[0] == IMMER_HELD.replace("immer", "produce")
