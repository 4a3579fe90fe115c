// Weight-only int8 matmul for few rows: y[T, N] = (x[T, K] @ W[N, K]^T) * scale[N] (+ bias[N]),
// W int8 with one fp32 scale per output row (symmetric, per-channel), x and y fp32.
//
// Built at first use by specsched.engine.layers.native_build (g++ -O3 -march=native -fopenmp).
// The point is bytes: a draft step streams every weight once per call, so int8 weights read a
// quarter of fp32's bytes and half of bf16's. Per W weights (16 on AVX-512, 8 on AVX2): one
// load, a sign-extend and int->float convert (vpmovsxbd + vcvtdq2ps), then one FMA per input
// row. Registers: NB output rows x TR input rows accumulate in NB*TR vectors of W lanes
// (independent FMA chains, no latency stall at T = 1); x stays in L1 (T * K * 4 bytes).
// More than 8 rows: per output row, chunks of 8 rows in turn (the row's weights stay in L1).
// Each row stream is software-prefetched PREFETCH bytes ahead (see below).
// Work split: blocks of output rows over OpenMP threads (torch's pool: same runtime soname).
#include <omp.h>

#include <cstdint>
#include <cstring>

#include <immintrin.h>

// Vector width: 16 floats on AVX-512, 8 on AVX2 (a 64-byte GCC vector there is two registers,
// and NB x TR accumulators of them spill: measured 3-17x slower than 8-lane vectors on AVX2).
#if defined(__AVX512F__)
constexpr int W = 16;
#else
constexpr int W = 8;
#endif
typedef float vf __attribute__((vector_size(W * 4)));

// Software prefetch distance (bytes ahead in each weight row stream). One core of this
// project's VM streamed ~6 GB/s on the hardware prefetcher alone; a line requested 4 kB ahead
// took the model's int8 matmuls from 22.9 to 13.3 ms at one thread (7.1 ms at two).
// A prefetch past the end of the weights is a hint and never faults.
constexpr int64_t PREFETCH = 4096;

// W int8 weights -> W floats. GCC 12 scalarizes __builtin_convertvector from int8 vectors, so
// the widening is spelled with intrinsics: vpmovsxbd + vcvtdq2ps; a plain loop elsewhere.
static inline vf wload(const int8_t* p) {
    vf out;
#if defined(__AVX512F__)
    const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    std::memcpy(&out, &f, sizeof out);
#elif defined(__AVX2__)
    const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    std::memcpy(&out, &f, sizeof out);
#else
    for (int i = 0; i < W; ++i) out[i] = static_cast<float>(p[i]);
#endif
    return out;
}
static inline vf vload(const float* p) { vf x; std::memcpy(&x, p, sizeof x); return x; }
static inline float hsum(vf v) {
#if defined(__AVX512F__)
    __m512 m;
    std::memcpy(&m, &v, sizeof m);
    return _mm512_reduce_add_ps(m);
#else
    float s = 0.0f;
    for (int i = 0; i < W; ++i) s += v[i];
    return s;
#endif
}

// NB output rows [n, n + NB) for TR input rows; K % 16 == 0 (checked by the caller).
template <int NB, int TR>
static inline void block(const float* x, int64_t ldx, const int8_t* w, int64_t K,
                         const float* scale, const float* bias, float* y, int64_t ldy,
                         int64_t n) {
    vf acc[NB][TR];
    for (int b = 0; b < NB; ++b)
        for (int t = 0; t < TR; ++t) acc[b][t] = vf{};
    for (int64_t k = 0; k < K; k += W) {
        vf xv[TR];
        for (int t = 0; t < TR; ++t) xv[t] = vload(x + t * ldx + k);
        if ((k & 63) == 0)  // one cache line per row stream every 64 weights
            for (int b = 0; b < NB; ++b) __builtin_prefetch(w + (n + b) * K + k + PREFETCH);
        for (int b = 0; b < NB; ++b) {
            const vf wv = wload(w + (n + b) * K + k);
            for (int t = 0; t < TR; ++t) acc[b][t] += wv * xv[t];
        }
    }
    for (int b = 0; b < NB; ++b) {
        const float s = scale[n + b], c = bias ? bias[n + b] : 0.0f;
        for (int t = 0; t < TR; ++t) y[t * ldy + n + b] = hsum(acc[b][t]) * s + c;
    }
}

