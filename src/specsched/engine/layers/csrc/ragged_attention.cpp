// Ragged causal GQA attention over a per-slot KV cache, fp32, for few new tokens per sequence:
// decode (q = 1) and speculative verify (q = K + 1) of every sequence of a batch in ONE call.
//
// Built at first use by specsched.engine.layers.cpu_kernels (g++ -O3 -march=native -fopenmp,
// -DHEAD_DIM=D); see that module for the measurements behind the design. Portable C++: GCC
// vector extensions of one register's width: LANES = 16 floats where the CPU has AVX-512, 8
// (one AVX2 register) otherwise. At 16 lanes on an AVX2-only CPU (two registers per vector) GCC
// scalarized selects and the kernel ran ~5x slower than SDPA (2026-12-02, ninth stop).
//
// Layout (the engine's): q [T, Hq, D] with token stride q_stride, k/v cache [S, Hkv, L, D]
// contiguous, out [T, Hq, D] contiguous. seqs [B, 4] int64 rows (slot, start, qlen, q_offset):
// sequence i's queries are tokens q_offset .. q_offset + qlen - 1 at positions start .. start +
// qlen - 1; query j sees cache positions [0, start + j] of its slot.
//
// Work split: (key range, KV head) items over OpenMP threads; per item the G * qlen
// query rows of one KV head are the LANES of vectors (rows = g * qlen + j), so K and V are read
// once per item whatever q is, and QK^T costs the same for every q with G * q <= LANES. Per
// item: scores of a sub-chunk of keys -> local max / exp / sum -> P V with the sub-chunk's V
// rows streamed once per block of RB_MAX query rows and DU head-dim vectors (from cache) ->
// merged into the item's running (max, sum, out) (online softmax).
// Items of one sequence are merged by log-sum-exp at the end (flash-decoding). Key ranges may
// be any subset of [0, start + qlen) (e.g. StreamingLLM sinks + recent window): only those keys
// are read, and causality is by position (a query at p sees keys <= p).
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
constexpr int D = HEAD_DIM;
static_assert(D % 16 == 0, "head_dim must be a multiple of 16");
#if defined(__AVX512F__)
constexpr int LANES = 16;  // floats per vector: one AVX-512 register
constexpr int RB_MAX = 6;  // P V: query rows per pass over V (6 x D/16 accumulators of 32)
#else
constexpr int LANES = 8;   // one AVX2 register
constexpr int RB_MAX = 2;  // 2 rows x 4 accumulators + 4 V vectors + P of 16 registers
                           // (3 rows spill: 10.3 vs 7.2 us per context token at q=1)
#endif
constexpr int SUB = 256;              // keys per sub-chunk (scores buffer on the stack)
constexpr int MAX_ROWS = 64;          // at most 64 query rows (G * qlen) per sequence
constexpr int MAX_NV = MAX_ROWS / LANES;
constexpr int DV = D / LANES;         // vectors per row of head_dim
constexpr int DU = DV < 4 ? DV : 4;   // of those, per pass over V
constexpr float NEG = -1e30f;         // masked score (finite: no inf arithmetic)

typedef float vf __attribute__((vector_size(4 * LANES)));
typedef int32_t vi __attribute__((vector_size(4 * LANES)));

static inline vf vload(const float* p) { vf x; std::memcpy(&x, p, sizeof x); return x; }
static inline void vstore(float* p, vf x) { std::memcpy(p, &x, sizeof x); }
static inline vf vb(float a) { return vf{} + a; }
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
static inline vf vsel_le(vf x, vf y, vf a, vf b) { return x <= y ? a : b; }  // x<=y ? a:b
static inline vf vsel_gt(vf x, vf y, vf a, vf b) { return x > y ? a : b; }  // x>y ? a:b

