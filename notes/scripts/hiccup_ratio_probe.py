"""
Diagnostic (2026-12-03, fourteenth stop): does a profile's per-K *median* step time misjudge the
step-cost ratio T(K)/T(0) when the machine has hiccups (short stalls at some rate per second),
while a trial's wall time (the mean) does not? Medians ignore stalls that hit fewer than half of
the short K=0 steps but count them in most long K=4 steps. Optional disturbance: 2 processes
that spin BUSY ms every PERIOD ms (both cores), started here and killed at the end.
B=1, ctx 512, K 0 and 4: the profile's timed steps (5 per round after 2 dropped, 4 rounds) and
trial-shaped runs (2 requests x 40 tokens, concurrency 1) in the same rounds.
Run: .venv/bin/python notes/scripts/hiccup_ratio_probe.py [BUSY_MS PERIOD_MS]
"""
import multiprocessing as mp
import statistics
import sys
import time

from specsched.engine import LLM, SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive, warm_prefix
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler


def spin(busy_ms: float, period_ms: float) -> None:
    while True:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < busy_ms / 1000:
            pass
        time.sleep(max(0.0, (period_ms - busy_ms) / 1000))


def main() -> None:
    busy, period = (float(sys.argv[1]), float(sys.argv[2])) if len(sys.argv) > 2 else (0, 0)
    llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=20, max_model_len=4358,
              max_num_batched_tokens=2048, num_threads=1)
    spec4 = SpeculativeConfig(window=256, num_sink_tokens=4, policy=PolicyConfig.constant(4))
    prof = EngineProfiler(EngineProfileConfig(speculative=spec4, repeats=5, warmup=2, rounds=1),
                          ProfileGrid((1, 4), (512, 4096), (0, 4)), llm)
    pieces = llm.corpus_token_ids()
    prompts = prof._prompts(1, 512)
    tprompts = [list(pieces[1000 + i * 50000:][:572]) for i in range(2)]
    warm_prefix(llm.engine, tprompts, 1)
    procs = [mp.Process(target=spin, args=(busy, period), daemon=True)
             for _ in range(3 if busy > 0 else 0)]
    for p in procs:
        p.start()
    prof_steps: dict[int, list[float]] = {0: [], 4: []}
    trial_wall: dict[int, list[float]] = {0: [], 4: []}
    try:
        for r in range(4):
            for k in ((0, 4) if r % 2 == 0 else (4, 0)):
                prof_steps[k] += [1000 * s.wall_s for s in prof._timed_steps(prompts, 1, 512, k)]
            for k in ((4, 0) if r % 2 == 0 else (0, 4)):
                llm.engine.set_speculative(None if k == 0 else spec4)
                res = drive(llm.engine, tprompts, SamplingParams(max_tokens=40, ignore_eos=True),
                            concurrency=1)
                trial_wall[k].append(sum(s.wall_s for s in res.steps))
    finally:
        for p in procs:
            p.kill()
    med = {k: statistics.median(v) for k, v in prof_steps.items()}
    mean = {k: statistics.fmean(v) for k, v in prof_steps.items()}
    print(f"disturbance busy {busy} ms / period {period} ms")
    print(f"profile steps K0 median {med[0]:.1f} mean {mean[0]:.1f}; K4 median {med[4]:.1f} "
          f"mean {mean[4]:.1f} ms")
    print(f"profile ratio K4/K0: by medians {med[4] / med[0]:.3f}, by means {mean[4] / mean[0]:.3f}")
    print(f"trial speedup (wall K0 / wall K4, 4 pairs): "
          + " ".join(f"{a / b:.3f}" for a, b in zip(trial_wall[0], trial_wall[4])))


if __name__ == "__main__":
    main()
