"""Grammars for constrained decoding, built from the msgspec-generated JSON schemas.

xgrammar is imported lazily (the ``[train]``/``[gpu]`` extras bring it). The same grammar serves
the ``hf:`` backend (as a logits processor), the in-process ``vllm:`` engine and a vLLM server
(as ``structured_outputs.grammar``), so every backend constrains the same language.
"""

from __future__ import annotations

import copy
import importlib
import json
from functools import lru_cache
from types import ModuleType
from typing import Any

from oopav.models.base import ModelError, ModelRequest

DEFAULT_THINK_CHARS = 2048


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency or fail with a one-line ``missing_dependency`` error."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelError(
            "missing_dependency",
            f"{module} is not installed; install it with `pip install 'oopav[{extra}]'` ({exc})",
        ) from exc


def bounded_schema(
    schema: dict[str, Any], *, max_string_length: int | None = None, max_items: int | None = None
) -> dict[str, Any]:
    """A copy of ``schema`` whose strings and arrays have an upper bound where none was set.

    Any output of the bounded schema is valid against the original; the bound guarantees that a
    constrained generation can close every string and array within its token budget (an
    unbounded string lets a weak model write until ``max_tokens`` and truncate).
    """
    if max_string_length is None and max_items is None:
        return schema
    out = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            kind = node.get("type")
            kinds = kind if isinstance(kind, list) else [kind]
            if (
                max_string_length is not None
                and "string" in kinds
                and not {"enum", "const", "pattern", "format"} & node.keys()
            ):
                # A pattern rather than maxLength: xgrammar 0.2.8 turns maxLength into a character
                # class that admits raw control characters, which no JSON decoder accepts. The
                # pattern leaves out quotes, backslashes and control characters altogether.
                low = int(node.pop("minLength", 0))
                high = max(
                    low, min(int(node.pop("maxLength", max_string_length)), max_string_length)
                )
                node["pattern"] = f'^[^"\\\\\\x00-\\x1f]{{{low},{high}}}$'
            if max_items is not None and "array" in kinds:
                node["maxItems"] = min(node.get("maxItems", max_items), max_items)
                if node.get("minItems", 0) > node["maxItems"]:
                    node["maxItems"] = node["minItems"]
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(out)
    return out


def request_grammar(
    request: ModelRequest,
    *,
    state_schema: dict[str, Any] | None = None,
    think_chars: int = DEFAULT_THINK_CHARS,
    max_string_length: int | None = None,
    max_items: int | None = None,
) -> Any:
    """The xgrammar ``Grammar`` for ``request``: the bare JSON document, or the full envelope
    ``<think>…</think>\\n<TAG>{json}</TAG>[\\n<state_update>{json}</state_update>]``."""
    if request.schema is None:
        raise ModelError("invalid_request", "constrained decoding needs request.schema")
    return _grammar_cached(
        json.dumps(request.schema, sort_keys=True),
        request.envelope,
        request.state_update,
        json.dumps(state_schema, sort_keys=True) if state_schema is not None else None,
        think_chars,
        max_string_length,
        max_items,
    )


@lru_cache(maxsize=64)
def _grammar_cached(
    schema_json: str,
    envelope: str | None,
    with_state: bool,
    state_json: str | None,
    think_chars: int,
    max_string_length: int | None,
    max_items: int | None,
) -> Any:
    xgr = require("xgrammar", "train")

    def json_grammar(schema: dict[str, Any]) -> Any:
        bounded = bounded_schema(schema, max_string_length=max_string_length, max_items=max_items)
        try:
            # Compact JSON: free whitespace would let a weak model pad forever.
            return xgr.Grammar.from_json_schema(json.dumps(bounded), any_whitespace=False)
        except Exception as exc:
            raise ModelError(
                "invalid_request", f"xgrammar cannot compile the schema: {exc}"
            ) from exc

    payload = json_grammar(json.loads(schema_json))
    if envelope is None:
        return payload
    _check_tag(envelope)
    if envelope == "action":  # or SEARCH/REPLACE text blocks, as the parser reads them
        from oopav.models.blocks import blocks_gbnf

        blocks = blocks_gbnf(max_line=max_string_length, max_lines=max_items, max_blocks=max_items)
        payload = xgr.Grammar.union(payload, xgr.Grammar.from_ebnf(blocks))
    parts = [
        xgr.Grammar.from_ebnf(
            f'root ::= "<think>" [^<]{{0,{think_chars}}} "</think>\\n<{envelope}>"'
        ),
        payload,
    ]
    if with_state:
        if state_json is None:
            from oopav.models.prompt import state_update_schema

            state = state_update_schema()
        else:
            state = json.loads(state_json)
        parts += [
            xgr.Grammar.from_ebnf(f'root ::= "</{envelope}>\\n<state_update>"'),
            json_grammar(state),
            xgr.Grammar.from_ebnf('root ::= "</state_update>"'),
        ]
    else:
        parts.append(xgr.Grammar.from_ebnf(f'root ::= "</{envelope}>"'))
    return xgr.Grammar.concat(*parts)


def request_ebnf(request: ModelRequest, **kwargs: Any) -> str:
    """The grammar as EBNF text (for vLLM's ``structured_outputs.grammar``)."""
    return str(request_grammar(request, **kwargs))


def _check_tag(tag: str) -> None:
    if not tag.replace("_", "").isalnum():
        raise ModelError("invalid_request", f"envelope tag {tag!r} must be alphanumeric")
