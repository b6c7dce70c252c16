// transpose: permute the axes of a tensor of rank <= 4 (seen as 4-D). The output has dims
// o0..o3; s0..s3 are the input element strides of the axes that become output axes 0..3.
// One output element per work-item.
// Work: gs0 = o3, gs1 = o0 * o1 * o2.

__kernel void transpose(const int gs0, const int gs1,
                        __global const real* x, __global real* y,
                        const int o1, const int o2, const int o3,
                        const int s0, const int s1, const int s2, const int s3)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int c2 = i1 % o2;
    const int c1 = (i1 / o2) % o1;
    const int c0 = i1 / (o1 * o2);
    y[(size_t)i1 * o3 + i0] = x[(size_t)c0 * s0 + (size_t)c1 * s1 + (size_t)c2 * s2 + (size_t)i0 * s3];
}
