"""
Diagnostic (issue 16, 2026-12-01 night): what a B=1 int8 streaming-draft token at ctx 4096 costs,
by removing one component at a time (attention, RMSNorm, rotary, KV write, layer matmuls) and
timing the forward again (median of 21, 1 thread, KV random).
Run: .venv/bin/python notes/scripts/draft_breakdown.py
"""
import torch, time, statistics
import torch.nn.functional as F
from specsched.engine import LLM
from specsched.engine.layers import model as M
from specsched.engine.layers.attention import build_metadata
from specsched.engine.spec.drafters.streaming import streaming_ranges
llm = LLM("smollm2-135m", max_num_seqs=4, max_model_len=4096 + 64, num_threads=1)
for t in (*llm.engine.kv.k, *llm.engine.kv.v): t.normal_()
d8 = llm.engine.model.with_weight_dtype(torch.int8)
meta = build_metadata([0], [4096], [1], kv_ranges=(streaming_ranges(4096, 256, 4),))
ids = torch.randint(100, 20000, (1,))
f = lambda: d8(ids, meta, llm.engine.kv)
def t(n=21):
    f(); ts=[]
    for _ in range(n):
        a=time.perf_counter(); f(); ts.append(time.perf_counter()-a)
    return statistics.median(ts)*1e3
base = t()
orig_attn, orig_rms, orig_rot, orig_write = M.ragged_attention, F.rms_norm, M.apply_rotary, M.write_kv
M.ragged_attention = lambda q, k, v, meta, scale: torch.zeros_like(q)
no_attn = t()
M.ragged_attention = orig_attn
M.F = type("F", (), {"rms_norm": staticmethod(lambda x, s, w, eps: x), "silu": F.silu, "embedding": F.embedding})
no_rms = t()
M.F = F
M.apply_rotary = lambda x, c, s: x
no_rot = t()
M.apply_rotary = orig_rot
M.write_kv = lambda *a: None
no_write = t()
M.write_kv = orig_write
for L in d8.layers:
    for n in ("qkv","o","gate_up","down"):
        lin = getattr(L, n)
        setattr(L, n, (lambda N: (lambda x: torch.zeros(x.shape[0], N)))(lin.out_features))
no_mm = t()
print(f"int8 draft B=1 ctx4096: {base:.1f} ms; without attention {no_attn:.1f}, rms_norm {no_rms:.1f}, rotary {no_rot:.1f}, write_kv {no_write:.1f}, layer matmuls {no_mm:.1f}")
