"""Backend capability flags (models/capabilities.py): declared per backend, overridden by the
task's policy, and used to choose the prompt profile (a small context gets ``compact``) and
the decoding (no grammar where the backend has none)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from oopav.cli import cli
from oopav.models.capabilities import Capabilities, capabilities_for, declared
from oopav.models.profiles import profile_for
from oopav.models.scripted import ScriptedBackend
from oopav.models.synth import SynthBackend


class Loaded:
    spec = "hf:/m"
    capabilities = Capabilities(grammar=True, logprobs=True, context_tokens=2048)


def test_each_backend_declares_its_capabilities() -> None:
    assert declared("openai:http://x/v1#m") == Capabilities(grammar=True, logprobs=True, tools=True)
    assert declared("hf:/m").grammar and declared("hf:/m").context_tokens is None
    assert declared("synth:openai:http://x/v1#m").tools  # the fallback's
    assert declared("nonsense") == Capabilities()
    assert ScriptedBackend({"actor": []}).capabilities.grammar
    fallback = ScriptedBackend({"actor": []})
    assert SynthBackend(fallback=fallback).capabilities is fallback.capabilities
    # a loaded backend knows more (its window), and the policy has the last word
    assert capabilities_for("hf:/m", None, Loaded()).context_tokens == 2048
    over = capabilities_for("openai:http://x/v1#m", {"model_capabilities": {"grammar": False}})
    assert not over.grammar and over.tools


def test_a_small_context_chooses_the_compact_profile() -> None:
    assert profile_for("scripted:x") == "full"
    small = {"model_capabilities": {"context_tokens": 4096}}
    assert profile_for("scripted:x", small) == "compact"
    assert profile_for("scripted:x", {"model_capabilities": {"context_tokens": 32768}}) == "full"
    assert profile_for("openai:http://x/v1#m", None, Loaded()) == "compact"
    # an explicit profile still wins
    assert profile_for("scripted:x", {**small, "prompt_profile": "full"}) == "full"


def test_models_capabilities_lists_the_flags() -> None:
    out = CliRunner().invoke(cli, ["models", "capabilities"])
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line.split()[1:] for line in out.output.splitlines()}
    assert rows["openai:"] == ["grammar", "logprobs", "tools", "context=?"]
    assert rows["synth:"] == ["grammar", "context=?"]
    one = CliRunner().invoke(cli, ["models", "capabilities", "--json", "vllm:/m"])
    assert json.loads(one.output) == {
        "spec": "vllm:/m",
        "grammar": True,
        "logprobs": True,
        "tools": False,
        "context_tokens": None,
    }


def test_models_capabilities_refuses_an_unknown_backend() -> None:
    bad = CliRunner().invoke(cli, ["models", "capabilities", "bogus:thing"])
    assert bad.exit_code == 2 and "bad model spec 'bogus:thing'" in bad.output
