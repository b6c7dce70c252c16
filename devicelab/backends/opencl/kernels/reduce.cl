// reduce: mean (op 0), max (op 1) or sum (op 2) over the axes flagged in `mask` (bit a for
// axis a) of a tensor of rank <= 4 seen as 4-D (d0..d3). The output is the kept axes in order
// (with or without kept ones, the same elements). One output element per work-item.
// Work: gs0 = number of outputs, gs1 = 1.

__kernel void reduce(const int gs0, const int gs1,
                     __global const real* x, __global real* y,
                     const int d0, const int d1, const int d2, const int d3,
                     const int mask, const int op)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int d[4] = {d0, d1, d2, d3};
    int start[4], count[4];
    int rest = i0;
    for (int a = 3; a >= 0; --a) {
        if (mask & (1 << a)) {
            start[a] = 0;
            count[a] = d[a];
        } else {
            start[a] = rest % d[a];
            rest /= d[a];
            count[a] = 1;
        }
    }
    float s = 0.0f;
    float m = -INFINITY;
    for (int a0 = start[0]; a0 < start[0] + count[0]; ++a0)
        for (int a1 = start[1]; a1 < start[1] + count[1]; ++a1)
            for (int a2 = start[2]; a2 < start[2] + count[2]; ++a2) {
                __global const real* row = x + (((size_t)a0 * d1 + a1) * d2 + a2) * d3;
                for (int a3 = start[3]; a3 < start[3] + count[3]; ++a3) {
                    const float v = (float)row[a3];
                    s += v;
                    m = fmax(m, v);
                }
            }
    const int n = count[0] * count[1] * count[2] * count[3];
    y[i0] = (real)(op == 0 ? s / (float)n : (op == 1 ? m : s));
}
