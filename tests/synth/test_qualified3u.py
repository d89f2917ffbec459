"""Wave 3u of issue 26: a Go package's name renamed or rewritten in its own package is
rewritten where other packages write it qualified, ``pkg.Name`` (docs/synth.md § A Go
package's names as other packages write them)."""

from __future__ import annotations

from oopav.synth import Example, synthesize
from oopav.synth.clicheck import check_file, check_rules

CONST_BEFORE = """package paint

const (
	Red  = "red"
	Blue = "blue"
)

func Default() string {
	return Mix(Red, Blue)
}
"""
CONST_AFTER = CONST_BEFORE.replace("Red ", "ColorRed ").replace("(Red,", "(ColorRed,")
CONST_HELD = """package paint_test

import (
	"testing"

	"example.com/art/paint"
)

func TestMix(t *testing.T) {
	got := paint.Mix(paint.Red, paint.Blue)
	if got != paint.Red {
		t.Fatal(got)
	}
	brush.Red = 1
}
"""
CONST_WANT = CONST_HELD.replace("paint.Red", "paint.ColorRed")


def test_a_constant_renamed_where_another_package_names_it() -> None:
    """echo 8b5772cf: `ContentType` -> `HeaderContentType` in `package echo`; the held-out
    middleware reads `echo.ContentType`. Before, the rename reached bare names only. A
    member of that name on anything else (`brush.Red`) stays."""
    result = synthesize([Example(CONST_BEFORE, CONST_AFTER, path="paint.go")])
    assert result.apply(CONST_BEFORE)[0] == CONST_AFTER
    assert result.apply(CONST_HELD)[0] == CONST_WANT
    assert any(r.follow_up == "qualified" for r in result.rules)
    files = [("paint.go", CONST_BEFORE), ("paint_test.go", CONST_HELD)]
    assert check_rules(result.rules, files, "go") + check_file(result.rules, files, "go") == []


CALL_BEFORE = """package shelf

func Build(a *App, set *Set) *Box {
	box := NewBox(a, set, set)
	return box
}
"""
CALL_AFTER = CALL_BEFORE.replace("set, set)", "set, nil)")
CALL_HELD = """package shelf_test

import (
	"testing"

	"github.com/acme/shelf/v2"
)

func TestBox(t *testing.T) {
	b := shelf.NewBox(app, set, set)
	c := shelf.NewBox(nil, set, set)
	_, _ = b, c
}
"""
CALL_WANT = CALL_HELD.replace("set, set)", "set, nil)")


def test_a_call_rewritten_where_another_package_calls_it() -> None:
    """urfave/cli 65d50017: `NewContext(a, set, set)` -> `NewContext(a, set, nil)` in
    `app.go`; the held-out tests (`package cli_test`) call `cli.NewContext(app, set, set)`.
    The import path's major version (`…/shelf/v2`) names the same package."""
    result = synthesize([Example(CALL_BEFORE, CALL_AFTER, path="build.go")])
    assert result.apply(CALL_BEFORE)[0] == CALL_AFTER
    assert result.apply(CALL_HELD)[0] == CALL_WANT
    files = [("build.go", CALL_BEFORE), ("shelf_test.go", CALL_HELD)]
    assert check_rules(result.rules, files, "go") + check_file(result.rules, files, "go") == []


STD_HELD = """package server

import (
	"strings"

	"example.com/art/paint/strings2"
)

func f() {
	_ = strings.Red
	var paint Brush
	_ = paint.Red
}
"""


def test_only_where_the_file_imports_the_package() -> None:
    """The qualified rule asks the file to import the package by a module path: a local
    variable named like the package (`paint.Red` with no import of it) is not the package,
    and an example that keeps `paint.Red` where it imports the package refuses the rule."""
    result = synthesize([Example(CONST_BEFORE, CONST_AFTER, path="paint.go")])
    assert result.apply(CONST_HELD)[0] == CONST_WANT
    assert result.apply(STD_HELD)[0] == STD_HELD
    kept = synthesize(
        [
            Example(CONST_BEFORE, CONST_AFTER, path="paint.go"),
            Example(CONST_HELD, CONST_HELD, path="paint_test.go"),
        ]
    )
    assert not any(r.follow_up == "qualified" for r in kept.rules)
    assert kept.apply(CONST_HELD)[0] == CONST_HELD


def test_nothing_imports_package_main() -> None:
    """A name of `package main` (or of a `_test` package) is no other package's: no
    follow-up there, where `package paint` has one."""
    main = CONST_BEFORE.replace("package paint", "package main")
    renamed = main.replace("Red ", "ColorRed ").replace("(Red,", "(ColorRed,")
    result = synthesize([Example(main, renamed, path="main.go")])
    assert not any(r.follow_up == "qualified" for r in result.rules)
    paint = synthesize([Example(CONST_BEFORE, CONST_AFTER, path="paint.go")])
    assert [r.follow_up for r in paint.rules].count("qualified") == 1
