"""Core micro-benchmark: schedule lookups per second and routing time for a 256-request batch.

Run: .venv/bin/python benchmarks/core_lookup.py [--json OUT]
Targets (issues 2, 13): >= 1M lookups/s, < 20 us per 256-request route, also for a schedule whose
ranges reach the project's "infinity" (memory proportional to the number of ranges: bisects over
range bounds, no per-batch-size table). Prints measured figures only; also the static policy's
whole decision for 256 requests (route + caps + the BatchState the engine builds).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import time
from collections.abc import Callable

from specsched.policy import BatchState, PolicyConfig
from specsched.policy.route import route, route_per_request
from specsched.schedule import parse_schedule
from specsched.schedule.model import INF


def best_rate(fn: Callable[[], object], n: int, repeats: int = 7) -> float:
    """Best-of-`repeats` seconds per call over `n` calls (min is the least noisy estimate)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rng = random.Random(0)
    ctx_bounds = [1, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    bs_bounds = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    entries = []
    for b0, b1 in zip(bs_bounds, [*bs_bounds[1:], 1024]):
        for c0, c1 in zip(ctx_bounds, [*ctx_bounds[1:], 1 << 20]):
            entries.append([b0, b1 - 1 if b1 != 1024 else 1024, c0, c1 - 1, rng.randint(0, 8)])
    s = parse_schedule(entries)
    probes = [(rng.randint(1, 300), rng.randint(0, 40000)) for _ in range(1000)]
    k_for = s.k_for

    def lookups() -> None:
        for bs, ctx in probes:
            k_for(bs, ctx)

    per_1000 = best_rate(lookups, 200)
    lookups_per_s = 1000 / per_1000
    computed = [rng.randint(1, 8000) for _ in range(256)]
    prompts = [rng.randint(1, 8000) for _ in range(256)]
    route_mean = best_rate(lambda: route(s, computed, prompts, "mean"), 2000)
    route_median = best_rate(lambda: route(s, computed, prompts, "median"), 2000)
    per_req = best_rate(lambda: route_per_request(s, computed), 2000)
    # a legal schedule whose batch ranges reach the project's infinity, with a far second range
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    huge = parse_schedule([[1, 10**6, 1, 4096, 2], [1, 10**6, 4097, INF, 4],
                           [2 * 10**9, INF, 1, 4096, 1], [2 * 10**9, INF, 4097, INF, 3]])
    huge_probes = [(rng.randint(1, INF), rng.randint(0, INF)) for _ in range(1000)]
    huge_k_for = huge.k_for

    def huge_lookups() -> None:
        for bs, ctx in huge_probes:
            huge_k_for(bs, ctx)

    huge_per_1000 = best_rate(huge_lookups, 200)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    policy = PolicyConfig(schedule=s).build()
    batch = BatchState.from_counts(computed, prompts, room=[8] * 256)
    decide = best_rate(lambda: policy.decide(batch), 2000)
    result = {
        "grid": f"{len(s.batch_ranges)}x{len(s.ctx_ranges)}",
        "lookups_per_s": round(lookups_per_s),
        "route_256_mean_us": round(route_mean * 1e6, 2),
        "route_256_median_us": round(route_median * 1e6, 2),
        "route_per_request_256_us": round(per_req * 1e6, 2),
        "huge_ranges_lookups_per_s": round(1000 / huge_per_1000),
        "huge_ranges_rss_growth_kb": rss_kb,
        "static_policy_decide_256_us": round(decide * 1e6, 2),
        "python": platform.python_version(),
    }
    print(f"schedule {result['grid']} grid: {lookups_per_s / 1e6:.2f} M lookups/s (target >= 1)")
    print(
        f"route 256 requests: mean {route_mean * 1e6:.1f} us, median {route_median * 1e6:.1f} us "
        f"(target < 20); per-request {per_req * 1e6:.1f} us"
    )
    print(f"ranges up to 2**31-1: {1000 / huge_per_1000 / 1e6:.2f} M lookups/s, max RSS grew "
          f"{rss_kb} kB; static policy decide for 256 requests: {decide * 1e6:.1f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
