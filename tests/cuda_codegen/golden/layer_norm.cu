// launch kernel0_layer_norm_var_mean<<<64, 256, 1024>>>(b0, b1, b2, b11)
// workspace bytes: 0 (scratch at 0)
// ---------------------------------------------------------------- kernels
// kernel0_layer_norm_var_mean: layer_norm_var_mean, layer_norm, layer_norm_scaled, layer_norm_normalized, layer_norm_rstd, layer_norm_var, layer_norm_var_eps, layer_norm_mean, layer_norm_centered
extern "C" __global__ void __launch_bounds__(256) kernel0_layer_norm_var_mean(float* __restrict__ b0, float* __restrict__ b1, float* __restrict__ b2, float* __restrict__ b11) {
  KILN_SHARED_MEMORY(kiln_shared);
  const int64_t rows = 64;
  const int64_t rn = 768;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t x0 = row;
    // reduce: layer_norm_var_mean
    KilnWelford<float> st0 = {0, 0, 0};
    for (int64_t ri = threadIdx.x; ri < rn; ri += blockDim.x) {
      const int64_t r0 = ri;
      const float e0 = b0[r0 + 768*x0];
      kiln_welford_add(st0, e0);
    }
    st0 = kiln_block_reduce<KilnWelfordOp<float>>(st0, kiln_shared);
    const float v3 = (st0.count == 0 ? st0.m2 / st0.count : st0.mean);
    const float v4 = st0.m2;
    // row: layer_norm
    for (int64_t ri = threadIdx.x; ri < rn; ri += blockDim.x) {
      const int64_t r0 = ri;
      const float t1 = kop_add(float(kop_mul(float(kop_mul(float(kop_sub(float(b0[r0 + 768*x0]), float(v3))), float(kop_rsqrt(kop_add(float(kop_div(float(v4), float(kop_maximum(float(kop_sub(float(float(768)), float(float(0.0)))), float(float(0.0)))))), float(float(9.9999997473787516e-06))))))), float(b1[r0]))), float(b2[r0]));
      b11[r0 + 768*x0] = t1;
    }
  }
}

