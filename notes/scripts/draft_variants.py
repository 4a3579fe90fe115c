"""
Diagnostic (issue 16): acceptance and cost of cheaper streaming self-drafts — a draft output layer
restricted to the first N token ids (BPE merge order ~ frequency) and drafts that skip layers.
Greedy, static K=4, 8 prompts x 48 tokens per context, B=1 (one request at a time), 1 thread.
Run: .venv/bin/python notes/scripts/draft_variants.py [ctx ...]
"""
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from specsched.engine import LLM
from specsched.engine.driver import drive
from specsched.engine.layers.linear import Linear
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig


class Variant(torch.nn.Module):
    def __init__(self, base, keep, vocab):
        super().__init__()
        self.base, self.keep, self.vocab = base, keep, vocab
        self.head = base.lm_head if vocab is None else Linear(
            base.lm_head.weight[:vocab].contiguous())
        self.cfg, self.dtype = base.cfg, base.dtype

    @property
    def weight_dtype(self):
        return self.base.weight_dtype

    @torch.inference_mode()
    def forward(self, ids, meta, kv, logits_indices=None):
        b = self.base
        h = F.embedding(ids, b.embed)
        cos, sin = b.rope.lookup(meta.token_positions, b.dtype)
        for i in self.keep:
            h = b.layers[i](h, cos, sin, kv.k[i], kv.v[i], meta)
        h = F.rms_norm(h, (b.cfg.hidden_size,), b.norm, b.cfg.rms_norm_eps)
        logits = self.head(h).float()
        if self.vocab is not None:
            logits = F.pad(logits, (0, b.cfg.vocab_size - self.vocab), value=float("-inf"))
        return logits


ctxs = [int(a) for a in sys.argv[1:]] or [512, 2048]
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=4, max_model_len=max(ctxs) + 128,
          num_threads=1)
pieces = llm.corpus_token_ids()
rng = np.random.default_rng(0)
L = llm.engine.model_cfg.num_layers
variants = {
    "full": (list(range(L)), None),
    "vocab16k": (list(range(L)), 16384),
    "vocab8k": (list(range(L)), 8192),
    "vocab4k": (list(range(L)), 4096),
    "skip-odd-8..27": ([i for i in range(L) if not (8 <= i < 28 and i % 2)], None),
    "skip-odd-4..29+v8k": ([i for i in range(L) if not (4 <= i < 30 and i % 2)], 8192),
    "first24": (list(range(24)), None),
    "skip-every3rd": ([i for i in range(L) if i % 3 != 1], None),
}
for ctx in ctxs:
    offs = rng.integers(0, len(pieces) - ctx - 1, 8)
    prompts = [list(pieces[o:o + ctx]) for o in offs]
    for name, (keep, vocab) in variants.items():
        spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(4))
        llm.engine.set_speculative(spec)
        d = llm.engine.speculator.drafter
        d.model = Variant(d.model, keep, vocab)
        t = time.perf_counter()
        res = drive(llm.engine, prompts, [SamplingParams(max_tokens=48, ignore_eos=True)] * 8,
                    concurrency=1)
        wall = time.perf_counter() - t
        dr = np.sum([s.stats.spec.drafted_per_position[:4] for s in res.seqs], 0)
        ac = np.sum([s.stats.spec.accepted_per_position[:4] for s in res.seqs], 0)
        st = res.stats
        n = d.num_forward_calls
        print(f"ctx {ctx} {name:20s} acc/pos {np.round(ac / np.maximum(dr, 1), 2)} "
              f"tok/step {1 + ac.sum() / max(dr[0], 1):.2f} draft ms/fwd {1000 * st.draft_s / n:.1f} "
              f"verify ms/step {1000 * st.verify_s / max(st.num_steps, 1):.1f} "
              f"steps {st.num_steps} wall {wall:.1f}s", flush=True)
