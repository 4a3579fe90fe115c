"""`specsched generate`: run the engine on one or more prompts (chat template applied).

Speculative decoding: `--drafter streaming|ngram|model:PATH|none` (streaming is the default
drafter) and `--schedule SCHEDULE` (file or inline JSON, 3- or 5-item entries) or `--k N`
(static). Without `--schedule` / `--k` no step speculates (K = 0): on this project's CPU runs,
speculation paid only at large batch x long context (notes/spec_bench.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from specsched.cli.spec_flags import add_drafter_args, add_policy_args, speculative_from_args
from specsched.errors import UserError
from specsched.io import MiB, atomic_write_json, check_output_path, read_user_text, show_value
from specsched.policy import PolicyKind

DEFAULT_MODEL = "smollm2-135m"  # = specsched.engine.loading.registry.DEFAULT_MODEL, no torch
MAX_PROMPTS_BYTES = 64 * MiB


def register(sub: Any) -> None:
    p = sub.add_parser("generate", help="generate text with the built-in engine (CPU or CUDA)")
    p.add_argument("--prompt", action="append", default=[], help="prompt text (repeatable)")
    p.add_argument("--prompts-file", type=Path, help="file with one prompt per line")
    p.add_argument("--model", default=DEFAULT_MODEL, help="smollm2-135m, a .gguf file or an HF dir")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=None, help="prompt i uses seed + i")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the one-token (batch-1 decode) step; first call compiles")
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--no-chat-template", action="store_true", help="feed prompts raw")
    p.add_argument("--json", action="store_true", help="print outputs and stats as JSON")
    add_drafter_args(p)
    add_policy_args(p)
    p.add_argument("--freeze-to", type=Path, default=None,
                   help="adaptive: write what the policy learned as a 5-item schedule (JSON)")
    p.set_defaults(func=run)


def check_prompt_text(text: str, where: str) -> str:
    """`text` if it is valid Unicode; a --prompt holding bytes that are not UTF-8 (the shell
    passes them as lone surrogates, PEP 383) is refused, never replaced silently."""
    bad = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        byte = ord(text[bad]) - 0xDC00 if 0xDC80 <= ord(text[bad]) <= 0xDCFF else None
        what = f"byte 0x{byte:02x}" if byte is not None else "a lone surrogate"
        raise UserError(f"{where}: not valid UTF-8 text ({what} at character {bad}); pass "
                        f"UTF-8 text")
    return text


def read_prompts(args: argparse.Namespace) -> list[str]:
    """--prompt texts, then the non-blank lines of --prompts-file (a regular UTF-8 file)."""
    prompts = [check_prompt_text(p, f"--prompt {i}") for i, p in enumerate(args.prompt)]
    if args.prompts_file is not None:
        text = read_user_text(args.prompts_file, "prompts", MAX_PROMPTS_BYTES)
        prompts.extend(line for line in text.splitlines() if line.strip())
    if not prompts:
        raise UserError("no prompt: pass --prompt TEXT or --prompts-file FILE")
    return prompts


def run(args: argparse.Namespace) -> int:
    prompts = read_prompts(args)
    # the torch-free configs first: a bad number is refused before torch or the model loads
    from specsched.engine.config import EngineConfig
    from specsched.engine.sampling.params import SamplingParams

    EngineConfig(max_num_seqs=args.max_num_seqs, max_model_len=args.max_model_len,
                 max_num_batched_tokens=max(512, args.max_num_seqs), dtype=args.dtype,
                 device=args.device, num_threads=args.threads)
    if not 1 <= args.max_new_tokens < args.max_model_len:
        raise UserError(
            f"--max-new-tokens must be in [1, --max-model-len - 1 = {args.max_model_len - 1}] (a "
            f"sequence holds at most --max-model-len tokens, prompt included), got "
            f"{show_value(args.max_new_tokens)}"
        )
    spec = speculative_from_args(args)
    if args.freeze_to is not None:  # refused before the model loads, not after generating
        if spec.policy.kind is not PolicyKind.ADAPTIVE:
            raise UserError("--freeze-to needs --policy adaptive (a static policy learns nothing)")
        check_output_path(args.freeze_to, "learned schedule")
    params = [  # request i is seeded with seed + i so prompts do not share one random stream
        SamplingParams(
            max_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_k=args.top_k,
            top_p=args.top_p,
            seed=None if args.seed is None else args.seed + i,
        )
        for i in range(len(prompts))
    ]
    from specsched.cli._common import print_json, stdout_console
    from specsched.engine import LLM

    llm = LLM(
        model=args.model,
        dtype=args.dtype,
        device=args.device,
        max_num_seqs=args.max_num_seqs,
        max_model_len=args.max_model_len,
        num_threads=args.threads,
        speculative=spec,
        compile=args.compile,
    )
    outputs = generate_with_progress(llm, prompts, params, not args.no_chat_template, args.json)
    run_stats = llm.last_run_stats
    learned = llm.engine.learned_schedule()  # adaptive policy only
    if args.freeze_to is not None:
        if learned is None:
            raise UserError("--freeze-to needs --policy adaptive (a static policy learns nothing)")
        atomic_write_json(args.freeze_to, {"speculative_token_schedule": learned.entries(5)})
    if args.json:
        print_json(
            {
                "speculative": {
                    "drafter": spec.drafter_label,
                    "window": spec.window,
                    "num_sink_tokens": spec.num_sink_tokens,
                    "schedule": spec.policy.schedule.entries(),
                    "ctx_agg": spec.policy.ctx_agg.value,
                    "per_request_k": spec.policy.per_request_k,
                    "policy": spec.policy.kind.value,
                    "learned_schedule": None if learned is None else learned.entries(5),
                    "draft_dtype": llm.engine.speculator.draft_dtype,
                    "draft_extra_weight_mb": round(llm.engine.speculator.draft_extra_bytes / 1e6,
                                                   1),
                },
                "outputs": [
                    {
                        "prompt": o.prompt,
                        "text": o.text,
                        "token_ids": o.token_ids,
                        "finish_reason": o.finish_reason,
                        "stats": o.stats.to_dict(),
                    }
                    for o in outputs
                ],
                "stats": None if run_stats is None else run_stats.to_dict(),
            }
        )
        return 0
    console = stdout_console()
    for o in outputs:
        if len(outputs) > 1:
            console.print(f"[bold]> {o.prompt}[/bold]")
        console.print(o.text, markup=False)
        tps = o.stats.decode_tokens_per_s
        console.print(
            f"[dim]{o.stats.num_output_tokens} tokens, finish={o.finish_reason}"
            + (f", {tps:.1f} tok/s decode" if tps else "")
            + "[/dim]"
        )
    if run_stats is not None and run_stats.spec.num_draft_tokens:
        mal = run_stats.spec.mean_accepted_length
        console.print(
            f"[dim]speculative ({spec.drafter_label}): {run_stats.spec.num_accepted_tokens}/"
            f"{run_stats.spec.num_draft_tokens} drafts accepted, mean accepted length "
            f"{mal:.2f}, K histogram {dict(sorted(run_stats.k_histogram.items()))}[/dim]"
        )
    return 0


def generate_with_progress(
    llm: Any, prompts: list[str], params: Any, chat: bool, quiet: bool
) -> list[Any]:
    """A tqdm bar over requests (on stderr) when there is more than one prompt."""
    if len(prompts) == 1 or quiet:
        return list(llm.generate(prompts, params, use_chat_template=chat))
    from tqdm import tqdm

    with tqdm(total=len(prompts), unit="req", desc="generate") as bar:
        return list(llm.generate(prompts, params, use_chat_template=chat, on_step=bar.update))
