// Block and warp reductions for generated CUDA: the text the CUDA backend pastes after the op
// layer (embedded by codegen/CMakeLists.txt as kiln::codegen::cuda::cuda_reductions_text()).
// A reduction's state is a small struct (a sum, a Welford triple, a value with its index);
// each thread accumulates its elements in order, then kiln_block_reduce combines the threads:
// a butterfly of __shfl_xor_sync within each warp, one partial per warp through shared memory,
// and every thread combining the warps' partials in warp order, so all threads hold the same,
// deterministic result. Split reductions (grids of blocks over one row) store one state per
// block and combine them in block order in a second kernel.
#ifndef KILN_CUDA_REDUCTIONS_H
#define KILN_CUDA_REDUCTIONS_H

// Shuffles any state made of 4-byte words, one word at a time.
template <class State>
KILN_DEVICE_FN State kiln_shfl_xor(State value, int lane_mask) {
  static_assert(sizeof(State) % 4 == 0, "a shuffled state is made of 4-byte words");
  union Words {
    State state;
    int word[sizeof(State) / 4];
  } words;
  words.state = value;
  for (int i = 0; i < int(sizeof(State) / 4); ++i) words.word[i] = __shfl_xor_sync(0xffffffffu, words.word[i], lane_mask);
  return words.state;
}

// The block's combined state, in every thread. `shared` holds 32 states; every thread of the
// block must call it (blockDim.x a multiple of 32).
template <class Op, class State>
KILN_DEVICE_FN State kiln_block_reduce(State value, unsigned char* shared) {
  for (int lane_mask = 16; lane_mask > 0; lane_mask >>= 1) value = Op::combine(value, kiln_shfl_xor(value, lane_mask));
  State* partial = reinterpret_cast<State*>(shared);
  const int warps = int(blockDim.x) >> 5;
  __syncthreads();  // whoever read `shared` before is done with it
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = value;
  __syncthreads();
  State total = partial[0];
  for (int w = 1; w < warps; ++w) total = Op::combine(total, partial[w]);
  return total;
}

template <class T> struct KilnSumOp {
  static __device__ __forceinline__ T combine(T a, T b) { return kop_add(a, b); }
};
template <class T> struct KilnProdOp {
  static __device__ __forceinline__ T combine(T a, T b) { return kop_mul(a, b); }
};
template <class T> struct KilnMaxOp {
  static __device__ __forceinline__ T combine(T a, T b) { return kred_max(a, b); }
};
template <class T> struct KilnMinOp {
  static __device__ __forceinline__ T combine(T a, T b) { return kred_min(a, b); }
};

// Welford: count, mean and the sum of squared deviations of the values seen.
template <class T> struct KilnWelford {
  T mean, m2, count;
};
template <class T>
KILN_DEVICE_FN void kiln_welford_add(KilnWelford<T>& state, T value) {
  state.count += T(1);
  T delta = value - state.mean;
  state.mean += delta / state.count;
  state.m2 += delta * (value - state.mean);
}
template <class T> struct KilnWelfordOp {
  // Chan et al.'s combination of two partial states.
  static __device__ __forceinline__ KilnWelford<T> combine(KilnWelford<T> a, KilnWelford<T> b) {
    if (b.count == T(0)) return a;
    if (a.count == T(0)) return b;
    T count = a.count + b.count;
    T delta = b.mean - a.mean;
    KilnWelford<T> out;
    out.mean = a.mean + delta * b.count / count;
    out.m2 = a.m2 + b.m2 + delta * delta * a.count * b.count / count;
    out.count = count;
    return out;
  }
};

// ArgMax / ArgMin: the first index of the largest (smallest) value; a NaN wins over numbers
// (the first NaN), as the interpreter. index < 0: no value seen yet.
template <class T> struct KilnArg {
  T value;
  int64_t index;
};
template <class T, bool Max>
KILN_DEVICE_FN void kiln_arg_add(KilnArg<T>& state, T value, int64_t index) {
  bool better = Max ? value > state.value : value < state.value;
  if (state.index < 0 || better || (value != value && state.value == state.value)) {
    state.value = value;
    state.index = index;
  }
}
template <class T, bool Max> struct KilnArgOp {
  static __device__ __forceinline__ KilnArg<T> combine(KilnArg<T> a, KilnArg<T> b) {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    bool better = Max ? b.value > a.value : b.value < a.value;
    bool tie = b.value == a.value || (a_nan && b_nan);
    return (better || (b_nan && !a_nan) || (tie && b.index < a.index)) ? b : a;
  }
};

#endif  // KILN_CUDA_REDUCTIONS_H
