// launch kernel0_softmax_max<<<min(rows, 2147483647), 256, 1024>>>(b0, b6, rows)
// workspace bytes: 0 (scratch at 0)
// ---------------------------------------------------------------- kernels
// kernel0_softmax_max: softmax_max, softmax_sum, softmax_exp, softmax_shifted, softmax, softmax_inverse_sum
extern "C" __global__ void __launch_bounds__(256) kernel0_softmax_max(float* __restrict__ b0, float* __restrict__ b6, int64_t s_rows) {
  KILN_SHARED_MEMORY(kiln_shared);
  const int64_t rows = s_rows;
  const int64_t rn = 1000;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t x0 = row;
    // reduce: softmax_max
    float st0 = (-kiln_inf_f32());
    for (int64_t ri = threadIdx.x; ri < rn; ri += blockDim.x) {
      const int64_t r0 = ri;
      const float e0 = b0[r0 + 1000*x0];
      st0 = KilnMaxOp<float>::combine(st0, e0);
    }
    st0 = kiln_block_reduce<KilnMaxOp<float>>(st0, kiln_shared);
    const float v1 = st0;
    // reduce: softmax_sum
    float st1 = float(0.0);
    for (int64_t ri = threadIdx.x; ri < rn; ri += blockDim.x) {
      const int64_t r0 = ri;
      const float e1 = kiln_exp_nonpositive(kop_sub(float(b0[r0 + 1000*x0]), float(v1)));
      st1 = KilnSumOp<float>::combine(st1, e1);
      b6[r0 + 1000*x0] = e1;
    }
    st1 = kiln_block_reduce<KilnSumOp<float>>(st1, kiln_shared);
    const float v4 = st1;
    __syncthreads();
    // row: softmax
    for (int64_t ri = threadIdx.x; ri < rn; ri += blockDim.x) {
      const int64_t r0 = ri;
      const float t2 = kop_mul(float(b6[r0 + 1000*x0]), float(kop_reciprocal(v4)));
      b6[r0 + 1000*x0] = t2;
    }
  }
}

