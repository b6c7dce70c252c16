// depthwise_conv2d: depthwise convolution (channel multiplier, any kernel, stride, dilation,
// asymmetric padding) with fused bias and activation; batch norm is folded on the host. NCHW.
// Output channel oc reads input channel oc / mult. A work-item computes a tile of RB output rows
// by NV vectors of VW consecutive output columns, for OCB consecutive channels one after the
// other (the column masks, computed once, serve them all). Each input row under the tile is
// loaded once per vector, as its KW taps (loads step by the horizontal stride SW; 1 and 2 are
// whole-vector loads, masked where a lane's column falls in the padding), and feeds every output
// row whose window holds it: RB rows of a 3x3 stride-1 kernel load RB + 2 input rows, not 3 RB.
// At stride 2 the even and odd columns of one 2 VW span are two taps. Rows in the padding are
// skipped. The last vector of a row ends at the row's end (overlapping its neighbour, whose
// shared outputs it computes again), so stores are whole vectors unless the row is narrower
// than one. The window (KH x KW), vertical stride SH and dilation DH, DW are compile-time, so
// the row and tap loops unroll into straight multiply-adds.
// Weights are [cout][KH][KW], bias [cout].
// Work: gs0 = ceil(oh / RB) * xtiles (xtiles = ceil(ow / (NV * VW))), gs1 = n * ceil(cout / OCB).

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

__kernel void depthwise_conv2d(const int gs0, const int gs1,
                               __global const real* x, __global const real* w, __global const real* bias,
                               __global real* y,
                               const int cin, const int mult, const int ih, const int iw,
                               const int oh, const int ow, const int xtiles, const int pt, const int pl,
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
    const int ry = i0 / xtiles;
    const int oy0 = ry * RB;
    const int ox0 = (i0 - ry * xtiles) * (NV * VW);
    const int iy0 = oy0 * SH - pt;
    const int plane = ih * iw;
    const int rows = min(RB, oh - oy0);
    // the output column of each vector's lane 0: the last vector of a row ends at the row's
    // end (overlapping its neighbour, whose shared outputs it computes again), so every store
    // is a whole vector unless the row is narrower than one
    int cx[NV];
    int_v colm[KW][NV];
    int inside = 1;  // every lane of every tap inside the row: no masks at all
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        cx[v] = min(ox0 + v * VW, max(ow - VW, 0));
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) {
            const idx_v ix = (idx_v)(cx[v] * SW - pl + kx * DW) + IDX_LANES * (idx_v)SW;
            colm[kx][v] = to_mask((ix >= (idx_v)0) & (ix < (idx_v)iw));
        }
        inside &= cx[v] * SW - pl >= 0 && (cx[v] + VW - 1) * SW - pl + (KW - 1) * DW < iw;
    }
    // the leading channels whose first load would start before the tensor (the first tile of
    // the first plane, in the padding): output by output, reading only inside the tensor
    const int first = max(iy0, 0) * iw + cx[0] * SW - pl;
    int nfirst = 0;
    while (nfirst < nout && (n * cin + (oc0 + nfirst) / mult) * plane + first < 0) ++nfirst;
    for (int c = 0; c < nfirst; ++c) {
        const int ch = oc0 + c;
        __global const real* xp = x + (size_t)(n * cin + ch / mult) * plane;
        for (int j = 0; j < rows; ++j) {
            const int wy = iy0 + j * SH;
            for (int o = ox0; o < min(ox0 + NV * VW, ow); ++o) {
                const int wx = o * SW - pl;
                real s = bias[ch];
                for (int ky = 0; ky < KH; ++ky) {
                    for (int kx = 0; kx < KW; ++kx) {
                        const int iy = wy + ky * DH, ix = wx + kx * DW;
                        if (iy >= 0 && iy < ih && ix >= 0 && ix < iw) s += w[ch * (KH * KW) + ky * KW + kx] * xp[iy * iw + ix];
                    }
                }
                y[((size_t)(n * cout + ch) * oh + oy0 + j) * ow + o] = ll_act((real_v)s, act, alpha, beta).s0;
            }
        }
    }
    // two copies of the channel loop: without masks for tiles inside the rows, with them at
    // the rows' edges
#pragma unroll
    for (int masked = 0; masked < 2; ++masked) {
        if (masked == inside) continue;
        for (int c = nfirst; c < nout; ++c) {
            const int ch = oc0 + c;
            const int xc = (n * cin + (mult == 1 ? ch : ch / mult)) * plane - pl;
            // the channel's weights, broadcast once into registers
            real_v wv[KH * KW];
#pragma unroll
            for (int k = 0; k < KH * KW; ++k) wv[k] = (real_v)w[ch * (KH * KW) + k];
            __global real* yc = y + ((size_t)(n * cout + ch) * oh + oy0) * ow;
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                if (ox0 + v * VW >= ow) break;  // a tile past the row's end
                real_v acc[RB];
#pragma unroll
                for (int j = 0; j < RB; ++j) acc[j] = (real_v)bias[ch];
                // input row r of the tile serves output row j through kernel row (r - j SH) / DH
#pragma unroll
                for (int r = 0; r < (RB - 1) * SH + (KH - 1) * DH + 1; ++r) {
                    const int iy = iy0 + r;
                    if (iy < 0 || iy >= ih) continue;
                    const int base = xc + iy * iw + cx[v] * SW;
                    real_v t[KW];
                    if (SW == 2) {
                        // stride 2: the even and odd columns of one 2 VW span are the taps
                        // at offsets 0 and 1 (an odd offset reads the odd columns of the span
                        // one column to its left)
                        real_v ev = (real_v)0, od = (real_v)0;
#pragma unroll
                        for (int kx = 0; kx < KW; ++kx) {
                            const int o = kx * DW;
                            if (o % 2 == 0 || kx == 0 || (kx - 1) * DW != o - 1) {
                                const real_v lo = vload_v(0, x + base + o - o % 2);
                                const real_v hi = vload_v(0, x + base + o - o % 2 + VW);
                                ev = (real_v)(lo.even, hi.even);
                                od = (real_v)(lo.odd, hi.odd);
                            }
                            t[kx] = o % 2 ? od : ev;
                        }
                    } else {
#pragma unroll
                        for (int kx = 0; kx < KW; ++kx) t[kx] = SW == 1 ? vload_v(0, x + base + kx * DW) : ll_load(x, base + kx * DW, colm[kx][v], 0);
                    }
                    if (masked) {
#pragma unroll
                        for (int kx = 0; kx < KW; ++kx) t[kx] = select((real_v)0, t[kx], colm[kx][v]);
                    }
#pragma unroll
                    for (int j = 0; j < RB; ++j) {
                        const int d = r - j * SH;
                        if (d < 0 || d % DH != 0 || d / DH >= KH) continue;
#pragma unroll
                        for (int kx = 0; kx < KW; ++kx) acc[j] += wv[d / DH * KW + kx] * t[kx];
                    }
                }
#pragma unroll
                for (int j = 0; j < RB; ++j) {
                    if (j < rows) ll_store(yc + j * ow + cx[v], ll_act(acc[j], act, alpha, beta), ow - cx[v]);
                }
            }
        }
    }
}
