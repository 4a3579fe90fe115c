// A decoder layer of an int8 draft in two native calls, for few rows (a draft step: one token
// per sequence, T <= 8): everything but attention, so a layer is pre -> attention -> post with no
// eager torch op in between (specsched.engine.layers.int8_layer).
//
//   pre:  RMSNorm -> qkv matmul (+ bias) -> RoPE on q and k -> K/V written into the cache
//   post: o matmul + residual -> RMSNorm -> gate/up matmul -> SiLU(gate) * up -> down + residual
//   head: RMSNorm -> output layer
//
// The matmuls are int8_linear.cpp's (included: one library, one build). Why: a B=1 int8 draft
// token at ctx 4096 spent ~8 of its ~22 ms outside the matmuls and attention, in ~20 eager ops per
// layer (rms_norm alone decomposes into 6 aten calls); here they are a few loops over <= 8 rows of
// <= 3072 floats. Layouts are the engine's: h [T, H] fp32, k/v cache [S, Hkv, L, D] contiguous,
// cos/sin [T, D/2] (HF rotate-half convention), q out [T, Hq, D].
#include <cmath>
#include <vector>

#include "int8_linear.cpp"

// out[t] = x[t] * rsqrt(mean(x[t]^2) + eps) * g, for T rows of K floats (K % W == 0).
static void rms_norm(const float* x, int64_t T, int64_t K, const float* g, float eps, float* out) {
    for (int64_t t = 0; t < T; ++t) {
        const float* xr = x + t * K;
        vf acc = vf{};
        for (int64_t k = 0; k < K; k += W) {
            const vf v = vload(xr + k);
            acc += v * v;
        }
        const float r = 1.0f / std::sqrt(hsum(acc) / static_cast<float>(K) + eps);
        for (int64_t k = 0; k < K; ++k) out[t * K + k] = xr[k] * r * g[k];
    }
}

// y[T, N] = RMSNorm(x)[T, K] @ W^T * scale (+ bias): the output layer of a draft.
extern "C" int int8_norm_linear_f32(const float* x, int64_t T, int64_t K, const float* norm_w,
                                    float eps, const int8_t* w, int64_t N, const float* scale,
                                    const float* bias, float* y, int threads) {
    if (K % 16 != 0 || T < 1) return 1;
    std::vector<float> xn(T * K);
    rms_norm(x, T, K, norm_w, eps, xn.data());
    matmul(xn.data(), T, K, w, N, scale, bias, y, threads);
    return 0;
}

// Rotate one head in place of its copy: out = (x1 c - x2 s, x2 c + x1 s), halves of D.
static inline void rope(const float* x, const float* c, const float* s, int64_t D, float* out) {
    const int64_t h = D / 2;
    for (int64_t i = 0; i < h; ++i) {
        out[i] = x[i] * c[i] - x[h + i] * s[i];
        out[h + i] = x[h + i] * c[i] + x[i] * s[i];
    }
}

extern "C" int int8_attn_pre_f32(
    const float* h, int64_t T, int64_t H,             // residual stream [T, H]
    const float* norm_w, float eps,                   // input RMSNorm [H]
    const int8_t* w, const float* scale, const float* bias,  // qkv [(Hq + 2 Hkv) D, H]
    const float* cos, const float* sin,               // [T, D/2] at each token's position
    int64_t hq, int64_t hkv, int64_t D,
    const int64_t* slots, const int64_t* positions,   // [T] cache slot and position per token
    float* k_cache, float* v_cache, int64_t L,        // [S, Hkv, L, D]
    float* q_out,                                     // [T, Hq, D]
    int threads) {
    const int64_t N = (hq + 2 * hkv) * D;
    if (H % 16 != 0 || T < 1 || D % 2 != 0) return 1;
    std::vector<float> xn(T * H), qkv(T * N);
    rms_norm(h, T, H, norm_w, eps, xn.data());
    matmul(xn.data(), T, H, w, N, scale, bias, qkv.data(), threads);
    for (int64_t t = 0; t < T; ++t) {
        const float* row = qkv.data() + t * N;
        const float *c = cos + t * (D / 2), *s = sin + t * (D / 2);
        for (int64_t j = 0; j < hq; ++j) rope(row + j * D, c, s, D, q_out + (t * hq + j) * D);
        for (int64_t j = 0; j < hkv; ++j) {
            const int64_t at = ((slots[t] * hkv + j) * L + positions[t]) * D;
            rope(row + (hq + j) * D, c, s, D, k_cache + at);
            std::memcpy(v_cache + at, row + (hq + hkv + j) * D, D * sizeof(float));
        }
    }
    return 0;
}

extern "C" int int8_attn_post_f32(
    const float* h, const float* attn, int64_t T, int64_t H, int64_t Q,  // [T, H], [T, Q]
    const int8_t* o_w, const float* o_s,              // o [H, Q]
    const float* norm_w, float eps,                   // post-attention RMSNorm [H]
    const int8_t* gu_w, const float* gu_s, int64_t I,  // gate/up [2I, H]
    const int8_t* d_w, const float* d_s,              // down [H, I]
    float* out,                                       // [T, H]
    int threads) {
    if (H % 16 != 0 || Q % 16 != 0 || I % 16 != 0 || T < 1) return 1;
    std::vector<float> h1(T * H), xn(T * H), gu(T * 2 * I), act(T * I);
    matmul(attn, T, Q, o_w, H, o_s, nullptr, h1.data(), threads);
    for (int64_t i = 0; i < T * H; ++i) h1[i] += h[i];
    rms_norm(h1.data(), T, H, norm_w, eps, xn.data());
    matmul(xn.data(), T, H, gu_w, 2 * I, gu_s, nullptr, gu.data(), threads);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < I; ++i) {
            const float g = gu[t * 2 * I + i], u = gu[t * 2 * I + I + i];
            act[t * I + i] = g / (1.0f + std::exp(-g)) * u;
        }
    matmul(act.data(), T, I, d_w, H, d_s, nullptr, out, threads);
    for (int64_t i = 0; i < T * H; ++i) out[i] += h1[i];
    return 0;
}