// exp(x) for x <= 0 (Cephes polynomial, ~1 ulp); x < -87 gives ~0.
static inline vf vexp(vf x) {
    x = vmax(x, vb(-87.0f));
    const vf n = (x * vb(1.44269504088896341f) + vb(12582912.0f)) - vb(12582912.0f);
    const vf r = x - n * vb(0.693359375f) + n * vb(2.12194440e-4f);
    vf p = vb(1.9875691500e-4f);
    p = p * r + vb(1.3981999507e-3f);
    p = p * r + vb(8.3334519073e-3f);
    p = p * r + vb(4.1665795894e-2f);
    p = p * r + vb(1.6666665459e-1f);
    p = p * r + vb(5.0000001201e-1f);
    p = p * r * r + r + vb(1.0f);
    const vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
    vf s;
    std::memcpy(&s, &bits, sizeof s);
    return p * s;
}

static inline float sexp(float x) { return vexp(vb(x))[0]; }

// o[r0 + e][:] (+)= sum_t P[t][r0 + e] * v[t][:] for RB rows, DU vectors of head_dim per pass
// over V (one pass where D / LANES <= 4).
template <int RB>
static inline void pv_rows(const float* P, int rp, int r0, int n, const float* v, float* o) {
    for (int u0 = 0; u0 < DV; u0 += DU) {
        vf acc[RB][DU];
        for (int e = 0; e < RB; e++)
            for (int u = 0; u < DU; u++) acc[e][u] = vb(0.f);
        for (int t = 0; t < n; t++) {
            vf vt[DU];
            for (int u = 0; u < DU; u++) vt[u] = vload(v + t * D + LANES * (u0 + u));
            for (int e = 0; e < RB; e++) {
                const vf p = vb(P[t * rp + r0 + e]);
                for (int u = 0; u < DU; u++) acc[e][u] += p * vt[u];
            }
        }
        for (int e = 0; e < RB; e++)
            for (int u = 0; u < DU; u++) vstore(o + (r0 + e) * D + LANES * (u0 + u), acc[e][u]);
    }
}

template <int R>  // the last `left` (< RB_MAX) rows
static inline void pv_tail(int left, const float* P, int rp, int r0, int n, const float* v,
                           float* o) {
    if constexpr (R < RB_MAX) {
        if (left == R) return pv_rows<R>(P, rp, r0, n, v, o);
        pv_tail<R + 1>(left, P, rp, r0, n, v, o);
    }
}

static void pv(const float* P, int rp, int rows, int n, const float* v, float* o) {
    int r0 = 0;
    for (; r0 + RB_MAX <= rows; r0 += RB_MAX) pv_rows<RB_MAX>(P, rp, r0, n, v, o);
    pv_tail<1>(rows - r0, P, rp, r0, n, v, o);
}

