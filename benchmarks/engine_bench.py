"""Engine microbenchmark on SmolLM2-135M: decode tok/s vs transformers, roofline, T(B, ctx, q).

    .venv/bin/python benchmarks/engine_bench.py --threads 2 --out notes/engine_step_grid.json
    .venv/bin/python benchmarks/engine_bench.py --threads 2 --q 1 --prefix-len 0 --compile \
        --llama-cpp --out /tmp/b1.json   # + the compiled B=1 step and llama.cpp as a peer

Decode ("no-spec") timing, ours: one ragged forward of B sequences x 1 new token on top of ctx
cached positions, plus greedy argmax and metadata building (the engine's step minus the Python
scheduler). KV contents are left as they are: timing does not depend on values, and skipping the
B x ctx prefill keeps the 4096-context points affordable. transformers: the same weights
(dequantized from the same GGUF) in `LlamaForCausalLM`, a `DynamicCache` pre-filled with ctx
positions, one `forward` + argmax per step, i.e. the inner loop of `generate()`; one real
`generate()` point (B=1, ctx=256, prefill subtracted) is reported as a cross-check.
Both run in this process, side by side, with the same dtype and thread count; figures are noisy
on a shared machine, ratios are the meaningful output.

B=1 roofline: bytes one step must read (every matmul weight once, fp32, + the KV of ctx
positions) over the read bandwidth (best of 5 `sum()`s over 512 MB, same threads), measured
right next to each B=1 point because it drifts on this VM (28-60 GB/s seen); the summary also
divides by the best bandwidth seen in the whole run. With `--compile`, also the "own-bytes
floor": `sum()` over exactly the tensors the compiled step reads, in their own allocations
(bandwidth here depends on where memory landed: one process reads 512 MB at 28-34 GB/s, the
next at 42-49). `--compile` adds the torch.compile'd
one-token step (`EngineConfig.compile`), `--llama-cpp` llama.cpp on the same GGUF file through
llama-cpp-python (its own quantized weights, so it reads ~4-5x fewer bytes; not installed by
the project: `pip install llama-cpp-python` builds llama.cpp, ~6 min on 2 cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' past_key_values rename


def median_time(fn: Callable[[], Any], steps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def read_bandwidth_gbs(threads: int) -> float:
    """Memory read bandwidth: best of 5 sums over a 512 MB fp32 tensor."""
    x = torch.ones(128 * 1024 * 1024)
    best = min(median_time(lambda: x.sum(), 1, warmup=1) for _ in range(5))
    return x.numel() * 4 / best / 1e9


def hf_reference(cfg: Any, weights: dict[str, torch.Tensor], dtype: torch.dtype) -> Any:
    import transformers

    tf: Any = transformers  # loosely typed stubs
    hf_cfg = tf.LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        head_dim=cfg.head_dim,
        rms_norm_eps=cfg.rms_norm_eps,
        rope_theta=cfg.rope_theta,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=cfg.tie_word_embeddings,
    )
    model = tf.LlamaForCausalLM(hf_cfg).to(dtype).eval()
    model.load_state_dict(weights, strict=False)
    model.tie_weights()
    return model


def hf_decode_step_s(model: Any, b: int, ctx: int, steps: int) -> float:
    from transformers import DynamicCache

    cfg = model.config
    dtype = next(model.parameters()).dtype
    cache = DynamicCache(config=cfg)
    for layer in range(cfg.num_hidden_layers):
        kv = torch.randn(b, cfg.num_key_value_heads, ctx, cfg.head_dim, dtype=dtype)
        cache.update(kv, kv.clone(), layer)
    ids = torch.full((b, 1), 5)
    pos = [ctx]

    def step() -> None:
        with torch.no_grad():
            out = model(
                input_ids=ids,
                past_key_values=cache,
                use_cache=True,
                position_ids=torch.full((b, 1), pos[0]),
                attention_mask=torch.ones(b, pos[0] + 1, dtype=torch.long),
            )
        out.logits[:, -1].argmax(-1)
        pos[0] += 1

    return median_time(step, steps)


def hf_generate_tok_s(model: Any, ctx: int, new_tokens: int) -> float:
    """Real generate(): (t(N) - t(1)) / (N - 1) removes the prefill."""
    ids = torch.randint(10, 1000, (1, ctx))

    def run(n: int) -> float:
        t = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
        return time.perf_counter() - t

    run(2)
    return (new_tokens - 1) / (run(new_tokens) - run(1))


def our_step_s(engine: Any, b: int, ctx: int, q: int, steps: int, all_logits: bool) -> float:
    from specsched.engine.layers.attention import build_metadata

    pos = [ctx]
    ids = torch.full((b * q,), 5)

    def step() -> None:
        meta = build_metadata(list(range(b)), [pos[0]] * b, [q] * b, engine.device)
        rows = None if all_logits else torch.arange(q - 1, b * q, q)
        engine.model(ids, meta, engine.kv, rows).argmax(-1)
        if q == 1:
            pos[0] += 1

    return median_time(step, steps)


def prefix_workload_s(
    model_cfg: Any, weights: dict[str, torch.Tensor], prefix_len: int, caching: bool, dtype: str
) -> tuple[float, int]:
    """4 requests sharing a prefix_len-token prefix (+16 own tokens, 4 output tokens each),
    after one earlier request with the same prefix. Returns (seconds, cached prompt tokens)."""
    from specsched.engine.config import EngineConfig
    from specsched.engine.engine import LLMEngine
    from specsched.engine.sampling.params import SamplingParams

    engine = LLMEngine(
        model_cfg,
        weights,
        EngineConfig(
            max_num_seqs=4,
            max_model_len=prefix_len + 64,
            max_num_batched_tokens=512,
            enable_prefix_caching=caching,
            dtype=dtype,
        ),
    )
    g = torch.Generator().manual_seed(0)
    prefix = torch.randint(10, 40000, (prefix_len,), generator=g).tolist()
    params = SamplingParams(max_tokens=4, ignore_eos=True)

    def run(n: int) -> list[Any]:
        seqs = [
            engine.add_request(
                prefix + torch.randint(10, 40000, (16,), generator=g).tolist(), params
            )
            for _ in range(n)
        ]
        while engine.has_unfinished():
            engine.step()
        return seqs

    run(1)  # the prefix was seen before (RAG / agent / prefix-repetition workload)
    t = time.perf_counter()
    seqs = run(4)
    return time.perf_counter() - t, sum(s.stats.num_cached_tokens for s in seqs)


def llama_cpp_step_s(gguf: str, ctx: int, threads: int, steps: int) -> float | None:
    """llama.cpp (llama-cpp-python) on the same GGUF file, its own quantized weights: prefill
    ctx tokens, then the median time of one-token `eval` calls (B=1 decode). None if the
    package is missing."""
    try:
        import llama_cpp
    except ImportError:
        return None
    llm = llama_cpp.Llama(
        model_path=gguf, n_ctx=ctx + steps + 8, n_threads=threads, n_threads_batch=threads,
        n_batch=512, verbose=False,
    )
    llm.eval([(i * 7919) % 40000 + 10 for i in range(ctx)])
    return median_time(lambda: llm.eval([5]), steps)


def own_bytes_read_s(engine: Any, ctx: int, steps: int) -> float:
    """Time to stream exactly what a B=1 step of `engine` reads — every plain matmul weight and
    slot 0's first ctx K/V positions of every layer — with `sum()`, one op per tensor (median).
    The floor measured on the engine's own allocations (their placement sets their bandwidth
    on this VM). Needs the plain weights, i.e. an engine built with compile=True."""
    tensors = [lin.weight for lin in matmuls(engine)]
    tensors += [c[0, :, :ctx] for c in (*engine.kv.k, *engine.kv.v)]

    def read() -> None:
        for t in tensors:
            t.sum()

    return median_time(read, steps)


def matmuls(engine: Any) -> list[Any]:
    """Every `Linear` one B=1 step runs once: 4 per layer and the output layer."""
    m = engine.model
    mats = [lin for layer in m.layers for lin in (layer.qkv, layer.o, layer.gate_up, layer.down)]
    return [*mats, m.lm_head]


def weight_bytes(engine: Any) -> int:
    """Bytes of every matmul weight one B=1 step reads once (logical size, any layout)."""
    return sum(lin.nbytes() for lin in matmuls(engine))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--batch", default="1,4,16")
    ap.add_argument("--ctx", default="256,1024,4096")
    ap.add_argument("--q", default="1,2,4,8")
    ap.add_argument("--steps", type=int, default=6, help="timed steps per point (median)")
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--compile", action="store_true",
                    help="also time a torch.compile'd engine (EngineConfig.compile) at B=1")
    ap.add_argument("--llama-cpp", action="store_true",
                    help="also time llama.cpp (pip install llama-cpp-python) at B=1, same GGUF")
    ap.add_argument("--prefix-len", type=int, default=1024, help="prefix-cache workload; 0 = skip")
    ap.add_argument("--out", type=Path, default=Path("notes/engine_step_grid.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    batches = [int(x) for x in args.batch.split(",")]
    ctxs = [int(x) for x in args.ctx.split(",")]
    qs = [int(x) for x in args.q.split(",")]

    from specsched.engine.config import EngineConfig
    from specsched.engine.engine import DTYPES, LLMEngine
    from specsched.engine.loading.registry import load_model

    dtype = DTYPES[args.dtype]
    lm = load_model("smollm2-135m")
    ecfg = EngineConfig(
        max_num_seqs=max(batches),
        max_model_len=max(ctxs) + 2 * args.steps + 16,
        max_num_batched_tokens=max(512, max(batches) * max(qs)),
        dtype=args.dtype,
        num_threads=args.threads,
    )
    engine = LLMEngine(lm.config, lm.weights, ecfg)
    compiled = None
    if args.compile:  # B=1 only: one slot, the compiled path runs one-token batches
        ccfg = dataclasses.replace(ecfg, max_num_seqs=1, max_num_batched_tokens=512, compile=True)
        compiled = LLMEngine(lm.config, lm.weights, ccfg)
    gguf = None
    if args.llama_cpp:
        from specsched.engine.loading.registry import smollm2_gguf_path

        gguf = str(smollm2_gguf_path())
    hf = None if args.skip_hf else hf_reference(lm.config, lm.weights, dtype)
    bw = read_bandwidth_gbs(args.threads)
    cfg = engine.model_cfg
    kv_bytes_per_token = 2 * cfg.num_layers * cfg.num_kv_heads * cfg.head_dim * dtype.itemsize
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "model": "smollm2-135m (GGUF Q4_1 dequantized)",
        "dtype": args.dtype,
        "threads": args.threads,
        "torch": torch.__version__,
        "read_bandwidth_gbs": bw,
        "decode": [],
        "roofline_b1": [],
        "step_grid": [],
    }
    print(f"read bandwidth {bw:.1f} GB/s, threads {args.threads}, dtype {args.dtype}")
    print(
        f"{'B':>3} {'ctx':>5} {'ours ms':>8} {'ours tok/s':>10} {'hf ms':>8} {'hf tok/s':>9} "
        f"{'ratio':>6}"
    )
    for ctx in ctxs:
        for b in batches:
            ours = our_step_s(engine, b, ctx, 1, args.steps, all_logits=False)
            ref = None if hf is None else hf_decode_step_s(hf, b, ctx, args.steps)
            row = {
                "batch": b,
                "ctx": ctx,
                "ours_step_ms": ours * 1e3,
                "ours_tok_s": b / ours,
                "hf_step_ms": None if ref is None else ref * 1e3,
                "hf_tok_s": None if ref is None else b / ref,
                "ratio": None if ref is None else ref / ours,
            }
            result["decode"].append(row)
            hf_txt = "" if ref is None else f"{ref * 1e3:8.1f} {b / ref:9.1f} {ref / ours:6.2f}"
            print(f"{b:>3} {ctx:>5} {ours * 1e3:8.1f} {b / ours:10.1f} {hf_txt}", flush=True)
            if b == 1:
                comp = None if compiled is None else our_step_s(compiled, 1, ctx, 1, args.steps,
                                                                 all_logits=False)
                lcpp = None if gguf is None else llama_cpp_step_s(gguf, ctx, args.threads,
                                                                   args.steps)
                own = None if compiled is None else own_bytes_read_s(compiled, ctx, args.steps)
                bw_now = read_bandwidth_gbs(args.threads)  # it drifts: measured next to the step
                nbytes = weight_bytes(engine) + kv_bytes_per_token * ctx
                floor = nbytes / (bw_now * 1e9)
                result["roofline_b1"].append(
                    {
                        "ctx": ctx,
                        "bytes_per_step": nbytes,
                        "read_bandwidth_gbs": bw_now,
                        "floor_ms": floor * 1e3,
                        "step_ms": ours * 1e3,
                        "step_over_floor": ours / floor,
                        "compiled_step_ms": None if comp is None else comp * 1e3,
                        "compiled_over_floor": None if comp is None else comp / floor,
                        "llama_cpp_step_ms": None if lcpp is None else lcpp * 1e3,
                        "own_bytes_read_ms": None if own is None else own * 1e3,
                    }
                )
                print(
                    f"    B=1 roofline: {nbytes / 1e6:.0f} MB/step at {bw_now:.1f} GB/s, floor "
                    f"{floor * 1e3:.1f} ms, step/floor {ours / floor:.2f}"
                )
                if comp is not None:
                    print(
                        f"    B=1 compiled: {comp * 1e3:.1f} ms ({1 / comp:.1f} tok/s), "
                        f"step/floor {comp / floor:.2f}, eager/compiled {ours / comp:.2f}"
                        + ("" if ref is None else f", hf/compiled {ref / comp:.2f}")
                    )
                if own is not None and comp is not None:
                    print(
                        f"    B=1 own-bytes floor: sum() over the compiled step's own weights + KV "
                        f"{own * 1e3:.1f} ms ({nbytes / own / 1e9:.1f} GB/s), compiled step / "
                        f"it {comp / own:.2f}"
                    )
                if args.llama_cpp:
                    txt = ("not installed (pip install llama-cpp-python)" if lcpp is None else
                           f"{lcpp * 1e3:.1f} ms ({1 / lcpp:.1f} tok/s, its own quantized "
                           f"weights), ours/llama.cpp time {ours / lcpp:.2f}"
                           + ("" if comp is None else f", compiled/llama.cpp {comp / lcpp:.2f}"))
                    print(f"    B=1 llama.cpp: {txt}")
            engine.kv = type(engine.kv)(cfg, ecfg.max_num_seqs, ecfg.max_model_len, dtype, "cpu")
    roof = result["roofline_b1"]
    if roof:  # the floor with the best bandwidth seen anywhere in this run (conservative)
        best_bw = max([bw] + [r["read_bandwidth_gbs"] for r in roof])
        for r in roof:
            floor_ms = r["bytes_per_step"] / (best_bw * 1e9) * 1e3
            r["conservative_floor_ms"] = floor_ms
            comp_txt = ("" if r["compiled_step_ms"] is None else
                        f", compiled step/floor {r['compiled_step_ms'] / floor_ms:.2f}")
            print(f"    ctx {r['ctx']}: at the run's best {best_bw:.1f} GB/s the floor is "
                  f"{floor_ms:.1f} ms: step/floor {r['step_ms'] / floor_ms:.2f}{comp_txt}")
    if hf is not None:
        c = min(256, max(ctxs))
        gen = hf_generate_tok_s(hf, c, 1 + 2 * args.steps)
        ours = our_step_s(engine, 1, c, 1, args.steps, all_logits=False)
        result["hf_generate_b1"] = {"ctx": c, "hf_tok_s": gen, "ours_tok_s": 1 / ours}
        print(
            f"cross-check B=1 ctx={c}: transformers generate() {gen:.1f} tok/s, ours "
            f"{1 / ours:.1f} tok/s, ratio {(1 / ours) / gen:.2f}"
        )
    print(f"T(B, ctx, q) in ms (logits for all B*q tokens) -> {args.out}")
    for ctx in ctxs:
        for b in batches:
            cells = []
            for q in qs:
                t = our_step_s(engine, b, ctx, q, max(2, args.steps // 2), all_logits=True)
                result["step_grid"].append({"batch": b, "ctx": ctx, "q": q, "step_ms": t * 1e3})
                cells.append(f"q={q}: {t * 1e3:7.1f}")
            print(f"B={b:>2} ctx={ctx:>5}  " + "  ".join(cells), flush=True)
    if args.prefix_len > 0:
        del engine  # free its KV cache first
        off, _ = prefix_workload_s(lm.config, lm.weights, args.prefix_len, False, args.dtype)
        on, cached = prefix_workload_s(lm.config, lm.weights, args.prefix_len, True, args.dtype)
        result["prefix_cache"] = {
            "prefix_len": args.prefix_len,
            "requests": 4,
            "off_s": off,
            "on_s": on,
            "cached_tokens": cached,
        }
        print(
            f"prefix workload (4 req x {args.prefix_len}-token shared prefix + 16, 4 out): "
            f"no cache {off:.1f} s, prefix cache {on:.1f} s ({off / on:.1f}x), "
            f"{cached} prompt tokens from cache"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
