"""Exploration for issue 14 (thirty-sixth stop; not in the package): a request turned off on
little evidence drifts back faster while its mates draft (its retry then costs one row, not a
step). Patches AcceptanceBook.idle: at a step where some request drafts, a request at K = 0
whose first-position evidence (decayed verifies) is below WEAK_N decays by WEAK_DECAY instead
of cfg.idle_decay. Runs any simulator script with it:
  WEAK_N=5 .venv/bin/python notes/scripts/weak_idle.py notes/scripts/early_reject_sim.py
Found (WEAK_N 5, WEAK_DECAY 0.8): early_reject_sim MIXED=1 0.960 / 0.960 -> 0.971 / 0.977,
all-early 0.966 / 0.969 -> 0.970 / 0.974; phases_sim (shuffled acceptances) 1.197 unchanged
(B = 1: no mates); policy_sim 0.9801 unchanged. Without the mates condition the phases bench
lost (1.197 -> 1.159 at WEAK_N 3): quoting requests retried alone at B = 1."""
import os, runpy, sys
from specsched.policy import adaptive_acceptance as aa
WEAK_N = float(os.environ.get("WEAK_N", "3"))
WEAK_DECAY = float(os.environ.get("WEAK_DECAY", "0.8"))
MARKED = os.environ.get("WEAK_ONLY_MARKED") == "1"  # only where max_tracked_requests == 8191
orig = aa.AcceptanceBook.idle
FIRED: list[int] = []
def idle(self, reqs, ks, ctx):
    if MARKED and self.cfg.max_tracked_requests != 8191:  # an engine A/B's other arms
        return orig(self, reqs, ks, ctx)
    mates_draft = any(k > 0 for k in ks)
    for r, k in zip(reqs, ks):
        if mates_draft and k == 0 and 0 < r.counts.tested[0] < WEAK_N:
            if not FIRED:
                FIRED.append(1)
                print("weak_idle: a request's idle decay was sped up", file=sys.stderr)
            r.counts.decay(WEAK_DECAY / self.cfg.idle_decay)  # then the usual decay below
    orig(self, reqs, ks, ctx)
aa.AcceptanceBook.idle = idle
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