template <int NB, int TR>
static void rows(const float* x, int64_t ldx, const int8_t* w, int64_t N, int64_t K,
                 const float* scale, const float* bias, float* y, int64_t ldy, int threads) {
    const int64_t blocks = N / NB;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < blocks; ++i) block<NB, TR>(x, ldx, w, K, scale, bias, y, ldy, i * NB);
    for (int64_t n = blocks * NB; n < N; ++n) block<1, TR>(x, ldx, w, K, scale, bias, y, ldy, n);
}

static void chunk(int T, const float* x, int64_t ldx, const int8_t* w, int64_t N, int64_t K,
                  const float* scale, const float* bias, float* y, int64_t ldy, int threads) {
    switch (T) {
        case 1: rows<4, 1>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        case 2: rows<4, 2>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        case 3: rows<2, 3>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        case 4: rows<2, 4>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        case 5: rows<1, 5>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        case 6: rows<1, 6>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        case 7: rows<1, 7>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
        default: rows<1, 8>(x, ldx, w, N, K, scale, bias, y, ldy, threads); break;
    }
}

// T > 8 rows: per output row, every chunk of <= 8 input rows in turn, so the row's weights come
// from DRAM once and from L1 for the later chunks (compute grows with T, traffic does not).
template <int TR>
static inline void one(const float* x, int64_t ldx, const int8_t* w, int64_t K, const float* s,
                       const float* c, float* y, int64_t ldy, int64_t n) {
    block<1, TR>(x, ldx, w, K, s, c, y, ldy, n);
}

static void many(int64_t T, const float* x, const int8_t* w, int64_t N, int64_t K,
                 const float* scale, const float* bias, float* y, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t t0 = 0; t0 < T; t0 += 8) {
            const float* xt = x + t0 * K;
            float* yt = y + t0 * N;
            switch (T - t0 < 8 ? T - t0 : 8) {
                case 1: one<1>(xt, K, w, K, scale, bias, yt, N, n); break;
                case 2: one<2>(xt, K, w, K, scale, bias, yt, N, n); break;
                case 3: one<3>(xt, K, w, K, scale, bias, yt, N, n); break;
                case 4: one<4>(xt, K, w, K, scale, bias, yt, N, n); break;
                case 5: one<5>(xt, K, w, K, scale, bias, yt, N, n); break;
                case 6: one<6>(xt, K, w, K, scale, bias, yt, N, n); break;
                case 7: one<7>(xt, K, w, K, scale, bias, yt, N, n); break;
                default: one<8>(xt, K, w, K, scale, bias, yt, N, n); break;
            }
        }
    }
}

// y[T, N] = x[T, K] @ W^T * scale (+ bias), contiguous rows; K % 16 == 0, T >= 1.
static void matmul(const float* x, int64_t T, int64_t K, const int8_t* w, int64_t N,
                   const float* scale, const float* bias, float* y, int threads) {
    if (T <= 8)
        chunk(static_cast<int>(T), x, K, w, N, K, scale, bias, y, N, threads);
    else
        many(T, x, w, N, K, scale, bias, y, threads);
}

extern "C" int int8_linear_f32(const float* x, int64_t T, int64_t K, const int8_t* w, int64_t N,
                               const float* scale, const float* bias, float* y, int threads) {
    if (K % 16 != 0 || T < 1) return 1;
    matmul(x, T, K, w, N, scale, bias, y, threads);
    return 0;
}
