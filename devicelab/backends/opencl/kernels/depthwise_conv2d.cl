// depthwise_conv2d: depthwise convolution (channel multiplier, any kernel, stride, dilation,
// asymmetric padding) with fused bias and activation; batch norm is folded on the host. NCHW.
// Output channel oc reads input channel oc / mult. A work-item computes NV vectors of VW
// consecutive output columns of one output row, for OCB consecutive channels one after the
// other (the column masks, computed once, serve them all). Input row loads step by the
// horizontal stride SW (1 and 2: whole-vector loads), masked where a lane's column falls in
// the padding; kernel rows in the padding are skipped.
// Weights are [cout][kh][KW], bias [cout].
// Work: gs0 = oh * xtiles (xtiles = ceil(ow / (NV * VW))), gs1 = n * ceil(cout / OCB).

// ll_act_any: any fused activation (codes in plan.ACTIVATIONS), out of line. Shared helper: this
// text is identical in every kernel file that has an epilogue, so a fusing step keeps one copy.
__attribute__((noinline)) real_v ll_act_any(real_v v, const int act, const float alpha, const float beta)
{
    switch (act) {
    case 1: return fmax(v, (real_v)0);
    case 2: return clamp(v, (real_v)0, (real_v)6);
    case 3: return v * clamp(v + (real_v)3, (real_v)0, (real_v)6) / (real_v)6;
    case 4: return (real_v)1 / ((real_v)1 + exp(-v));
    case 5: return v / ((real_v)1 + exp(-v));
    case 6: return tanh(v);
    case 7: return clamp(v / (real_v)6 + (real_v)0.5, (real_v)0, (real_v)1);
    case 8: return select((real_v)((real)alpha) * v, v, v > (real_v)0);
    case 9: return select((real_v)((real)alpha) * (exp(v) - (real_v)1), v, v > (real_v)0);
    case 10: return fmin(fmax(v, (real_v)((real)alpha)), (real_v)((real)beta));
    case 11: return (real_v)0.5 * v * ((real_v)1 + erf(v * (real_v)0.7071067811865476));
    default: return v;
    }
}

// ll_act: the fused activation of an epilogue: none, relu and relu6 inline (they are most of
// them, and a call would spill the accumulators), the others through ll_act_any. Shared helper:
// this text is identical in every kernel file that has an epilogue.
__attribute__((always_inline)) real_v ll_act(const real_v v, const int act, const float alpha, const float beta)
{
    if (act == 0) return v;
    if (act == 1) return fmax(v, (real_v)0);
    if (act == 2) return clamp(v, (real_v)0, (real_v)6);
    return ll_act_any(v, act, alpha, beta);
}

// ll_load: the VW reals x[off + l * SW] (l < VW), the lanes where m is false read as zero. Past
// the tensor's end, loads read the runner's zeroed buffer slack. Strides 1 and 2 are
// whole-vector loads (stride 2 keeps the even lanes of two), other strides go lane by lane, and
// so do the loads that may start before the tensor (lanewise: the first input channels of a
// first tile; their lanes before x[0] read x[0] and are masked). Shared helper: this text is
// identical in every kernel file that has it.
__attribute__((always_inline)) real_v ll_load(__global const real* x, const int off, const int_v m, const int lanewise)
{
    if (!lanewise) {
        if (SW == 1) return select((real_v)0, vload_v(0, x + off), m);
        if (SW == 2) return select((real_v)0, (real_v)(vload_v(0, x + off).even, vload_v(0, x + off + VW).even), m);
    }
    real t[VW];
#pragma unroll
    for (int l = 0; l < VW; ++l) t[l] = x[max(off + l * SW, 0)];
    return select((real_v)0, vload_v(0, t), m);
}

