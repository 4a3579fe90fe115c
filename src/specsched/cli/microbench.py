"""`specsched microbench attention`: which context statistic does verify attention follow?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specsched.cli._common import parse_int_list, print_json, stdout_console
from specsched.errors import UserError

KERNEL_NAMES = ("engine", "padded", "nested", "flex", "flash_varlen")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("microbench", help="kernel microbenchmarks (verify-step attention)")
    inner = p.add_subparsers(dest="bench", metavar="BENCH", parser_class=type(p))
    inner.required = True
    a = inner.add_parser(
        "attention",
        help="time verify-step attention over batch shapes; fit vs Σctx, B·max, B·median",
    )
    a.add_argument("--model", default="smollm2-135m",
                   help="planner preset (smollm2-135m, llama-3.1-8b, ...) or a config.json")
    a.add_argument("--layers", type=int, default=None, help="override the number of layers")
    a.add_argument("--heads", type=int, default=None, help="override query heads")
    a.add_argument("--kv-heads", type=int, default=None, help="override KV heads")
    a.add_argument("--head-dim", type=int, default=None, help="override head dim")
    a.add_argument("--batch-size", type=int, default=8, help="B (fixed over the grid)")
    a.add_argument("--num-spec-tokens", "-k", type=int, default=4,
                   help="K; the verify step has K+1 queries per sequence")
    a.add_argument("--mean-levels", default="256,512,1024",
                   help="mean contexts of the same-Σctx families (Σctx = B x level)")
    a.add_argument(
        "--max-levels", default="1024,2048", help="max contexts of the same-max families"
    )
    a.add_argument("--min-ctx", type=int, default=16, help="shortest sequence in any shape")
    a.add_argument("--kernels", default=None,
                   help=f"comma list of {', '.join(KERNEL_NAMES)} "
                   "(default: engine,padded on CPU, all on CUDA)")
    a.add_argument("--warmup", type=int, default=2)
    a.add_argument("--repeats", type=int, default=10)
    a.add_argument("--dtype", default=None, help="float32 (CPU default), bfloat16 (CUDA default)")
    a.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    a.add_argument("--max-cache-mib", type=int, default=2048,
                   help="memory for distinct per-layer KV caches; layers beyond it reuse them")
    a.add_argument("--threads", type=int, default=1,
                   help="CPU intra-op threads (default 1; 0 keeps torch's default)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--min-r2", type=float, default=0.75, help="verdict: best fit's R² floor")
    a.add_argument("--min-rmse-ratio", type=float, default=1.25,
                   help="verdict: runner-up RMSE / best RMSE needed to name a winner")
    a.add_argument("--out", default="microbench-attention.json", help="JSON result path")
    a.add_argument("--plot", default=None, help="PNG path (default: --out with .png)")
    a.add_argument("--no-plot", action="store_true")
    a.add_argument("--json", action="store_true", help="print the result JSON to stdout")
    a.set_defaults(func=run)


def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {name}: CUDA is not available here; use --device cpu")
    if name != "cpu" and not name.startswith("cuda"):
        raise UserError(f"--device {name!r}: use auto, cpu, cuda or cuda:N")
    return name


def run(args: argparse.Namespace) -> int:
    import warnings

    import torch

    from specsched.microbench.fit import VerdictRule
    from specsched.microbench.geometry import resolve_geometry
    from specsched.microbench.kernels import KernelKind, default_kernels
    from specsched.microbench.report import render_table, write_json, write_plot
    from specsched.microbench.runner import MicrobenchConfig, run_microbench
    from specsched.microbench.shapes import ShapeGrid

    geometry = resolve_geometry(
        args.model, num_layers=args.layers, num_heads=args.heads,
        num_kv_heads=args.kv_heads, head_dim=args.head_dim,
    )
    device = _device(args.device)
    if args.kernels is None:
        kernels = default_kernels(torch.device(device))
    else:
        names = [n.strip() for n in args.kernels.split(",") if n.strip()]
        bad = [n for n in names if n not in KERNEL_NAMES]
        if bad or not names:
            raise UserError(
                f"--kernels: unknown {bad or names}; choose from {', '.join(KERNEL_NAMES)}"
            )
        kernels = tuple(KernelKind(n) for n in dict.fromkeys(names))
    grid = ShapeGrid(
        batch_size=args.batch_size,
        mean_levels=tuple(parse_int_list(args.mean_levels, "--mean-levels", 1)),
        max_levels=tuple(parse_int_list(args.max_levels, "--max-levels", 1)),
        min_ctx=args.min_ctx,
    )
    cfg = MicrobenchConfig(
        geometry=geometry, grid=grid, num_spec_tokens=args.num_spec_tokens, kernels=kernels,
        warmup=args.warmup, repeats=args.repeats,
        dtype=args.dtype or ("bfloat16" if device.startswith("cuda") else "float32"),
        device=device, max_cache_mib=args.max_cache_mib, seed=args.seed,
        threads=args.threads or None,
        rule=VerdictRule(min_r2=args.min_r2, min_rmse_ratio=args.min_rmse_ratio, seed=args.seed),
    )
    console = stdout_console()

    def progress(msg: str) -> None:
        if not args.json:
            print(f"microbench: {msg}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*nested tensors is in prototype stage.*")
        result = run_microbench(cfg, progress)
    result["meta"]["command"] = "specsched " + " ".join(sys.argv[1:])
    out = Path(args.out)
    write_json(out, result)
    plot = None if args.no_plot else Path(args.plot) if args.plot else out.with_suffix(".png")
    if plot is not None:
        write_plot(plot, result)
    if args.json:
        print_json(result)
    else:
        render_table(console, result)
        console.print(f"wrote {out}" + (f" and {plot}" if plot else ""))
    return 0
