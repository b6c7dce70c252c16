// channel_shuffle: ShuffleNet's shuffle of c channels in `groups` groups (reshape to
// [groups, c / groups], transpose, flatten): output channel j = k * groups + i reads input
// channel i * (c / groups) + k. A work-item copies VW consecutive pixels of one channel.
// Work: gs0 = ceil(hw / VW), gs1 = n * c.

__kernel void channel_shuffle(const int gs0, const int gs1,
                              __global const real* x, __global real* y,
                              const int channels, const int groups, const int hw)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int j = i1 % channels;
    const int n = i1 / channels;
    const int src_c = (j % groups) * (channels / groups) + j / groups;
    const int x0 = i0 * VW;
    __global const real* s = x + ((size_t)n * channels + src_c) * hw + x0;
    __global real* d = y + (size_t)i1 * hw + x0;
    const int lanes = min(VW, hw - x0);
    if (lanes == VW) {
        vstore_v(vload_v(0, s), 0, d);
    } else {
        for (int l = 0; l < lanes; ++l) d[l] = s[l];
    }
}
