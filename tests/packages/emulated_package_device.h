// A PackageDevice (runtime/cuda/package_cuda.inc) on the host, for the CUDA package tests
// (tests/packages/cuda_package_test.cpp): a package's host code, NAME_cuda.cpp, compiled with
// -DKILN_PACKAGE_DEVICE_HEADER='"<this file>"' runs its generated launch sequence here instead
// of on a GPU: device memory is host memory (poisoned, so a read of something never written
// shows), the kernels are the package's NAME_kernels.cu built for the CPU emulation of generated
// CUDA (codegen/cuda/kiln_cuda_emulation.h) into the shared library $KILN_TEST_EMULATION_LIBRARY,
// launched through its kiln_emulate_<kernel> entry points with cuLaunchKernel's parameters, the
// fault flags are that library's, and each GEMM call the host code plans is a plain loop in
// double (cuBLAS's part, and the epilogue as cuBLASLt defines it, as
// tests/cuda_codegen/emulated_model.h computes them). Without the variable, open fails as a
// package fails without a driver.
//
// Pasted by the preprocessor into NAME_cuda.cpp's anonymous namespace, after the slices of the
// CUDA API (CUdeviceptr, RowMajorGemm, GemmEpilogue) and the standard headers it includes.

class PackageDevice {
 public:
  PackageDevice() = default;
  PackageDevice(const PackageDevice&) = delete;
  PackageDevice& operator=(const PackageDevice&) = delete;
  ~PackageDevice() {
    for (void* block : blocks_) ::free(block);
  }

  bool open(const void* image, const char* const* names, int count, bool uses_blas) {
    (void)image;
    (void)uses_blas;
    const char* path = getenv("KILN_TEST_EMULATION_LIBRARY");
    if (path == nullptr || *path == '\0') {
      error = "no CUDA device: $KILN_TEST_EMULATION_LIBRARY is not set";
      return false;
    }
    library_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      error = std::string("no CUDA device: the emulation library does not load: ") + dlerror();
      return false;
    }
    for (int i = 0; i < count; ++i) {
      void* entry = dlsym(library_, ("kiln_emulate_" + std::string(names[i])).c_str());
      if (entry == nullptr) {
        error = std::string("the emulation library has no kernel ") + names[i];
        return false;
      }
      kernels_.push_back(reinterpret_cast<Entry>(entry));
    }
    return true;
  }

  bool make_current() { return true; }
  bool allocate(CUdeviceptr* pointer, size_t bytes) {
    size_t rounded = (bytes + 255) / 256 * 256 + 256;
    void* block = aligned_alloc(256, rounded);
    if (block == nullptr) {
      error = "out of (emulated device) memory";
      return false;
    }
    ::memset(block, 0xcd, rounded);
    blocks_.push_back(block);
    *pointer = CUdeviceptr(reinterpret_cast<uintptr_t>(block));
    return true;
  }
  void free(CUdeviceptr pointer) {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (CUdeviceptr(reinterpret_cast<uintptr_t>(blocks_[i])) != pointer) continue;
      ::free(blocks_[i]);
      blocks_.erase(blocks_.begin() + long(i));
      return;
    }
  }
  bool upload(CUdeviceptr to, const void* from, size_t bytes) {
    if (bytes != 0) ::memcpy(host(to), from, bytes);
    return true;
  }
  bool download(void* to, CUdeviceptr from, size_t bytes) {
    if (bytes != 0) ::memcpy(to, host(from), bytes);
    return true;
  }
  bool copy(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
    if (bytes != 0) ::memmove(host(to), host(from), bytes);
    return true;
  }
  // The emulation runs each call to its end: no stream has work queued.
  bool wait_for(void*) { return true; }
  bool memset(CUdeviceptr to, unsigned char value, size_t bytes) {
    ::memset(host(to), value, bytes);
    return true;
  }
  bool synchronize() { return true; }
  bool global(const char* name, CUdeviceptr* pointer, size_t* bytes) {
    void* address = dlsym(library_, name);
    if (address == nullptr) {
      error = std::string("the emulation library has no global ") + name;
      return false;
    }
    *pointer = CUdeviceptr(reinterpret_cast<uintptr_t>(address));
    *bytes = sizeof(int);
    return true;
  }
  bool launch(int kernel, const char* name, unsigned grid, unsigned block, unsigned shared_bytes, void** parameters) {
    char message[1024] = {0};
    if (kernels_[size_t(kernel)](grid, block, shared_bytes, parameters, message, sizeof message) == 0) return true;
    error = std::string("the CUDA emulation stopped ") + name + ": " + message;
    return false;
  }
  bool gemm(const RowMajorGemm& g, int dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, GemmEpilogue epilogue,
            CUdeviceptr bias) {
    if (dtype != 0) {
      error = "the emulated GEMM takes f32 only";
      return false;
    }
    const int64_t lda = g.lda ? g.lda : (g.transpose_a ? g.m : g.k), ldb = g.ldb ? g.ldb : (g.transpose_b ? g.k : g.n);
    const int64_t ldc = g.ldc ? g.ldc : g.n;
    const float *pa = static_cast<const float*>(host(a)), *pb = static_cast<const float*>(host(b));
    float* pc = static_cast<float*>(host(c));
    for (int64_t batch = 0; batch < g.batch; ++batch) {
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < g.k; ++k) {
            int64_t ai = batch * g.stride_a + (g.transpose_a ? k * lda + i : i * lda + k);
            int64_t bi = batch * g.stride_b + (g.transpose_b ? j * ldb + k : k * ldb + j);
            sum += double(pa[ai]) * double(pb[bi]);
          }
          sum *= g.alpha;
          if (gemm_epilogue_has_bias(epilogue)) sum += double(static_cast<const float*>(host(bias))[j]);
          if (epilogue == GemmEpilogue::relu || epilogue == GemmEpilogue::bias_relu) sum = sum > 0 ? sum : 0;
          if (epilogue == GemmEpilogue::gelu || epilogue == GemmEpilogue::bias_gelu)
            sum = 0.5 * sum * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (sum + 0.044715 * sum * sum * sum)));
          float* out = pc + batch * g.stride_c + i * ldc + j;
          if (g.beta != 0) sum += g.beta * double(*out);
          *out = float(sum);
        }
      }
    }
    return true;
  }

  std::string error;

 private:
  using Entry = int (*)(unsigned, unsigned, size_t, void**, char*, size_t);
  static void* host(CUdeviceptr pointer) { return reinterpret_cast<void*>(uintptr_t(pointer)); }

  void* library_ = nullptr;
  std::vector<Entry> kernels_;
  std::vector<void*> blocks_;
};
