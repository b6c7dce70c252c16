// matmul: y[b] = a[b] @ b[b] for (m x k) by (k x n) matrices with up to two broadcast batch
// axes (bd0, bd1 batch dims of the output; sa*, sb* each operand's batch strides in elements,
// 0 where it broadcasts). One output element per work-item.
// Work: gs0 = n, gs1 = bd0 * bd1 * m.

__kernel void matmul(const int gs0, const int gs1,
                     __global const real* a, __global const real* b, __global real* y,
                     const int m, const int k, const int n, const int bd1,
                     const int sa0, const int sa1, const int sb0, const int sb1)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    const int row = i1 % m;
    const int bi = i1 / m;
    const int b1 = bi % bd1;
    const int b0 = bi / bd1;
    __global const real* ar = a + (size_t)b0 * sa0 + (size_t)b1 * sa1 + (size_t)row * k;
    __global const real* bc = b + (size_t)b0 * sb0 + (size_t)b1 * sb1 + i0;
    float acc = 0.0f;
    for (int kk = 0; kk < k; ++kk) acc += (float)ar[kk] * (float)bc[(size_t)kk * n];
    y[(size_t)i1 * n + i0] = (real)acc;
}
