"""The demo's engine and engine profiler, built the way `specsched demo` profiles (one thread,
streaming self-draft W = 256 + 4 sinks, 5 repeats x 3 rounds, 2 warm-up steps), for the
profile-noise diagnostics beside this file (round_correlation.py, profile_ratio_spread.py,
round_level_noise.py, rounds_vs_repeats.py)."""
import dataclasses

from specsched.engine import LLM, SpeculativeConfig
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

KS = (0, 1, 2, 3, 4, 5)


def demo_llm() -> LLM:
    return LLM("smollm2-135m", dtype="float32", max_num_seqs=20, max_model_len=4358,
               max_num_batched_tokens=2048, num_threads=1)


def demo_profiler(llm: LLM, **cfg) -> EngineProfiler:
    """An `EngineProfiler` on `llm` over B {1, 4} x ctx {512, 4096} x K 0..5; `cfg` overrides
    `EngineProfileConfig` fields (repeats, rounds, ...)."""
    spec = SpeculativeConfig(window=256, num_sink_tokens=4, policy=PolicyConfig.constant(4))
    base = EngineProfileConfig(speculative=spec, repeats=5, warmup=2, rounds=3)
    return EngineProfiler(dataclasses.replace(base, **cfg), ProfileGrid((1, 4), (512, 4096), KS),
                          llm)
