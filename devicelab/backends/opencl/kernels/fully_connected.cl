// fully_connected: y = x @ W + b over the last axis, with fused activation (and a folded batch
// norm on 2-D outputs). A work-item computes VW consecutive output features of one row.
// Weights are [k][npad] (transposed, features zero-padded to npad, a multiple of VW), so a
// row of VW weights is one vector load; bias is [npad].
// Work: gs0 = ceil(nout / VW), gs1 = rows (product of the leading axes).

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

__kernel void fully_connected(const int gs0, const int gs1,
                              __global const real* x, __global const real* w, __global const real* bias,
                              __global real* y,
                              const int k, const int nout, const int npad,
                              const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int j0 = i0 * VW;
    __global const real* xr = x + (size_t)i1 * k;
    real_v acc = vload_v(0, bias + j0);
    int kk = 0;
    for (; kk + 4 <= k; kk += 4) {
        acc += (real_v)xr[kk] * vload_v(0, w + (size_t)kk * npad + j0);
        acc += (real_v)xr[kk + 1] * vload_v(0, w + (size_t)(kk + 1) * npad + j0);
        acc += (real_v)xr[kk + 2] * vload_v(0, w + (size_t)(kk + 2) * npad + j0);
        acc += (real_v)xr[kk + 3] * vload_v(0, w + (size_t)(kk + 3) * npad + j0);
    }
    for (; kk < k; ++kk) acc += (real_v)xr[kk] * vload_v(0, w + (size_t)kk * npad + j0);
    const real_v r = ll_act(acc, act, alpha, beta);
    __global real* yr = y + (size_t)i1 * nout + j0;
    const int lanes = min(VW, nout - j0);
    if (lanes == VW) {
        vstore_v(r, 0, yr);
    } else {
        real t[VW];
        vstore_v(r, 0, t);
        for (int l = 0; l < lanes; ++l) yr[l] = t[l];
    }
}
