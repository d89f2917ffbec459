"""Wave 3u of issue 26: a renamed member reaches its other spellings (synth/members.py;
docs/synth.md § "A renamed member reaches its other spellings")."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_a_rust_method_renamed_at_its_definition_reaches_its_calls() -> None:
    """http 0072b9d2: `fn port(&self)` -> `fn port_part(&self)` in one file; the held-out
    `a.port()` (a `field_identifier`) kept the old name. A field of the same name is another
    member and stays; so does a local."""
    before = "impl Authority {\n    pub fn port(&self) -> Option<u16> {\n        None\n    }\n}\n"
    after = before.replace("fn port(", "fn port_part(")
    result = synthesize([Example(before, after, path="src/uri/authority.rs")])
    assert result.apply(before)[0] == after
    held = (
        "impl Uri {\n    pub fn port(&self) -> Option<u16> {\n"
        "        self.authority().and_then(|a| a.port())\n    }\n}\n"
    )
    want = held.replace("fn port(", "fn port_part(").replace("a.port()", "a.port_part()")
    assert result.apply(held)[0] == want
    field = "struct Conn {\n    port: u16,\n}\n\nfn f(c: Conn) -> u16 {\n    c.port\n}\n"
    assert result.apply(field)[0] == field
    # An example that keeps a call of another type's `port()`: the calls stay.
    kept = before + "\nfn g(u: &Url) -> Option<u16> {\n    u.port()\n}\n"
    result = synthesize([Example(kept, kept.replace("fn port(", "fn port_part("))])
    assert result.apply(held)[0] == held.replace("fn port(", "fn port_part(")


def test_a_go_field_renamed_reaches_composite_literal_keys() -> None:
    """resty d837dfc6: the field `pathParams` -> `PathParams` (declaration, `r.pathParams[…]`):
    the held-out `&Request{pathParams: …}` keys (an `identifier` there) were left. A map
    literal's key is a value, not the field, and stays."""
    before = (
        "package resty\n\ntype Request struct {\n\tpathParams map[string]string\n}\n\n"
        "func (r *Request) SetPathParam(p, v string) *Request {\n"
        "\tr.pathParams[p] = v\n\treturn r\n}\n"
    )
    after = before.replace("pathParams", "PathParams")
    result = synthesize([Example(before, after, path="request.go")])
    assert result.apply(before)[0] == after
    held = (
        "package resty\n\nfunc (c *Client) R() *Request {\n"
        "\tr := &Request{\n\t\tpathParams: map[string]string{},\n\t}\n\treturn r\n}\n\n"
        "func keys() map[string]int {\n\treturn map[string]int{pathParams: 1}\n}\n"
    )
    want = held.replace("\t\tpathParams: map", "\t\tPathParams: map")
    assert result.apply(held)[0] == want


def test_a_rust_method_renamed_at_calls_reaches_macro_arguments() -> None:
    """bytes 06907f3e: `.bytes()` -> `.chunk()`; the held-out `assert_eq!(buf.bytes(), …)` and
    a `fn bytes` in a `macro_rules!` body are token trees (an `identifier` after a `.` or
    `fn` token). A local `bytes` in a macro's arguments stays."""
    before = "fn next(&mut self) -> u8 {\n    let b = self.inner.bytes()[0];\n    b\n}\n"
    after = before.replace(".bytes()", ".chunk()")
    result = synthesize([Example(before, after, path="src/buf/iter.rs")])
    assert result.apply(before)[0] == after
    held = (
        'fn t() {\n    let bytes = 1;\n    assert_eq!(buf.bytes(), b"x");\n'
        "    assert_eq!(bytes, 1);\n}\n\n"
        "macro_rules! forward {\n    () => {\n        fn bytes(&self) -> &[u8] {\n"
        "            (**self).bytes()\n        }\n    };\n}\n"
    )
    want = (
        held.replace("buf.bytes()", "buf.chunk()")
        .replace("fn bytes(", "fn chunk(")
        .replace(").bytes()", ").chunk()")
    )
    assert result.apply(held)[0] == want


def test_a_rust_field_renamed_where_a_method_of_the_name_is_kept() -> None:
    """bytes 141cbc22: a vtable's field `to_vec: f` -> `into_vec: f` in a struct literal while
    the example keeps the slices' `.to_vec()` calls: the rename of every member `to_vec` was
    refused and the rule was the literal's key alone; the held-out field declaration and the
    uncalled access `(v.to_vec)(…)` kept the old name. The field's spellings apart from the
    method's: the calls stay."""
    before = (
        "static V: Vtable = Vtable {\n    to_vec: shared_to_vec,\n};\n\n"
        "fn copy(s: &[u8]) -> Vec<u8> {\n    s.to_vec()\n}\n"
    )
    after = before.replace("    to_vec: shared", "    into_vec: shared")
    result = synthesize([Example(before, after, path="src/bytes_mut.rs")])
    assert result.apply(before)[0] == after
    held = (
        "pub struct Vtable {\n    pub to_vec: unsafe fn(&[u8]) -> Vec<u8>,\n}\n\n"
        "fn f(b: &Bytes) -> Vec<u8> {\n    unsafe { (b.vtable.to_vec)(&b.data) }\n}\n\n"
        "fn g(s: &[u8]) -> Vec<u8> {\n    s.to_vec()\n}\n"
    )
    want = held.replace("pub to_vec:", "pub into_vec:").replace(".to_vec)", ".into_vec)")
    assert result.apply(held)[0] == want


def test_a_python_method_renamed_at_its_definition_reaches_self_calls() -> None:
    """marshmallow 8e0d9498: `def format(self, value)` -> `def _format(…)` in a test's field
    class; the example keeps `"<User {0}>".format(…)` (a string's method), so every
    `.format` is refused, and the held-out base class's `self.format(value)` kept the old
    name. The uses through the instance itself are renamed; another object's `.format` and
    a local stay."""
    before = (
        "class User:\n    def __repr__(self):\n"
        "        return '<User {0}>'.format(self.name)\n\n\n"
        "class Upper(fields.Raw):\n    def format(self, value):\n"
        "        return value.upper()\n"
    )
    after = before.replace("def format(", "def _format(")
    result = synthesize([Example(before, after, path="tests/test_schema.py")])
    assert result.apply(before)[0] == after
    held = (
        "class Raw:\n    def format(self, value):\n        return value\n\n"
        "    def _serialize(self, value):\n        return self.format(value)\n\n\n"
        "class Url(Raw):\n    def format(self, value):\n"
        "        format = self.src.format(value)\n"
        "        return super(Url, self).format(format)\n"
    )
    want = (
        held.replace("def format(", "def _format(")
        .replace("self.format(", "self._format(")
        .replace("self).format(", "self)._format(")
    )
    assert result.apply(held)[0] == want
