// pool2d: max (is_avg = 0) or average (is_avg = 1) pooling over a kh x KW window with stride
// and asymmetric padding (ONNX semantics, ceil_mode handled by the output size). Padding never
// wins a max; an average divides by the valid count, or with count_include_pad by the window
// clipped to the padded input (ONNX Runtime's rule). A work-item computes NV vectors of VW
// consecutive outputs of one output row, for OCB consecutive planes one after the other;
// input row loads step by the horizontal stride SW (1 and 2: whole-vector loads), masked
// outside the row (the KW x NV column masks computed once serve every plane); rows outside are
// skipped.
// Work: gs0 = oh * xtiles (xtiles = ceil(ow / (NV * VW))), gs1 = ceil(n * c / OCB).

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

__kernel void pool2d(const int gs0, const int gs1,
                     __global const real* x, __global real* y, const int planes,
                     const int ih, const int iw, const int oh, const int ow, const int xtiles,
                     const int kh, const int sh, const int pt, const int pl, const int pb, const int pr,
                     const int is_avg, const int count_include_pad)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int pc0 = i1 * OCB;
    const int nout = min(OCB, planes - pc0);
    const int oy = i0 / xtiles;
    const int ox0 = (i0 - oy * xtiles) * (NV * VW);
    const int iy0 = oy * sh - pt;
    const int ix0 = ox0 * SW - pl;
    const int y0 = max(iy0, 0), y1 = min(iy0 + kh, ih);  // the window's rows inside the input
    __global real* yo = y + ((size_t)pc0 * oh + oy) * ow + ox0;
    if (pc0 * ih * iw + y0 * iw + ix0 < 0) {
        // a tile whose first window lies before the tensor's start: pixel by pixel
        for (int c = 0; c < nout; ++c) {
            for (int ox = ox0; ox < min(ox0 + NV * VW, ow); ++ox) {
                const int xs = ox * SW - pl;
                real r = is_avg ? (real)0 : (real)(-INFINITY);
                for (int iy = y0; iy < y1; ++iy) {
                    for (int ix = max(xs, 0); ix < min(xs + KW, iw); ++ix) {
                        const real v = x[(pc0 + c) * ih * iw + iy * iw + ix];
                        r = is_avg ? r + v : fmax(r, v);
                    }
                }
                if (is_avg) {
                    const int count = count_include_pad ? (min(iy0 + kh, ih + pb) - iy0) * (min(xs + KW, iw + pr) - xs)
                                                        : (y1 - y0) * (min(xs + KW, iw) - max(xs, 0));
                    r = r / (real)max(count, 1);
                }
                yo[(size_t)c * oh * ow + ox - ox0] = r;
            }
        }
        return;
    }
    // the divisor of each lane of an average: its window clipped to the input (or padded input)
    real_v div[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        const idx_v xs = (idx_v)(ix0 + v * VW * SW) + IDX_LANES * (idx_v)SW;
        idx_v cols, rows;
        if (count_include_pad) {
            rows = (idx_v)(min(iy0 + kh, ih + pb) - iy0);
            cols = min(xs + (idx_v)KW, (idx_v)(iw + pr)) - xs;
        } else {
            rows = (idx_v)(y1 - y0);
            cols = min(xs + (idx_v)KW, (idx_v)iw) - max(xs, (idx_v)0);
        }
        div[v] = to_real_v(max(rows * cols, (idx_v)1));
    }
    int_v colm[KW][NV];  // the lanes whose column is inside the row, per window column
#pragma unroll
    for (int kx = 0; kx < KW; ++kx) {
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const idx_v ix = (idx_v)(ix0 + kx + v * VW * SW) + IDX_LANES * (idx_v)SW;
            colm[kx][v] = to_mask((ix >= (idx_v)0) & (ix < (idx_v)iw));
        }
    }
    const real_v init = is_avg ? (real_v)0 : (real_v)(-INFINITY);
    // the planes one after the other, the window's rows and columns inside
    for (int c = 0; c < nout; ++c) {
        const int xc = (pc0 + c) * ih * iw + ix0;
        real_v acc[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[v] = init;
        for (int iy = y0; iy < y1; ++iy) {
#pragma unroll
            for (int kx = 0; kx < KW; ++kx) {
#pragma unroll
                for (int v = 0; v < NV; ++v) {
                    const real_v xv = ll_load(x, xc + iy * iw + kx + v * VW * SW, colm[kx][v], 0);
                    acc[v] = is_avg ? acc[v] + xv : fmax(acc[v], select(init, xv, colm[kx][v]));
                }
            }
        }
#pragma unroll
        for (int v = 0; v < NV; ++v)
            ll_store(yo + (size_t)c * oh * ow + v * VW, is_avg ? acc[v] / div[v] : acc[v], ow - ox0 - v * VW);
    }
}
