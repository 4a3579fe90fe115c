"""The grid and roofline arguments of `specsched profile`, shared with `specsched plan` and
`specsched tune`: which (batch, context, K) points, which model, hardware and acceptance.
"""

from __future__ import annotations

import argparse

from specsched.cli._common import parse_int_list
from specsched.errors import UserError
from specsched.planner import Profile, ProfileGrid

DEFAULT_BATCH_SIZES = "1,4,16,64,256"
DEFAULT_CONTEXTS = "512,2048,8192,32768"
DEFAULT_KS = "0,1,2,3,4,6,8"
DEFAULT_MODEL = "llama-3.1-8b"
# The reference engine on a CPU: small defaults (a point costs seconds, a 4k prefill a minute).
ENGINE_BATCH_SIZES = "1,4"
ENGINE_CONTEXTS = "512,2048"
ENGINE_KS = "0,1,2,3"
ENGINE_MODEL = "smollm2-135m"


def parse_acceptance(text: str | None) -> tuple[float, ...] | None:
    """'0.8' (every position) or '0.9,0.85,0.8' (per draft position) -> floats in [0, 1]."""
    if text is None:
        return None
    out: list[float] = []
    for i, item in enumerate(t.strip() for t in text.split(",") if t.strip()):
        try:
            value = float(item)
        except ValueError:
            raise UserError(f"--acceptance: item {i} ({item!r}) is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise UserError(f"--acceptance: item {i} ({value}) must be in [0, 1]")
        out.append(value)
    if not out:
        raise UserError("--acceptance: expected a rate like 0.8 or a list like 0.9,0.85,0.8")
    return tuple(out)


def add_roofline_args(p: argparse.ArgumentParser, engine_aware: bool = False) -> None:
    """Arguments of the analytic roofline model, shared with `specsched plan`. `engine_aware`:
    --model and --ks default to None, resolved per mode (roofline vs --engine)."""
    g = p.add_argument_group("roofline model (plan for hardware you don't have)")
    g.add_argument("--roofline", action="store_true", help="use the analytic cost model")
    g.add_argument(
        "--gpu",
        default="H100-SXM",
        help="H100-SXM, H200, A100-80GB, L40S, or a JSON hardware spec (default H100-SXM)",
    )
    g.add_argument(
        "--model",
        default=None if engine_aware else DEFAULT_MODEL,
        help="roofline: llama-3.1-8b (default), llama-3.1-70b, qwen2.5-7b, smollm2-135m, or a "
        "JSON spec / HF config.json; --engine: smollm2-135m (default), a .gguf or HF directory",
    )
    g.add_argument(
        "--drafter",
        default="streaming",
        help="'streaming' (StreamingLLM self-draft, MagicDec) or a draft model preset / "
        "JSON (default streaming)",
    )
    g.add_argument(
        "--draft-window",
        type=int,
        default=512,
        help="StreamingLLM KV window of the self-draft, tokens (default 512)",
    )
    g.add_argument(
        "--ks",
        default=None if engine_aware else DEFAULT_KS,
        help=f"K values (default {DEFAULT_KS}; --engine: {ENGINE_KS}); 0 is always added",
    )


def add_grid_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--batch-sizes",
        default=None,
        help=f"comma-separated batch sizes {what} (default {DEFAULT_BATCH_SIZES})",
    )
    p.add_argument(
        "--contexts",
        default=None,
        help=f"comma-separated context lengths {what} (default {DEFAULT_CONTEXTS})",
    )
    p.add_argument(
        "--acceptance",
        default=None,
        help="acceptance per draft position: one rate (0.8) or a list (0.9,0.85,0.8); "
        "roofline default 0.8 (an assumption)",
    )


def grid_from_args(args: argparse.Namespace, engine: bool = False) -> ProfileGrid:
    bs_default = ENGINE_BATCH_SIZES if engine else DEFAULT_BATCH_SIZES
    cs_default = ENGINE_CONTEXTS if engine else DEFAULT_CONTEXTS
    bs = parse_int_list(args.batch_sizes or bs_default, "--batch-sizes", 1)
    cs = parse_int_list(args.contexts or cs_default, "--contexts", 1)
    ks = parse_int_list(args.ks or (ENGINE_KS if engine else DEFAULT_KS), "--ks", 0)
    return ProfileGrid(tuple(sorted(set(bs))), tuple(sorted(set(cs))), tuple(sorted({0, *ks})))


def roofline_from_args(args: argparse.Namespace) -> Profile:
    """A complete roofline Profile from the shared arguments."""
    from specsched.planner import (
        DraftKind,
        DraftSpec,
        resolve_hardware,
        resolve_model,
        roofline_profile,
    )

    hw, target = resolve_hardware(args.gpu), resolve_model(args.model or DEFAULT_MODEL)
    if args.drafter.lower() == "streaming":
        draft = DraftSpec(DraftKind.STREAMING, window=args.draft_window)
    else:
        draft = DraftSpec(DraftKind.MODEL, model=resolve_model(args.drafter))
    return roofline_profile(
        hw, target, draft, grid_from_args(args), parse_acceptance(args.acceptance)
    )
