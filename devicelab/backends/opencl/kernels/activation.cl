// activation: a unary activation over a whole tensor (codes in plan.ACTIVATIONS), for an
// activation no kernel before it could absorb. A work-item computes VW consecutive elements.
// Work: gs0 = ceil(total / VW), gs1 = 1.

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

__kernel void activation(const int gs0, const int gs1,
                         __global const real* x, __global real* y, const int total,
                         const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int x0 = i0 * VW;
    const int lanes = min(VW, total - x0);
    if (lanes == VW) {
        vstore_v(ll_act(vload_v(0, x + x0), act, alpha, beta), 0, y + x0);
    } else {
        real t[VW];
        for (int l = 0; l < VW; ++l) t[l] = x[x0 + min(l, lanes - 1)];
        vstore_v(ll_act(vload_v(0, t), act, alpha, beta), 0, t);
        for (int l = 0; l < lanes; ++l) y[x0 + l] = t[l];
    }
}
