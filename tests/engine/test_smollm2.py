"""The embedded default model: stable greedy answer, agreement with transformers, tokenizer."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from specsched.engine import SamplingParams, build_metadata
from specsched.engine.loading.registry import smollm2_gguf_path

pytestmark = pytest.mark.smollm2

QUESTION = "What is the capital of France?"
# Produced by this engine (fp32, greedy) when the test was written; transformers agrees.
EXPECTED = [504, 3575, 282, 4649, 314, 7042, 30, 2]  # "The capital of France is Paris."


@pytest.fixture(scope="module")
def hf_reference() -> Any:
    """transformers' Llama with the GGUF dequantized and un-permuted by transformers itself."""
    import transformers
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    path = str(smollm2_gguf_path())
    cfg = load_gguf_checkpoint(path, return_tensors=False)["config"]
    cfg.pop("_model_name_or_path", None)
    cfg.pop("model_type", None)
    ref = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)).float().eval()
    tensors = load_gguf_checkpoint(path, return_tensors=True, model_to_load=ref)["tensors"]
    ref.load_state_dict(tensors, strict=False)
    ref.tie_weights()
    return ref


def test_greedy_answer_is_stable(smollm2_llm: Any) -> None:
    out = smollm2_llm.generate(QUESTION, SamplingParams(max_tokens=24), use_chat_template=True)[0]
    assert out.token_ids == EXPECTED
    assert out.text == "The capital of France is Paris."
    assert out.finish_reason == "stop"


def test_matches_transformers(smollm2_llm: Any, hf_reference: Any) -> None:
    ids = smollm2_llm.encode_prompt(QUESTION, use_chat_template=True)
    with torch.no_grad():
        ref_gen = hf_reference.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False)
        ref_logits = hf_reference(torch.tensor([ids])).logits[0]
    assert ref_gen[0, len(ids) :].tolist() == EXPECTED
    eng = smollm2_llm.engine
    ours = eng.model(torch.tensor(ids), build_metadata([0], [0], [len(ids)]), eng.kv)
    assert (ours - ref_logits).abs().max().item() < 1e-3  # 30 layers, fp32
    # un-permuted q/k from our GGUF loader equal transformers' bit for bit
    sd = hf_reference.state_dict()
    qkv = eng.model.layers[0].qkv_w
    assert torch.equal(qkv[:576], sd["model.layers.0.self_attn.q_proj.weight"])
    assert torch.equal(qkv[576:768], sd["model.layers.0.self_attn.k_proj.weight"])


def test_tokenizer_matches_transformers_gguf_tokenizer(smollm2_llm: Any) -> None:
    from transformers import AutoTokenizer

    path = smollm2_gguf_path()
    ref = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    texts = [
        QUESTION,
        "def f(x):\n\treturn x**2  # square",
        " ünïcødé 日本語 emoji 🙂",
        "<|im_start|>user\nhi<|im_end|>\n",
        "Numbers 2024, 3.14159 and 1e-5.",
    ]
    tok = smollm2_llm.tokenizer
    for text in texts:
        ids = tok.encode(text)
        assert ids == ref(text, add_special_tokens=False).input_ids
        assert tok.decode(ids, skip_special_tokens=False) == text


def test_prefix_cache_on_real_model(smollm2_llm: Any) -> None:
    system = "You are a terse assistant. " * 8
    prompts = [system + "Name a color.", system + "Name a fruit."]
    params = SamplingParams(max_tokens=8)
    first = smollm2_llm.generate(prompts, params, use_chat_template=True)
    second = smollm2_llm.generate(prompts, params, use_chat_template=True)
    assert [o.token_ids for o in first] == [o.token_ids for o in second]
    assert all(o.stats.num_cached_tokens > 0 for o in second)


def test_cli_generate_json(capsys: pytest.CaptureFixture[str]) -> None:
    from specsched.cli import main

    rc = main(
        [
            "generate",
            "--prompt",
            QUESTION,
            "--max-new-tokens",
            "12",
            "--json",
            "--threads",
            "1",
            "--max-model-len",
            "256",
        ]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    out = data["outputs"][0]
    assert out["token_ids"] == EXPECTED and out["finish_reason"] == "stop"


def test_cli_generate_json_speculative(capsys: pytest.CaptureFixture[str]) -> None:
    from specsched.cli import main

    argv = ["generate", "--prompt", QUESTION, "--max-new-tokens", "12", "--json", "--threads",
            "1", "--max-model-len", "256", "--drafter", "streaming", "--window", "8", "--k", "3"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outputs"][0]["token_ids"] == EXPECTED
    stats = data["stats"]
    assert stats["num_draft_tokens"] > 0 and stats["k_histogram"]
    assert set(stats["time_s"]) == {"draft", "verify", "overhead"}
    assert data["outputs"][0]["stats"]["mean_accepted_length"] >= 1.0


def test_compiled_step_gives_the_same_answer() -> None:
    from specsched.engine import LLM

    llm = LLM("smollm2-135m", max_num_seqs=1, max_model_len=256, num_threads=1, compile=True)
    out = llm.generate(QUESTION, SamplingParams(max_tokens=24), use_chat_template=True)[0]
    assert out.token_ids == EXPECTED
