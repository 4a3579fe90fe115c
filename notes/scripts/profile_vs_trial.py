"""
Diagnostic (2026-12-03, fourteenth stop): why the demo's no-spec step runs slower than its
profiled K=0 step while its spec steps run faster (B=1 demo of 99fe335: no-spec 35.2 vs 29.5 ms
predicted, K=4 74.7 vs 74.2 predicted but 92.1 raw profile median).
One engine (the demo's sizes), interleaved rounds of: the profile's timed steps
(EngineProfiler.timings, B=1, ctx 512 / 4096, K 0 and 4) and a trial-shaped run (2 requests of
the demo's prompt length, 40 output tokens, concurrency 1, vary text). Per-step wall_s of
all-decoding steps: median and mean, side by side.
Run: .venv/bin/python notes/scripts/profile_vs_trial.py [rounds] [K] [contexts, e.g. 512,4096]
(K and contexts added in the nineteenth stop: the AVX2 K=5 at 4096 question; verify / draft
split printed for both shapes.)
"""
import statistics
import sys

from specsched.engine import LLM, SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive, warm_prefix
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
K = int(sys.argv[2]) if len(sys.argv) > 2 else 4
CTXS = [int(c) for c in sys.argv[3].split(",")] if len(sys.argv) > 3 else [512, 4096]
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=20, max_model_len=4358,
          max_num_batched_tokens=2048, num_threads=1)
spec4 = SpeculativeConfig(window=256, num_sink_tokens=4, policy=PolicyConfig.constant(K))
grid = ProfileGrid((1, 4), (512, 4096), (0, 1, 2, 3, 4, 5))
prof = EngineProfiler(EngineProfileConfig(speculative=spec4, repeats=5, warmup=2, rounds=1),
                      grid, llm)
pieces = llm.corpus_token_ids()
out: dict[tuple[str, int, int], list[float]] = {}
for r in range(rounds):
    for ctx in CTXS:
        # profile-style: the Ks of one point in one round
        for tp in prof.timings(1, ctx, [0, K] if r % 2 == 0 else [K, 0]):
            out.setdefault(("profile", ctx, tp.k), []).append(tp.t_step_ms.median)
            if tp.t_verify_ms is not None and tp.t_draft_ms is not None:
                out.setdefault(("prof-verify", ctx, tp.k), []).append(tp.t_verify_ms.median)
                out.setdefault(("prof-draft", ctx, tp.k), []).append(tp.t_draft_ms.median)
        # trial-style: 2 prompts of ~ctx + 60 tokens, new text each round
        n = ctx + 60
        prompts = [list(pieces[((r * 7919 + i * 104729 + ctx) % max(1, len(pieces) - n)):][:n]) for i in range(2)]
        warm_prefix(llm.engine, prompts, 1)
        for k in ([0, K] if r % 2 else [K, 0]):
            llm.engine.set_speculative(None if k == 0 else spec4)
            res = drive(llm.engine, prompts, SamplingParams(max_tokens=40, ignore_eos=True),
                        concurrency=1)
            ms = [1000 * s.wall_s for s in res.steps if s.all_decoding and s.routed_k == k]
            out.setdefault(("trial-med", ctx, k), []).append(statistics.median(ms))
            out.setdefault(("trial-mean", ctx, k), []).append(statistics.fmean(ms))
            dr = [1000 * s.draft_s for s in res.steps if s.all_decoding and s.routed_k == k]
            out.setdefault(("trial-draft", ctx, k), []).append(statistics.median(dr))
            vf = [1000 * (s.wall_s - s.draft_s) for s in res.steps if s.all_decoding and s.routed_k == k]
            out.setdefault(("trial-verify", ctx, k), []).append(statistics.median(vf))
for key in sorted(out):
    v = out[key]
    print(f"{key[0]:12s} ctx {key[1]:5d} K{key[2]}: " + " ".join(f"{x:6.1f}" for x in v)
          + f"   median {statistics.median(v):6.1f}")
