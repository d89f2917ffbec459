"""Wave 3u of issue 26: a parameter inserted into the lists of functions *and methods* of the
names the examples show — each a small self-written reproduction of what a real commit did
(docs/synth.md § Parameters of functions and methods of one name)."""

from __future__ import annotations

from oopav.synth import Example, synthesize

GO_FUNCS = """package check

func Match(t T, rx string, s string) bool {
	return match(rx, s)
}

func NotMatch(t T, rx string, s string) bool {
	return !match(rx, s)
}

func match(rx string, s string) bool {
	return rx == s
}
"""
GO_METHODS = """package check

func (a *Checks) Match(rx string, s string) (ok bool, err error) {
	return Match(a.t, rx, s), nil
}

func (a *Checks) NotMatch(rx string, s string) bool {
	return NotMatch(a.t, rx, s)
}

func (a *Checks) Equal(x string, y string) bool {
	return Equal(a.t, x, y)
}
"""


def test_a_parameter_appended_to_functions_reaches_the_methods_of_those_names() -> None:
    """testify ff9ded0d: `, msgAndArgs ...interface{}` appended to `func Regexp(…)` and
    `func NotRegexp(…)`; the held-out files define them as methods (`func (a *Assertions)
    Regexp(…)`). Before, the owner rule named function declarations only, its name shape
    `\\w*Regexp` reached the kept `matchRegexp`, and the literal list was learned. Now the
    names themselves (the shape reaching a kept definition), in a function's, a method's or
    an interface method's parameters: never the receiver, never a named result list, never
    a call's arguments."""
    want = GO_FUNCS.replace("s string) bool", "s string, opts ...any) bool", 2)
    result = synthesize([Example(GO_FUNCS, want, path="check.go")])
    assert result.apply(GO_FUNCS)[0] == want
    got = result.apply(GO_METHODS)[0]
    assert got == GO_METHODS.replace("rx string, s string)", "rx string, s string, opts ...any)")
    assert result.apply(got)[0] == got  # not twice


GO_IFACE = """package suite

type BeforeTest interface {
	BeforeTest(suiteName, testName string)
}

type AfterTest interface {
	AfterTest(suiteName, testName string)
}

type SetupTest interface {
	SetupTest()
}
"""
GO_IMPL = """package suite

func (s *Tester) BeforeTest(suiteName, testName string) {
	s.before = append(s.before, testName)
}

func (s *Tester) AfterTest(suiteName, testName string) {
	s.after = append(s.after, testName)
}

func (s *Tester) SetupTest() {
	s.setup++
}

func (s *Tester) TestOne(testName string) {
	s.BeforeTest("x", testName)
}
"""


def test_a_parameter_added_to_interface_methods_reaches_their_implementations() -> None:
    """testify bf7a93e7: `, when time.Time` appended to `BeforeTest(…)` and `AfterTest(…)`
    of interfaces; the held-out test suite implements them as methods. Before, the rule
    named the interface's method elements only."""
    want = GO_IFACE.replace("testName string)", "testName string, when time.Time)")
    result = synthesize([Example(GO_IFACE, want, path="suite/interfaces.go")])
    assert result.apply(GO_IFACE)[0] == want
    assert result.apply(GO_IMPL)[0] == GO_IMPL.replace(
        "suiteName, testName string)", "suiteName, testName string, when time.Time)"
    )


GO_FORMAT = """package check

func HTTPOkf(t T, h Handler, url string) bool {
	return HTTPOk(t, h, url)
}

func HTTPFailf(t T, h Handler, url string, code int) bool {
	return HTTPFail(t, h, url, code)
}

func Equalf(t T, x string, y string, msg string, args ...any) bool {
	return Equal(t, x, y)
}
"""
GO_HELD = """package check

func (a *Checks) HTTPOkf(h Handler, url string) {
	HTTPOkf(a.t, h, url)
}

func (a *Checks) HTTPFailf(h Handler, url string, code int) {
	HTTPFailf(a.t, h, url, code)
}

func HTTPOk(t T, h Handler, url string) {
	if !HTTPOkf(t, h, url) {
		t.FailNow()
	}
}
"""


