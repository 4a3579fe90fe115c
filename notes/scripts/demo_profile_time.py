"""Where the demo's profile step spends its time (fiftieth stop): the demo's own profile
(`DemoConfig()` defaults, its grid and EngineProfileConfig) into PROFILE_JSON, printing the
seconds of each measured unit (an acceptance point, or one batch x context's timing rounds).
  .venv/bin/python notes/scripts/demo_profile_time.py PROFILE_JSON
"""
import sys
import time
from pathlib import Path

from specsched.demo.config import DemoConfig
from specsched.demo.pipeline import _LazyLLM, _profile_args
from specsched.tune.profile_run import profile_engine

cfg = DemoConfig()
grid, pcfg = _profile_args(cfg)
lazy = _LazyLLM(cfg)
t0 = time.perf_counter()
last = [t0]


def progress(done: int, total: int, what: str) -> None:
    now = time.perf_counter()
    print(f"{now - t0:7.1f}s  +{now - last[0]:6.1f}s  {done}/{total} {what}", flush=True)
    last[0] = now


t = time.perf_counter()
lazy.get()
print(f"load {time.perf_counter() - t:.1f}s", flush=True)
profile_engine(Path(sys.argv[1]), grid, pcfg, lazy.get, progress)
print(f"total {time.perf_counter() - t0:.1f}s")
