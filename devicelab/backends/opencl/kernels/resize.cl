// resize: resize H and W of NCHW planes, nearest (floor) or bilinear, with ONNX Runtime's
// coordinate rules: align_corners x * (in - 1) / (out - 1); otherwise half_pixel
// (x + 0.5) / scale - 0.5 for bilinear and asymmetric x / scale for nearest, scale = out / in
// (passed as float, as ONNX Runtime computes it). A work-item computes VW consecutive outputs of
// one output row: the row's source rows and weights once, each lane's source columns and
// weights as float vectors, then the source values gathered lane by lane.
// Work: gs0 = ceil(ow / VW), gs1 = n * c * oh.

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

__kernel void resize(const int gs0, const int gs1,
                     __global const real* x, __global real* y,
                     const int ih, const int iw, const int oh, const int ow,
                     const int linear, const int align_corners, const float scale_h, const float scale_w)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int oy = i1 % oh;
    const int plane = i1 / oh;
    const int ox0 = i0 * VW;
    const float_v ox = to_float_v((idx_v)ox0 + IDX_LANES);
    float fy;
    float_v fx;
    if (align_corners) {
        fy = oh == 1 ? 0.0f : (float)oy * (float)(ih - 1) / (float)(oh - 1);
        fx = ow == 1 ? (float_v)0.0f : ox * (float_v)(float)(iw - 1) / (float_v)(float)(ow - 1);
    } else if (linear) {
        fy = ((float)oy + 0.5f) / scale_h - 0.5f;
        fx = (ox + (float_v)0.5f) / (float_v)scale_w - (float_v)0.5f;
    } else {
        fy = (float)oy / scale_h;
        fx = ox / (float_v)scale_w;
    }
    __global const real* p = x + (size_t)plane * ih * iw;
    float_v r;
    if (!linear) {
        const int sy = clamp((int)floor(fy), 0, ih - 1);
        int sx[VW];
        vstore_v(clamp(to_idx_v(floor(fx)), (idx_v)0, (idx_v)(iw - 1)), 0, sx);
        float t[VW];
        for (int l = 0; l < VW; ++l) t[l] = (float)p[sy * iw + sx[l]];
        r = vload_v(0, t);
    } else {
        fy = clamp(fy, 0.0f, (float)(ih - 1));
        fx = clamp(fx, (float_v)0.0f, (float_v)(float)(iw - 1));
        const int y1 = min((int)fy, ih - 1), y2 = min(y1 + 1, ih - 1);
        const idx_v x1 = min(to_idx_v(fx), (idx_v)(iw - 1));
        const idx_v x2 = min(x1 + (idx_v)1, (idx_v)(iw - 1));
        float dy1 = fabs(fy - (float)y1), dy2 = fabs(fy - (float)y2);
        if (y1 == y2) {
            dy1 = 0.5f;
            dy2 = 0.5f;
        }
        const idx_v same = x1 == x2;
        const float_v dx1 = select(fabs(fx - to_float_v(x1)), (float_v)0.5f, same);
        const float_v dx2 = select(fabs(fx - to_float_v(x2)), (float_v)0.5f, same);
        int xa[VW], xb[VW];
        vstore_v(x1, 0, xa);
        vstore_v(x2, 0, xb);
        float a11[VW], a12[VW], a21[VW], a22[VW];
        for (int l = 0; l < VW; ++l) {
            a11[l] = (float)p[y1 * iw + xa[l]];
            a12[l] = (float)p[y1 * iw + xb[l]];
            a21[l] = (float)p[y2 * iw + xa[l]];
            a22[l] = (float)p[y2 * iw + xb[l]];
        }
        r = dx2 * (float_v)dy2 * vload_v(0, a11) + dx1 * (float_v)dy2 * vload_v(0, a12)
            + dx2 * (float_v)dy1 * vload_v(0, a21) + dx1 * (float_v)dy1 * vload_v(0, a22);
    }
    ll_store(y + (size_t)i1 * ow + ox0, to_real_v(r), ow - ox0);
}
