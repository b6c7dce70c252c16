// conv2d: general 2-D convolution (any kernel, stride, dilation, asymmetric padding, groups)
// with fused bias and activation; batch norm is folded into w and bias on the host. NCHW.
// A work-item computes VW consecutive output columns of one output row for OCB output channels
// of one image and group: each input vector (ll_row, padding read as zero) feeds OCB
// multiply-adds.
// Weights are blocked [group][block][cin_g][kh][kw][OCB], bias [group][block * OCB], zero-padded.
// Work: gs0 = oh * xtiles (xtiles = ceil(ow / VW)), gs1 = n * groups * nblk.

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

__kernel void conv2d(const int gs0, const int gs1,
                     __global const real* x, __global const real* w, __global const real* bias,
                     __global real* y,
                     const int cin_g, const int ih, const int iw, const int groups, const int cout_g,
                     const int nblk, const int oh, const int ow, const int xtiles,
                     const int kh, const int kw, const int sh, const int sw, const int pt, const int pl,
                     const int dh, const int dw,
                     const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int ob = i1 % nblk;
    const int ng = i1 / nblk;  // n * groups + g
    const int g = ng % groups;
    const int oy = i0 / xtiles;
    const int ox0 = (i0 - oy * xtiles) * VW;
    const int oc0 = ob * OCB;
    __global const real* xg = x + (size_t)ng * cin_g * ih * iw;
    __global const real* wb = w + (size_t)(g * nblk + ob) * cin_g * kh * kw * OCB;
    __global const real* bb = bias + (g * nblk + ob) * OCB;
    real_v acc[OCB];
    for (int j = 0; j < OCB; ++j) acc[j] = (real_v)bb[j];
    const int iy0 = oy * sh - pt;
    const int ix0 = ox0 * sw - pl;
    for (int ic = 0; ic < cin_g; ++ic) {
        for (int ky = 0; ky < kh; ++ky) {
            const int iy = iy0 + ky * dh;
            if (iy < 0 || iy >= ih) continue;
            __global const real* wr = wb + ((ic * kh + ky) * kw) * OCB;
            for (int kx = 0; kx < kw; ++kx) {
                const real_v v = ll_row(xg + (size_t)ic * ih * iw, iy, iw, ih * iw, ix0 + kx * dw, sw);
                __global const real* wk = wr + kx * OCB;
#pragma unroll
                for (int j = 0; j < OCB; ++j) acc[j] += (real_v)wk[j] * v;
            }
        }
    }
    const int nout = min(OCB, cout_g - oc0);
    const int lanes = min(VW, ow - ox0);
    __global real* yo = y + (((size_t)ng * cout_g + oc0) * oh + oy) * ow + ox0;
    for (int j = 0; j < nout; ++j) {
        const real_v r = ll_act(acc[j], act, alpha, beta);
        if (lanes == VW) {
            vstore_v(r, 0, yo + (size_t)j * oh * ow);
        } else {
            real t[VW];
            vstore_v(r, 0, t);
            for (int l = 0; l < lanes; ++l) yo[(size_t)j * oh * ow + l] = t[l];
        }
    }
}
