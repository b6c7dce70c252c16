// Batched SGEMM for multi-tenant sharing (seed 003, section 4.1: the space-time super-kernel).
//
// Every problem p computes C = act(A x B + bias) with row-major A (m x k, leading dimension lda),
// B (k x n, ldb) and C (m x n, ldc); bias is one value per row of C (the output channel of a
// convolution lowered to GEMM) and act is 0 (none), 1 (relu) or 2 (relu6).
//
// Two kernels share one tile routine, so a problem's elements are computed by the same
// instructions in either kernel and whatever the batch size (sharing never changes a tenant's
// numbers):
//   sgemm_batched:  R problems of one shape, problem r at element offsets a_off + r * sa, ... (a
//                   stride of 0 broadcasts: one tenant's weights over a batch of inputs).
//   sgemm_vbatched: R problems of any shapes, each one's sizes and offsets read from arrays (the
//                   variable-sized batch of MAGMA's vbatched GEMM): the grid covers the largest
//                   problem, and work-items past a smaller problem's edge return.
//
// A work-item computes a register tile of TM rows by VW consecutive columns of one problem, the
// VW columns as one vector: per step along k it loads one vector of B and TM scalars of A, and
// does TM vector fused multiply-adds (fma: one rounding per step, the same on every device).
// Kernel contract as the backend's (global sizes as arguments, only get_global_id, no local
// memory, no barriers), with a 3-D range whose third axis is the problem.
// Work: gs0 = ceil(n / VW), gs1 = ceil(m / TM), gs2 = problems.
// Build options: -DVW=<1|2|4|8|16> -DTM=<rows> -Dreal_v=floatVW -Dvload_v=vloadVW -Dvstore_v=vstoreVW

__attribute__((always_inline)) real_v gemm_act(real_v v, const int act)
{
    if (act == 1) return fmax(v, (real_v)0.0f);
    if (act == 2) return clamp(v, (real_v)0.0f, (real_v)6.0f);
    return v;
}

// gemm_tile: the tile of rows row0 .. row0 + TM - 1 and columns col0 .. col0 + VW - 1 of one
// problem (rows and columns past the edge are computed on clamped addresses and not stored).
__attribute__((always_inline)) void gemm_tile(__global const float* a, __global const float* b, __global float* c,
                                              __global const float* bias, const int m, const int n, const int k,
                                              const int lda, const int ldb, const int ldc, const int row0,
                                              const int col0, const int has_bias, const int act)
{
    real_v acc[TM];
    __global const float* ar[TM];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
        acc[t] = (real_v)0.0f;
        ar[t] = a + (size_t)min(row0 + t, m - 1) * lda;
    }
    const int ncols = n - col0;
    if (ncols >= VW) {
        __global const float* bc = b + col0;
        for (int kk = 0; kk < k; ++kk) {
            const real_v bv = vload_v(0, bc + (size_t)kk * ldb);
#pragma unroll
            for (int t = 0; t < TM; ++t) acc[t] = fma((real_v)ar[t][kk], bv, acc[t]);
        }
    } else {
        for (int kk = 0; kk < k; ++kk) {
            float lanes[VW];
#pragma unroll
            for (int l = 0; l < VW; ++l) lanes[l] = l < ncols ? b[(size_t)kk * ldb + col0 + l] : 0.0f;
            const real_v bv = vload_v(0, lanes);
#pragma unroll
            for (int t = 0; t < TM; ++t) acc[t] = fma((real_v)ar[t][kk], bv, acc[t]);
        }
    }
#pragma unroll
    for (int t = 0; t < TM; ++t) {
        const int row = row0 + t;
        if (row >= m) break;
        real_v v = acc[t];
        if (has_bias) v += (real_v)bias[row];
        v = gemm_act(v, act);
        __global float* cr = c + (size_t)row * ldc + col0;
        if (ncols >= VW) {
            vstore_v(v, 0, cr);
        } else {
            float lanes[VW];
            vstore_v(v, 0, lanes);
#pragma unroll
            for (int l = 0; l < VW; ++l)
                if (l < ncols) cr[l] = lanes[l];
        }
    }
}

__kernel void sgemm_batched(const int gs0, const int gs1, const int gs2,
                            __global const float* a, __global const float* b, __global float* c,
                            __global const float* bias,
                            const int m, const int n, const int k, const int lda, const int ldb, const int ldc,
                            const long a_off, const long b_off, const long c_off, const long bias_off,
                            const long sa, const long sb, const long sc, const long sbias,
                            const int has_bias, const int act)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    const int r = get_global_id(2);
    if (i0 >= gs0 || i1 >= gs1 || r >= gs2) return;
    gemm_tile(a + a_off + r * sa, b + b_off + r * sb, c + c_off + r * sc, bias + bias_off + r * sbias,
              m, n, k, lda, ldb, ldc, i1 * TM, i0 * VW, has_bias, act);
}

// dims: per problem m, n, k, lda, ldb, ldc (6 ints); offsets: per problem a, b, c (3 longs).
__kernel void sgemm_vbatched(const int gs0, const int gs1, const int gs2,
                             __global const float* a, __global const float* b, __global float* c,
                             __global const int* dims, __global const long* offsets)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    const int p = get_global_id(2);
    if (i0 >= gs0 || i1 >= gs1 || p >= gs2) return;
    __global const int* d = dims + 6 * p;
    const int m = d[0], n = d[1];
    if (i0 * VW >= n || i1 * TM >= m) return;
    __global const long* o = offsets + 3 * p;
    gemm_tile(a + o[0], b + o[1], c + o[2], a, m, n, d[2], d[3], d[4], d[5], i1 * TM, i0 * VW, 0, 0);
}

// sgemm_indexed: the strided batch over a subset of the tenants, for the online scheduler
// (devicelab/tenancy/online.py): problem p is tenant t = tenants[p], at element offsets
// a_off + t * sa, b_off + t * sb, c_off + t * sc and bias_off + t * sbias. The tile routine is the
// one above, so a tenant's elements are the same bits as in sgemm_batched.
__kernel void sgemm_indexed(const int gs0, const int gs1, const int gs2,
                            __global const float* a, __global const float* b, __global float* c,
                            __global const float* bias, __global const int* tenants,
                            const int m, const int n, const int k, const int lda, const int ldb, const int ldc,
                            const long a_off, const long b_off, const long c_off, const long bias_off,
                            const long sa, const long sb, const long sc, const long sbias,
                            const int has_bias, const int act)
{
    const int i0 = get_global_id(0);
    const int i1 = get_global_id(1);
    const int p = get_global_id(2);
    if (i0 >= gs0 || i1 >= gs1 || p >= gs2) return;
    const long t = tenants[p];
    gemm_tile(a + a_off + t * sa, b + b_off + t * sb, c + c_off + t * sc, bias + bias_off + t * sbias,
              m, n, k, lda, ldb, ldc, i1 * TM, i0 * VW, has_bias, act);
}