// ll_store: y[0 .. n) = the first n lanes of r (the whole vector when n >= VW; nothing when
// n <= 0). Shared helper: this text is identical in every kernel file that has it.
__attribute__((always_inline)) void ll_store(__global real* y, const real_v r, const int n)
{
    if (n >= VW) {
        vstore_v(r, 0, y);
        return;
    }
    real t[VW];
    vstore_v(r, 0, t);
    for (int l = 0; l < n; ++l) y[l] = t[l];
}

__kernel void depthwise_conv2d(const int gs0, const int gs1,
                               __global const real* x, __global const real* w, __global const real* bias,
                               __global real* y,
                               const int cin, const int mult, const int ih, const int iw,
                               const int oh, const int ow, const int xtiles,
                               const int kh, const int sh, const int pt, const int pl, const int dh, const int dw,
                               const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int cout = cin * mult;
    const int nblk = (cout + OCB - 1) / OCB;
    const int oc0 = (i1 % nblk) * OCB;
    const int n = i1 / nblk;
    const int nout = min(OCB, cout - oc0);
    const int oy = i0 / xtiles;
    const int ox0 = (i0 - oy * xtiles) * (NV * VW);
    const int iy0 = oy * sh - pt;
    const int ix0 = ox0 * SW - pl;
    const int plane = ih * iw;
    __global real* yo = y + (((size_t)n * cout + oc0) * oh + oy) * ow + ox0;
    if ((n * cin + oc0 / mult) * plane + max(iy0, 0) * iw + ix0 < 0) {
        // a tile whose first taps lie before the tensor's start (the first row of the first
        // plane): pixel by pixel, reading only inside the tensor
        for (int c = 0; c < nout; ++c) {
            __global const real* xp = x + (n * cin + (oc0 + c) / mult) * plane;
            for (int ox = ox0; ox < min(ox0 + NV * VW, ow); ++ox) {
                real s = bias[oc0 + c];
                for (int ky = 0; ky < kh; ++ky) {
                    for (int kx = 0; kx < KW; ++kx) {
                        const int iy = iy0 + ky * dh;
                        const int ix = ox * SW - pl + kx * dw;
                        if (iy >= 0 && iy < ih && ix >= 0 && ix < iw) s += w[(oc0 + c) * kh * KW + ky * KW + kx] * xp[iy * iw + ix];
                    }
                }
                yo[(size_t)c * oh * ow + ox - ox0] = ll_act((real_v)s, act, alpha, beta).s0;
            }
        }
        return;
    }
    int_v colm[KW][NV];
#pragma unroll
    for (int kx = 0; kx < KW; ++kx) {
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const idx_v ix = (idx_v)(ix0 + kx * dw + v * VW * SW) + IDX_LANES * (idx_v)SW;
            colm[kx][v] = to_mask((ix >= (idx_v)0) & (ix < (idx_v)iw));
        }
    }
    // the channels one after the other: the masks and the tile's setup serve them all, and
    // only NV accumulators are live
    const int xb = n * cin * plane + ix0;
    for (int c = 0; c < nout; ++c) {
        const int ch = oc0 + c;
        const int xc = xb + (mult == 1 ? ch : ch / mult) * plane;
        __global const real* wc = w + ch * kh * KW;
        real_v acc[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[v] = (real_v)bias[ch];
        for (int ky = 0; ky < kh; ++ky) {
            const int iy = iy0 + ky * dh;
            if (iy < 0 || iy >= ih) continue;
#pragma unroll
            for (int kx = 0; kx < KW; ++kx) {
                const real_v wv = (real_v)wc[ky * KW + kx];
#pragma unroll
                for (int v = 0; v < NV; ++v) acc[v] += wv * ll_load(x, xc + iy * iw + kx * dw + v * VW * SW, colm[kx][v], 0);
            }
        }
#pragma unroll
        for (int v = 0; v < NV; ++v)
            ll_store(yo + (size_t)c * oh * ow + v * VW, ll_act(acc[v], act, alpha, beta), ow - ox0 - v * VW);
    }
}
