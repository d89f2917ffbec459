"""The GPU path: GRPO with vLLM generation (colocate) on a CUDA device. Skipped without one."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_grpo_with_vllm_colocate(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    from oopav.trainer.grpo import GRPORecipe, train_grpo
    from oopav.trainer.policy import build_policy
    from oopav.trainer.tasks import generate, target_text, write_tasks

    got = generate(80, seed=0)
    write_tasks(got, tmp_path / "tasks")
    base = build_policy(tmp_path / "base", [t.instruction + target_text(t.rule) for t in got.tasks])
    events: list[tuple[str, dict]] = []
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
