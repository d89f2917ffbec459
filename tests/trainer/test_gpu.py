"""The GPU path (marked ``gpu``; skipped without a CUDA device, so CI never runs it).

Every test here asserts that the work ran on the device (CUDA memory was allocated by it), not
only that it finished: ``use_cpu`` quietly falls back to the CPU when no device is found.

- SFT with every loss term at once (prompt loss, name augmentation, negatives and DPO pairs,
  both scored under copy-constrained decoding) — the custom loss code builds its own tensors,
  where a missing ``.to(device)`` would only show on a GPU;
- GRPO without vLLM, generation under the answer grammar (xgrammar's token mask on CUDA);
- the ``hf:`` backend on CUDA: grammar- and copy-constrained answers that parse, the registry's
  GPU guard, and a real out-of-memory error turned into a one-line ``oom`` model error after
  the shrunken retries, with the backend answering again once memory is back;
- GRPO with vLLM generation (colocate), when vLLM is installed.

How to run them on a lent GPU machine: docs/training.md#7-gpu-path-vllm."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tiny_policy import (
    Recipe,
    invoke,
    policy_fixtures,
    task_pairs,
    train,
    write_negatives,
    write_pairs,
    wrong_answers,
)

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

tasks_dir, base_model = policy_fixtures(60, seed=3)

# The answer grammar's tight bounds (tests/trainer/test_constrained.py): the longest answer it
# admits fits the token budget, so a random policy always finishes.
TIGHT_DICT = {"think_chars": 8, "max_string_length": 6, "max_items": 1, "max_escapes": 1}


def _peak_reset() -> None:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()


def _peak() -> int:
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated())


def _fill_device() -> list[Any]:
    """Cap this process at the device memory it holds now, then take every free byte of its
    cached segments (halving the request down to the allocator's 512-byte block)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(max(torch.cuda.memory_reserved(), 1) / total, 0)
    filler = []
    size = 1 << 26
    while size >= 512:
        try:
            filler.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            size //= 2
    return filler


def _with_answer_words(base: Path, out: Path) -> Path:
    from oopav.models.copying import write_answer_words

    shutil.copytree(base, out)
    write_answer_words(out, ["pattern", "rewrite", "ARGS", "type", "ast_grep"], records=3)
    return out


def test_sft_with_every_loss_term_trains_on_cuda(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    from safetensors.torch import load_file

    from oopav.trainer.sft import SFTRecipe, train_sft

    model = _with_answer_words(base_model, tmp_path / "m")
    neg = write_negatives(tmp_path / "neg", wrong_answers(tasks_dir, 3))
    pairs = write_pairs(tmp_path / "pairs", task_pairs(tasks_dir, 3))
    cfg = SFTRecipe(
        output_dir=str(tmp_path / "run"),
        model=str(model),
        tasks=str(tasks_dir),
        max_steps=6,
        batch_size=4,
        logging_steps=1,
        eval_n=4,
        use_cpu=False,
        prompt_loss=True,
        augment="names",
        augment_copies=1,
        negatives=str(neg),
        negative_weight=1.0,
        negative_copy=True,
        preferences=str(pairs),
        preference_weight=1.0,
        preference_copy=True,
    )
    events: list[tuple[str, dict[str, Any]]] = []
    _peak_reset()
    result = train_sft(cfg, lambda kind, fields: events.append((kind, fields)))
    assert _peak() > 0  # the model, its batches and the loss terms lived on the device
    assert result["steps"] == 6
    steps = [f for k, f in events if k == "step"]
    assert len(steps) == 6
    for s in steps:
        assert s["loss"] == s["loss"]  # not NaN
        # an untrained policy gives the refused answers p ~ 0: the term is there and finite
        assert 0 <= s["metrics"]["negative_unlikelihood"] < 1e3
        assert 0 < s["metrics"]["dpo_loss"] < 10
    assert steps[-1]["metrics"]["dpo_loss"] < steps[0]["metrics"]["dpo_loss"]  # log 2 at first
    assert any(k == "evaluation" for k, _ in events)  # the after-training eval ran on CUDA too
    final = Path(result["checkpoint"])
    before = load_file(str(model / "model.safetensors"))
    after = load_file(str(final / "model.safetensors"))
    assert any(not torch.equal(before[k], after[k]) for k in before)  # it trained


def test_train_cli_records_a_cuda_run_and_eval_decodes_on_cuda(
    nats_url: str, tmp_path: Path, recipe: Recipe, tasks_dir: Path
) -> None:
    """The user's commands: `oopav train sft --config` with `use_cpu: false`, then `oopav eval
    --model hf:<checkpoint> --constrained`, against a real NATS server."""
    from oopav.models.schema_grammar import GrammarOptions, answer_grammar
    from oopav.trainer.evaluate import load_suite

    cfg = recipe("run", max_steps=3, batch_size=4, logging_steps=1, eval_n=4, use_cpu=False)
    _peak_reset()
    result, events = train(nats_url, tmp_path, "sft", cfg)
    assert _peak() > 0
    assert result["status"] == "completed" and result["steps"] == 3
    assert events[0].type == "training_started" and events[0].device == "cuda"
    budget = answer_grammar("action", GrammarOptions(compact=True)).max_bytes()
    _peak_reset()
    r = invoke(nats_url, tmp_path / "data", "eval", "--model", f"hf:{result['checkpoint']}",
               "--suite", str(tasks_dir), "--n", "4", "--constrained", "--json",
               "--max-new-tokens", str(min(budget or 512, 512)))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert _peak() > 0  # `oopav eval` decoded on the device
    # click < 8.2 (the GPU image's) mixes stderr's JSON log lines into ``stdout``: the report is
    # the line with the families
    (report,) = [
        json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"') and '"families"' in x
    ]
    # the suite's tasks come from the running Python's standard library: the GPU image's 3.12
    # held out 2 where 3.11 holds out more
    held_out = len(load_suite(str(tasks_dir), split="test", n=4))
    assert report["n"] == held_out >= 1 and report["constrained"] is True


def test_grpo_without_vllm_generates_under_the_grammar_on_cuda(
    tmp_path: Path, tasks_dir: Path, base_model: Path
) -> None:
    from oopav.models.schema_grammar import GrammarOptions, answer_grammar
    from oopav.trainer.grpo import GRPORecipe, train_grpo

    budget = answer_grammar("action", GrammarOptions(compact=True, **TIGHT_DICT)).max_bytes()
    assert budget is not None
    cfg = GRPORecipe(
        output_dir=str(tmp_path / "g"),
        model=str(base_model),
        tasks=str(tasks_dir),
        batch_size=4,
        num_generations=4,
        max_steps=2,
        max_completion_length=budget,
        eval_n=0,
        use_cpu=False,
        constrained=True,
        grammar=TIGHT_DICT,
        reward="env_strict",
    )
    events: list[tuple[str, dict[str, Any]]] = []
    _peak_reset()
    result = train_grpo(cfg, lambda kind, fields: events.append((kind, fields)))
    assert _peak() > 0
    assert result["steps"] == 2
    steps = [f for k, f in events if k == "step"]
    assert len(steps) == 2
    # Under the grammar every sampled answer parses, with the mask computed on the device.
    assert all(s["validity"] == 1.0 for s in steps)


def _actor(seed: int, copy: list[str] | None = None, temperature: float = 1.0) -> Any:
    import msgspec

    from oopav.models import Sampling
    from oopav.models.profiles import PromptState, compact_request

    state = PromptState(
        role="actor",
        instruction="Rename the function fetch to fetch_page everywhere.",
        snippet="def fetch(url):\n    return get(url)\n\nx = fetch(u)\n",
        path="app.py",
    )
    req = compact_request(state, sampling=Sampling(temperature=temperature, max_tokens=256))
    return msgspec.structs.replace(req, seed=seed, copy_words=copy)


def test_hf_backend_on_cuda_answers_parse_and_a_real_oom_is_one_line(
    tmp_path: Path, base_model: Path
) -> None:
    from oopav.models import ModelError, load_backend, parse_role_answer
    from oopav.models.copying import copy_words
    from oopav.models.gpu import GuardedBackend
    from oopav.models.hf import HFBackend

    model = _with_answer_words(base_model, tmp_path / "m")
    # The registry puts a CUDA backend under the device's budget and OOM guard.
    loaded = load_backend(f"hf:{model}")
    assert isinstance(loaded, GuardedBackend) and loaded.device.startswith("cuda")

    backend = HFBackend(model, think_chars=16, max_string_length=24, max_items=2)
    assert backend.device == "cuda"
    guarded = GuardedBackend(backend, "cuda", max_shrinks=2, min_tokens=16)
    words = copy_words("Rename the function fetch to fetch_page everywhere.")

    async def answers() -> list[Any]:
        out = []
        for seed in range(6):
            out.append(await guarded.complete(_actor(seed)))
            out.append(await guarded.complete(_actor(seed, copy=words)))
        return out

    _peak_reset()
    got = asyncio.run(answers())
    assert _peak() > 0
    for resp in got:
        assert resp.finish_reason == "stop", resp.text
        parse_role_answer("actor", resp.text, finish_reason=resp.finish_reason)
    # Greedy on the device is replay-stable: the same request, the same answer.
    one = backend.generate(_actor(0, temperature=0.0)).text
    assert backend.generate(_actor(0, temperature=0.0)).text == one

    # A real CUDA out-of-memory: this process capped at what it holds and every free byte of
    # its cached segments taken, so the generation's first allocation fails. The guard retries
    # smaller, then says so in one line.
    filler = _fill_device()
    try:
        with pytest.raises(ModelError) as err:
            asyncio.run(guarded.complete(_actor(1)))
        assert err.value.kind == "oom"
        assert "after 2 smaller retries" in str(err.value) and "\n" not in str(err.value)
    finally:
        del filler
        torch.cuda.set_per_process_memory_fraction(1.0, 0)
        torch.cuda.empty_cache()
    # The backend is not left broken: with the memory back it answers again.
    again = asyncio.run(guarded.complete(_actor(1)))
    parse_role_answer("actor", again.text, finish_reason=again.finish_reason)


def test_grpo_with_vllm_colocate(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    from oopav.trainer.grpo import GRPORecipe, train_grpo
    from oopav.trainer.policy import build_policy
    from oopav.trainer.tasks import generate, target_text, write_tasks

    got = generate(80, seed=0)
    write_tasks(got, tmp_path / "tasks")
    base = build_policy(tmp_path / "base", [t.instruction + target_text(t.rule) for t in got.tasks])
    events: list[tuple[str, dict[str, Any]]] = []
    cfg = GRPORecipe(
        output_dir=str(tmp_path / "run"),
        model=str(base),
        tasks=str(tmp_path / "tasks"),
        max_steps=2,
        batch_size=8,
        num_generations=4,
        max_completion_length=32,
        use_vllm=True,
        vllm_mode="colocate",
        use_cpu=False,
        eval_n=4,
    )
    result = train_grpo(cfg, lambda kind, fields: events.append((kind, fields)))
    assert result["steps"] == 2
    assert [k for k, _ in events].count("step") == 2
    assert Path(result["checkpoint"], "config.json").exists()
