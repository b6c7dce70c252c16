// depthwise_conv2d: depthwise convolution (channel multiplier, any kernel, stride, dilation,
// asymmetric padding) with fused bias and activation; batch norm is folded on the host. NCHW.
// Output channel oc reads input channel oc / mult. A work-item computes VW consecutive output
// columns of one output row of one channel, reading input rows as vectors (ll_row).
// Weights are [cout][kh][kw], bias [cout].
// Work: gs0 = oh * xtiles (xtiles = ceil(ow / VW)), gs1 = n * cout.

// ll_act: the fused activation (codes in plan.ACTIVATIONS). Shared helper: this text is identical
// in every kernel file that has an epilogue, so a fusing step keeps one copy.
real_v ll_act(real_v v, const int act, const float alpha, const float beta)
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

// ll_row: the VW inputs plane[iy][ixs + l * sw] (l < VW) of one row, zero outside [0, iw).
// Strides 1 and 2 use whole-vector loads that may run past the row's ends but never past the
// plane's, and mask the lanes outside the row; anything else is read lane by lane. Shared
// helper: this text is identical in every kernel file that has it.
__attribute__((always_inline)) real_v ll_row(__global const real* plane, const int iy, const int iw, const int plane_size, const int ixs,
              const int sw)
{
    const int off = iy * iw + ixs;
    if (sw == 1 && off >= 0 && off + VW <= plane_size) {
        const int_v ix = (int_v)ixs + LANES;
        return select((real_v)0, vload_v(0, plane + off), (ix >= (int_v)0) & (ix < (int_v)iw));
    }
    if (sw == 2 && off >= 0 && off + 2 * VW <= plane_size) {
        const int_v ix = (int_v)ixs + LANES * (int_v)2;
        const real_v v = shuffle2(vload_v(0, plane + off), vload_v(0, plane + off + VW), EVEN_LANES);
        return select((real_v)0, v, (ix >= (int_v)0) & (ix < (int_v)iw));
    }
    real t[VW];
#pragma unroll
    for (int l = 0; l < VW; ++l) {
        const int ix = ixs + l * sw;
        t[l] = (ix >= 0 && ix < iw) ? plane[iy * iw + ix] : (real)0;
    }
    return vload_v(0, t);
}

__kernel void depthwise_conv2d(const int gs0, const int gs1,
                               __global const real* x, __global const real* w, __global const real* bias,
                               __global real* y,
                               const int cin, const int mult, const int ih, const int iw,
                               const int oh, const int ow, const int xtiles,
                               const int kh, const int kw, const int sh, const int sw, const int pt, const int pl,
                               const int dh, const int dw,
                               const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int cout = cin * mult;
    const int oc = i1 % cout;
    const int n = i1 / cout;
    const int oy = i0 / xtiles;
    const int ox0 = (i0 - oy * xtiles) * VW;
    __global const real* xp = x + ((size_t)n * cin + oc / mult) * ih * iw;
    __global const real* wk = w + (size_t)oc * kh * kw;
    real_v acc = (real_v)bias[oc];
    const int iy0 = oy * sh - pt;
    const int ix0 = ox0 * sw - pl;
    for (int ky = 0; ky < kh; ++ky) {
        const int iy = iy0 + ky * dh;
        if (iy < 0 || iy >= ih) continue;
        for (int kx = 0; kx < kw; ++kx) {
            const real_v v = ll_row(xp, iy, iw, ih * iw, ix0 + kx * dw, sw);
            acc += (real_v)wk[ky * kw + kx] * v;
        }
    }
    const real_v r = ll_act(acc, act, alpha, beta);
    __global real* yo = y + (((size_t)n * cout + oc) * oh + oy) * ow + ox0;
    const int lanes = min(VW, ow - ox0);
    if (lanes == VW) {
        vstore_v(r, 0, yo);
    } else {
        real t[VW];
        vstore_v(r, 0, t);
        for (int l = 0; l < lanes; ++l) yo[l] = t[l];
    }
}