def test_two_parameters_appended_at_once_are_one_run() -> None:
    """testify 8de2544b: `, msg string, args ...interface{}` appended to the `HTTP…f`
    functions; the held-out files define them as methods too, beside `HTTPBodyContains`
    (no `f`) that keeps its list. Before, two items inserted at once were no append (no one
    node is the new text); now a run of items is one insertion, the names' shape keeps both
    of their ends (`HTTP\\w*f`), and a list that holds either item already is left alone."""
    want = GO_FORMAT.replace("url string) bool", "url string, msg string, args ...any) bool")
    want = want.replace("code int) bool", "code int, msg string, args ...any) bool")
    result = synthesize([Example(GO_FORMAT, want, path="check/format.go")])
    assert result.apply(GO_FORMAT)[0] == want
    got = result.apply(GO_HELD)[0]
    assert got == GO_HELD.replace(
        "HTTPOkf(h Handler, url string)", "HTTPOkf(h Handler, url string, msg string, args ...any)"
    ).replace("code int) {", "code int, msg string, args ...any) {")
    assert result.apply(got)[0] == got


GO_HTTP = """package check

func HTTPBody(t T, h Handler, values url.Values, str any, msgAndArgs ...any) bool {
	return contains(t, h, values, str)
}

func HTTPBodyf(t T, h Handler, values url.Values, str any, msg string, args ...any) bool {
	return contains(t, h, values, str)
}

func HTTPError(t T, h Handler, values url.Values, msgAndArgs ...any) bool {
	return failed(t, h, values)
}

func Regexp(t T, rx any, str any, msgAndArgs ...any) bool {
	return match(rx, str)
}
"""
GO_FORWARD = """package check

func (a *Checks) HTTPBody(h Handler, values url.Values, str any, msgAndArgs ...any) {
	HTTPBody(a.t, h, values, str, msgAndArgs...)
}

func (a *Checks) HTTPBodyf(h Handler, values url.Values, body io.Reader, str any, msg string, args ...any) {
	HTTPBodyf(a.t, h, values, body, str, msg, args...)
}

func (a *Checks) HTTPError(h Handler, values url.Values, msgAndArgs ...any) {
	HTTPError(a.t, h, values, msgAndArgs...)
}
"""


def test_a_parameter_inserted_after_a_named_go_parameter_in_methods_of_those_names() -> None:
    """testify 2adb7b54: `body io.Reader,` inserted after `values url.Values` in the
    `HTTPBody…` functions; the held-out file defines them as methods. Before, a Go parameter
    had no key (only `key: value` and `key=value` items placed an item in the middle of a
    list); now it is its name, and a list that holds a parameter of the new one's name is
    left alone. The kept `HTTPError` (it holds `values` too) and `Regexp` (it holds `str`)
    are the examples' negatives: the owner's names decide."""
    want = GO_HTTP.replace("values url.Values, str", "values url.Values, body io.Reader, str")
    result = synthesize([Example(GO_HTTP, want, path="check/http.go")])
    assert result.apply(GO_HTTP)[0] == want
    got = result.apply(GO_FORWARD)[0]
    assert got == GO_FORWARD.replace(
        "HTTPBody(h Handler, values url.Values, str",
        "HTTPBody(h Handler, values url.Values, body io.Reader, str",
    )


JS_FUNCS = """export function render(node, opts) {
  return draw(node, opts);
}

export function renderAll(nodes, opts) {
  return nodes.map((n) => render(n, opts));
}

function paint(node, opts) {
  return node;
}
"""
JS_CLASS = """export class View {
  render(node, opts) {
    return render(node, opts);
  }

  renderAll(nodes, opts) {
    return renderAll(nodes, opts);
  }

  paint(node, opts) {
    return node;
  }
}
"""


def test_javascript_functions_and_class_methods_of_one_name() -> None:
    """The same in JavaScript: a parameter appended to `function render(…)` and
    `function renderAll(…)` reaches the class's `render(…)` and `renderAll(…)` methods, not
    its `paint` (kept in the example) nor any call."""
    want = JS_FUNCS.replace("(node, opts) {\n  return draw", "(node, opts, ctx) {\n  return draw")
    want = want.replace("renderAll(nodes, opts) {", "renderAll(nodes, opts, ctx) {")
    result = synthesize([Example(JS_FUNCS, want, path="src/render.js")])
    assert result.apply(JS_FUNCS)[0] == want
    assert result.apply(JS_CLASS)[0] == JS_CLASS.replace(
        "  render(node, opts) {", "  render(node, opts, ctx) {"
    ).replace("renderAll(nodes, opts) {", "renderAll(nodes, opts, ctx) {")
