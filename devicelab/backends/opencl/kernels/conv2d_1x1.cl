// conv2d_1x1: pointwise convolution (1x1, stride 1, no padding, optionally grouped) with fused
// bias and activation; batch norm is folded into w and bias on the host. NCHW activations.
// A work-item computes VW consecutive pixels (a float vector) of OCB output channels of one
// image and group: every input vector it loads feeds OCB multiply-adds.
// Weights are blocked [group][block][cin_g][OCB], bias [group][block * OCB], zero-padded.
// Work: gs0 = ceil(h * w / VW), gs1 = n * groups * nblk.

// ll_act: the fused activation (codes in plan.ACTIVATIONS). Shared helper: this text is identical
// in every kernel file that has an epilogue, so a fusing step keeps one copy.
real_v ll_act(real_v v, const int act, const float alpha, const float beta)
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
    const int p = i0 * VW;
    const int oc0 = ob * OCB;
    __global const real* xg = x + (size_t)ng * cin_g * hw;
    __global const real* wb = w + (size_t)(g * nblk + ob) * cin_g * OCB;
    __global const real* bb = bias + (g * nblk + ob) * OCB;
    __global real* yg = y + ((size_t)ng * cout_g + oc0) * hw;
    const int nout = min(OCB, cout_g - oc0);
    if (p + VW <= hw) {
        real_v acc[OCB];
        for (int j = 0; j < OCB; ++j) acc[j] = (real_v)bb[j];
        for (int ic = 0; ic < cin_g; ++ic) {
            const real_v v = vload_v(0, xg + (size_t)ic * hw + p);
            __global const real* wk = wb + ic * OCB;
#pragma unroll
            for (int j = 0; j < OCB; ++j) acc[j] += (real_v)wk[j] * v;
        }
        for (int j = 0; j < nout; ++j) vstore_v(ll_act(acc[j], act, alpha, beta), 0, yg + (size_t)j * hw + p);
    } else {
        for (int q = p; q < hw; ++q) {  // the last, partial vector of the plane
            real acc[OCB];
            for (int j = 0; j < OCB; ++j) acc[j] = bb[j];
            for (int ic = 0; ic < cin_g; ++ic) {
                const real v = xg[(size_t)ic * hw + q];
                for (int j = 0; j < OCB; ++j) acc[j] += wb[ic * OCB + j] * v;
            }
            for (int j = 0; j < nout; ++j) yg[(size_t)j * hw + q] = ll_act((real_v)acc[j], act, alpha, beta).s0;
        }
    }
}
