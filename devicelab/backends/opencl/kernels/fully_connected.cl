// fully_connected: y = x @ W + b over the last axis, with fused activation (and a folded batch
// norm on 2-D outputs). A work-item computes VW consecutive output features of one row.
// Weights are blocked [block][k][VW] (blocks of VW features, the last zero-padded), so one
// block's weights are a contiguous stream; bias is [blocks * VW]. Four partial sums keep four
// multiply-adds in flight.
// Work: gs0 = ceil(nout / VW), gs1 = rows (product of the leading axes).

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

__kernel void fully_connected(const int gs0, const int gs1,
                              __global const real* x, __global const real* w, __global const real* bias,
                              __global real* y, const int k, const int nout,
                              const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int j0 = i0 * VW;
    __global const real* xr = x + (size_t)i1 * k;
    __global const real* wb = w + (size_t)i0 * k * VW;
    real_v a0 = vload_v(0, bias + j0), a1 = (real_v)0, a2 = (real_v)0, a3 = (real_v)0;
    int kk = 0;
    for (; kk + 4 <= k; kk += 4) {
        a0 += (real_v)xr[kk] * vload_v(kk, wb);
        a1 += (real_v)xr[kk + 1] * vload_v(kk + 1, wb);
        a2 += (real_v)xr[kk + 2] * vload_v(kk + 2, wb);
        a3 += (real_v)xr[kk + 3] * vload_v(kk + 3, wb);
    }
    for (; kk < k; ++kk) a0 += (real_v)xr[kk] * vload_v(kk, wb);
    ll_store(y + (size_t)i1 * nout + j0, ll_act((a0 + a1) + (a2 + a3), act, alpha, beta), nout - j0);
}
