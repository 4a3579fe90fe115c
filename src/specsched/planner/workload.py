"""A serving workload described in a few lines, and its seeded draws for the simulator.

    num_requests: 8          # requests in the run
    concurrency: 4           # at most this many in flight (the batch size while all run)
    arrival: waves           # closed-loop: a finished request's slot refills at once
                             #   (vllm bench --max-concurrency); waves: the next `concurrency`
                             #   start together when the whole wave has finished
    prompt_len: 4096         # tokens; or {uniform: [lo, hi]}, {lognormal: {mean: m, std: s}},
    output_len: 40           #   {values: [a, b, ...]} (drawn with replacement)
    acceptance_spread: null  # per-request acceptance: null = the profile's measured requests,
                             #   0 = every request at the mean, s = mean + s·z (one z per request)
    prefill_tokens: null     # tokens each starting request prefills (null: its prompt;
                             #   a prefix-cached prompt prefills only its uncached tail)

YAML or JSON, a file or an inline JSON object; every error is one line (`UserError`).
`draw_workload` turns it into `simulate.Workload` for one seed: lengths drawn, and each request's
acceptance per position drawn around the profile's mean at its context (`acceptance_ci`).
No torch here.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from specsched.errors import UserError
from specsched.io import (
    check_keys,
    parse_data_text,
    parse_json_text,
    read_user_text,
    show_text,
    show_value,
)
from specsched.planner.profile import Profile
from specsched.planner.simulate import SimRequest, Workload
from specsched.planner.workload_acceptance import output_phases, request_acceptance

MAX_REQUESTS = 100_000
MAX_TOKENS = 10_000_000


class Arrival(str, Enum):
    CLOSED_LOOP = "closed-loop"
    WAVES = "waves"


class DistKind(str, Enum):
    FIXED = "fixed"
    UNIFORM = "uniform"  # integers lo..hi inclusive
    LOGNORMAL = "lognormal"  # with this mean and standard deviation (tokens), rounded, >= 1
    VALUES = "values"  # drawn with replacement


@dataclass(frozen=True, slots=True)
class LengthDist:
    kind: DistKind
    params: tuple[float, ...]  # FIXED (n,); UNIFORM (lo, hi); LOGNORMAL (mean, std); VALUES

    def draw(self, rng: random.Random) -> int:
        p = self.params
        if self.kind is DistKind.FIXED:
            return int(p[0])
        if self.kind is DistKind.UNIFORM:
            return rng.randint(int(p[0]), int(p[1]))
        if self.kind is DistKind.VALUES:
            return int(rng.choice(p))
        mean, std = p
        sigma2 = math.log(1.0 + (std / mean) ** 2)
        value = rng.lognormvariate(math.log(mean) - sigma2 / 2, math.sqrt(sigma2))
        return int(min(max(1, round(value)), MAX_TOKENS))

    @property
    def bounds(self) -> tuple[int, int]:
        """The smallest and largest value a draw can take (lognormal: its 0.1%..99.9% range)."""
        if self.kind is DistKind.LOGNORMAL:
            mean, std = self.params
            s = math.sqrt(math.log(1.0 + (std / mean) ** 2))
            mu = math.log(mean) - s * s / 2
            return max(1, int(math.exp(mu - 3.1 * s))), int(math.exp(mu + 3.1 * s)) + 1
        return int(min(self.params)), int(max(self.params))


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    num_requests: int
    concurrency: int
    prompt_len: LengthDist
    output_len: LengthDist
    arrival: Arrival = Arrival.CLOSED_LOOP
    acceptance_spread: float | None = None
    prefill_tokens: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.num_requests <= MAX_REQUESTS:
            raise UserError(f"workload: num_requests must be in [1, {MAX_REQUESTS}], got "
                            f"{self.num_requests}")
        if not 1 <= self.concurrency <= MAX_REQUESTS:
            raise UserError(f"workload: concurrency must be in [1, {MAX_REQUESTS}], got "
                            f"{self.concurrency}")
        if self.acceptance_spread is not None and not 0.0 <= self.acceptance_spread <= 1.0:
            raise UserError(f"workload: acceptance_spread must be in [0, 1] or null, got "
                            f"{self.acceptance_spread}")
        if self.prefill_tokens is not None and not 0 <= self.prefill_tokens <= MAX_TOKENS:
            raise UserError(f"workload: prefill_tokens must be in [0, {MAX_TOKENS}] or null")


def _number(value: Any, where: str, low: float, integer: bool,
            high: float = MAX_TOKENS) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            integer and not isinstance(value, int)):
        kind = "an integer" if integer else "a number"
        raise UserError(f"{where}: expected {kind}, got {show_value(value)}")
    if not math.isfinite(value) or not low <= value <= high:
        raise UserError(f"{where}: must be in [{low:g}, {high:g}], got {show_value(value)}")
    return float(value)


def length_from_obj(obj: Any, where: str) -> LengthDist:
    """`n`, {uniform: [lo, hi]}, {lognormal: {mean, std}} or {values: [...]} (tokens >= 1)."""
    if not isinstance(obj, dict):
        return LengthDist(DistKind.FIXED, (_number(obj, where, 1, True),))
    check_keys(obj, {"uniform", "lognormal", "values"}, where)
    if len(obj) != 1:
        raise UserError(f"{where}: expected one of uniform, lognormal, values (a mapping with "
                        f"one key), got {show_value(obj)}")
    key, raw = next(iter(obj.items()))
    at = f"{where}.{key}"
    if key == "lognormal":
        params = check_keys(raw, {"mean", "std"}, at)
        if set(params) != {"mean", "std"}:
            raise UserError(f"{at}: needs mean and std (tokens)")
        mean = _number(params["mean"], f"{at}.mean", 1, False)
        return LengthDist(DistKind.LOGNORMAL, (mean, _number(params["std"], f"{at}.std", 0, False)))
    if not isinstance(raw, list) or not raw or len(raw) > MAX_REQUESTS:
        raise UserError(f"{at}: expected a non-empty list, got {show_value(raw)}")
    values = tuple(_number(v, f"{at}[{i}]", 1, True) for i, v in enumerate(raw))
    if key == "uniform":
        if len(values) != 2 or values[0] > values[1]:
            raise UserError(f"{at}: expected [lo, hi] with lo <= hi, got {show_value(raw)}")
        return LengthDist(DistKind.UNIFORM, values)
    return LengthDist(DistKind.VALUES, values)


def workload_from_obj(obj: Any, where: str = "workload") -> WorkloadSpec:
    """Validate decoded YAML/JSON into a `WorkloadSpec` (see module doc)."""
    keys = {"num_requests", "concurrency", "arrival", "prompt_len", "output_len",
            "acceptance_spread", "prefill_tokens"}
    fields = check_keys(obj, keys, where)
    for key in ("num_requests", "concurrency", "prompt_len", "output_len"):
        if key not in fields:
            raise UserError(f"{where}: {key} is required")
    arrival = fields.get("arrival", Arrival.CLOSED_LOOP.value)
    try:
        arr = Arrival(arrival)
    except ValueError:
        raise UserError(f"{where}.arrival: {show_value(arrival)} is not closed-loop or "
                        f"waves") from None
    spread = fields.get("acceptance_spread")
    prefill = fields.get("prefill_tokens")
    return WorkloadSpec(
        int(_number(fields["num_requests"], f"{where}.num_requests", 1, True, MAX_REQUESTS)),
        int(_number(fields["concurrency"], f"{where}.concurrency", 1, True, MAX_REQUESTS)),
        length_from_obj(fields["prompt_len"], f"{where}.prompt_len"),
        length_from_obj(fields["output_len"], f"{where}.output_len"),
        arr,
        None if spread is None else _number(spread, f"{where}.acceptance_spread", 0, False, 1),
        None if prefill is None else int(_number(prefill, f"{where}.prefill_tokens", 0, True)),
    )


def load_workload(source: str) -> WorkloadSpec:
    """A workload file (YAML, or JSON by its .json suffix) or an inline JSON object."""
    if source.lstrip().startswith("{"):
        return workload_from_obj(parse_json_text(source, "--workload"), "--workload")
    text = read_user_text(source, "workload")
    obj = parse_data_text(text, source, Path(source).suffix)
    return workload_from_obj(obj, f"{show_text(source, 120)}: workload")


def draw_workload(spec: WorkloadSpec, profile: Profile, seed: int,
                  quantile: float = 0.5, sample: int | None = None) -> Workload:
    """The simulator's workload for one seed (lengths and per-request acceptance drawn, and
    that acceptance along the output where the profile measured it: `output_phases`); the
    acceptance at `quantile` over each request's own output length (`request_acceptance`)."""
    rng = random.Random(f"{seed}/workload")
    reqs = []
    for _ in range(spec.num_requests):
        prompt, out = spec.prompt_len.draw(rng), spec.output_len.draw(rng)
        a = request_acceptance(profile, prompt, spec.acceptance_spread, rng, quantile, out,
                               sample)
        reqs.append(SimRequest(prompt, out, output_phases(profile, prompt, a, out)))
    return Workload(tuple(reqs), spec.concurrency, spec.arrival is Arrival.WAVES,
                    spec.prefill_tokens)
