"""Profile the reference engine: the `measure` callback of `specsched.planner.run_profile`.

Timing point (B, ctx, K): B prompts of exactly ctx tokens sharing a ctx - 16 token prefix of real
text (one prefill per context thanks to prefix caching; an untimed warm pass fills the cache),
decoded greedily with K forced for every step (static schedule; K = 0 is plain decoding). The
first `warmup` all-decoding steps are dropped, the next `repeats` are timed: t_step = wall time of
`LLMEngine.step()`, t_draft / t_verify = its draft and target-forward phases (the engine's
`RunStats` split). Medians and interquartile ranges go into the profile (`Stat.from_samples`).

Acceptance point (ctx, K_max): the same prompts decoded with the drafter at K_max for
`acceptance_tokens` tokens per request; the engine's per-position drafted / accepted counters give
prefix rates r_k = accepted_k / drafted_k, converted to conditional rates a_k = r_k / r_{k-1}
(`planner.conditional_from_prefix_rates`). Acceptance of a StreamingLLM self-draft depends on how
much of the context falls outside its window, hence one point per context (MagicDec,
arXiv:2408.11049).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from specsched.corpus import shared_prefix_prompts
from specsched.engine.driver import DriveResult, drive, warm_prefix
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import DrafterKind, SpeculativeConfig
from specsched.errors import UserError
from specsched.planner import (
    AcceptancePoint,
    MeasurePoint,
    PointKind,
    ProfileGrid,
    Stat,
    TimingPoint,
    conditional_from_prefix_rates,
)
from specsched.policy import PolicyConfig

SUFFIX_TOKENS = 16
TEXT_SEED = 0  # which slice of the corpus the profile decodes


@dataclass(frozen=True, slots=True)
class EngineProfileConfig:
    """What to profile with. `speculative`: the drafter and its settings (its policy is replaced
    by static K at every timing point)."""

    model: str = "smollm2-135m"
    speculative: SpeculativeConfig = field(default_factory=SpeculativeConfig)
    dtype: str = "float32"
    device: str = "cpu"
    threads: int | None = 1
    repeats: int = 5
    warmup: int = 2
    acceptance_tokens: int = 48  # generated tokens per request for an acceptance point
    max_num_batched_tokens: int = 2048  # prefill chunk: larger chunks prefill long contexts faster

    def __post_init__(self) -> None:
        if self.speculative.drafter is DrafterKind.NONE:
            raise UserError("profiling needs a drafter: streaming, ngram or model:PATH")
        for name in ("repeats", "acceptance_tokens", "max_num_batched_tokens"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be >= 1")
        if self.warmup < 0:
            raise UserError("--warmup must be >= 0")
        if self.threads is not None and self.threads < 1:
            raise UserError("--threads must be >= 1")

    @property
    def drafter_label(self) -> str:
        spec = self.speculative
        if spec.drafter is DrafterKind.STREAMING:
            return f"streaming W={spec.window} sinks={spec.num_sink_tokens}"
        return spec.drafter_label

    def max_model_len(self, grid: ProfileGrid) -> int:
        """Room for the longest context plus every decoded token of a point."""
        per_point = (self.warmup + self.repeats + 2) * (grid.ks[-1] + 1)
        return grid.contexts[-1] + max(per_point, self.acceptance_tokens + grid.ks[-1]) + 64


def build_llm(cfg: EngineProfileConfig, grid: ProfileGrid) -> LLM:
    """An engine sized for the grid (slots = largest batch, length = longest context + room)."""
    return LLM(
        cfg.model,
        dtype=cfg.dtype,
        device=cfg.device,
        max_num_seqs=grid.batch_sizes[-1],
        max_model_len=cfg.max_model_len(grid),
        max_num_batched_tokens=cfg.max_num_batched_tokens,
        num_threads=cfg.threads,
    )


class EngineProfiler:
    """`measure(point)` for `run_profile`; one `LLM` for the whole grid (prefix cache warm)."""

    def __init__(self, cfg: EngineProfileConfig, grid: ProfileGrid, llm: LLM | None = None) -> None:
        self.cfg = cfg
        self.grid = grid
        self.llm = llm if llm is not None else build_llm(cfg, grid)
        ecfg = self.llm.engine.cfg
        if ecfg.max_num_seqs < grid.batch_sizes[-1]:
            raise UserError(f"the engine has {ecfg.max_num_seqs} slots; the grid needs "
                            f"batch {grid.batch_sizes[-1]}")
        if ecfg.max_model_len < cfg.max_model_len(grid):
            raise UserError(f"the engine's max_model_len {ecfg.max_model_len} is too short for "
                            f"context {grid.contexts[-1]} (needs {cfg.max_model_len(grid)})")
        self._pieces: list[int] | None = None

    def __call__(self, point: MeasurePoint) -> TimingPoint | AcceptancePoint:
        if point.kind is PointKind.ACCEPTANCE:
            return self.acceptance(point.ctx, point.k)
        return self.timing(point.batch_size, point.ctx, point.k)

    def _prompts(self, batch_size: int, ctx: int) -> list[list[int]]:
        if self._pieces is None:
            self._pieces = self.llm.corpus_token_ids()
        max_b = self.grid.batch_sizes[-1]
        prompts = shared_prefix_prompts(self._pieces, max_b, ctx, SUFFIX_TOKENS, TEXT_SEED)
        warm_prefix(self.llm.engine, prompts)  # untimed; only what the prefix cache lacks
        return prompts[:batch_size]

    def _spec(self, k: int) -> SpeculativeConfig | None:
        """The profile's drafter at static K (None: plain decoding)."""
        if k == 0:
            return None
        return dataclasses.replace(self.cfg.speculative, policy=PolicyConfig.constant(k))

    def timing(self, batch_size: int, ctx: int, k: int) -> TimingPoint:
        c = self.cfg
        prompts = self._prompts(batch_size, ctx)
        need = c.warmup + c.repeats
        max_tokens = (need + 2) * (k + 1) + 1  # never caps K within the timed steps

        def timed(res: DriveResult) -> list[Any]:
            return [s for s in res.steps if s.all_decoding and s.routed_k == k]

        self.llm.engine.set_speculative(self._spec(k))
        res = drive(self.llm.engine, prompts, SamplingParams(max_tokens=max_tokens,
                                                             ignore_eos=True),
                    stop=lambda r: len(timed(r)) >= need)
        steps = timed(res)
        if len(steps) < need:
            raise RuntimeError(f"only {len(steps)} decode steps at K={k} (batch {batch_size}, "
                               f"ctx {ctx}); expected {need}")
        ms = [1000.0 * s.wall_s for s in steps]
        if k == 0:
            return TimingPoint(batch_size, ctx, k, Stat.from_samples(ms, c.warmup))
        return TimingPoint(
            batch_size, ctx, k, Stat.from_samples(ms, c.warmup),
            t_verify_ms=Stat.from_samples([1000.0 * s.verify_s for s in steps], c.warmup),
            t_draft_ms=Stat.from_samples([1000.0 * max(s.draft_s, 1e-6) for s in steps],
                                         c.warmup),
        )

    def acceptance(self, ctx: int, k_max: int) -> AcceptancePoint:
        c = self.cfg
        prompts = self._prompts(self.grid.batch_sizes[-1], ctx)
        target = c.acceptance_tokens * len(prompts)
        self.llm.engine.set_speculative(self._spec(k_max))
        params = SamplingParams(max_tokens=c.acceptance_tokens + 2 * (k_max + 1), ignore_eos=True)
        res = drive(self.llm.engine, prompts, params,
                    stop=lambda r: r.num_output_tokens >= target)
        spec = res.stats.spec
        drafted, accepted = spec.drafted_per_position, spec.accepted_per_position
        if len(drafted) < k_max or drafted[k_max - 1] == 0:
            raise RuntimeError(f"acceptance at ctx {ctx}: no step drafted {k_max} tokens")
        prefix = [a / d for a, d in zip(accepted[:k_max], drafted[:k_max], strict=True)]
        return AcceptancePoint(ctx, conditional_from_prefix_rates(prefix), int(drafted[0]))
