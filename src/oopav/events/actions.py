"""The actions an actor model may propose: one source of truth for the wire format, the
JSON schemas given to constrained decoders, and the sandbox's inputs."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta


class _ActionBase(
    msgspec.Struct, tag_field="type", kw_only=True, forbid_unknown_fields=True, frozen=True
):
    @property
    def type(self) -> str:
        return self.__struct_config__.tag  # type: ignore[return-value]  # every action class sets a str tag


class AstGrepAction(_ActionBase, tag="ast_grep", frozen=True):
    """A structural rewrite. Either a full YAML ``rule`` (id, language, rule, fix, constraints,
    transform) or the short form ``pattern`` + ``rewrite`` + ``language``."""

    rule: str | None = None
    pattern: str | None = None
    rewrite: str | None = None
    language: str | None = None
    paths: list[str] = msgspec.field(default_factory=lambda: ["."])


class SearchReplaceEdit(
    msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True, omit_defaults=True
):
    path: str
    search: str
    replace: str
    # The file's context hash as the actor's context showed it (``@1a2b3c4d`` in a text block):
    # a block written against text that has changed since is refused as ``stale_context``.
    # Omitted when unset, so edits recorded before it encode (and hash) as they did.
    # A plain string in the schema: a length bound would cost constrained decoders a
    # character-by-character rule; a malformed hash simply never matches (stale_context).
    context_hash: str | None = None


class SearchReplaceAction(_ActionBase, tag="search_replace", frozen=True):
    """SEARCH/REPLACE blocks: each SEARCH must match exactly once, indentation exact."""

    edits: Annotated[list[SearchReplaceEdit], Meta(min_length=1)]


class WriteFileAction(_ActionBase, tag="write_file", frozen=True):
    path: str
    content: str


class RunCommandAction(_ActionBase, tag="run_command", frozen=True):
    argv: Annotated[list[str], Meta(min_length=1)]
    timeout_s: Annotated[float, Meta(gt=0, le=3600)] = 60.0
    scopes: list[str] = msgspec.field(default_factory=list)


class FinishAction(_ActionBase, tag="finish", frozen=True):
    summary: str


class AskAction(_ActionBase, tag="ask", frozen=True):
    """Ask a person (``human_input_requested``, answered with ``oopav answer``). A question
    like one answered before in the session or its mission is answered from that instead."""

    question: str  # a blank one is refused when the actor handles it (no length bound: see above)
    options: list[str] = msgspec.field(default_factory=list)


class ReadFileAction(_ActionBase, tag="read_file", frozen=True):
    """Read-only: lines ``start_line``..``end_line`` (1-based, inclusive) of a workspace file.
    Needs no grant; the text comes back as the step's result."""

    path: str
    start_line: Annotated[int, Meta(ge=1)] = 1
    end_line: Annotated[int, Meta(ge=1)] | None = None


class SearchAction(_ActionBase, tag="search", frozen=True):
    """Read-only: the workspace lines matching ``pattern`` (a regular expression when
    ``regex``, else plain text), as ``path:line: text``. Needs no grant."""

    pattern: Annotated[str, Meta(min_length=1, max_length=500)]
    paths: list[str] = msgspec.field(default_factory=lambda: ["."])
    regex: bool = False
    max_results: Annotated[int, Meta(ge=1, le=500)] = 50


Action = (
    AstGrepAction
    | SearchReplaceAction
    | WriteFileAction
    | RunCommandAction
    | FinishAction
    | ReadFileAction
    | SearchAction
    | AskAction
)
ACTION_TYPES: tuple[type, ...] = (
    AstGrepAction,
    SearchReplaceAction,
    WriteFileAction,
    RunCommandAction,
    FinishAction,
    ReadFileAction,
    SearchAction,
    AskAction,
)
READ_ONLY_ACTIONS: tuple[str, ...] = ("read_file", "search")
# Actions that change no file and complete no plan step (read-only retrieval, a question).
INFORMING_ACTIONS: tuple[str, ...] = (*READ_ONLY_ACTIONS, "ask")

_ACTION_DECODER = msgspec.json.Decoder(Action)


def decode_action(data: bytes | str) -> Action:
    """Strictly decode an action from JSON; raises ``msgspec.ValidationError`` /
    ``msgspec.DecodeError`` with a message naming the offending field."""
    return _ACTION_DECODER.decode(data)


def action_to_builtins(action: Action) -> dict[str, Any]:
    return msgspec.to_builtins(action)


def action_json_schema() -> dict[str, Any]:
    """The JSON schema of the action union, with definitions inlined under ``$defs``."""
    return msgspec.json.schema(Action)


def action_hash(action: Action) -> str:
    """A canonical hash of an action (type and arguments) for stuck detection."""
    import hashlib

    canon = msgspec.json.encode(msgspec.to_builtins(action), order="sorted")
    return hashlib.sha256(canon).hexdigest()[:16]
