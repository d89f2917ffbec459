"""``synth:``: a policy that needs no model — it answers the planner and the actor from the
task's before/after examples with rules learned by :mod:`oopav.synth`.

It is a backend like any other: the handlers record every answer as ``model_called``, so replay
and ``--verify`` need no special case. Its answer is a pure function of the request (the
examples travel in the prompt's context as a JSON block, :func:`examples_block`), so a restarted
handler or a replay gets the same answer.

- planner: one step per learned rule (``Apply rule synth-N …``) and a last step that runs the
  tests, naming the test command the context gives (required tests are checked by the
  manifest: a test file or the test command); the test decision is orient's, read back from
  the context; the files are those the planner's context says the task points at (its
  manifest, for the plan adequacy gate).
- actor: for step N ≤ the number of rules, an ``ast_grep`` action with rule N over the whole
  repository; after that, ``finish``.
- no rule reproduces the examples (or no examples at all): a ``synthesis_failed`` error, which
  ends the session with the synthesiser's reason.
- ``synth:<spec>`` names a fallback model (``synth:openai:http://host/v1#qwen``): where synth
  has no answer (the error above, or the critic's role) the fallback answers, and
  ``model_called.backend`` says so: ``<spec> (fallback of synth: <reason>)``.
- critic, with no fallback: a verdict by rules over the review pack (models/synth_critic.py):
  a failed gate blocks, a source change without tests or a passing tests gate is a caution.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from typing import Any

import msgspec

from oopav.models.base import (
    Backend,
    ModelError,
    ModelRequest,
    ModelResponse,
    estimate_tokens,
    prompt_token_estimate,
)

EXAMPLES_HEADER = "### Examples (before/after pairs, JSON)"
_STEP = re.compile(r"^Current step: (\d+) of (\d+)$", re.M)
_REPLAN = "### Why we are planning again"
_TEST_COMMAND = re.compile(r"^### Test command(?: \(detected\))?\n(.+)$", re.M)
_DECISION = re.compile(r"\btest_decision=(required|recommended|optional|deferred|skip)\b")


def examples_block(examples: Iterable[Any]) -> str:
    """The context section that carries a task's examples (objects with ``before``, ``after``
    and ``path``, or dicts): one line of JSON, readable by models and by this backend."""
    items = []
    for e in examples:
        get = e.get if isinstance(e, dict) else lambda k, e=e: getattr(e, k, None)
        item = {"before": get("before"), "after": get("after")}
        if get("path"):
            item["path"] = get("path")
        if get("partial") is True:
            item["partial"] = True  # only when set: the prompts of other tasks stay the same
        keep = get("keep")
        if keep:
            item["keep"] = list(keep)
        items.append(item)
    if not items:
        return ""
    return EXAMPLES_HEADER + "\n" + json.dumps(items, ensure_ascii=False)


def examples_from_request(request: ModelRequest) -> list[dict[str, Any]]:
    """The examples block of the request's user message (the first one after ``## Context``)."""
    for m in request.messages:
        if m.role != "user":
            continue
        at = m.content.find("## Context\n")
        at = m.content.find(EXAMPLES_HEADER + "\n", max(at, 0))
        if at < 0:
            continue
        start = at + len(EXAMPLES_HEADER) + 1
        try:
            data, _ = json.JSONDecoder().raw_decode(m.content, start)
        except json.JSONDecodeError:
            continue
        if isinstance(data, list):
            return [d for d in data if isinstance(d, dict)]
    return []


