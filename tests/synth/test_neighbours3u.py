"""Wave 3u of issue 26: an item inserted between two items of one-item-per-line lists,
placed by its neighbours rather than by the list's owner — each a small self-written
reproduction of what a real commit did (docs/synth.md § An item inserted beside a named
sibling)."""

from __future__ import annotations

from oopav.synth import Example, synthesize

RS_BUILDER = """fn builder() -> Builder {
    Builder {
        h1_parser_config: Default::default(),
        h1_title_case: false,
        h1_preserve_case: false,
        #[cfg(feature = "ffi")]
        h1_order: false,
    }
}
"""
RS_STATE = """fn state() -> State {
    State {
        method: None,
        h1_parser_config: ParserConfig::default(),
        #[cfg(feature = "server")]
        h1_timeout: None,
    }
}
"""
RS_HELD = """fn ctx(h1_parser_config: ParserConfig) -> ParseContext {
    ParseContext {
        req_method: &mut None,
        h1_parser_config,
        h1_timeout: None,
    }
}

fn server() -> Http1Builder {
    Http1Builder {
        h1_parser_config: Default::default(),
        h1_preserve_case: false,
        h1_writev: None,
    }
}
"""


def test_a_field_placed_after_the_first_neighbour_key_the_examples_rank() -> None:
    """hyper b1142448: `h1_max_headers: None,` after `h1_preserve_header_case` in a builder
    (which also holds `h1_parser_config`) and after `h1_parser_config` in another struct.
    Before, each rule kept its struct's name (`Builder|State`) and the second wrote the
    field after `h1_parser_config` of the builder too, so nothing was learned; now a decision
    list: after `h1_preserve_case`, else after `h1_parser_config` (its shorthand too), in
    any struct literal."""
    examples = [
        Example(
            RS_BUILDER,
            RS_BUILDER.replace(
                "h1_preserve_case: false,\n", "h1_preserve_case: false,\n        h1_max: None,\n"
            ),
            path="src/client.rs",
        ),
        Example(
            RS_STATE,
            RS_STATE.replace(
                "ParserConfig::default(),\n",
                "ParserConfig::default(),\n        h1_max: None,\n",
            ),
            path="src/conn.rs",
        ),
    ]
    result = synthesize(examples)
    want = RS_HELD.replace(
        "        h1_parser_config,\n", "        h1_parser_config,\n        h1_max: None,\n"
    ).replace("h1_preserve_case: false,\n", "h1_preserve_case: false,\n        h1_max: None,\n")
    assert result.apply(RS_HELD)[0] == want
    assert result.apply(want)[0] == want  # not twice


TS_DRIVER = """export default defineDriver((opts) => {
  const getClient = () => make(opts);
  return {
    name: DRIVER_NAME,
    options: opts,
    async hasItem(key) {
      return await getClient().has(key);
    },
    getItem(key) {
      return getClient().get(key);
    },
  };
});
"""


def test_a_member_placed_before_the_method_it_precedes_where_its_other_neighbour_is_missing() -> (
    None
):
    """unstorage d23cba50: `getInstance: getClient,` between `options: opts` and `async
    hasItem(key) {…}` of the object each driver returns; a held-out driver's object has no
    `options`. Before, no owner was near (a callback's return), so nothing was learned; now
    after `options`, else before the member `hasItem` (with or without `async`)."""
    other = TS_DRIVER.replace("make(opts)", "connect(opts.url)")
    insert = ("    options: opts,\n", "    options: opts,\n    getInstance: getClient,\n")
    result = synthesize(
        [
            Example(TS_DRIVER, TS_DRIVER.replace(*insert), path="src/drivers/a.ts"),
            Example(other, other.replace(*insert), path="src/drivers/b.ts"),
        ]
    )
    held = (
        "export default defineDriver((opts) => {\n  return {\n    name: DRIVER_NAME,\n"
        "    hasItem(key) {\n      return getClient().exists(key);\n    },\n  };\n});\n"
    )
    want = held.replace("    hasItem(key)", "    getInstance: getClient,\n    hasItem(key)")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want


GO_CLIENT = """package resty

type Client struct {
\tHostURL   string
\tUnmarshal func(data []byte) error

\thttpClient *http.Client
\tnotParse   bool
}
"""
GO_REQUEST = """package resty

type Request struct {
\tURL      string
\tnotParse bool
\toutput   string
}
"""
GO_HELD = """package resty

type Request struct {
\tURL          string
\tnotParse     bool
\toutputFile   string
\tfallbackType string
}
"""


