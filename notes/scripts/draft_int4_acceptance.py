"""
Diagnostic (issue 16, 2026-12-02): acceptance of the streaming self-draft when its weights are
rounded to int4 with one scale per group of G input columns (symmetric, |q| <= 7), against the
int8 draft, greedy, static K=4, 8 prompts x 48 tokens per context, B=1, 1 thread. The int4
weights are simulated (dequantized into fp32 matmuls): this measures acceptance, not speed.
Run: .venv/bin/python notes/scripts/draft_int4_acceptance.py [ctx ...]
"""
import sys

import numpy as np
import torch

from specsched.engine import LLM
from specsched.engine.driver import drive
from specsched.engine.layers.linear import Linear
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import NO_SPECULATION, SpeculativeConfig
from specsched.policy import PolicyConfig


def fake_int4(w: torch.Tensor, group: int) -> torch.Tensor:  # [N, K] -> [N, K] int4-valued
    n, k = w.shape
    g = w.float().view(n, k // group, group)
    scale = g.abs().amax(-1, keepdim=True).clamp_min(1e-30) / 7.0
    return (torch.round(g / scale).clamp_(-7, 7) * scale).view(n, k)


ctxs = [int(a) for a in sys.argv[1:]] or [512, 4096]
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=4, max_model_len=max(ctxs) + 128,
          num_threads=1)
pieces = llm.corpus_token_ids()
rng = np.random.default_rng(0)
params = [SamplingParams(max_tokens=48, ignore_eos=True)] * 8
target = llm.engine.model
for ctx in ctxs:
    offs = rng.integers(0, len(pieces) - ctx - 1, 8)
    prompts = [list(pieces[o:o + ctx]) for o in offs]
    llm.engine.set_speculative(NO_SPECULATION)
    ref = [s.output_token_ids for s in drive(llm.engine, prompts, params, concurrency=1).seqs]
    for variant in ("int8", "int4-g32", "int4-g64"):
        target._weight_copies.clear()
        spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(4),
                                            draft_dtype="int8")
        llm.engine.set_speculative(spec)
        if variant != "int8":
            group = int(variant.split("-g")[1])
            draft = target._weight_copies[torch.int8]
            for src, dst in zip(target.layers, draft.layers):
                for name in ("qkv", "o", "gate_up", "down"):
                    lin = getattr(src, name)
                    setattr(dst, name, Linear(fake_int4(lin.weight, group), lin.bias))
            draft.lm_head = Linear(fake_int4(target.lm_head.weight, group))
        res = drive(llm.engine, prompts, params, concurrency=1)
        same = [s.output_token_ids for s in res.seqs] == ref
        dr = np.sum([s.stats.spec.drafted_per_position[:4] for s in res.seqs], 0)
        ac = np.sum([s.stats.spec.accepted_per_position[:4] for s in res.seqs], 0)
        tps = ac.sum() / max(res.stats.num_steps, 1) + 1
        print(f"ctx {ctx} {variant:9s} acc/pos {np.round(ac / np.maximum(dr, 1), 2)} "
              f"tokens/step {tps:.2f} same-as-nospec {same}", flush=True)
