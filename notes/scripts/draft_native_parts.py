"""
Diagnostic (issue 16, 2026-12-02): a B=1 int8 draft token at ctx 4096 with the native layer,
with attention stubbed out, the target step, and draft tokens timed right after a target step
(3 rounds of medians, 1 thread, KV random).
Run: .venv/bin/python notes/scripts/draft_native_parts.py
"""
import torch, time, statistics
from specsched.engine import LLM
from specsched.engine.layers import model as M
from specsched.engine.layers.attention import build_metadata
from specsched.engine.spec.drafters.streaming import streaming_ranges
llm = LLM("smollm2-135m", max_num_seqs=4, max_model_len=4096 + 64, num_threads=1)
for t in (*llm.engine.kv.k, *llm.engine.kv.v): t.normal_()
d8 = llm.engine.model.with_weight_dtype(torch.int8)
tm_ = llm.engine.model
meta = build_metadata([0], [4096], [1], kv_ranges=(streaming_ranges(4096, 256, 4),))
meta_t = build_metadata([0], [4096], [1])
ids = torch.randint(100, 20000, (1,))
f = lambda: d8(ids, meta, llm.engine.kv)
g = lambda: tm_(ids, meta_t, llm.engine.kv)
def tm(fn, n=21):
    for _ in range(2): fn()
    ts=[]
    for _ in range(n):
        s=time.perf_counter(); fn(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e3
res = {}
orig = M.ragged_attention
for r in range(3):
    res.setdefault("draft", []).append(tm(f))
    M.ragged_attention = lambda q, k, v, meta, scale: torch.zeros_like(q)
    res.setdefault("draft no attn", []).append(tm(f))
    M.ragged_attention = orig
    res.setdefault("target", []).append(tm(g, 7))
    # K draft tokens after a target step (the realistic pattern)
    def pattern():
        g(); 
        a = time.perf_counter(); f(); f(); f(); return time.perf_counter() - a
    ps = [pattern() for _ in range(5)]
    res.setdefault("draft after target (per token)", []).append(statistics.median(ps) / 3 * 1e3)
for k, v in res.items(): print(k, [round(x, 1) for x in v])
