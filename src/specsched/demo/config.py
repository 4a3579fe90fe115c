"""What `specsched demo` runs: the profile grid, the scenarios of the experiment, replicates.

Defaults target the embedded SmolLM2-135M on a 2-core CPU (<= 15 min, aimed at <= 10): the spec
bench (notes/spec_bench.md) found speculation with the streaming drafter losing at context <= 1024
and paying at ~4096 on this CPU, so the demo profiles and measures one short and one long context
at the same batch size. There a batch-only schedule must pick one K for both, while the 2-D
schedule can pick K = 0 at short context and K > 0 at long context. The batch size of the
scenarios is chosen after planning (`batch_size=None`): the profiled batch size whose row the 2-D
plan predicts to beat the batch-only plan by the most (where the context axis matters).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum

from specsched.engine.spec.config import SpeculativeConfig
from specsched.errors import UserError

MARKER = ".specsched-demo"  # marks a folder the demo wrote (safe to resume or --force over)


class Shape(str, Enum):
    SERVING = "serving"  # continuous batching: more requests than slots, refill as they finish
    WAVE = "wave"  # one wave of B requests with the same text, no refill (earlier demos)


@dataclass(frozen=True, slots=True)
class DemoScenario:
    """A workload at about `ctx` prompt tokens. SERVING: `requests_per_slot` x B requests about
    one document: a shared prefix of ctx - T tokens and each request's own tail of T x (1 ±
    range_ratio) tokens (T = `tail_len`, at most ctx / 2), at most B in flight (a request
    starts when one finishes, like `vllm bench serve --max-concurrency`), a different document
    every replicate (the prefix prefills once per replicate, not once per request).
    WAVE: B requests of exactly `ctx` tokens (a shared prefix + distinct `suffix_len` tails)
    started together, the same text every replicate. `batch_size=None`: chosen from the plan
    (see module doc)."""

    label: str
    ctx: int
    output_len: int
    batch_size: int | None = None
    suffix_len: int = 32
    requests_per_slot: int = 2
    range_ratio: float = 0.5
    tail_len: int = 256

    def __post_init__(self) -> None:
        if (self.batch_size is not None and self.batch_size < 1) or self.output_len < 1:
            raise UserError(f"demo scenario {self.label!r}: batch size and output length >= 1")
        if self.ctx <= self.suffix_len:
            raise UserError(f"demo scenario {self.label!r}: ctx must exceed suffix_len")
        if self.requests_per_slot < 1 or not 0 <= self.range_ratio < 1:
            raise UserError(f"demo scenario {self.label!r}: requests_per_slot >= 1 and "
                            f"0 <= range_ratio < 1")

    @property
    def name(self) -> str:
        b = "" if self.batch_size is None else f"-B{self.batch_size}"
        return f"{self.label}-ctx{self.ctx}{b}"

    def with_batch(self, batch_size: int) -> DemoScenario:
        if self.batch_size is not None:
            return self
        return dataclasses.replace(self, batch_size=batch_size)

    def num_requests(self, shape: Shape) -> int:
        assert self.batch_size is not None
        return self.batch_size * (self.requests_per_slot if shape is Shape.SERVING else 1)

    @property
    def tail(self) -> int:
        """SERVING: the tokens of a request's own text (before the ± range_ratio draw)."""
        return min(self.tail_len, self.ctx // 2)

    def longest_prompt(self, shape: Shape) -> int:
        if shape is Shape.SERVING:
            return self.ctx - self.tail + int(self.tail * (1 + self.range_ratio)) + 1
        return self.ctx


@dataclass(frozen=True, slots=True)
class DemoConfig:
    model: str = "smollm2-135m"
    threads: int = 1
    dtype: str = "float32"
    speculative: SpeculativeConfig = field(default_factory=SpeculativeConfig)  # the drafter
    batch_sizes: tuple[int, ...] = (1, 4)
    contexts: tuple[int, ...] = (512, 4096)
    ks: tuple[int, ...] = (0, 1, 2, 3, 4, 5)  # with the int8 draft K=4-5 wins most cells
    repeats: int = 5  # per point and round
    warmup_steps: int = 2
    rounds: int = 3  # interleaving the Ks of each batch x context (the profile's step ratios)
    acceptance_tokens: int = 64
    # tails of `acceptance_documents` documents per context: 32, not 16 — a 16-request sample
    # misjudged how often a request accepts poorly (2 of 16 vs 3 of 64 in a sweep; BENCHMARKS
    # 2026-12-02 eleventh stop), and one such request decides a B=4 wave's length
    acceptance_prompts: int = 32
    # the scenarios' own shape (a shared document and tails of 256 x (1 ± 0.5) tokens): at ctx
    # 512, K5, 40 tokens, plain 512-token windows accepted 3.3 % less than the serving prompts
    # over six text seeds, this shape 1.4 % more over twelve (BENCHMARKS, fiftieth stop)
    acceptance_tail: int = 256
    acceptance_tail_range: float = 0.5
    acceptance_documents: int = 4  # 4 documents x 8 tails (one document's acceptance misled)
    scenarios: tuple[DemoScenario, ...] = field(default_factory=lambda: (
        DemoScenario("short", 512, 40),
        DemoScenario("long", 4096, 40),
    ))
    shape: Shape = Shape.SERVING
    replicates: int = 5  # a Williams design of the 5 arms
    seed: int = 0
    max_batch_ranges: int = 4
    max_ctx_ranges: int = 4

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise UserError("demo: at least one scenario")
        if self.replicates < 2:
            raise UserError("demo: replicates must be >= 2 (a ratio needs a spread)")
        if self.threads < 1:
            raise UserError("demo: --threads must be >= 1")

    @property
    def max_model_len(self) -> int:
        """Room for the longest profiled context or scenario, its output and drafts."""
        acceptance = self.contexts[-1] + int(self.acceptance_tail * self.acceptance_tail_range) + 1
        longest = max(acceptance, *(s.longest_prompt(self.shape) for s in self.scenarios))
        out = max(s.output_len for s in self.scenarios)
        step_room = (self.warmup_steps + self.repeats + 2) * (self.ks[-1] + 1)
        return longest + max(out, step_room, self.acceptance_tokens) + self.ks[-1] + 64

    @property
    def max_num_seqs(self) -> int:
        """Slots: the profile's prompts and each scenario's requests of one replicate keep their
        own (the prefix cache then serves every arm of a replicate the same prefilled text)."""
        per_slot = max((s.requests_per_slot for s in self.scenarios), default=1)
        per = per_slot if self.shape is Shape.SERVING else 1
        return self.batch_sizes[-1] + sum((s.batch_size or self.batch_sizes[-1]) * per
                                          for s in self.scenarios)


def quick_config(model: str = "smollm2-135m", threads: int = 1) -> DemoConfig:
    """A smaller demo (~2-3 min on the 2-core CPU): shorter long context, fewer points and
    replicates; too few to resolve small effects (the report says so with its noise floor)."""
    return DemoConfig(
        model=model, threads=threads, batch_sizes=(1, 4), contexts=(256, 2048), ks=(0, 1, 3),
        repeats=3, warmup_steps=1, rounds=2, acceptance_tokens=32, acceptance_prompts=8,
        acceptance_documents=2,
        scenarios=(DemoScenario("short", 256, 16), DemoScenario("long", 2048, 16)),
        replicates=5,
    )
