"""Copy-constrained decoding (models/copying.py): the words of an answer's payload are words
the request lets it copy or the checkpoint's answer vocabulary; the request records them and
hashes as before without them; the ``hf:`` backend enforces them on a real (tiny) model."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from oopav.models.base import (
    Message,
    ModelError,
    ModelRequest,
    Sampling,
    request_from_builtins,
    request_hash,
    request_to_builtins,
)
from oopav.models.copying import (
    Allowed,
    CopyLogitsProcessor,
    Scanner,
    answer_vocabulary,
    copy_words,
    payload,
    read_answer_words,
    words,
    write_answer_words,
)

ANSWER = (
    "<think></think>\n<action>"
    '{"type":"ast_grep","rule":"id: synth-1\\nlanguage: python\\nrule:\\n  kind: identifier\\n'
    '  regex: ^strip$\\nfix: strip_v2\\n"}</action>\n<state_update>{}</state_update>'
)
VOCAB = {"type", "ast_grep", "rule", "id", "synth", "language", "python", "kind"}
VOCAB |= {"identifier", "regex", "fix"}
INSTRUCTION = "Rename the attribute `strip` to `strip_v2` everywhere it is used."


def test_words_take_json_escapes_as_separators() -> None:
    assert words("regex: ^strip$\\nfix: strip_v2\\n") == ["regex", "strip", "fix", "strip_v2"]
    assert words("a\\u00e9b synth-1") == ["a", "b", "synth", "1"]
    assert copy_words(INSTRUCTION) == sorted(set(words(INSTRUCTION)))
    assert copy_words("call f2 at line 12") == ["at", "call", "f2", "line"]  # digit-led: free


def test_scanner_allows_copied_and_vocabulary_words_only() -> None:
    scan = Scanner(Allowed(VOCAB | set(copy_words(INSTRUCTION)) | {"action"}), "action")
    assert scan.ok(ANSWER)
    # The flywheel's failures: a name garbled into a word the prompt does not have.
    assert not scan.ok(ANSWER.replace("^strip$", "^stripch$"))
    assert not scan.ok(ANSWER.replace("fix: strip_v2", "fix: cont_checked"))
    # Outside the payload (the think text) nothing is constrained; digit-led words are free.
    assert scan.ok(ANSWER.replace("<think></think>", "<think>zzz qq</think>"))
    assert scan.ok(ANSWER.replace("synth-1", "synth-12345"))
    # Word by word: a prefix of an allowed word is a live state, anything else is not.
    st = scan.feed(scan.start(), '<think></think>\n<action>{"type":"ast_grep","rule":"id: str')
    assert st is not None and st[1] == "str"
    assert scan.feed(st, "ip$") is not None and scan.feed(st, "ipch$") is None
    assert scan.feed(st, "ip_v") is not None and scan.feed(st, "ip_x") is None


def test_answer_vocabulary_keeps_memorised_words_not_copied_names() -> None:
    prompts = [
        f"Rename `n{i}` to `n{i}_v2`.\nAnswer with one ast_grep action.\n```python\nx"
        for i in range(60)
    ]
    answers = [ANSWER.replace("strip", f"n{i}") for i in range(60)]
    # One teacher rule names something from outside its prompt, once: noise, not vocabulary.
    answers[0] = answers[0].replace("kind: identifier", "kind: identifier\\n  not: winerror")
    # A name that recurs across tasks (8% of the answers) is still copied, not memorised.
    for i in range(5):
        prompts[i] = prompts[i].replace(f"`n{i}`", "`len`")
        answers[i] = answers[i].replace(f"^n{i}$", "^len$")
    got = answer_vocabulary(zip(prompts, answers, strict=True))
    assert got == VOCAB  # python and ast_grep are in every prompt too, and in every answer
    assert "len" in answer_vocabulary(zip(prompts, answers, strict=True), prompt_share=0.05)
    assert "winerror" not in got and not any(w.startswith("n") and w[1:2].isdigit() for w in got)
    assert payload(ANSWER, "action").startswith('{"type"') and payload(ANSWER, None) == ANSWER


def test_answer_words_file_round_trips(tmp_path: Path) -> None:
    assert read_answer_words(tmp_path) is None
    write_answer_words(tmp_path, ["b", "a", "a"], records=3)
    assert read_answer_words(tmp_path) == {"a", "b"}


def _request(copy: list[str] | None = None) -> ModelRequest:
    return ModelRequest(
        role="actor",
        messages=[Message(role="user", content="Rename `strip` to `strip_v2`.")],
        envelope="action",
        sampling=Sampling(max_tokens=96),
        seed=3,
        copy_words=copy,
    )


def test_request_hash_is_unchanged_without_copy_words_and_covers_them() -> None:
    # The hash this request had before copy_words existed (computed with that code): recorded
    # sessions must replay, so a request without the field hashes as it always did.
    old = "f54c3f3a63b1cf4df5865afdcce28890ee5fd47129cef977ff5d7ae84ff50396"
    assert request_hash(_request()) == old
    assert "copy_words" not in request_to_builtins(_request())
    with_words = _request(["strip", "strip_v2"])
    assert request_hash(with_words) != old
    data = request_to_builtins(with_words)
    assert data["copy_words"] == ["strip", "strip_v2"]
    assert request_from_builtins(data) == with_words and request_hash(data) == request_hash(
        with_words
    )


def test_processor_masks_words_and_gives_way_to_the_grammar() -> None:
    torch = pytest.importorskip("torch")
    texts = ["<action>", "str", "ip", "ch", "$", "zz", "</action>", "<eos>"]
    proc = CopyLogitsProcessor(texts, {"strip", "action"}, envelope="action", free_ids=[7])
    prompt = torch.tensor([[0]])
    scores = torch.zeros(1, len(texts))
    proc(prompt, scores)  # before the payload: nothing masked
    assert not torch.isinf(scores).any()
    step = torch.tensor([[0, 0]])  # took "<action>"
    scores = proc(step, torch.zeros(1, len(texts)))
    allowed = [texts[i] for i in range(len(texts)) if not torch.isinf(scores[0, i])]
    assert allowed == ["<action>", "str", "$", "</action>", "<eos>"]
    step = torch.tensor([[0, 0, 1]])  # took "str": only "ip" continues it
    scores = proc(step, torch.zeros(1, len(texts)))
    assert [texts[i] for i in range(len(texts)) if not torch.isinf(scores[0, i])] == [
        "ip",
        "<eos>",
    ]
    # A step where the grammar allows only what the constraint forbids: the grammar wins.
    grammar_only = torch.full((1, len(texts)), float("-inf"))
    grammar_only[0, 3] = 0.0  # "ch"
    got = proc(torch.tensor([[0, 0, 1, 2]]), grammar_only.clone())
    assert got[0, 3] == 0.0 and proc.relaxed == 1


@pytest.fixture(scope="module")
def copy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("xgrammar")
    from oopav.trainer.policy import PolicyShape, build_policy
    from oopav.trainer.tasks import generate, target_text, task_messages

    tasks = generate(30, seed=4, holdout=0.0, families=("rename_call",)).tasks
    texts = [task_messages(t.instruction, t.pre)[0]["content"] + target_text(t.rule) for t in tasks]
    shape = PolicyShape(
        vocab_size=400, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1
    )
    return build_policy(tmp_path_factory.mktemp("copy") / "m", texts, shape=shape, seed=1)


def _compact(temperature: float, seed: int, copy: list[str] | None) -> ModelRequest:
    from oopav.models.profiles import PromptState, compact_request

    state = PromptState(role="actor", instruction=INSTRUCTION, snippet="x = s.strip()\n")
    req = compact_request(
        state, sampling=Sampling(temperature=temperature, max_tokens=256), seed=seed
    )
    return msgspec.structs.replace(req, copy_words=copy)


def test_hf_backend_decodes_only_allowed_words(copy_model: Path, tmp_path: Path) -> None:
    from oopav.models.hf import HFBackend
    from oopav.models.prompt import parse_role_answer

    model = tmp_path / "m"
    shutil.copytree(copy_model, model)
    # Without an answer vocabulary the option says so in one line (nothing to allow).
    bare = HFBackend(model, device="cpu", think_chars=16, max_string_length=24, max_items=2)
    with pytest.raises(ModelError, match=r"oopav_answer_words\.json"):
        bare.generate(_compact(0.0, 0, copy_words(INSTRUCTION)))
    write_answer_words(model, VOCAB | {"pattern", "rewrite"}, records=1)
    backend = HFBackend(model, device="cpu", think_chars=16, max_string_length=24, max_items=2)
    tags = {"think", "state_update", "action"}
    allowed = Allowed(VOCAB | {"pattern", "rewrite"} | set(copy_words(INSTRUCTION)) | tags)

    def off_list(text: str) -> int:
        return sum(
            not w[0].isdigit() and w not in allowed.words for w in words(payload(text, "action"))
        )

    free_ok = constrained_ok = free_off = constrained_off = 0
    for seed in range(12):
        free = backend.generate(_compact(1.0, seed, None)).text
        free_ok += Scanner(allowed, "action").ok(free)
        free_off += off_list(free)
        resp = backend.generate(_compact(1.0, seed, copy_words(INSTRUCTION)))
        assert resp.finish_reason == "stop"
        parse_role_answer("actor", resp.text, finish_reason=resp.finish_reason)  # still parses
        ok = Scanner(allowed, "action").ok(resp.text)
        constrained_ok += ok
        constrained_off += off_list(resp.text)
        # A word off the list only where the grammar allowed nothing else (an enum value, a
        # key it requires: a random policy walks into those), and then the response says so.
        assert ok or any("copy constraint relaxed" in n for n in resp.notes), resp.text
    # An untrained policy writes words from all over its vocabulary; constrained, far fewer.
    assert constrained_ok > free_ok, (free_ok, constrained_ok)
    assert 2 * constrained_off < free_off, (free_off, constrained_off)
    # Greedy and replay-stable: the same request, the same answer.
    one = backend.generate(_compact(0.0, 0, copy_words(INSTRUCTION))).text
    assert backend.generate(_compact(0.0, 0, copy_words(INSTRUCTION))).text == one


def test_loop_policy_copy_names_puts_the_words_in_the_request() -> None:
    from oopav.decide.policy import LoopPolicy, loop_policy_problem
    from oopav.handlers.support.model_calls import with_copy_words
    from oopav.models.profiles import PromptState, compact_request

    assert LoopPolicy().copy_names is None
    assert loop_policy_problem({"copy_names": "names"}) is not None
    state = PromptState(
        role="actor", instruction=INSTRUCTION, snippet="def go(s):\n    s.strip()\n"
    )
    req = compact_request(state)
    assert with_copy_words(req, None, state) is req
    got = with_copy_words(req, "instruction", state)
    assert got.copy_words == copy_words(INSTRUCTION) and "go" not in got.copy_words
    whole = with_copy_words(req, "prompt", state)
    assert whole.copy_words is not None and {"go", "def", "ast_grep"} <= set(whole.copy_words)