// Keys [c0, c1) of one KV head for `rows` query rows (lanes). qT [D][LANES NV] pre-scaled queries;
// jpos: row -> query index j (-1 for padding lanes). Writes out[rows][D] (unnormalized), m, l.
template <int NV>
static void item(int rows, const float* qT, const vf* jpos, int64_t start, const float* k,
                 const float* v, int64_t c0, int64_t c1, float* out, float* m_out,
                 float* l_out) {
    constexpr int RP = LANES * NV;
    // keys per step: KU * NV independent accumulators (about half the register file)
    constexpr int KU = LANES == 16 ? (NV <= 2 ? 8 : 4) : (NV <= 8 ? 8 / NV : 1);
    alignas(64) float S[SUB * RP];
    alignas(64) float osub[RP * D];
    vf m[NV], l[NV];
    for (int u = 0; u < NV; u++) { m[u] = vb(NEG); l[u] = vb(0.f); }
    std::memset(out, 0, sizeof(float) * rows * D);
    for (int64_t b0 = c0; b0 < c1; b0 += SUB) {
        const int n = int(c1 - b0 < SUB ? c1 - b0 : SUB);
        vf mb[NV];
        for (int u = 0; u < NV; u++) mb[u] = m[u];
        for (int t0 = 0; t0 < n; t0 += KU) {  // scores S[t][r] = q_r . k_t
            const int nk = n - t0 < KU ? n - t0 : KU;
            const float* kr = k + (b0 + t0) * D;
            for (int e = 0; e < nk * D; e += 16) __builtin_prefetch(v + (b0 + t0) * D + e, 0, 3);
            vf s[KU][NV];
            for (int e = 0; e < KU; e++)
                for (int u = 0; u < NV; u++) s[e][u] = vb(0.f);
            if (nk == KU) {
                for (int d = 0; d < D; d++) {
                    vf qd[NV];
                    for (int u = 0; u < NV; u++) qd[u] = vload(qT + (d * NV + u) * LANES);
                    for (int e = 0; e < KU; e++) {
                        const vf kd = vb(kr[e * D + d]);
                        for (int u = 0; u < NV; u++) s[e][u] += kd * qd[u];
                    }
                }
            } else {
                for (int e = 0; e < nk; e++)
                    for (int d = 0; d < D; d++) {
                        const vf kd = vb(kr[e * D + d]);
                        for (int u = 0; u < NV; u++)
                            s[e][u] += kd * vload(qT + (d * NV + u) * LANES);
                    }
            }
            for (int e = 0; e < nk; e++) {
                const int64_t pos = b0 + t0 + e;
                if (pos >= start) {  // causal: row r sees pos <= start + j(r)
                    const vf rel = vb(float(pos - start));
                    for (int u = 0; u < NV; u++) s[e][u] = vsel_le(rel, jpos[u], s[e][u], vb(NEG));
                }
                for (int u = 0; u < NV; u++) {
                    mb[u] = vmax(s[e][u], mb[u]);
                    vstore(S + ((t0 + e) * NV + u) * LANES, s[e][u]);
                }
            }
        }
        vf lb[NV];
        for (int u = 0; u < NV; u++) lb[u] = vb(0.f);
        for (int t = 0; t < n; t++)
            for (int u = 0; u < NV; u++) {
                const vf s = vload(S + (t * NV + u) * LANES);
                const vf p = vsel_gt(s, vb(0.5f * NEG), vexp(s - mb[u]), vb(0.f));
                lb[u] += p;
                vstore(S + (t * NV + u) * LANES, p);
            }
        pv(S, RP, rows, n, v + b0 * D, osub);
        alignas(64) float corr[RP], mv[RP], lv[RP];
        for (int u = 0; u < NV; u++) {  // rescale the running sums to the new max
            const vf c = vexp(m[u] - mb[u]);
            l[u] = l[u] * c + lb[u];
            m[u] = mb[u];
            vstore(corr + LANES * u, c);
        }
        for (int r = 0; r < rows; r++)
            for (int d = 0; d < D; d++) out[r * D + d] = out[r * D + d] * corr[r] + osub[r * D + d];
        for (int u = 0; u < NV; u++) { vstore(mv + LANES * u, m[u]); vstore(lv + LANES * u, l[u]); }
        for (int r = 0; r < rows; r++) { m_out[r] = mv[r]; l_out[r] = lv[r]; }
    }
}

template <int NV>
static void run_item(const float* q, int64_t q_stride, const float* kc, const float* vc,
                     const int64_t* sq, int64_t hq, int64_t hkv, int64_t max_len, float scale,
                     int64_t h, int64_t c0, int64_t c1, float* part) {
    constexpr int RP = LANES * NV;
    const int64_t g_size = hq / hkv, slot = sq[0], start = sq[1], qlen = sq[2], off = sq[3];
    const int rows = int(g_size * qlen);
    alignas(64) float qT[D * RP];
    alignas(64) float jp[RP];
    std::memset(qT, 0, sizeof qT);
    for (int r = 0; r < RP; r++) jp[r] = -1.f;
    for (int64_t g = 0; g < g_size; g++)
        for (int64_t j = 0; j < qlen; j++) {
            const int r = int(g * qlen + j);
            const float* src = q + (off + j) * q_stride + (h * g_size + g) * D;
            jp[r] = float(j);
            for (int d = 0; d < D; d++) qT[d * RP + r] = src[d] * scale;
        }
    vf jpos[NV];
    for (int u = 0; u < NV; u++) jpos[u] = vload(jp + LANES * u);
    const int64_t base = (slot * hkv + h) * max_len * D;
    item<NV>(rows, qT, jpos, start, kc + base, vc + base, c0, c1, part, part + MAX_ROWS * D,
             part + MAX_ROWS * D + MAX_ROWS);
}

