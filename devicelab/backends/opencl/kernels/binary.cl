// binary: element-wise a (op) b with broadcasting and a fused activation; op 0 add, 1 sub,
// 2 mul, 3 div. The output is seen as 4-D (d0, d1, d2, d3) after merging axes on the host;
// sa*/sb* are each operand's element strides (0 along a broadcast axis, so the last is 0 or 1).
// A work-item computes VW consecutive elements along d3.
// Work: gs0 = ceil(d3 / VW), gs1 = d0 * d1 * d2.

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

__kernel void binary(const int gs0, const int gs1,
                     __global const real* a, __global const real* b, __global real* y,
                     const int d1, const int d2, const int d3,
                     const int sa0, const int sa1, const int sa2, const int sa3,
                     const int sb0, const int sb1, const int sb2, const int sb3,
                     const int op, const int act, const float alpha, const float beta)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int c2 = i1 % d2;
    const int c1 = (i1 / d2) % d1;
    const int c0 = i1 / (d1 * d2);
    const int x0 = i0 * VW;
    const size_t abase = (size_t)c0 * sa0 + (size_t)c1 * sa1 + (size_t)c2 * sa2 + (size_t)x0 * sa3;
    const size_t bbase = (size_t)c0 * sb0 + (size_t)c1 * sb1 + (size_t)c2 * sb2 + (size_t)x0 * sb3;
    __global real* yo = y + (size_t)i1 * d3 + x0;
    const int lanes = min(VW, d3 - x0);
    real_v va, vb;
    if (lanes == VW) {
        va = sa3 ? vload_v(0, a + abase) : (real_v)a[abase];
        vb = sb3 ? vload_v(0, b + bbase) : (real_v)b[bbase];
    } else {
        real ta[VW], tb[VW];
        for (int l = 0; l < VW; ++l) {
            const int m = min(l, lanes - 1);  // lanes past the end repeat the last element
            ta[l] = a[abase + (size_t)m * sa3];
            tb[l] = b[bbase + (size_t)m * sb3];
        }
        va = vload_v(0, ta);
        vb = vload_v(0, tb);
    }
    real_v r;
    switch (op) {
    case 0: r = va + vb; break;
    case 1: r = va - vb; break;
    case 2: r = va * vb; break;
    default: r = va / vb; break;
    }
    r = ll_act(r, act, alpha, beta);
    if (lanes == VW) {
        vstore_v(r, 0, yo);
    } else {
        real t[VW];
        vstore_v(r, 0, t);
        for (int l = 0; l < lanes; ++l) yo[l] = t[l];
    }
}
