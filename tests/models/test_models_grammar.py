from __future__ import annotations

import re

import pytest

from oopav.models import Message, ModelError, ModelRequest, output_schema
from oopav.models.grammar import bounded_schema, request_ebnf


def test_bounded_schema_bounds_strings_and_arrays_without_loosening() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "minLength": 2},
            "b": {"type": "array", "items": {"type": "string"}, "maxItems": 1},
            "c": {"enum": ["x", "y"], "type": "string"},
            "d": {"type": "array", "minItems": 5},
        },
    }
    out = bounded_schema(schema, max_string_length=8, max_items=3)
    a = out["properties"]["a"]
    assert "minLength" not in a and re.fullmatch(a["pattern"], "ab")
    assert not re.fullmatch(a["pattern"], "a") and not re.fullmatch(a["pattern"], "a" * 9)
    assert not re.fullmatch(a["pattern"], 'a"b') and not re.fullmatch(a["pattern"], "a\tb")
    assert out["properties"]["b"]["maxItems"] == 1
    assert "pattern" not in out["properties"]["c"]
    assert out["properties"]["d"]["maxItems"] == 5  # never below minItems
    assert schema["properties"]["a"] == {"type": "string", "minLength": 2}  # input untouched


def test_envelope_ebnf_for_vllm() -> None:
    pytest.importorskip("xgrammar")
    req = ModelRequest(
        role="actor",
        messages=[Message(role="user", content="x")],
        schema=output_schema("actor"),
        envelope="action",
    )
    ebnf = request_ebnf(req)
    assert '"<think>"' in ebnf and '"</action>\\n<state_update>"' in ebnf
    assert '"</state_update>"' in ebnf
    with pytest.raises(ModelError) as info:
        request_ebnf(
            ModelRequest(role="actor", messages=[], schema={"type": "object"}, envelope="a b")
        )
    assert info.value.kind == "invalid_request"
