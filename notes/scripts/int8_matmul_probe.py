"""
Diagnostic (issue 16, 2026-12-01 night): the model's matmuls as a draft token runs them — 30
layers of distinct SmolLM2-shaped weights (qkv 960x576, o 576x576, gate_up 3072x576, down
576x1536) + the 49152x576 output layer, so weights stream from DRAM — for fp32 oneDNN packed,
bf16 oneDNN packed and the int8 kernel, T = 1/4/8/16 rows, 1 thread, 7 interleaved rounds,
median ms per pass. The int8 library is a .so of csrc/int8_linear.cpp:
  g++ -O3 -march=native -fopenmp -fPIC -shared -std=c++17 src/specsched/engine/layers/csrc/int8_linear.cpp -o /tmp/i8.so
  (-march=haswell for the AVX2 path), then: .venv/bin/python notes/scripts/int8_matmul_probe.py /tmp/i8.so
The prefetch-distance variants in notes/engine.md were the same source with PREFETCH edited.
"""
import sys
import ctypes, time, torch, statistics, sys
torch.set_num_threads(1)
lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "/tmp/i8.so")
P, I = ctypes.c_void_p, ctypes.c_int64
lib.int8_linear_f32.argtypes = [P, I, I, P, I, P, P, P, ctypes.c_int]
def q8(w):
    s = w.abs().amax(1).clamp_min(1e-12) / 127
    return torch.round(w / s[:, None]).to(torch.int8).contiguous(), s.float().contiguous()
def i8(x, wq, s):
    y = torch.empty(x.shape[0], wq.shape[0])
    lib.int8_linear_f32(x.data_ptr(), x.shape[0], x.shape[1], wq.data_ptr(), wq.shape[0], s.data_ptr(), None, y.data_ptr(), 1)
    return y
shapes = [(960,576),(576,576),(3072,576),(576,1536)]
layers = []
for l in range(30):
    ws = [torch.randn(N,K)*0.05 for N,K in shapes]
    layers.append(dict(
        fp32=[torch.ops.mkldnn._reorder_linear_weight(w, 16) for w in ws],
        bf16=[torch.ops.mkldnn._reorder_linear_weight(w.bfloat16(), 16) for w in ws],
        i8=[q8(w) for w in ws]))
head = torch.randn(49152,576)*0.05
hp = dict(fp32=torch.ops.mkldnn._reorder_linear_weight(head,16), bf16=torch.ops.mkldnn._reorder_linear_weight(head.bfloat16(),16), i8=q8(head))
def run(kind, T):
    xs = {K: torch.randn(T,K) for K in (576,1536)}
    def f():
        for L in layers:
            for (N,K), w in zip(shapes, L[kind]):
                x = xs[K]
                if kind=="i8": i8(x,*w)
                elif kind=="bf16": torch.ops.mkldnn._linear_pointwise(x.bfloat16(),w,None,"none",[],"").float()
                else: torch.ops.mkldnn._linear_pointwise(x,w,None,"none",[],"")
        x = xs[576]; w = hp[kind]
        if kind=="i8": i8(x,*w)
        elif kind=="bf16": torch.ops.mkldnn._linear_pointwise(x.bfloat16(),w,None,"none",[],"").float()
        else: torch.ops.mkldnn._linear_pointwise(x,w,None,"none",[],"")
    return f
for T in (1,4,8,16):
    fs = {k: run(k,T) for k in ("fp32","bf16","i8")}
    ts = {k: [] for k in fs}
    for r in range(7):
        for k,f in fs.items():
            a=time.perf_counter(); f(); ts[k].append(time.perf_counter()-a)
    print(T, {k: round(statistics.median(v)*1e3,1) for k,v in ts.items()})
