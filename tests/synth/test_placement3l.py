"""Wave 3l of issue 26 (synth26): lines added whose place is structural (class 3, "too
narrow") — each a small self-written reproduction of what a real commit did
(docs/synth.md § Where an added line goes)."""

from __future__ import annotations

from oopav.synth import Example, synthesize

GUARD = "\t\t\tif config.Skipper(c) {\n\t\t\t\treturn next(c)\n\t\t\t}\n"
HANDLER = "return func(c echo.Context) error {\n"


def _guarded(text: str, head: str = HANDLER, blank: str = "") -> str:
    return text.replace(head, head + GUARD + blank)


MIDDLEWARE_A = """package middleware

func GzipWithConfig(config GzipConfig) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			res := c.Response()
			res.Header().Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
			return next(c)
		}
	}
}

func helper(c echo.Context) error {
	c.Set("x", 1)
	return nil
}
"""

MIDDLEWARE_B = """package middleware

func CORSWithConfig(config CORSConfig) echo.MiddlewareFunc {
	allowOrigins := strings.Join(config.AllowOrigins, ",")
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Method != echo.OPTIONS {
				return next(c)
			}
			return c.NoContent(204)
		}
	}
}

func fromForm(param string) extractor {
	return func(c echo.Context) (string, error) {
		token := c.FormValue(param)
		return token, nil
	}
}
"""

HELD = """package middleware

func LoggerWithConfig(config LoggerConfig) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				log.Print(1)
			}()
			if err = next(c); err != nil {
				c.Error(err)
			}
			return
		}
	}
}

func fromQuery(param string) extractor {
	return func(c echo.Context) (string, error) {
		token := c.QueryParam(param)
		return token, nil
	}
}
"""


def test_a_guard_added_first_in_every_handler_whatever_its_first_statement() -> None:
    """echo's `if config.Skipper(c) { return next(c) }` added at the top of each
    middleware's handler (27f9b326b8): the handlers' first statements differ (`res := …`,
    `if …`, a `defer` in the held-out file) and a blank line follows the guard. Before, the
    rule was "before the first `res := …`" plus one rule per literal anchor, which reached
    no handler starting otherwise; now it is "first in the body of a function literal whose
    parameters bind `c`, inside one that binds `next`" — the names the guard uses — which
    leaves the extractors (`func(c echo.Context) (string, error)`, no `next` in scope)
    alone, as the examples do."""
    examples = [
        Example(MIDDLEWARE_A, _guarded(MIDDLEWARE_A, blank="\n"), path="compress.go"),
        Example(MIDDLEWARE_B, _guarded(MIDDLEWARE_B, blank="\n"), path="cors.go"),
    ]
    result = synthesize(examples)
    head = "return func(c echo.Context) (err error) {\n"
    want = _guarded(HELD, head, "\n")
    assert result.apply(HELD)[0] == want
    assert result.apply(want)[0] == want  # once


def test_a_guard_added_first_where_the_first_statements_are_of_one_kind() -> None:
    """The same guard with no blank line after it, every example handler starting with a
    `:=`: before, "before the first `:=` of the body" put the guard after the held-out
    handler's `defer` (its first `:=` came later) and into the extractors; now the
    anchors being first in their bodies is what the rule keeps."""
    a = MIDDLEWARE_A
    b = MIDDLEWARE_B.replace(
        "\t\t\tif c.Request().Method", "\t\t\treq := c.Request()\n\t\t\tif req.Method"
    )
    examples = [
        Example(a, _guarded(a), path="compress.go"),
        Example(b, _guarded(b), path="cors.go"),
    ]
    result = synthesize(examples)
    held = HELD.replace("\t\t\tif err = next(c)", "\t\t\tstart := now()\n\t\t\tif err = next(c)")
    want = _guarded(held, "return func(c echo.Context) (err error) {\n")
    assert result.apply(held)[0] == want


def test_a_statement_added_first_in_the_functions_that_take_its_name() -> None:
    """click's `color = resolve_color_default(color)` added at the top of the functions
    with a `color` parameter (695ca3406b), the example files' other functions kept. Before,
    the rule was every function but the kept ones by name (`def $A($$$B):` with `A` not
    `clear` or `style`), which put the line into `unstyle(text)` of another file, where
    `color` is not even bound; now it is the functions whose parameters bind `color`."""
    a = (
        "def echo(message, file=None, color=None):\n    if message is None:\n"
        "        return\n    out(message, file)\n\n\n"
        "def style(text, bold=False):\n    x = text.upper()\n    return x\n"
    )
    b = (
        "def pager(generator, color=None):\n    stdout = get_stdout()\n"
        "    return _pager(generator, stdout)\n\n\n"
        'def clear():\n    stdout = get_stdout()\n    stdout.write("x")\n'
    )
    line = "    color = resolve_color_default(color)\n"

    def add(text: str, head: str) -> str:
        return text.replace(head, head + line)

    examples = [
        Example(a, add(a, "color=None):\n"), path="utils.py"),
        Example(b, add(b, "color=None):\n"), path="termui.py"),
    ]
    result = synthesize(examples)
    held = (
        "def secho(message, color=None, **styles):\n"
        "    message = style(message, **styles)\n    return echo(message, color=color)\n\n\n"
        "def unstyle(text):\n    return strip(text)\n\n\n"
        "def edit(text, color=None):\n    for x in text:\n        print(x)\n"
    )
    want = add(add(held, "**styles):\n"), "edit(text, color=None):\n")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want
