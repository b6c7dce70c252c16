// im2col_batched: the columns of R images' convolutions, so that a convolution (groups 1, batch
// 1 per tenant) becomes one GEMM per tenant: col[r][(ci * kh + ky) * kw + kx][oy * ow + ox] =
// x[r][ci][oy * sh - pt + ky * dh][ox * sw - pl + kx * dw], 0 in the padding. Tenant r's image
// starts at element x_off + r * sx and its columns at col_off + r * scol. One element per
// work-item; kernel contract as sgemm_batched.cl.
// Work: gs0 = oh * ow, gs1 = cin * kh * kw, gs2 = R.

__kernel void im2col_batched(const int gs0, const int gs1, const int gs2,
                             __global const float* x, __global float* col,
                             const long x_off, const long sx, const long col_off, const long scol,
                             const int ih, const int iw, const int ow, const int kh, const int kw,
                             const int sh, const int sw, const int pt, const int pl, const int dh, const int dw)
{
    const int p = get_global_id(0);
    const int row = get_global_id(1);
    const int r = get_global_id(2);
    if (p >= gs0 || row >= gs1 || r >= gs2) return;
    const int kx = row % kw;
    const int ky = (row / kw) % kh;
    const int ci = row / (kw * kh);
    const int oy = p / ow;
    const int ox = p % ow;
    const int y = oy * sh - pt + ky * dh;
    const int xx = ox * sw - pl + kx * dw;
    float v = 0.0f;
    if (y >= 0 && y < ih && xx >= 0 && xx < iw) v = x[x_off + r * sx + ((size_t)ci * ih + y) * iw + xx];
    col[col_off + r * scol + (size_t)row * gs0 + p] = v;
}

// im2col_indexed: im2col_batched over a subset of the tenants (the online scheduler): problem p
// is tenant t = tenants[p], its image at x_off + t * sx and its columns at col_off + t * scol.
// Work: gs0 = oh * ow, gs1 = cin * kh * kw, gs2 = the subset's size.
__kernel void im2col_indexed(const int gs0, const int gs1, const int gs2,
                             __global const float* x, __global float* col, __global const int* tenants,
                             const long x_off, const long sx, const long col_off, const long scol,
                             const int ih, const int iw, const int ow, const int kh, const int kw,
                             const int sh, const int sw, const int pt, const int pl, const int dh, const int dw)
{
    const int p = get_global_id(0);
    const int row = get_global_id(1);
    const int q = get_global_id(2);
    if (p >= gs0 || row >= gs1 || q >= gs2) return;
    const long t = tenants[q];
    const int kx = row % kw;
    const int ky = (row / kw) % kh;
    const int ci = row / (kw * kh);
    const int oy = p / ow;
    const int ox = p % ow;
    const int y = oy * sh - pt + ky * dh;
    const int xx = ox * sw - pl + kx * dw;
    float v = 0.0f;
    if (y >= 0 && y < ih && xx >= 0 && xx < iw) v = x[x_off + t * sx + ((size_t)ci * ih + y) * iw + xx];
    col[col_off + t * scol + (size_t)row * gs0 + p] = v;
}