// run_item<NV> for nv vectors of query rows (1 <= nv <= MAX_NV)
template <int NV>
static void dispatch(int64_t nv, const float* q, int64_t q_stride, const float* kc,
                     const float* vc, const int64_t* sq, int64_t hq, int64_t hkv,
                     int64_t max_len, float scale, int64_t h, int64_t c0, int64_t c1,
                     float* part) {
    if constexpr (NV < MAX_NV) {
        if (nv > NV)
            return dispatch<NV + 1>(nv, q, q_stride, kc, vc, sq, hq, hkv, max_len, scale, h, c0,
                                    c1, part);
    }
    run_item<NV>(q, q_stride, kc, vc, sq, hq, hkv, max_len, scale, h, c0, c1, part);
}

static inline int64_t num_vectors(int64_t rows) { return (rows + LANES - 1) / LANES; }

// seqs [B, 4] int64 rows (slot, start, qlen, q_offset). items [N, 3] int64 rows (sequence, c0,
// c1): the key ranges [c0, c1) to read, grouped by sequence (first[i] .. first[i + 1] - 1 are
// sequence i's; the caller splits long ranges so that the batch has enough items for the
// threads). Returns 0, or 1 if a sequence has more than 64 query rows (caller falls back).
extern "C" int ragged_attention_f32(const float* q, int64_t q_stride, const float* kc,
                                    const float* vc, float* out, const int64_t* seqs, int64_t B,
                                    const int64_t* items, const int64_t* first, int64_t hq,
                                    int64_t hkv, int64_t max_len, float scale, int nthreads) {
    const int64_t g_size = hq / hkv;
    for (int64_t i = 0; i < B; i++)
        if (num_vectors(g_size * seqs[4 * i + 2]) > MAX_NV) return 1;
    const int64_t stride = MAX_ROWS * (D + 2);  // one (item, head) partial: out, m, l
    const int64_t nwork = first[B] * hkv;
    float* scratch = static_cast<float*>(std::malloc(sizeof(float) * nwork * stride));
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
    for (int64_t w = 0; w < nwork; w++) {
        const int64_t* it = items + 3 * (w / hkv);
        const int64_t h = w % hkv, c0 = it[1], c1 = it[2];
        const int64_t* sq = seqs + 4 * it[0];
        float* part = scratch + w * stride;
        dispatch<1>(num_vectors(g_size * sq[2]), q, q_stride, kc, vc, sq, hq, hkv, max_len,
                    scale, h, c0, c1, part);
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
    for (int64_t i = 0; i < B; i++) {  // merge each row's items by log-sum-exp
        const int64_t qlen = seqs[4 * i + 2], off = seqs[4 * i + 3];
        const int64_t mo = MAX_ROWS * D, lo = mo + MAX_ROWS;
        for (int64_t h = 0; h < hkv; h++)
            for (int64_t g = 0; g < g_size; g++)
                for (int64_t j = 0; j < qlen; j++) {
                    const int64_t r = g * qlen + j;
                    float big = NEG;
                    for (int64_t c = first[i]; c < first[i + 1]; c++) {
                        const float* p = scratch + (c * hkv + h) * stride;
                        if (p[lo + r] > 0.f && p[mo + r] > big) big = p[mo + r];
                    }
                    float o[D] = {0.f};
                    float total = 0.f;
                    for (int64_t c = first[i]; c < first[i + 1]; c++) {
                        const float* p = scratch + (c * hkv + h) * stride;
                        if (p[lo + r] <= 0.f) continue;
                        const float wgt = sexp(p[mo + r] - big);
                        total += p[lo + r] * wgt;
                        for (int d = 0; d < D; d++) o[d] += wgt * p[r * D + d];
                    }
                    float* dst = out + ((off + j) * hq + h * g_size + g) * D;
                    for (int d = 0; d < D; d++) dst[d] = o[d] / total;
                }
    }
    std::free(scratch);
    return 0;
}

// Query rows per vector this build runs with (16: AVX-512, 8: AVX2 and others).
extern "C" int ragged_attention_lanes() { return LANES; }
