"""Removals learned where they happen (issue 26, wave 3k synth23): a small piece removed —
a call-chain member, a postfix operator, a parameter — learned at the smallest node that
holds it. Self-written examples only; each test fails on the branch start (4255039)."""

from __future__ import annotations

from oopav.synth import Example, synthesize

RUST = """fn from_bytes(s: Bytes) -> Result<Self, Error> {
    let end = Parser::parse_all(&s[..]).map_err(Wrapped)?;
    Ok(end)
}

/*
fn try_from(s: Bytes) -> Result<Self, Error> {
    let end = Parser::parse_all(&s[..]).map_err(Wrapped)?;
    Ok(end)
}
*/
"""

RUST_HELD = """fn parse_full(s: Bytes) -> Result<Uri, Error> {
    let scheme = Scheme::parse(&s[..]).map_err(Wrapped)?;
    let rest = Authority::parse(&s[5..]).map_err(Wrapped)?;
    Ok(build(scheme, rest))
}
"""


def test_commented_out_code_edited_too_is_left_out() -> None:
    """http's `.map_err(InvalidUriBytes)` removed from a call and from the same call in a
    `/* … */` block (hyperium/http db9b1b9a76). Before: "example 1 also changes whitespace
    or comments outside the rewritten code", no rule. The comment's edit is left out (said
    in a note) and the chain member's removal is learned from the code."""
    after = RUST.replace(".map_err(Wrapped)", "")
    result = synthesize([Example(RUST, after, path="src/uri/authority.rs")])
    kept_comment = after.replace(
        "/*\nfn try_from(s: Bytes) -> Result<Self, Error> {\n    let end = Parser::parse_all(&s[..])?;",
        "/*\nfn try_from(s: Bytes) -> Result<Self, Error> {\n    let end = "
        "Parser::parse_all(&s[..]).map_err(Wrapped)?;",
    )
    assert result.apply(RUST)[0] == kept_comment
    assert any("inside comments" in n for n in result.notes)
    assert result.apply(RUST_HELD)[0] == RUST_HELD.replace(".map_err(Wrapped)", "")


TS = """export function merge(defaults: Defaults, value: Options): Handler[] {
\tconst handlers: Handler[] = [...defaults.rawHandlers!];
\tif (value.extend) {
\t\thandlers.push(...value.defaults.rawHandlers!);
\t}
\treturn handlers;
}
"""

TS_HELD = """test('prefix', t => {
\tconst b = a.extend({prefixUrl: 'https://example.com/'});
\tt.is(b.defaults.options.prefixUrl!.toString(), 'https://example.com/');
\tconst c = (options!);
});
"""


def test_postfix_operator_removed_is_closed_by_shape_not_place() -> None:
    """got's non-null `!` removed from two member expressions that both sit in spread
    arguments (sindresorhus/got 71b8452efc). Before: `$A!` inside `spread_element`, which
    missed the held-out `prefixUrl!.toString()`. The removed operator is what the rule is
    about: closed by the shape the sites bind (a member expression), not by where they sit
    — `(options!)`, an identifier, is left alone."""
    after = TS.replace("!]", "]").replace("!)", ")")
    result = synthesize([Example(TS, after, path="source/create.ts")])
    assert result.apply(TS)[0] == after
    assert result.apply(TS_HELD)[0] == TS_HELD.replace("prefixUrl!", "prefixUrl")


EXPRESS = """function load(req, res, next) {
  db.load(function(err, items){
    if (err) return next(err);
    req.items = items;
    next();
  });
}

app.get('/', function(req, res, next){
  if (!req.user) return next();
  res.render('home');
});

app.get('/items', load, function(req, res, next){
  res.render('items', { items: req.items });
});

app.get('/items/count', load, function(req, res, next){
  res.send(String(req.items.length));
});
"""

EXPRESS_HELD = """app.get('/api/users', function(req, res, next){
  res.send(users);
});

app.use(function(req, res, next){
  if (!req.query.key) return next(error(400, 'api key required'));
  next();
});

app.use(function(err, req, res, next){
  res.status(err.status || 500);
});
"""


def test_unused_parameter_removed_where_the_body_never_names_it() -> None:
    """express's `next` removed from route handlers whose bodies never call it, kept where
    they do (expressjs/express 3c1d605da7). Before: the handlers' argument position
    (`nthChild: 4`), which missed a handler passed second. The body not naming the
    parameter is the context; the arity the sites show is kept (an error handler's
    `(err, req, res, next)` is left alone)."""
    after = EXPRESS.replace(
        "'/items', load, function(req, res, next)", "'/items', load, function(req, res)"
    ).replace("count', load, function(req, res, next)", "count', load, function(req, res)")
    result = synthesize([Example(EXPRESS, after, path="examples/view-locals/index.js")])
    assert result.apply(EXPRESS)[0] == after
    want = EXPRESS_HELD.replace(
        "'/api/users', function(req, res, next)", "'/api/users', function(req, res)"
    )
    assert result.apply(EXPRESS_HELD)[0] == want


FASTIFY = """'use strict'

const { kReply, kRequest } = require('./symbols')
const { FSTDEP010, FSTDEP013, FSTDEP019 } = require('./warnings')

function send (reply) {
  FSTDEP013()
  return reply[kReply]
}

module.exports = { send, kRequest, FSTDEP019 }
"""

FASTIFY_HELD = """const t = require('tap')
const { FSTDEP010, FSTDEP021 } = require('../../lib/warnings')
const { kReply } = require('../../lib/symbols')
"""


def test_list_item_removed_with_the_rest_of_the_list_any_length() -> None:
    """fastify's `FSTDEP010` removed from a destructuring of four names (fastify/fastify
    2c2339b846). Before: `const { FSTDEP010, $A, $B } = $D`, three names exactly, which
    missed the held-out destructuring of two. The kept items are a list metavariable."""
    after = FASTIFY.replace("{ FSTDEP010, FSTDEP013", "{ FSTDEP013")
    result = synthesize([Example(FASTIFY, after, path="lib/reply.js")])
    assert result.apply(FASTIFY)[0] == after
    assert result.apply(FASTIFY_HELD)[0] == FASTIFY_HELD.replace("FSTDEP010, ", "")
    # The one example's items spelt out (`$A, $B`) are not "a more general rule".
    assert not any("more general" in n for n in result.notes)
