// resize: resize H and W of NCHW planes, nearest (floor) or bilinear, with ONNX Runtime's
// coordinate rules: align_corners x * (in - 1) / (out - 1); otherwise half_pixel
// (x + 0.5) / scale - 0.5 for bilinear and asymmetric x / scale for nearest, scale = out / in
// (passed as float, as ONNX Runtime computes it). One output element per work-item.
// Work: gs0 = ow, gs1 = n * c * oh.

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
    float fy, fx;
    if (align_corners) {
        fy = oh == 1 ? 0.0f : (float)oy * (float)(ih - 1) / (float)(oh - 1);
        fx = ow == 1 ? 0.0f : (float)i0 * (float)(iw - 1) / (float)(ow - 1);
    } else if (linear) {
        fy = ((float)oy + 0.5f) / scale_h - 0.5f;
        fx = ((float)i0 + 0.5f) / scale_w - 0.5f;
    } else {
        fy = (float)oy / scale_h;
        fx = (float)i0 / scale_w;
    }
    __global const real* p = x + (size_t)plane * ih * iw;
    real r;
    if (!linear) {
        const int sy = clamp((int)floor(fy), 0, ih - 1);
        const int sx = clamp((int)floor(fx), 0, iw - 1);
        r = p[sy * iw + sx];
    } else {
        fy = clamp(fy, 0.0f, (float)(ih - 1));
        fx = clamp(fx, 0.0f, (float)(iw - 1));
        const int y1 = min((int)fy, ih - 1), y2 = min(y1 + 1, ih - 1);
        const int x1 = min((int)fx, iw - 1), x2 = min(x1 + 1, iw - 1);
        float dy1 = fabs(fy - (float)y1), dy2 = fabs(fy - (float)y2);
        float dx1 = fabs(fx - (float)x1), dx2 = fabs(fx - (float)x2);
        if (y1 == y2) { dy1 = 0.5f; dy2 = 0.5f; }
        if (x1 == x2) { dx1 = 0.5f; dx2 = 0.5f; }
        r = (real)(dx2 * dy2 * (float)p[y1 * iw + x1] + dx1 * dy2 * (float)p[y1 * iw + x2]
                   + dx2 * dy1 * (float)p[y2 * iw + x1] + dx1 * dy1 * (float)p[y2 * iw + x2]);
    }
    y[(size_t)i1 * ow + i0] = r;
}
