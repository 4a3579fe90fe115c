"""trace_sim.py's pooled B = 1 score with the guard's MIN_SPEC (drafting steps before it may
judge) patched (forty-fourth stop).
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/trace_sim_min_spec.py N ['cfg' ...]"""
import sys

import specsched.policy.adaptive_guard as guard

guard.MIN_SPEC = int(sys.argv[1])
sys.argv = ["trace_sim.py", *sys.argv[2:]]
import trace_sim  # noqa: E402

trace_sim.main()
