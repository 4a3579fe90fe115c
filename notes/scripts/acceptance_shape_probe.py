"""Why does the demo's prediction run high at ctx 4096? Measures the streaming drafter's
tokens per verify (K=5, the demo's drafter) on the profile's acceptance prompts and on the demo's
serving prompts, split by output position (first 40 tokens / tokens 40-63), so the output-length
effect (profile 64 tokens, demo 40) and the prompt-shape effect (512-token own tail vs a shared
prefix + 128-384-token tail) are read apart. Acceptance is deterministic (greedy): the load does
not change it.

  .venv/bin/python notes/scripts/acceptance_shape_probe.py [CTX] [SEEDS]"""
import random
import sys

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.driver import drive
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig
from specsched.tune.acceptance_prompts import acceptance_prompts

CTX = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
SEEDS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
K, OUT, SPLIT = 5, 64, 40

llm = LLM("smollm2-135m", max_num_seqs=16, max_model_len=CTX + 600, num_threads=2)
pieces = llm.corpus_token_ids()
spec = SpeculativeConfig(policy=PolicyConfig.constant(K))


def run(prompts: list[list[int]]) -> list[tuple[int, int, int, int]]:
    """Per request: (verifies, tokens) in outputs [0, SPLIT) and [SPLIT, OUT)."""
    llm.engine.set_speculative(spec)
    hist: list[list[tuple[int, int]]] = [[] for _ in prompts]  # (outputs, verifies) per step

    def on_step(res) -> None:  # noqa: ANN001
        for i, s in enumerate(res.seqs):
            d = s.stats.spec.drafted_per_position
            hist[i].append((len(s.output_token_ids), d[0] if d else 0))

    drive(llm.engine, prompts, SamplingParams(max_tokens=OUT, ignore_eos=True),
          concurrency=16, on_step=on_step)
    out = []
    for h in hist:
        first = [v for n, v in h if n <= SPLIT]
        v1 = max(first) if first else 0
        n1 = max(n for n, _ in h if n <= SPLIT) if first else 0
        vt, nt = h[-1][1], h[-1][0]
        out.append((v1, n1, vt - v1, nt - n1))
    return out


def summary(name: str, rows: list[tuple[int, int, int, int]]) -> None:
    v1, n1 = sum(r[0] for r in rows), sum(r[1] for r in rows)
    v2, n2 = sum(r[2] for r in rows), sum(r[3] for r in rows)
    per = [r[1] / r[0] for r in rows if r[0]]
    print(f"{name}: tokens/verify first {SPLIT}: {n1 / v1:.2f}  after: {n2 / max(v2, 1):.2f}  "
          f"all: {(n1 + n2) / (v1 + v2):.2f}  per-request first {SPLIT}: "
          f"{[round(x, 1) for x in per]}", flush=True)


# the profile's prompts (the demo's profile: 16 = 4 documents x 4 tails of 512 tokens, seed 0)
prof = acceptance_prompts(pieces, None, 16, CTX, 0, 512, 4)
summary("profile prompts (seed 0)", run(prof))
prof2 = acceptance_prompts(pieces, None, 16, CTX, 1, 512, 4)
summary("profile prompts (seed 1)", run(prof2))
# the demo's serving prompts at B=1: per replicate seed, one document, 2 tails of 256 x (1 +- .5)
demo: list[list[int]] = []
for seed in range(SEEDS):
    r = random.Random(f"{seed}/probe")
    tails = [r.randint(128, 384) for _ in range(2)]
    shapes = [RequestShape(CTX - 256 + t, 1, prefix_id=0, prefix_len=CTX - 256) for t in tails]
    demo += build_prompts(shapes, pieces, seed)
summary(f"demo-shaped prompts ({SEEDS} seeds x 2)", run(demo))
