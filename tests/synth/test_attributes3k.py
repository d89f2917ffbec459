"""Wave 3k of issue 26 (synth20): an annotation added to (or removed from) definitions at
many sites — a Rust attribute line above an item, a Python return annotation — is learned
as one rule on the definition with its name abstracted, narrowed by what the definition
itself is (visibility, a `self` parameter, the impl it sits in, the attributes it already
has, what its body returns), the examples' unchanged definitions of the same kind being the
negatives (docs/synth.md § Annotations on definitions). Each a small self-written
reproduction of what a real commit did."""

from __future__ import annotations

from oopav.synth import Example, synthesize


def test_an_attribute_inserted_above_structs_lacking_attributes_is_one_rule() -> None:
    """http's `#[derive(Clone)]` added above `pub struct Request<T>` and `pub struct Parts`,
    kept off `Builder` (which has `#[derive(Debug)]`): learned as a rule per name
    (`^(?:Parts|Request)$`), which missed `Response`. The struct lacking any attribute is
    what tells the changed structs from the kept one."""
    before = (
        "/// A request.\npub struct Request<T> {\n    head: Parts,\n    body: T,\n}\n\n"
        "/// The head.\npub struct Parts {\n    pub method: Method,\n}\n\n"
        "/// A builder.\n#[derive(Debug)]\npub struct Builder {\n    inner: Result<Parts>,\n}\n"
    )
    after = before.replace("pub struct Request", "#[derive(Clone)]\npub struct Request").replace(
        "pub struct Parts", "#[derive(Clone)]\npub struct Parts"
    )
    result = synthesize([Example(before, after, path="request.rs")])
    held = (
        "/// A response.\npub struct Response<T> {\n    head: Parts,\n    body: T,\n}\n\n"
        "pub struct Parts {\n    pub status: StatusCode,\n}\n\n"
        "#[derive(Debug)]\npub struct Builder {\n    inner: Result<Parts>,\n}\n"
    )
    want = held.replace("pub struct Response", "#[derive(Clone)]\npub struct Response").replace(
        "pub struct Parts", "#[derive(Clone)]\npub struct Parts"
    )
    assert result.apply(held)[0] == want


def test_an_attribute_inserted_above_methods_is_narrowed_by_their_signature() -> None:
    """bytes' `#[inline]` added above the constructors of `impl Bytes` / `impl BytesMut`
    (`pub fn from_slice(…)`, `pub fn with_capacity(…)`: public, no `self`), kept off the
    methods (`pub fn len(&self)`) and the trait impls' `fn from(src: …)`: learned one rule
    per name. Public and without `self` tells them apart; a held-out constructor of another
    name gains it, a held-out method and trait function stay."""
    before = (
        "impl Bytes {\n"
        "    /// Copies.\n    pub fn from_slice(bytes: &[u8]) -> Bytes {\n        todo()\n    }\n\n"
        "    /// Length.\n    pub fn len(&self) -> usize {\n        self.len\n    }\n}\n\n"
        "impl From<Vec<u8>> for Bytes {\n    fn from(src: Vec<u8>) -> Bytes {\n        todo()\n    }\n}\n\n"
        "impl BytesMut {\n"
        "    /// With capacity.\n    pub fn with_capacity(cap: usize) -> BytesMut {\n        todo()\n    }\n\n"
        "    /// Is it empty.\n    pub fn is_empty(&self) -> bool {\n        self.len == 0\n    }\n}\n"
    )
    after = before.replace("    pub fn from_slice", "    #[inline]\n    pub fn from_slice").replace(
        "    pub fn with_capacity", "    #[inline]\n    pub fn with_capacity"
    )
    result = synthesize([Example(before, after, path="bytes.rs")])
    held = (
        "impl ByteBuf {\n"
        "    /// New.\n    pub fn new() -> ByteBuf {\n        ByteBuf::with_capacity(8)\n    }\n\n"
        "    pub fn from_bytes(bytes: BytesMut) -> ByteBuf {\n        todo()\n    }\n\n"
        "    pub fn capacity(&self) -> usize {\n        self.cap\n    }\n}\n\n"
        "impl From<ByteBuf> for Bytes {\n    fn from(src: ByteBuf) -> Bytes {\n        todo()\n    }\n}\n"
    )
    want = held.replace("    pub fn new", "    #[inline]\n    pub fn new").replace(
        "    pub fn from_bytes", "    #[inline]\n    pub fn from_bytes"
    )
    assert result.apply(held)[0] == want


def test_a_return_annotation_goes_on_the_definitions_that_return_nothing() -> None:
    """requests' `-> None` added to `def __init__(self):`, `def close(self):`, `def
    init_per_thread_state(self):` and kept off `def __enter__(self):` (`return self`) and
    `def __getstate__(self):`: learned one rule per function name. The body having no
    `return` with a value (nor a `yield`) is what the commit follows."""
    before = (
        "class Session:\n"
        "    def __init__(self):\n        self.headers = {}\n\n"
        "    def __enter__(self):\n        return self\n\n"
        "    def close(self):\n        for v in self.adapters.values():\n            v.close()\n\n"
        "    def __getstate__(self):\n        state = {a: 1 for a in self.attrs}\n        return state\n\n"
        "    def stream(self):\n        yield self.headers\n"
    )
    after = before.replace("def __init__(self):", "def __init__(self) -> None:").replace(
        "def close(self):", "def close(self) -> None:"
    )
    result = synthesize([Example(before, after, path="sessions.py")])
    held = (
        "class Response:\n"
        "    def __init__(self):\n        self._content = False\n\n"
        "    def raise_for_status(self):\n        if self.bad:\n            raise HTTPError()\n\n"
        "    def json(self):\n        return complexjson.loads(self.text)\n\n"
        "    def release(self):\n        if self.raw:\n            return\n        self.raw.close()\n"
    )
    want = (
        held.replace("def __init__(self):", "def __init__(self) -> None:")
        .replace("def raise_for_status(self):", "def raise_for_status(self) -> None:")
        .replace("def release(self):", "def release(self) -> None:")
    )
    assert result.apply(held)[0] == want


def test_a_decorator_added_above_methods_is_a_rule_on_the_method() -> None:
    """`@staticmethod` added above the methods that take no `self`, kept off the others: the
    inserted line was part of a rewrite of the whole class (the class literal, which no other
    class matches). It is a rewrite of the method now (`def $A($$$B)` -> `@staticmethod\\ndef
    $A($$$B)`), narrowed by the first parameter not being `self`."""
    before = (
        "class Codec:\n    def make(data):\n        return Codec(data)\n\n"
        "    def run(self, n):\n        return self.n + n\n\n"
        "    def build(raw, size):\n        return Codec(raw[:size])\n"
    )
    after = before.replace("    def make", "    @staticmethod\n    def make").replace(
        "    def build", "    @staticmethod\n    def build"
    )
    result = synthesize([Example(before, after, path="codec.py")])
    held = (
        "class Parser:\n    def parse(self, text):\n        return self.go(text)\n\n"
        "    def of(text, strict):\n        return Parser(text)\n\n"
        "    @classmethod\n    def new(cls):\n        return cls()\n"
    )
    want = held.replace("    def of", "    @staticmethod\n    def of")
    assert result.apply(held)[0] == want
