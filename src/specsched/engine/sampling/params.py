"""`SamplingParams`: one request's sampling settings (torch-free, validated without I/O)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from specsched.errors import UserError
from specsched.io import show_value
from specsched.schedule.model import INF  # the bound of max_tokens and top_k (int32 max)

MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed takes a 64-bit seed


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """temperature 0 = greedy. `seed` makes a request's samples independent of batch mates."""

    max_tokens: int = 64
    temperature: float = 0.0
    top_k: int = 0  # 0 = off
    top_p: float = 1.0
    seed: int | None = None
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.max_tokens <= INF:
            raise UserError(f"max_tokens must be in [1, {INF}], got "
                            f"{show_value(self.max_tokens)}")
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise UserError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if not 0 <= self.top_k <= INF:
            raise UserError(f"top_k must be in [0, {INF}] (0 disables it), got "
                            f"{show_value(self.top_k)}")
        if not math.isfinite(self.top_p) or not 0.0 < self.top_p <= 1.0:
            raise UserError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise UserError(f"seed must be in [0, 2**63 - 1], got {show_value(self.seed)}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0
