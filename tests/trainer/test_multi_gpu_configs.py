"""The multi-GPU configurations shipped under examples/training/ load as what they claim to be:
accelerate cluster configs (DDP, DeepSpeed ZeRO-2/3) and GRPO recipes (vLLM on GPUs,
REINFORCE++-baseline). Their GPU runs are untested here (no GPU in CI; docs/training.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "examples" / "training"


@pytest.mark.parametrize(
    ("name", "kind", "zero"),
    [
        ("multi_gpu.yaml", "MULTI_GPU", None),
        ("deepspeed_zero2.yaml", "DEEPSPEED", 2),
        ("deepspeed_zero3.yaml", "DEEPSPEED", 3),
    ],
)
def test_accelerate_configs_load_as_cluster_configs(name: str, kind: str, zero: int | None) -> None:
    from accelerate.commands.config.config_args import ClusterConfig

    cfg = ClusterConfig.from_yaml_file(str(ROOT / "accelerate" / name))
    assert str(cfg.distributed_type).endswith(kind)
    assert cfg.use_cpu is False and cfg.num_processes >= 2
    if zero is not None:
        assert cfg.deepspeed_config["zero_stage"] == zero


def test_gpu_and_reinforcepp_recipes_are_valid_grpo_configs() -> None:
    from trl import GRPOConfig

    from oopav.trainer.config import load_config
    from oopav.trainer.grpo import GRPORecipe, check

    gpu = load_config(GRPORecipe, ROOT / "grpo_gpu.yaml")
    check(gpu)
    assert gpu.use_vllm and not gpu.use_cpu
    rpp = load_config(GRPORecipe, ROOT / "reinforcepp.yaml")
    check(rpp)
    assert rpp.scale_rewards == "batch" and rpp.beta > 0
    # TRL itself accepts the REINFORCE++ normalisation the recipe passes it.
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out, scale_rewards=rpp.scale_rewards, beta=rpp.beta, use_cpu=True
        )
    assert args.scale_rewards == "batch"
