// copy_slice: copy `len` contiguous elements in each of gs1 rows from src to dst, each side with
// its own row stride and offset: one input of a concat into its slice of the output, one slice
// of a split input into an output, or a whole tensor (a view of a graph input). A work-item
// copies VW consecutive elements.
// Work: gs0 = ceil(len / VW), gs1 = rows.

__kernel void copy_slice(const int gs0, const int gs1,
                         __global const real* src, __global real* dst, const int len,
                         const int src_stride, const int src_off, const int dst_stride, const int dst_off)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int x0 = i0 * VW;
    __global const real* s = src + (size_t)i1 * src_stride + src_off + x0;
    __global real* d = dst + (size_t)i1 * dst_stride + dst_off + x0;
    const int lanes = min(VW, len - x0);
    if (lanes == VW) {
        vstore_v(vload_v(0, s), 0, d);
    } else {
        for (int l = 0; l < lanes; ++l) d[l] = s[l];
    }
}
