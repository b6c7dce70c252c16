// conv2d_flat: stride-1 convolution whose output rows are as wide as its input rows (any kernel,
// dilation, padding, groups) with fused bias and activation; batch norm is folded on the host.
// The output channel plane is seen flat, as oh * iw pixels: for lane pixel p = (oy, ox), tap
// (ky, kx) reads input p + (ky * dh - pt) * iw + kx * dw - pl, so every tap is one contiguous
// vector load (no lane is wasted on short rows), masked where the lane's row or column falls in
// the padding. A work-item computes a register tile of NV vectors of VW pixels by OCB output
// channels of one image and group: the KW column masks are computed once, each kernel row's
// masks once per row and shared by every input channel (taps row by row, channels inside).
// Weights are blocked [group][block][kh][cin_g][KW][OCB] (a kernel row's taps of all input
// channels are one contiguous stream), bias [group][block * OCB], zero-padded.
// Work: gs0 = ceil(oh * iw / (NV * VW)), gs1 = n * groups * nblk.

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

__kernel void conv2d_flat(const int gs0, const int gs1,
                          __global const real* x, __global const real* w, __global const real* bias,
                          __global real* y,
                          const int cin_g, const int ih, const int iw, const int groups, const int cout_g,
                          const int nblk, const int oh, const int kh, const int pt, const int pl, const int dh,
                          const int dw,
                          const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int ob = i1 % nblk;
    const int ng = i1 / nblk;  // n * groups + g
    const int g = ng % groups;
    const int hw = oh * iw;
    const int plane = ih * iw;
    const int p0 = i0 * (NV * VW);
    const int oc0 = ob * OCB;
    const int nout = min(OCB, cout_g - oc0);
    __global const real* wb = w + (size_t)(g * nblk + ob) * cin_g * kh * KW * OCB;
    __global const real* bb = bias + (g * nblk + ob) * OCB;
    const int xg = ng * cin_g * plane + p0 - pt * iw - pl;  // tap (0, 0) of lane 0 in plane 0
    // the leading input channels whose taps start before the tensor (the first tile of the
    // first image): their loads go lane by lane
    const int nfirst = xg >= 0 ? 0 : min(cin_g, (plane - 1 - xg) / plane);
    idx_v oy[NV];
    int_v colm[KW][NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        oy[v] = ll_rows(p0 + v * VW, iw);
        const idx_v ox = (idx_v)(p0 + v * VW) + IDX_LANES - oy[v] * (idx_v)iw;
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) {
            const idx_v ix = ox + (idx_v)(kx * dw - pl);
            colm[kx][v] = to_mask((ix >= (idx_v)0) & (ix < (idx_v)iw));
        }
    }
    real_v acc[OCB][NV];
#pragma unroll
    for (int j = 0; j < OCB; ++j) {
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[j][v] = (real_v)bb[j];
    }
    // taps row by row (the row's masks serve every input channel), input channels inside
    for (int ky = 0; ky < kh; ++ky) {
        int_v m[KW][NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const idx_v iy = oy[v] + (idx_v)(ky * dh - pt);
            const int_v rm = to_mask((iy >= (idx_v)0) & (iy < (idx_v)ih));
#pragma unroll
            for (int kx = 0; kx < KW; ++kx) m[kx][v] = rm & colm[kx][v];
        }
        const int xk = xg + ky * dh * iw;
        __global const real* wk = wb + ky * cin_g * KW * OCB;
        // two copies of the channel loop: lane-by-lane loads for the leading channels only
#pragma unroll
        for (int lanewise = 1; lanewise >= 0; --lanewise) {
            for (int ic = lanewise ? 0 : nfirst; ic < (lanewise ? nfirst : cin_g); ++ic) {
                const int xo = xk + ic * plane;
                __global const real* wt = wk + ic * KW * OCB;
#pragma unroll
                for (int kx = 0; kx < KW; ++kx) {
                    real_v xv[NV];
#pragma unroll
                    for (int v = 0; v < NV; ++v) xv[v] = ll_load(x, xo + kx * dw + v * VW, m[kx][v], lanewise);
#pragma unroll
                    for (int j = 0; j < OCB; ++j) {
                        const real_v wj = (real_v)wt[kx * OCB + j];
#pragma unroll
                        for (int v = 0; v < NV; ++v) acc[j][v] += wj * xv[v];
                    }
                }
            }
        }
    }
    __global real* yo = y + ((size_t)ng * cout_g + oc0) * hw + p0;
    for (int j = 0; j < nout; ++j) {
#pragma unroll
        for (int v = 0; v < NV; ++v) ll_store(yo + (size_t)j * hw + v * VW, ll_act(acc[j][v], act, alpha, beta), hw - p0 - v * VW);
    }
}
