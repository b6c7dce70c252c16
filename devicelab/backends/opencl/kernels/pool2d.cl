// pool2d: max (POOL_AVG 0) or average (POOL_AVG 1, compile-time) pooling over a KH x KW window
// with stride and asymmetric padding (ONNX semantics, ceil_mode handled by the output size).
// Padding never wins a max; an average divides by the valid count, or with count_include_pad by
// the window clipped to the padded input (ONNX Runtime's rule). A work-item computes a tile of RB
// output rows by NV vectors of VW consecutive outputs, for OCB consecutive planes one after the
// other (the column masks, computed once, serve them all). Each input row under the tile is
// loaded once per vector, as its KW window columns (loads step by the horizontal stride SW;
// stride 2 takes the even and odd columns of one span for two of them), masked outside the row,
// reduced to the row's part of the window and folded into every output row whose window holds
// it; rows outside the input are skipped. The last vector of a row ends at the row's end
// (overlapping its neighbour), so stores are whole vectors unless the row is narrower than one.
// The window (KH x KW), the vertical stride SH and the kind (POOL_AVG) are compile-time, so the
// loops unroll into straight loads, shuffles and max / add. The few planes whose first load
// would start before the tensor (the first tile of the first plane, in the padding) go output by
// output instead, reading only inside the tensor.
// Work: gs0 = ceil(oh / RB) * xtiles (xtiles = ceil(ow / (NV * VW))), gs1 = ceil(n * c / OCB).

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

__kernel void pool2d(const int gs0, const int gs1,
                     __global const real* x, __global real* y, const int planes,
                     const int ih, const int iw, const int oh, const int ow, const int xtiles,
                     const int pt, const int pl, const int pb, const int pr, const int count_include_pad)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int pc0 = i1 * OCB;
    const int nout = min(OCB, planes - pc0);
    const int ry = i0 / xtiles;
    const int oy0 = ry * RB;
    const int ox0 = (i0 - ry * xtiles) * (NV * VW);
    const int iy0 = oy0 * SH - pt;
    const int plane = ih * iw;
    const int rows = min(RB, oh - oy0);
    const real init = POOL_AVG ? (real)0 : (real)(-INFINITY);
    // the output column of each vector's lane 0 (the row's last vector ends at the row's end),
    // the lanes whose window column is inside the row, and each lane's window width
    int cx[NV];
    int_v colm[KW][NV];
    idx_v cols[NV];
    int inside = 1;  // every lane of every window column inside the row: no masks at all
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        cx[v] = min(ox0 + v * VW, max(ow - VW, 0));
        const idx_v xs = (idx_v)(cx[v] * SW - pl) + IDX_LANES * (idx_v)SW;
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) {
            const idx_v ix = xs + (idx_v)kx;
            colm[kx][v] = to_mask((ix >= (idx_v)0) & (ix < (idx_v)iw));
        }
        cols[v] = count_include_pad ? min(xs + (idx_v)KW, (idx_v)(iw + pr)) - xs
                                    : min(xs + (idx_v)KW, (idx_v)iw) - max(xs, (idx_v)0);
        inside &= cx[v] * SW - pl >= 0 && (cx[v] + VW - 1) * SW - pl + KW - 1 < iw;
    }
    // the leading planes whose first load would start before the tensor: output by output
    const int first = max(iy0, 0) * iw + cx[0] * SW - pl;
    int nfirst = 0;
    while (nfirst < nout && (pc0 + nfirst) * plane + first < 0) ++nfirst;
    for (int c = 0; c < nfirst; ++c) {
        __global const real* xp = x + (size_t)(pc0 + c) * plane;
        for (int j = 0; j < rows; ++j) {
            const int wy = iy0 + j * SH;
            for (int o = ox0; o < min(ox0 + NV * VW, ow); ++o) {
                const int wx = o * SW - pl;
                real s = init;
                for (int ky = max(wy, 0); ky < min(wy + KH, ih); ++ky) {
                    for (int kx = max(wx, 0); kx < min(wx + KW, iw); ++kx) {
                        s = POOL_AVG ? s + xp[ky * iw + kx] : max(s, xp[ky * iw + kx]);
                    }
                }
                if (POOL_AVG) {
                    const int n = count_include_pad ? (min(wy + KH, ih + pb) - wy) * (min(wx + KW, iw + pr) - wx)
                                                    : (min(wy + KH, ih) - max(wy, 0)) * (min(wx + KW, iw) - max(wx, 0));
                    s = s / (real)max(n, 1);
                }
                y[((size_t)(pc0 + c) * oh + oy0 + j) * ow + o] = s;
            }
        }
    }
    // two copies of the plane loop: without masks for tiles inside the rows, with them at the
    // rows' edges
#pragma unroll
    for (int masked = 0; masked < 2; ++masked) {
    if (masked == inside) continue;
    for (int c = nfirst; c < nout; ++c) {
        const int xc = (pc0 + c) * plane - pl;
        __global real* yc = y + ((size_t)(pc0 + c) * oh + oy0) * ow;
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            if (ox0 + v * VW >= ow) break;  // a vector past the row's end
            real_v acc[RB];
#pragma unroll
            for (int j = 0; j < RB; ++j) acc[j] = (real_v)init;
            // input row r of the tile is row r - j SH of output row j's window
#pragma unroll
            for (int r = 0; r < (RB - 1) * SH + KH; ++r) {
                const int iy = iy0 + r;
                if (iy < 0 || iy >= ih) continue;
                const int base = xc + iy * iw + cx[v] * SW;
                real_v t[KW];
                if (SW == 2) {
                    // stride 2: the even and odd columns of one 2 VW span are the window
                    // columns kx and kx + 1
                    real_v ev = (real_v)init, od = (real_v)init;
#pragma unroll
                    for (int kx = 0; kx < KW; ++kx) {
                        if (kx % 2 == 0) {
                            const real_v lo = vload_v(0, x + base + kx);
                            const real_v hi = vload_v(0, x + base + kx + VW);
                            ev = (real_v)(lo.even, hi.even);
                            od = (real_v)(lo.odd, hi.odd);
                        }
                        t[kx] = kx % 2 ? od : ev;
                    }
                } else {
#pragma unroll
                    for (int kx = 0; kx < KW; ++kx) t[kx] = SW == 1 ? vload_v(0, x + base + kx) : ll_load(x, base + kx, colm[kx][v], 0);
                }
                if (masked) {
#pragma unroll
                    for (int kx = 0; kx < KW; ++kx) t[kx] = select((real_v)init, t[kx], colm[kx][v]);
                }
                real_v s = t[0];  // the row's part of the window
#pragma unroll
                for (int kx = 1; kx < KW; ++kx) s = POOL_AVG ? s + t[kx] : max(s, t[kx]);
#pragma unroll
                for (int j = 0; j < RB; ++j) {
                    const int d = r - j * SH;
                    if (d >= 0 && d < KH) acc[j] = POOL_AVG ? acc[j] + s : max(acc[j], s);
                }
            }
#pragma unroll
            for (int j = 0; j < RB; ++j) {
                if (j < rows) {
                    real_v out = acc[j];
                    if (POOL_AVG) {
                        // the divisor: the window clipped to the input (or padded input)
                        const int wy = iy0 + j * SH;
                        const int wrows = count_include_pad ? min(wy + KH, ih + pb) - wy
                                                            : min(wy + KH, ih) - max(wy, 0);
                        out = out / to_real_v(max((idx_v)wrows * cols[v], (idx_v)1));
                    }
                    ll_store(yc + j * ow + cx[v], out, ow - cx[v]);
                }
            }
        }
    }
    }
}
