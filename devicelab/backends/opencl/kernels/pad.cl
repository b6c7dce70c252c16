// pad: pad a tensor of rank <= 4 (seen as 4-D, input dims d0..d3, output dims o0..o3, pads
// before p0..p3) in mode 0 constant (value), 1 reflect (mirror without the edge), 2 edge.
// One output element per work-item.
// Work: gs0 = o3, gs1 = o0 * o1 * o2.

__kernel void pad(const int gs0, const int gs1,
                  __global const real* x, __global real* y,
                  const int d0, const int d1, const int d2, const int d3,
                  const int o1, const int o2, const int o3,
                  const int p0, const int p1, const int p2, const int p3,
                  const int mode, const float value)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    int c[4];
    c[3] = i0 - p3;
    c[2] = i1 % o2 - p2;
    c[1] = (i1 / o2) % o1 - p1;
    c[0] = i1 / (o1 * o2) - p0;
    const int d[4] = {d0, d1, d2, d3};
    bool inside = true;
    for (int a = 0; a < 4; ++a) {
        if (c[a] >= 0 && c[a] < d[a]) continue;
        if (mode == 0) {
            inside = false;
        } else if (mode == 1) {
            const int period = 2 * (d[a] - 1);
            int m = period > 0 ? abs(c[a]) % period : 0;
            c[a] = m < d[a] ? m : period - m;
        } else {
            c[a] = clamp(c[a], 0, d[a] - 1);
        }
    }
    y[(size_t)i1 * o3 + i0] = inside ? x[(((size_t)c[0] * d1 + c[1]) * d2 + c[2]) * d3 + c[3]] : (real)value;
}
