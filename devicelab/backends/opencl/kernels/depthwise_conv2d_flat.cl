// depthwise_conv2d_flat: stride-1 depthwise convolution (channel multiplier, any kernel,
// dilation, padding) whose output rows are as wide as its input rows, with fused bias and
// activation; batch norm is folded on the host. NCHW. Output channel oc reads input channel
// oc / mult. The output plane is seen flat (oh * iw pixels): tap (ky, kx) of lane pixel p
// reads input p + (ky * dh - pt) * iw + kx * dw - pl, one contiguous vector load masked where
// the lane's row or column falls in the padding. A work-item computes a register tile of NV
// vectors of VW pixels by OCB consecutive channels, taps outside and channels inside: each
// tap's mask is computed once and serves all OCB channels.
// Weights are [cout][kh][KW], bias [cout].
// Work: gs0 = ceil(oh * iw / (NV * VW)), gs1 = n * ceil(cout / OCB).

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

// ll_rows: the output row of each lane of a flat tile's vector at plane position p (lanes
// p .. p + VW - 1, rows of width w): a float estimate, corrected to the exact quotient.
// Shared helper: this text is identical in every kernel file that has it.
__attribute__((always_inline)) idx_v ll_rows(const int p, const int w)
{
    const idx_v q = (idx_v)p + IDX_LANES;
    idx_v r = to_idx_v(to_float_v(q) * (1.0f / (float)w));
    const idx_v rest = q - r * (idx_v)w;
    r -= rest >= (idx_v)w;  // a true compare is -1
    r += rest < (idx_v)0;
    return r;
}

// ll_store: y[0 .. n) = the first n lanes of r (the whole vector when n >= VW; nothing when
// n <= 0). A partial vector goes lane by lane; the lane loop unrolls, so every lane is a
// constant index and the copy stays in registers rather than going through the stack. Shared
// helper: this text is identical in every kernel file that has it.
__attribute__((always_inline)) void ll_store(__global real* y, const real_v r, const int n)
{
    if (n >= VW) {
        vstore_v(r, 0, y);
        return;
    }
    real t[VW];
    vstore_v(r, 0, t);
#pragma unroll
    for (int l = 0; l < VW; ++l)
        if (l < n) y[l] = t[l];
}

__kernel void depthwise_conv2d_flat(const int gs0, const int gs1,
                                    __global const real* x, __global const real* w, __global const real* bias,
                                    __global real* y,
                                    const int cin, const int mult, const int ih, const int iw, const int oh,
                                    const int kh, const int pt, const int pl, const int dh, const int dw,
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
    const int hw = oh * iw;
    const int plane = ih * iw;
    const int p0 = i0 * (NV * VW);
    const int origin = p0 - pt * iw - pl;  // tap (0, 0) of lane 0, within a plane
    __global real* yo = y + ((size_t)n * cout + oc0) * hw + p0;
    if ((n * cin + oc0 / mult) * plane + origin < 0) {
        // a tile whose first taps lie before the tensor's start (the first rows of the first
        // plane): pixel by pixel, reading only inside the tensor
        for (int c = 0; c < nout; ++c) {
            __global const real* xp = x + (n * cin + (oc0 + c) / mult) * plane;
            for (int p = p0; p < min(p0 + NV * VW, hw); ++p) {
                const int oy = p / iw;
                const int ox = p - oy * iw;
                real s = bias[oc0 + c];
                for (int ky = 0; ky < kh; ++ky) {
                    for (int kx = 0; kx < KW; ++kx) {
                        const int iy = oy + ky * dh - pt;
                        const int ix = ox + kx * dw - pl;
                        if (iy >= 0 && iy < ih && ix >= 0 && ix < iw) s += w[(oc0 + c) * kh * KW + ky * KW + kx] * xp[iy * iw + ix];
                    }
                }
                yo[(size_t)c * hw + p - p0] = ll_act((real_v)s, act, alpha, beta).s0;
            }
        }
        return;
    }
    // each lane's output row and column; the taps' masks are compared from them where they are
    // used (kept as KW x NV mask vectors they would crowd the accumulators out of the registers)
    idx_v oy[NV], ox[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        oy[v] = ll_rows(p0 + v * VW, iw);
        ox[v] = (idx_v)(p0 + v * VW) + IDX_LANES - oy[v] * (idx_v)iw;
    }
    // the register tile: NV vectors of pixels by OCB channels. Each tap's mask (row and column)
    // is computed once and serves every channel; channels past the last one recompute the last
    // (never stored), so the tile's loops have compile-time trip counts
    __global const real* xb = x + (size_t)n * cin * plane + origin;
    int xo[OCB];
    real_v acc[OCB][NV];
#pragma unroll
    for (int c = 0; c < OCB; ++c) {
        const int ch = min(oc0 + c, cout - 1);
        xo[c] = (mult == 1 ? ch : ch / mult) * plane;
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[c][v] = (real_v)bias[ch];
    }
    for (int ky = 0; ky < kh; ++ky) {
        int_v rm[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const idx_v iy = oy[v] + (idx_v)(ky * dh - pt);
            rm[v] = to_mask((iy >= (idx_v)0) & (iy < (idx_v)ih));
        }
        __global const real* xr = xb + ky * dh * iw;
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) {
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                const idx_v ix = ox[v] + (idx_v)(kx * dw - pl);
                const int_v m = rm[v] & to_mask((ix >= (idx_v)0) & (ix < (idx_v)iw));
#pragma unroll
                for (int c = 0; c < OCB; ++c) {
                    const real_v wv = (real_v)w[min(oc0 + c, cout - 1) * kh * KW + ky * KW + kx];
                    acc[c][v] += wv * select((real_v)0, vload_v(v, xr + xo[c] + kx * dw), m);
                }
            }
        }
    }
    // the store loop unrolls too (a run-time index would put the tile in memory)
#pragma unroll
    for (int c = 0; c < OCB; ++c) {
        if (c >= nout) break;
#pragma unroll
        for (int v = 0; v < NV; ++v) ll_store(yo + (size_t)c * hw + v * VW, ll_act(acc[c][v], act, alpha, beta), hw - p0 - v * VW);
    }
}
