// softmax: softmax along one axis of length `len`; the tensor is seen as (outer, len, inner).
// A work-item normalizes one (outer, inner) line: max, sum of exponentials, then division.
// Work: gs0 = inner, gs1 = outer.

__kernel void softmax(const int gs0, const int gs1,
                      __global const real* x, __global real* y, const int len, const int inner)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const size_t base = (size_t)i1 * len * inner + i0;
    float m = -INFINITY;
    for (int k = 0; k < len; ++k) m = fmax(m, (float)x[base + (size_t)k * inner]);
    float s = 0.0f;
    for (int k = 0; k < len; ++k) s += exp((float)x[base + (size_t)k * inner] - m);
    const float r = 1.0f / s;
    for (int k = 0; k < len; ++k) y[base + (size_t)k * inner] = (real)(exp((float)x[base + (size_t)k * inner] - m) * r);
}
