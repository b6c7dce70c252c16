// conv2d_1x1: pointwise convolution (1x1, stride 1, no padding, optionally grouped) with fused
// bias and activation; batch norm is folded into w and bias on the host. NCHW activations.
// A work-item computes a register tile of NV vectors of VW consecutive pixels (NV * VW pixels
// of the flattened channel plane) by OCB output channels of one image and group: per input
// channel, NV vector loads and OCB weights feed NV * OCB vector multiply-adds. Loads of the
// plane's last tile run past its end (into the next plane, or the buffer's zeroed slack); those
// lanes are never stored.
// Weights are blocked [group][block][cin_g][OCB], bias [group][block * OCB], zero-padded.
// Work: gs0 = ceil(h * w / (NV * VW)), gs1 = n * groups * nblk.

// ll_act_any: any fused activation (codes in plan.ACTIVATIONS), out of line. Shared helper: this
// text is identical in every kernel file that has an epilogue, so a fusing step keeps one copy.
__attribute__((noinline)) real_v ll_act_any(real_v v, const int act, const float alpha, const float beta)
{
    switch (act) {
    case 1: return fmax(v, (real_v)0);
    case 2: return clamp(v, (real_v)0, (real_v)6);
    case 3: return v * clamp(v + (real_v)3, (real_v)0, (real_v)6) / (real_v)6;
    case 4: return (real_v)1 / ((real_v)1 + exp(-v));
    case 5: return v / ((real_v)1 + exp(-v));
    case 6: return tanh(v);
    case 7: return clamp(v / (real_v)6 + (real_v)0.5, (real_v)0, (real_v)1);
    case 8: return select((real_v)((real)alpha) * v, v, v > (real_v)0);
    case 9: return select((real_v)((real)alpha) * (exp(v) - (real_v)1), v, v > (real_v)0);
    case 10: return fmin(fmax(v, (real_v)((real)alpha)), (real_v)((real)beta));
    case 11: return (real_v)0.5 * v * ((real_v)1 + erf(v * (real_v)0.7071067811865476));
    default: return v;
    }
}

// ll_act: the fused activation of an epilogue: none, relu and relu6 inline (they are most of
// them, and a call would spill the accumulators), the others through ll_act_any. Shared helper:
// this text is identical in every kernel file that has an epilogue.
__attribute__((always_inline)) real_v ll_act(const real_v v, const int act, const float alpha, const float beta)
{
    if (act == 0) return v;
    if (act == 1) return fmax(v, (real_v)0);
    if (act == 2) return clamp(v, (real_v)0, (real_v)6);
    return ll_act_any(v, act, alpha, beta);
}

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

__kernel void conv2d_1x1(const int gs0, const int gs1,
                         __global const real* x, __global const real* w, __global const real* bias,
                         __global real* y,
                         const int cin_g, const int hw, const int groups, const int cout_g, const int nblk,
                         const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int ob = i1 % nblk;
    const int ng = i1 / nblk;  // n * groups + g
    const int g = ng % groups;
    const int p = i0 * (NV * VW);
    const int oc0 = ob * OCB;
    __global const real* xg = x + (size_t)ng * cin_g * hw + p;
    __global const real* wb = w + (size_t)(g * nblk + ob) * cin_g * OCB;
    __global const real* bb = bias + (g * nblk + ob) * OCB;
    real_v acc[OCB][NV];
#pragma unroll
    for (int j = 0; j < OCB; ++j) {
#pragma unroll
        for (int v = 0; v < NV; ++v) acc[j][v] = (real_v)bb[j];
    }
    for (int ic = 0; ic < cin_g; ++ic) {
        real_v xv[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) xv[v] = vload_v(v, xg + (size_t)ic * hw);  // past hw: never stored
        __global const real* wk = wb + ic * OCB;
#pragma unroll
        for (int j = 0; j < OCB; ++j) {
            const real_v wj = (real_v)wk[j];
#pragma unroll
            for (int v = 0; v < NV; ++v) acc[j][v] += wj * xv[v];
        }
    }
    const int nout = min(OCB, cout_g - oc0);
    __global real* yo = y + ((size_t)ng * cout_g + oc0) * hw + p;
    for (int j = 0; j < nout; ++j) {
#pragma unroll
        for (int v = 0; v < NV; ++v) ll_store(yo + (size_t)j * hw + v * VW, ll_act(acc[j][v], act, alpha, beta), hw - p - v * VW);
    }
}
