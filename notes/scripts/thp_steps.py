"""Does backing the engine's tensors with transparent huge pages speed a decode step (thirty-ninth
stop)? torch's CPU allocator aligns allocations of >= 2 MiB to 2 MiB and madvises them
MADV_HUGEPAGE when THP_MEM_ALLOC_ENABLE=1 is in the environment before its first allocation
(this VM: THP `madvise`, so nothing else gets huge pages; the bench process held 106 MiB of them
out of 8 GiB). Prints the median all-decoding K = 0 step at each batch x context and the
process's AnonHugePages. Run it alternately with and without the variable, e.g.
  for i in 1 2 3; do .venv/bin/python notes/scripts/thp_steps.py;
                     THP_MEM_ALLOC_ENABLE=1 .venv/bin/python notes/scripts/thp_steps.py; done
"""
import os
import statistics as st

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.driver import drive, warm_prefix
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams

CELLS = ((1, 512), (16, 512), (4, 4096))
STEPS = 24


def huge_kib() -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    return -1


llm = LLM("smollm2-135m", max_num_seqs=16, max_model_len=4096 + STEPS + 8, num_threads=1)
pieces = llm.corpus_token_ids()
out = []
for batch, ctx in CELLS:
    shapes = [RequestShape(ctx, STEPS)] * batch
    prompts = build_prompts(shapes, pieces, 7)
    warm_prefix(llm.engine, prompts, batch)
    params = [SamplingParams(max_tokens=STEPS, ignore_eos=True)] * batch
    res = drive(llm.engine, prompts, params, concurrency=batch)
    ms = [1000 * s.wall_s for s in res.steps if s.all_decoding][2:]
    out.append(f"B{batch}x{ctx} {st.median(ms):6.1f} ms")
print(f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '-')}  " + "  ".join(out)
      + f"  AnonHugePages {huge_kib() // 1024} MiB", flush=True)