def test_a_go_field_takes_its_padding_from_its_neighbour() -> None:
    """resty fb0aa817: `jsonEscapeHTML bool` added before `httpClient` of the client (a
    struct that also has `notParseResponse`) and after `notParseResponse` of a request,
    each padded to its block's type column. Before, the two insertions differed in their
    spaces and Go's field lists have no commas: nothing was learned; now a decision list
    (before `httpClient`, else after `notParse`) whose padding comes from the neighbour
    (gofmt's column), not from the example's count of spaces."""
    result = synthesize(
        [
            Example(
                GO_CLIENT,
                GO_CLIENT.replace("\thttpClient", "\tescape     bool\n\thttpClient"),
                path="client.go",
            ),
            Example(
                GO_REQUEST,
                GO_REQUEST.replace("\tnotParse bool\n", "\tnotParse bool\n\tescape   bool\n"),
                path="request.go",
            ),
        ]
    )
    want = GO_HELD.replace("\tnotParse     bool\n", "\tnotParse     bool\n\tescape       bool\n")
    assert result.apply(GO_HELD)[0] == want
    assert result.apply(want)[0] == want


PY_CLIENT = """class Client:
    def __init__(
        self,
        auth=None,
        http2: bool = False,
        proxies: typing.Optional[P] = None,
        timeout: float = 5.0,
    ):
        self._proxies = self._proxy_map(proxies, True)

    def _transport(
        self,
        http2: bool = False,
        limits: int = 10,
    ):
        return Transport(http2=http2, limits=limits)

    def _proxy_map(self, proxies: P, allow_env: bool):
        return {}


class AsyncClient:
    def __init__(
        self,
        auth=None,
        http2: bool = False,
        proxies: typing.Optional[P] = None,
        timeout: float = 5.0,
    ):
        pass
"""


def test_a_parameter_placed_before_the_one_it_precedes_where_the_examples_keep_the_other() -> None:
    """httpx f8981f3d: `proxy: … = None,` between `http2` and `proxies` of both clients'
    `__init__`; the held-out module's functions have `proxies` but no `http2`. Before, the
    rule was "after `http2` in functions named `__init__`"; a constructor's name is every
    class's, and a kept function with `http2` says the item is not placed by `http2`: now
    before `proxies` (a parameter with a default, as the examples show it)."""
    insert = (
        "        http2: bool = False,\n        proxies",
        "        http2: bool = False,\n        proxy: typing.Optional[X] = None,\n        proxies",
    )
    result = synthesize([Example(PY_CLIENT, PY_CLIENT.replace(*insert), path="httpx/_client.py")])
    held = (
        "def request(\n    method: str,\n    auth=None,\n    proxies: typing.Optional[P] = None,\n"
        "    timeout: float = 5.0,\n):\n    return 1\n"
    )
    want = held.replace("    proxies", "    proxy: typing.Optional[X] = None,\n    proxies")
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want


def test_two_names_inserted_together_after_one() -> None:
    """http 1fad3eae: `CACHE_STATUS, CDN_CACHE_CONTROL` inserted after `CACHE_CONTROL` of a
    `pub use …::{…}` list and of a constant array. Before, two items at once were no list
    item and each example's whole list was the rule; now the run of names follows the name
    in any list of those kinds."""
    uses = "pub use self::name::{\n    ALT_SVC,\n    CACHE_CONTROL,\n    CONNECTION,\n};\n"
    std = "const STD: &[HeaderName] = &[\n    ALT_SVC,\n    CACHE_CONTROL,\n    CONNECTION,\n];\n"
    insert = ("    CACHE_CONTROL,\n", "    CACHE_CONTROL,\n    CACHE_STATUS,\n    CDN_CONTROL,\n")
    result = synthesize(
        [
            Example(uses, uses.replace(*insert), path="src/header/mod.rs"),
            Example(std, std.replace(*insert), path="benches/basic.rs"),
        ]
    )
    held = (
        "const STD: &'static [HeaderName] = &[\n    AUTHORIZATION,\n    CACHE_CONTROL,\n"
        "    CONNECTION,\n    DATE,\n];\n"
    )
    want = held.replace(*insert)
    assert result.apply(held)[0] == want
    assert result.apply(want)[0] == want
