// global_pool: average (is_avg = 1) or max (is_avg = 0) over a whole channel plane of hw
// elements. A work-item reduces one plane, VW elements at a time.
// Work: gs0 = n * c, gs1 = 1.

__kernel void global_pool(const int gs0, const int gs1,
                          __global const real* x, __global real* y, const int hw, const int is_avg)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    __global const real* p = x + (size_t)i0 * hw;
    int q = 0;
    if (is_avg) {
        float s = 0.0f;
        real_v acc = (real_v)0;
        for (; q + VW <= hw; q += VW) acc += vload_v(0, p + q);
        real t[VW];
        vstore_v(acc, 0, t);
        for (int l = 0; l < VW; ++l) s += (float)t[l];
        for (; q < hw; ++q) s += (float)p[q];
        y[i0] = (real)(s / (float)hw);
    } else {
        real_v acc = (real_v)(-INFINITY);
        for (; q + VW <= hw; q += VW) acc = fmax(acc, vload_v(0, p + q));
        real t[VW];
        vstore_v(acc, 0, t);
        real m = -INFINITY;
        for (int l = 0; l < VW; ++l) m = fmax(m, t[l]);
        for (; q < hw; ++q) m = fmax(m, p[q]);
        y[i0] = m;
    }
}
