"""Profile the reference engine: the `measure` callback of `specsched.planner.run_profile`.

Timing points (B, ctx, every K): B prompts of exactly ctx tokens sharing a ctx - 16 token prefix
of real text (one prefill per context thanks to prefix caching; an untimed warm pass fills the
cache), decoded greedily with K forced for every step (static schedule; K = 0 is plain decoding).
The Ks of one (B, ctx) are measured together in `rounds` interleaved rounds, the K order rotating
from round to round, so a slow minute of the machine (this VM's step time drifts by 10-20 %
between minutes) hits every K alike instead of one K's whole block: the planner divides step
times by each other. Per round and K the first `warmup` all-decoding steps are dropped, the next
`repeats` are timed: t_step = wall time of `LLMEngine.step()`, t_draft / t_verify = its draft and
target-forward phases (the engine's `RunStats` split). Medians and interquartile ranges over all
rounds go into the profile (`Stat.from_samples`).

Acceptance point (ctx, K_max): `acceptance_prompts` requests, each its own text of exactly ctx
tokens (the corpus, or the user's `prompts_file`; `tune.acceptance_prompts`), decoded with the
drafter at K_max for `acceptance_tokens` tokens each. Each context draws its own windows
(`acceptance_seed`), so the contexts' sampling errors are independent rather than one set of
documents' luck shared by all (it does not remove the error: 32 texts still vary +-6 % in
depth-4 acceptance from seed to seed, notes/adaptive.md, thirty-third stop). Acceptance counts
do not depend on the thread count, so the acceptance decode runs on `acceptance_threads` (default:
every core): its long distinct prefills were ~80 % of a profile at one thread. Every request's
per-position drafted / accepted counters give its prefix rates r_k = accepted_k / drafted_k;
their mean over requests, spread and bootstrap confidence interval go into the point
(`planner.acceptance_ci`), as conditional rates a_k = r_k / r_{k-1}. Acceptance of a
StreamingLLM self-draft depends on how much of the context falls outside its window, hence one
point per context (MagicDec, arXiv:2408.11049).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from specsched.corpus import shared_prefix_prompts
from specsched.engine.driver import DriveResult, drive, warm_prefix
from specsched.engine.engine import cpu_threads
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import DrafterKind, SpeculativeConfig
from specsched.engine.spec.speculator import resolved_draft_dtype
from specsched.errors import UserError
from specsched.planner import (
    NOISY_REL_SPREAD,
    AcceptancePoint,
    MeasurePoint,
    PointKind,
    ProfileGrid,
    Stat,
    TimingPoint,
    unit_noise,
)
from specsched.planner.acceptance_ci import Snapshot, output_segments, summarize_requests
from specsched.planner.acceptance_horizon import horizon_counts
from specsched.planner.acceptance_persistence import persistence
from specsched.policy import PolicyConfig
from specsched.tune.acceptance_prompts import acceptance_prompts, load_prompt_tokens

SUFFIX_TOKENS = 16
TEXT_SEED = 0  # which slice of the corpus the timing points decode
# acceptance windows: a seed per context, away from the benchmarks' per-replicate seeds
ACCEPTANCE_SEED_BASE = 1_000_000


def acceptance_seed(ctx: int) -> int:
    """The `acceptance_prompts` seed of context `ctx` (its own documents per context)."""
    return ACCEPTANCE_SEED_BASE + ctx


@dataclass(frozen=True, slots=True)
class EngineProfileConfig:
    """What to profile with. `speculative`: the drafter and its settings (its policy is replaced
    by static K at every timing point)."""

    model: str = "smollm2-135m"
    speculative: SpeculativeConfig = field(default_factory=SpeculativeConfig)
    dtype: str = "float32"
    device: str = "cpu"
    threads: int | None = 1
    repeats: int = 5  # timed steps per point and round
    warmup: int = 2  # dropped steps per point and round
    rounds: int = 3  # interleaved rounds over the Ks of one (batch, context)
    # a timing unit whose median relative IQR over its Ks exceeds this is measured again
    max_rel_spread: float = NOISY_REL_SPREAD
    remeasure: int = 2  # at most this many extra attempts per unit (the quietest is kept)
    acceptance_tokens: int = 128  # generated tokens per request for an acceptance point
    acceptance_prompts: int = 16  # requests (distinct texts) per acceptance point
    prompts_file: str | None = None  # the user's text for acceptance (None: the corpus)
    # > 0: acceptance prompts share all but their last `acceptance_tail` tokens (one long
    # prefill per context instead of one per prompt; the tails still differ); 0: distinct texts
    acceptance_tail: int = 0
    acceptance_documents: int = 1  # with acceptance_tail > 0: documents the prompts come from
    # with acceptance_tail > 0: tails of acceptance_tail x (1 ± r) tokens (a serving workload's
    # shape, e.g. the demo's scenarios: its prompts accept differently from plain windows)
    acceptance_tail_range: float = 0.0
    max_num_batched_tokens: int = 2048  # prefill chunk: larger chunks prefill long contexts faster
    # threads of the acceptance decode (counts only, never timed; None: every core)
    acceptance_threads: int | None = None

    def __post_init__(self) -> None:
        if self.speculative.drafter is DrafterKind.NONE:
            raise UserError("profiling needs a drafter: streaming, ngram or model:PATH")
        if self.acceptance_prompts < 2:
            raise UserError("--acceptance-prompts must be >= 2 (a spread needs two requests)")
        for name in ("repeats", "rounds", "acceptance_tokens", "max_num_batched_tokens"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be >= 1")
        if self.warmup < 0:
            raise UserError("--warmup must be >= 0")
        if self.remeasure < 0 or not self.max_rel_spread > 0:
            raise UserError("remeasure must be >= 0 and max_rel_spread > 0")
        if self.acceptance_tail < 0:
            raise UserError("acceptance_tail must be >= 0")
        if self.acceptance_documents < 1:
            raise UserError("acceptance_documents must be >= 1")
        if not 0 <= self.acceptance_tail_range < 1:
            raise UserError("acceptance_tail_range must be in [0, 1)")
        if self.threads is not None and self.threads < 1:
            raise UserError("--threads must be >= 1")
        if self.acceptance_threads is not None and self.acceptance_threads < 1:
            raise UserError("--acceptance-threads must be >= 1")

    @property
    def drafter_label(self) -> str:
        spec = self.speculative
        label = spec.drafter_label
        if spec.drafter is DrafterKind.STREAMING:
            label = f"streaming W={spec.window} sinks={spec.num_sink_tokens}"
        if spec.drafter in (DrafterKind.STREAMING, DrafterKind.MODEL):  # the draft's weights
            label += f" draft={resolved_draft_dtype(spec, self.dtype, self.device)}"
        return label

    def max_model_len(self, grid: ProfileGrid) -> int:
        """Room for the longest context plus every decoded token of a point."""
        per_point = (self.warmup + self.repeats + 2) * (grid.ks[-1] + 1)
        return grid.contexts[-1] + max(per_point, self.acceptance_tokens + grid.ks[-1]) + 64


def build_llm(cfg: EngineProfileConfig, grid: ProfileGrid, slots: int | None = None) -> LLM:
    """An engine sized for the grid (slots = largest batch unless `slots` is more: a caller that
    keeps more prompts prefix-cached; length = longest context + room)."""
    return LLM(
        cfg.model,
        dtype=cfg.dtype,
        device=cfg.device,
        max_num_seqs=max(grid.batch_sizes[-1], slots or 0),
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
        self.remeasured = 0  # noisy timing attempts measured again

    def __call__(self, unit: Sequence[MeasurePoint]) -> list[TimingPoint | AcceptancePoint]:
        """One measurement unit of `run_profile`: an acceptance point, or timing points that
        share a batch size and context."""
        if unit[0].kind is PointKind.ACCEPTANCE:
            return [self.acceptance(p.ctx, p.k) for p in unit]
        b, c = unit[0].batch_size, unit[0].ctx
        if any(p.kind is not PointKind.TIMING or (p.batch_size, p.ctx) != (b, c) for p in unit):
            raise ValueError(f"a timing unit shares one batch size and context: {unit}")
        return list(self.timings(b, c, [p.k for p in unit]))

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

    def timings(self, batch_size: int, ctx: int, ks: Sequence[int]) -> list[TimingPoint]:
        """Every K of (batch_size, ctx), measured in interleaved rounds; a noisy attempt is
        measured again, the quietest kept (see module doc)."""
        best = self._attempt(batch_size, ctx, ks)
        noise = unit_noise(best)
        for _ in range(self.cfg.remeasure):
            if noise <= self.cfg.max_rel_spread:
                break
            self.remeasured += 1
            again = self._attempt(batch_size, ctx, ks)
            if unit_noise(again) < noise:
                best, noise = again, unit_noise(again)
        return best

    def _attempt(self, batch_size: int, ctx: int, ks: Sequence[int]) -> list[TimingPoint]:
        """One measurement of every K of (batch_size, ctx) in `rounds` interleaved rounds."""
        c = self.cfg
        prompts = self._prompts(batch_size, ctx)
        steps: dict[int, list[Any]] = {k: [] for k in ks}
        for r in range(c.rounds):
            shift = r % len(ks)
            for k in [*ks[shift:], *ks[:shift]]:  # no K always first after a pause
                steps[k].extend(self._timed_steps(prompts, batch_size, ctx, k))
        return [self._timing_point(batch_size, ctx, k, steps[k]) for k in ks]

    def _timed_steps(self, prompts: list[list[int]], batch_size: int, ctx: int,
                     k: int) -> list[Any]:
        """One round of K: `warmup` dropped, then `repeats` timed all-decoding steps."""
        c = self.cfg
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
        return steps[c.warmup:need]

    @staticmethod
    def _timing_point(batch_size: int, ctx: int, k: int, steps: Sequence[Any]) -> TimingPoint:
        ms = [1000.0 * s.wall_s for s in steps]
        if k == 0:
            return TimingPoint(batch_size, ctx, k, Stat.from_samples(ms))
        return TimingPoint(
            batch_size, ctx, k, Stat.from_samples(ms),
            t_verify_ms=Stat.from_samples([1000.0 * s.verify_s for s in steps]),
            t_draft_ms=Stat.from_samples([1000.0 * max(s.draft_s, 1e-6) for s in steps]),
        )

    def _acceptance_prompts(self, ctx: int) -> list[list[int]]:
        if self._pieces is None:
            self._pieces = self.llm.corpus_token_ids()
        user = None
        if self.cfg.prompts_file is not None:
            tok = self.llm.tokenizer
            user = load_prompt_tokens(self.cfg.prompts_file, None if tok is None else tok.encode,
                                      self.llm.engine.model_cfg.vocab_size)
        return acceptance_prompts(self._pieces, user, self.cfg.acceptance_prompts, ctx,
                                  acceptance_seed(ctx), self.cfg.acceptance_tail,
                                  self.cfg.acceptance_documents, self.cfg.acceptance_tail_range)

    def acceptance(self, ctx: int, k_max: int) -> AcceptancePoint:
        threads = self.cfg.acceptance_threads or os.cpu_count() or 1
        with cpu_threads(threads if self.cfg.device == "cpu" else None):
            return self._acceptance(ctx, k_max)

    def _acceptance(self, ctx: int, k_max: int) -> AcceptancePoint:
        c = self.cfg
        prompts = self._acceptance_prompts(ctx)
        if c.acceptance_tail > 0 and c.prompts_file is None:  # each document prefilled once
            docs = max(1, min(c.acceptance_documents, len(prompts)))
            firsts = [prompts[-(-i * len(prompts) // docs)] for i in range(docs)]
            warm_prefix(self.llm.engine, firsts)
        self.llm.engine.set_speculative(self._spec(k_max))
        params = SamplingParams(max_tokens=c.acceptance_tokens, ignore_eos=True)
        snapshots: list[list[Snapshot]] = [[] for _ in prompts]  # per request, per step

        def snapshot(res: DriveResult) -> None:  # acceptance along the output (by_output)
            for i, seq in enumerate(res.seqs):
                spec = seq.stats.spec
                snapshots[i].append((len(seq.output_token_ids), list(spec.drafted_per_position),
                                     list(spec.accepted_per_position)))

        res = drive(self.llm.engine, prompts, params,
                    concurrency=min(len(prompts), self.llm.engine.cfg.max_num_seqs),
                    on_step=snapshot)
        drafted = [s.stats.spec.drafted_per_position for s in res.seqs]
        accepted = [s.stats.spec.accepted_per_position for s in res.seqs]
        try:
            point = summarize_requests(ctx, drafted, accepted, k_max)
        except ValueError as exc:
            raise RuntimeError(f"{exc} (decode more --acceptance-tokens per request)") from None
        return dataclasses.replace(point, by_output=output_segments(snapshots, k_max),
                                   persistence=persistence(snapshots),
                                   horizons=horizon_counts(snapshots, k_max))