class SynthBackend:
    """``synth:`` (no argument)."""

    def __init__(self, spec: str = "synth:", *, fallback: Backend | None = None) -> None:
        self.spec = spec
        from oopav.models.capabilities import DECLARED

        # The fallback decodes when no rule fits: its capabilities are the session's.
        self.capabilities = getattr(fallback, "capabilities", None) or DECLARED["synth"]
        self.fallback = fallback

    async def complete(self, request: ModelRequest) -> ModelResponse:
        try:
            return await self._complete(request)
        except ModelError as exc:
            if self.fallback is None or exc.kind not in ("synthesis_failed", "invalid_request"):
                raise
            # Hand over, and say so: the event names the backend that answered and why.
            response = await self.fallback.complete(request)
            why = exc.message if len(exc.message) <= 160 else exc.message[:159] + "…"
            return msgspec.structs.replace(
                response,
                backend=f"{response.backend or self.fallback.spec} (fallback of synth: {why})",
            )

    async def aclose(self) -> None:
        if self.fallback is not None:
            await self.fallback.aclose()

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        from oopav.models.prompt import render_answer
        from oopav.synth import SynthesisError, synthesize

        t0 = time.perf_counter()
        if request.role == "critic" and self.fallback is None:
            # No model to hand over to: the rule-based reviewer (models/synth_critic.py).
            from oopav.models.synth_critic import review

            pack = "\n".join(m.content for m in request.messages if m.role == "user")
            text = render_answer("verdict", review(pack), think="rules over the review pack")
            return ModelResponse(
                text=text,
                prompt_tokens=prompt_token_estimate(request),
                completion_tokens=estimate_tokens(text),
                latency_ms=round((time.perf_counter() - t0) * 1000, 3),
            )
        if request.role not in ("planner", "actor"):
            raise ModelError(
                "invalid_request", f"synth: answers the planner and the actor, not {request.role}"
            )
        examples = examples_from_request(request)
        if not examples:
            raise ModelError(
                "synthesis_failed",
                "the task has no before/after examples; synth: learns its rules from them "
                "(add `examples` to the task or choose another model)",
            )
        try:
            result = synthesize(examples)
        except SynthesisError as exc:
            raise ModelError("synthesis_failed", exc.reason) from None
        except ValueError as exc:
            raise ModelError("synthesis_failed", str(exc)) from None
        context = "\n".join(m.content for m in request.messages if m.role == "user")
        if request.role == "planner" and _REPLAN in context:
            # The learned rules were planned (and usually applied) already; a second plan would
            # only repeat them. Say why the loop came back instead.
            why = context.split(_REPLAN, 1)[1].split("\n", 2)
            reason = why[1].strip() if len(why) > 1 else "a replan"
            raise ModelError(
                "synthesis_failed",
                f"the rules learned from the examples did not finish the task ({reason[:300]}); "
                "synth: has no other plan",
            )
        if request.role == "planner":
            text = self._plan(result, context, render_answer)
        else:
            text = self._act(result, context, render_answer)
        return ModelResponse(
            text=text,
            prompt_tokens=prompt_token_estimate(request),
            completion_tokens=estimate_tokens(text),
            latency_ms=round((time.perf_counter() - t0) * 1000, 3),
        )

    @staticmethod
    def _plan(result: Any, context: str, render: Any) -> str:
        m = _DECISION.search(context)
        decision = m.group(1) if m else "optional"
        files = pointed_files(context)
        rules = result.loop_rules()
        # A rewrite that needs an import breaks the tests until its follow-up (a later step)
        # adds it: the observer compares at the follow-up, not in between. An import inserted
        # by several rules (one per place in the import block: wave 3k, the sections) reaches
        # some files only at its last rule: the rules before the last follow-up may fail too.
        last = max((i for i, r in enumerate(rules, 1) if r.follow_up == "import"), default=0)
        steps: list[dict[str, Any]] = [
            {
                "id": i,
                "description": f"Apply rule {r.id} ({describe(r)}) to every {r.language} file",
                "files": files,
                **({"tests_may_fail": True} if i < last else {}),
            }
            for i, r in enumerate(rules, 1)
        ]
        command = _TEST_COMMAND.search(context)
        run = f" (`{command.group(1).strip()}`)" if command else ""
        steps.append(
            {"id": len(steps) + 1, "description": f"Run the tests{run} and check they still pass"}
        )
        plan = {
            "steps": steps,
            "files": files,
            "test_decision": decision,
            "rationale": (
                f"synth: {len(result.loop_rules())} ast-grep rule(s) learned from the examples "
                "reproduce "
                f"all {result.examples_reproduced} of them exactly"
                + ("; " + "; ".join(result.notes) if result.notes else "")
            ),
        }
        return render(
            "plan",
            plan,
            think="Rules learned from the task's before/after examples.",
            state_update={"decisions": [f"synth rule set of {len(result.loop_rules())} rule(s)"]},
        )

    @staticmethod
    def _act(result: Any, context: str, render: Any) -> str:
        steps = _STEP.findall(context)
        step = int(steps[-1][0]) if steps else 1
        last = _last_result(context)
        if last is not None and ": rejected (" in last:
            raise ModelError(
                "synthesis_failed",
                f"the rule learned for step {step} was refused: {last[2:300]}",
            )
        rules = result.loop_rules()
        if step <= len(rules):
            rule = rules[step - 1]
            action: dict[str, Any] = rule.as_action()
            think = f"Step {step}: apply {rule.id} ({describe(rule)})."
            history = f"applied {rule.id}"
        else:
            action = {
                "type": "finish",
                "summary": f"Applied {len(rules)} rule(s) learned from the examples.",
            }
            think = "Every learned rule is applied; the verifier runs the done gates."
            history = "finished"
        return render("action", action, think=think, state_update={"history": history})


POINTED_HEADER = "### Files the task points at"


def pointed_files(context: str) -> list[str]:
    """The files the planner's context says the task points at (the planner's
    ``### Files the task points at`` section): the synth plan's manifest."""
    _, sep, rest = context.partition(POINTED_HEADER + "\n")
    if not sep:
        return []
    out = []
    for line in rest.split("\n\n", 1)[0].splitlines():
        if line.startswith("- ") and not line.startswith("- … and "):
            out.append(line[2:].strip())
    return out


def _last_result(context: str) -> str | None:
    """The latest line of the actor context's ``### Recent results`` section."""
    _, sep, rest = context.partition("### Recent results\n")
    if not sep:
        return None
    section = rest.split("\n### ", 1)[0]
    bullets = [ln for ln in section.splitlines() if ln.startswith("- ")]
    return bullets[-1] if bullets else None


def describe(rule: Any) -> str:
    r = rule.rule
    if getattr(rule, "expand_start", None) or getattr(rule, "expand_end", None):
        # A statement deletion (docs/synth.md): the fix is the neighbouring statement.
        what = r.get("pattern") or r.get("regex", "").strip("^$").replace(chr(92), "")
        if isinstance(what, dict):
            what = what.get("context", "")
        return f"delete {what!r}"
    pattern = r.get("pattern")
    if pattern == "$ANCHOR":  # a statement insertion (docs/synth.md)
        new = rule.fix.replace("$ANCHOR", "").strip()
        # An import re-anchored to the import block names its kinds in `any` (wave 3h).
        kinds = [a["kind"] for a in r.get("any", []) if isinstance(a, dict) and "kind" in a]
        return f"insert {new!r} next to a {r.get('kind') or (kinds[:1] or ['statement'])[0]}"
    if "regex" in r:
        return f"rename {r['regex'].strip('^$').replace(chr(92), '')} to {rule.fix}"
    if isinstance(pattern, dict):
        pattern = pattern.get("selector", "")
    return f"{pattern} -> {rule.fix}"
