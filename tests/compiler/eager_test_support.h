// Helpers of the eager-mode tests: exact comparison of tensors (eager mode runs the same
// reference kernels as the interpreter, so results must be identical, not merely close),
// copies of input maps, and the VM options of the two modes.
#pragma once

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/eager_executor.h"
#include "kiln/tensor.h"

namespace kiln::compiler::testing {

// The strides of the dims that have more than one element: the others never move an address,
// and kernels leave them as they happen to come out (cumsum's [1, 1, 1, 2] result has strides
// [2, 1, 1, 1]; a fresh contiguous tensor's are [2, 2, 2, 1]).
inline Sizes addressing_strides(const Tensor& tensor) {
  Sizes strides;
  for (int64_t d = 0; d < tensor.dim(); ++d)
    if (tensor.size(d) > 1) strides.push_back(tensor.stride(d));
  return strides;
}

// Empty when `actual` is `expected` exactly: defined-ness, dtype, sizes, strides (where they
// matter) and every element (NaN equals NaN; the sign of zero counts); else what differs first.
inline std::string difference(const Tensor& expected, const Tensor& actual) {
  std::ostringstream out;
  if (expected.defined() != actual.defined()) {
    out << (actual.defined() ? "a tensor, expected None" : "None, expected a tensor");
  } else if (!expected.defined()) {
    return "";
  } else if (expected.dtype() != actual.dtype()) {
    out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
  } else if (expected.sizes() != actual.sizes()) {
    out << "sizes " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
  } else if (expected.numel() > 1 && addressing_strides(expected) != addressing_strides(actual)) {
    out << "strides " << sizes_to_string(actual.strides()) << ", expected " << sizes_to_string(expected.strides());
  } else {
    for (int64_t i = 0; i < expected.numel(); ++i) {
      bool same;
      if (is_floating(expected.dtype())) {
        double e = expected.flat_double(i), a = actual.flat_double(i);
        same = (std::isnan(e) && std::isnan(a)) || (e == a && std::signbit(e) == std::signbit(a));
        if (!same) out << "element " << i << " is " << a << ", expected " << e;
      } else {
        int64_t e = expected.flat_int(i), a = actual.flat_int(i);
        same = e == a;
        if (!same) out << "element " << i << " is " << a << ", expected " << e;
      }
      if (!same) break;
    }
  }
  return out.str();
}

inline std::string difference(const std::vector<Tensor>& expected, const std::vector<Tensor>& actual) {
  if (expected.size() != actual.size())
    return std::to_string(actual.size()) + " tensors, expected " + std::to_string(expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string problem = difference(expected[i], actual[i]);
    if (!problem.empty()) return "tensor " + std::to_string(i) + ": " + problem;
  }
  return "";
}

// Fresh copies of `inputs`, so that in-place ops on inputs in one run do not reach another.
inline std::map<std::string, Tensor> clone_inputs(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> copies;
  for (const auto& [name, tensor] : inputs) copies[name] = tensor.clone();
  return copies;
}

inline EagerOptions eager_options(bool single_thread) {
  EagerOptions options;
  options.vm.single_thread = single_thread;
  return options;
}

// A multi-thread VM with three streams, each with its own worker, and kernel calls dealt to
// them in turn: independent kernels run at once, and only the VM's dependences (the buffers
// each kernel reads and writes) keep the results right. Freed memory is poisoned, so a buffer
// released while a view of it is still read shows in the results.
inline EagerOptions three_stream_options() {
  EagerOptions options;
  options.vm.allocator.poison_byte = 0xA5;
  options.vm.streams = {vm::StreamSpec{"a"}, vm::StreamSpec{"b"}, vm::StreamSpec{"c"}};
  options.streams = {"a", "b", "c"};
  return options;
}

}  // namespace kiln::compiler::testing
