"""Drive the reference engine step by step: bounded concurrency, per-step timing, early stop.

`LLM.generate` runs prompts to completion; profiling and benchmarking need more: the wall time
and the draft / verify / overhead split of *each* step (read as deltas of the engine's `RunStats`,
which times the phases with `perf_counter`), whether every request was decoding in that step (a
timing sample must not contain a prefill chunk), per-request chunk times (inter-token latency as
a server streams it: one chunk per step), at most `concurrency` requests in flight (new ones
admitted as others finish), and a stop rule that ends the run early (requests in flight are
aborted: their slots freed, the drafter released).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specsched.engine.engine import LLMEngine
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.sched.sequence import Sequence as EngineSeq
from specsched.engine.stats import RunStats


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One engine step. Times in seconds (perf_counter)."""

    wall_s: float  # the whole `step()` call
    draft_s: float
    verify_s: float  # target forward + verification / sampling
    overhead_s: float
    all_decoding: bool  # every request in flight was decoding (no prefill chunk, none queued)
    num_running: int  # requests in flight when the step started
    routed_k: int | None  # the router's K for the step (None: no decoding request)
    end_s: float


@dataclass(slots=True)
class DriveResult:
    seqs: list[EngineSeq]  # in prompt order
    steps: list[StepRecord]
    chunk_times: list[list[float]]  # per request: perf_counter of each step that emitted tokens
    stats: RunStats
    start_s: float
    end_s: float
    aborted: bool = False
    submit_s: list[float] = field(default_factory=list)  # per request: when it was added

    @property
    def wall_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def num_output_tokens(self) -> int:
        return sum(len(s.output_token_ids) for s in self.seqs)


StopRule = Callable[[DriveResult], bool]


def _abort(engine: LLMEngine, seqs: Sequence[EngineSeq]) -> None:
    """Abort unfinished requests (their prompt blocks stay in the prefix cache)."""
    for seq in seqs:
        engine.abort(seq)


def drive(
    engine: LLMEngine,
    prompts: Sequence[list[int]],
    params: SamplingParams | Sequence[SamplingParams],
    concurrency: int | None = None,
    stop: StopRule | None = None,
    on_step: Callable[[DriveResult], Any] | None = None,
) -> DriveResult:
    """Run `prompts` on `engine` with at most `concurrency` in flight; see module doc."""
    if engine.has_unfinished():
        raise RuntimeError("drive() needs an idle engine")
    plist = [params] * len(prompts) if isinstance(params, SamplingParams) else list(params)
    limit = concurrency or len(prompts)
    engine.reset_stats()
    start = time.perf_counter()
    res = DriveResult([], [], [], engine.stats, start, start)
    queue = list(range(len(prompts)))
    inflight: list[EngineSeq] = []
    seen_out: list[int] = []
    try:
        while queue or inflight:
            while queue and len(inflight) < limit:
                i = queue.pop(0)
                res.submit_s.append(time.perf_counter())
                seq = engine.add_request(list(prompts[i]), plist[i])
                res.seqs.append(seq)
                res.chunk_times.append([])
                seen_out.append(0)
                inflight.append(seq)
            decoding = all(s.slot is not None and not s.is_prefilling for s in inflight)
            t0 = time.perf_counter()
            engine.step()
            t1 = time.perf_counter()
            ls = engine.last_step
            res.steps.append(StepRecord(
                t1 - t0,
                0.0 if ls is None else ls.draft_s,
                0.0 if ls is None else ls.verify_s,
                0.0 if ls is None else ls.overhead_s,
                decoding, len(inflight), None if ls is None else ls.routed_k, t1,
            ))
            for j, seq in enumerate(res.seqs):
                n = len(seq.output_token_ids)
                if n != seen_out[j]:
                    res.chunk_times[j].append(t1)
                    seen_out[j] = n
            inflight = [s for s in inflight if not s.finished]
            res.end_s = t1
            if on_step is not None:
                on_step(res)
            if stop is not None and stop(res) and (queue or inflight):
                _abort(engine, inflight)
                queue.clear()
                inflight = []
                res.aborted = True
    except BaseException:
        _abort(engine, inflight)
        raise
    finally:
        res.stats = engine.reset_stats()
    return res


def uncached(engine: LLMEngine, prompts: Sequence[list[int]]) -> int:
    """How many prompts would not find all their full blocks in the prefix cache (their prefill
    would be timed). Reusing a slot may evict blocks, so the cache is asked, not remembered."""
    from specsched.engine.sched.prefix_cache import block_hashes

    pc = engine.prefix_cache
    if pc is None:
        return len(prompts)
    size = engine.cfg.block_size
    missing = 0
    for p in prompts:
        hit = pc.lookup(block_hashes(list(p), size), len(p))
        full = (len(p) - 1) // size * size
        missing += int(full > 0 and (hit is None or hit.num_tokens < full))
    return missing


def warm_prefix(engine: LLMEngine, prompts: Sequence[list[int]],
                concurrency: int | None = None) -> bool:
    """Prefill `prompts` untimed (no speculation, one token each) unless all are cached: the
    first alone (a shared prefix is then computed once), then all. True when it ran."""
    if engine.prefix_cache is None or uncached(engine, prompts) == 0:
        return False
    engine.set_speculative(None)
    one = SamplingParams(max_tokens=1, ignore_eos=True)
    drive(engine, prompts[:1], one)
    drive(engine, prompts, one, concurrency)
    return True

