"""Model-shaped matmul cost by row count and kernel, on this CPU: one SmolLM2-135M forward's
weights (30 layers of qkv / o / gate_up / down + the output layer), fp32, through oneDNN with the
blocked (prepacked) weight — the engine's path —, oneDNN on the plain weight, and F.linear (MKL);
plus the int8 draft's kernel (`Int8Linear`). Rows = tokens in the step (B x (K + 1) for a
verify). Kernels interleaved per round, medians; ms per forward.

  .venv/bin/python notes/scripts/linear_rows_probe.py [--rows 1,4,6,8,16,24] [--rounds 5] [--threads 1]"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from specsched.engine.layers.linear import PACK_ROWS, onednn_linear, quantize_int8

SHAPES = [(960, 576), (576, 576), (3072, 576), (576, 1536)] * 30 + [(49152, 576)]

p = argparse.ArgumentParser()
p.add_argument("--rows", default="1,4,6,8,16,24")
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--kinds", default="packed,plain,mkl,int8")
p.add_argument("--threads", type=int, default=0, help="torch threads (0: the default)")
args = p.parse_args()
if args.threads:
    torch.set_num_threads(args.threads)
torch.manual_seed(0)
ws = [torch.randn(n, k) * 0.02 for n, k in SHAPES]
kinds = args.kinds.split(",")
packed = [torch.ops.mkldnn._reorder_linear_weight(w, PACK_ROWS) for w in ws] \
    if "packed" in kinds else []
int8 = [quantize_int8(w) for w in ws] if "int8" in kinds else []


def run(kind: str, rows: int) -> float:
    xs = {k: torch.randn(rows, k) for k in (576, 1536)}
    t = time.perf_counter()
    for i, w in enumerate(ws):
        x = xs[w.shape[1]]
        if kind == "packed":
            onednn_linear(x, packed[i])
        elif kind == "plain":
            onednn_linear(x, w)
        elif kind == "mkl":
            F.linear(x, w)
        else:
            int8[i](x)
    return 1000 * (time.perf_counter() - t)


print(f"torch {torch.__version__} {torch.backends.cpu.get_cpu_capability()} "
      f"threads {torch.get_num_threads()}")
rows_list = [int(r) for r in args.rows.split(",")]
res: dict[tuple[str, int], list[float]] = {}
for _ in range(args.rounds):
    for rows in rows_list:
        for kind in kinds:
            run(kind, rows)  # warm
            res.setdefault((kind, rows), []).append(run(kind, rows))
print("rows | " + " | ".join(f"{k} ms (/1 row)" for k in kinds))
for rows in rows_list:
    cells = []
    for kind in kinds:
        m = statistics.median(res[(kind, rows)])
        one = statistics.median(res[(kind, 1)]) if (kind, 1) in res else m
        cells.append(f"{m:.1f} ({m / one:.2f})")
    print(f"{rows} | " + " | ".join(cells), flush=True)
