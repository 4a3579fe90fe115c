"""Where a plan_eval cell's decode window goes, per static K (a diagnostic, not the package):
runs the cell as plan_eval does (R x B requests, at most B in flight, a document each,
prefix-warmed) and splits the window "first token -> end" into decode-only steps, steps that
also prefill (a refill), and time outside steps; prints tokens per decode-only step and their
median wall against a profile's step cost at that cell.

    .venv/bin/python notes/scripts/cell_anatomy.py PROFILE.json B CTX K[,K..] [R] [TOKENS] [REP]
"""
import json
import statistics
import sys

sys.path.insert(0, "benchmarks")
from plan_eval import cell_prompts

from specsched.engine import SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive, warm_prefix
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler, build_llm

prof_path, b, ctx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ks = [int(x) for x in sys.argv[4].split(",")]
r = int(sys.argv[5]) if len(sys.argv) > 5 else 4
tokens = int(sys.argv[6]) if len(sys.argv) > 6 else 48
rep = int(sys.argv[7]) if len(sys.argv) > 7 else 0
prof = {(t["batch_size"], t["ctx"], t["k"]): t["t_step_ms"]["median"]
        for t in json.load(open(prof_path))["timings"]}
grid = ProfileGrid((b,), (ctx,), tuple(sorted(set(ks) | {0})))
cfg = EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256),
                          threads=1)
llm = EngineProfiler(cfg, grid, build_llm(cfg, grid, slots=r * b)).llm
prompts = cell_prompts(llm.corpus_token_ids(), r * b, ctx, rep, "per-request")
warm_prefix(llm.engine, prompts)
for k in ks:
    llm.engine.set_speculative(None if k == 0 else SpeculativeConfig(
        window=256, policy=PolicyConfig.constant(k)))
    steps = []

    def on_step(res):  # noqa: ANN001
        st = llm.engine.last_step
        steps.append((st.num_prefill, st.num_decode, st.wall_s, st.num_spec_tokens,
                       st.num_accepted_tokens))

    res = drive(llm.engine, prompts, SamplingParams(max_tokens=tokens, ignore_eos=True), b,
                on_step=on_step)
    first = min(c[0] for c in res.chunk_times)
    window = res.end_s - first
    decode = sum(len(s.output_token_ids) - 1 for s in res.seqs)
    # steps inside the window: every step whose end is after `first` (the first step that
    # emitted a token ends at `first`; the steps after it are the window's)
    ends = [e.end_s for e in res.steps]
    inside = [s for s, e in zip(steps, ends) if e > first + 1e-9]
    dec = [s for s in inside if s[0] == 0]
    pre = [s for s in inside if s[0] > 0]
    t_dec = sum(s[2] for s in dec)
    t_pre = sum(s[2] for s in pre)
    full = [s for s in dec if s[1] == b]
    tok_full = [(s[1] + s[4]) / s[1] for s in full]  # tokens per request per full step
    med_full = statistics.median(s[2] for s in full) * 1e3 if full else float("nan")
    print(f"B={b} ctx={ctx} K={k}: {decode / window:.2f} tok/s over {window:.3f} s; "
          f"decode-only steps {len(dec)} ({t_dec:.3f} s, full batch {len(full)}: median "
          f"{med_full:.1f} ms, profile {prof.get((b, ctx, k), float('nan')):.1f}; tokens per "
          f"request-step {statistics.mean(tok_full) if tok_full else 0:.2f}), steps with a "
          f"prefill {len(pre)} ({t_pre:.3f} s), outside steps {window - t_dec - t_pre:.3f} s",
          flush=True)
