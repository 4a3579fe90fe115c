"""The optional torch.compile'd one-token step equals the eager path (tiny Llama and Qwen2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from specsched.engine import LLM, SamplingParams, SpeculativeConfig, build_metadata
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.model import LlamaModel
from specsched.engine.loading.hf import load_hf_dir
from specsched.policy import PolicyConfig


def test_compiled_one_token_logits_match_eager(
    tiny_llama: tuple[Path, Any], tiny_hf_factory: Any, tmp_path: Path
) -> None:
    qwen = tmp_path / "qwen2"
    tiny_hf_factory(qwen, "qwen2")  # q/k/v bias
    for path in (tiny_llama[0], qwen):
        cfg, weights = load_hf_dir(path)
        models = [
            LlamaModel(cfg, weights, 64, torch.float32, "cpu", compile=c) for c in (False, True)
        ]
        assert models[0].step is None and models[1].step is not None
        caches = [KVCache(cfg, 2, 64, torch.float32, "cpu") for _ in models]
        prompt = torch.randint(2, 128, (9,), generator=torch.Generator().manual_seed(1))
        for m, kv in zip(models, caches, strict=True):
            m(prompt, build_metadata([1], [0], [9]), kv)  # prefill: T > 1, eager in both
        token = torch.tensor([7])
        for pos in range(9, 14):  # five one-token steps: compiled vs eager
            meta = build_metadata([1], [pos], [1])
            eager, comp = (m(token, meta, kv) for m, kv in zip(models, caches, strict=True))
            assert comp.shape == eager.shape == (1, cfg.vocab_size)
            torch.testing.assert_close(comp, eager, atol=1e-4, rtol=1e-4)
            token = eager.argmax(-1)
        torch.testing.assert_close(caches[1].k[0][1, :, :14], caches[0].k[0][1, :, :14])
        none = torch.tensor([], dtype=torch.long)
        empty = models[1](token, build_metadata([1], [14], [1]), caches[1], none)
        assert empty.shape == (0, cfg.vocab_size)


@pytest.mark.parametrize("drafter", ["none", "streaming"])
def test_compiled_engine_greedy_equals_eager(tiny_llama: tuple[Path, Any], drafter: str) -> None:
    spec = None
    if drafter != "none":
        spec = SpeculativeConfig(window=8, num_sink_tokens=2,
                                 policy=PolicyConfig.constant(3))
    prompt = torch.randint(2, 128, (20,), generator=torch.Generator().manual_seed(2)).tolist()
    params = SamplingParams(max_tokens=16, ignore_eos=True)
    ref = LLM(str(tiny_llama[0]), max_model_len=64, max_num_seqs=1).generate([prompt], params)
    llm = LLM(str(tiny_llama[0]), max_model_len=64, max_num_seqs=1, compile=True, speculative=spec)
    out = llm.generate([prompt], params)
    assert out[0].token_ids == ref[0].token_ids


def test_missing_compiler_is_a_one_line_error(
    tiny_llama: tuple[Path, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from specsched.cli import main
    from specsched.engine.layers import compiled

    monkeypatch.setattr(compiled, "_has_cpp_compiler", lambda: False)
    code = main(["generate", "--prompt", "hi", "--model", str(tiny_llama[0]), "--compile",
                 "--no-chat-template", "--max-new-tokens", "2", "--drafter", "none"])
    err = capsys.readouterr().err
    assert code == 2
    assert "needs a C++ compiler" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
