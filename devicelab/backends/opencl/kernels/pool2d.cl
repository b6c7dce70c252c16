// pool2d: max (is_avg = 0) or average (is_avg = 1) pooling over a window with stride and
// asymmetric padding (ONNX semantics, ceil_mode handled by the output size). Padding never
// wins a max; an average divides by the valid count, or with count_include_pad by the window
// clipped to the padded input (ONNX Runtime's rule). One output element per work-item.
// Work: gs0 = oh * ow, gs1 = n * c.

__kernel void pool2d(const int gs0, const int gs1,
                     __global const real* x, __global real* y,
                     const int ih, const int iw, const int oh, const int ow,
                     const int kh, const int kw, const int sh, const int sw,
                     const int pt, const int pl, const int pb, const int pr,
                     const int is_avg, const int count_include_pad)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int oy = i0 / ow;
    const int ox = i0 - oy * ow;
    const int ys = oy * sh - pt;
    const int xs = ox * sw - pl;
    const int y0 = max(ys, 0), y1 = min(ys + kh, ih);
    const int x0 = max(xs, 0), x1 = min(xs + kw, iw);
    __global const real* p = x + (size_t)i1 * ih * iw;
    real r;
    if (is_avg) {
        float s = 0.0f;
        for (int iy = y0; iy < y1; ++iy)
            for (int ix = x0; ix < x1; ++ix) s += (float)p[iy * iw + ix];
        int count = (y1 - y0) * (x1 - x0);
        if (count_include_pad) count = (min(ys + kh, ih + pb) - ys) * (min(xs + kw, iw + pr) - xs);
        r = (real)(s / (float)max(count, 1));
    } else {
        real m = -INFINITY;
        for (int iy = y0; iy < y1; ++iy)
            for (int ix = x0; ix < x1; ++ix) m = fmax(m, p[iy * iw + ix]);
        r = m;
    }
    y[(size_t)i1 * oh * ow + i0] = r;
}
