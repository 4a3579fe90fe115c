"""The 2-D plan's arm per cell of a plan_eval folder with its speedup paired by repetition
(fifty-fourth stop, issue 15): the median over repetitions of tok/s at the arm's K over tok/s
at K0 measured in the same repetition (same texts), beside plan_eval's ratio of medians and the
prediction in plan_eval.json.

  python3 notes/scripts/plan_eval_paired.py DIR
"""
import json
import statistics
import sys
from pathlib import Path

run = json.loads((Path(sys.argv[1]) / "plan_eval.json").read_text())
for cell in run["cells"]:
    m, arm = cell["measured_tok_s"], cell["arms"]["2-D plan"]
    k = str(arm["k"])
    paired = [x / y for x, y in zip(m[k], m["0"], strict=True)]  # [reps]
    med, pred = statistics.median(paired), arm["predicted_speedup"]
    print(f"B={cell['batch_size']} ctx={cell['ctx']} K{k} per-rep {[round(x, 2) for x in paired]}"
          f" paired {med:.3f} ratio-of-medians {arm['measured_speedup']:.3f} predicted {pred:.3f}"
          f" error paired {100 * (pred / med - 1):+.1f} %")
