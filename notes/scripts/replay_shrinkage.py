"""`replay_steps.py` with two internals of the acceptance estimate printed before each step line
(thirty-ninth stop): the shrinkage weight a request's estimate borrows from its bucket
(`shrinkage_weight`, empirical Bayes) and whether a verify read as a text change
(`TwoHorizon.changed`: the bucket then decays by `fast_decay`).
  .venv/bin/python notes/scripts/replay_shrinkage.py EXPERIMENT RESULTS SCENARIO ARM REP [...]"""
import builtins
import runpy
import sys
from pathlib import Path

import specsched.policy.adaptive_acceptance as aa
from specsched.policy.acceptance_stats import TwoHorizon

notes: list[str] = []
weight, changed, show = aa.shrinkage_weight, TwoHorizon.changed, builtins.print


def logged_weight(*args, **kw):  # type: ignore[no-untyped-def]
    w = weight(*args, **kw)
    notes.append(f"w={w:.2f}")
    return w


def logged_changed(self, *args, **kw):  # type: ignore[no-untyped-def]
    fast = changed(self, *args, **kw)
    if fast:
        notes.append("TEXT-CHANGE")
    return fast


def tagged_print(*args, **kw):  # type: ignore[no-untyped-def]
    if notes:
        show(" ".join(dict.fromkeys(notes)), end=" ")
        notes.clear()
    show(*args, **kw)


aa.shrinkage_weight = logged_weight
TwoHorizon.changed = logged_changed  # type: ignore[method-assign]
builtins.print = tagged_print
sys.argv = ["replay_steps.py", *sys.argv[1:]]
runpy.run_path(str(Path(__file__).with_name("replay_steps.py")), run_name="__main__")
