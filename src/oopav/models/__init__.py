"""Model backends (scripted, replay, OpenAI-compatible, vLLM, transformers) and the prompt
contract. Everything here is cheap to import: torch, transformers, xgrammar and vllm load only
when a backend that needs them is built."""

from oopav.models.base import (
    Backend,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Sampling,
    model_called_fields,
    request_hash,
)
from oopav.models.prompt import (
    AgentState,
    AnswerError,
    CriticOutput,
    ParsedAnswer,
    PlanOutput,
    PlanStepOutput,
    StateUpdate,
    build_request,
    merge_state,
    output_schema,
    parse_answer,
    parse_role_answer,
    render_answer,
    retry_messages,
    static_prefix,
)
from oopav.models.registry import load_backend
from oopav.models.replay import ReplayBackend, first_difference
from oopav.models.scripted import ScriptedBackend

__all__ = [
    "AgentState",
    "AnswerError",
    "Backend",
    "CriticOutput",
    "Message",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ParsedAnswer",
    "PlanOutput",
    "PlanStepOutput",
    "ReplayBackend",
    "Sampling",
    "ScriptedBackend",
    "StateUpdate",
    "build_request",
    "first_difference",
    "load_backend",
    "merge_state",
    "model_called_fields",
    "output_schema",
    "parse_answer",
    "parse_role_answer",
    "render_answer",
    "request_hash",
    "retry_messages",
    "static_prefix",
]
