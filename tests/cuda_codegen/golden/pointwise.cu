// launch kernel0_sigmoid<<<min(n, 65536), 256, 0>>>(b0, b1, b4, n)
// workspace bytes: 0 (scratch at 0)
// ---------------------------------------------------------------- kernels
// kernel0_sigmoid: sigmoid, add, mul
extern "C" __global__ void __launch_bounds__(256) kernel0_sigmoid(float* __restrict__ b0, float* __restrict__ b1, float* __restrict__ b4, int64_t s_n) {
  const int64_t n = 256*s_n;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n; i += stride) {
    int64_t rest_x0 = i;
    const int64_t x1 = rest_x0 % (256);
    rest_x0 /= (256);
    const int64_t x0 = rest_x0;
    const float t0 = kop_sigmoid(kop_add(float(kop_mul(float(b0[256*x0 + x1]), float(float(2.0)))), float(b1[x1])));
    b4[256*x0 + x1] = t0;
  }
}

