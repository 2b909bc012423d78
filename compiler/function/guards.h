// Guards of kiln::compile(fn) (include/kiln/compile.h): what a compiled variant assumed about
// its inputs, as plain data checked in a tight loop on every call, with no allocation. A
// variant runs only when all of its guards pass; the first failing guard is what a recompile
// reports.
//
// The kinds follow TorchDynamo's tensor guards: dtype, device, rank, each static size, a range
// for each symbolic size (its first occurrence; sizes 0 and 1 are never symbolic, so the range
// starts at 2 unless mark_dynamic said otherwise), the equality of two dims that share a symbol
// (duck sizing: dynamic dims of equal size at trace time get one symbol), the value of each
// scalar argument, and the training mode of a compiled module. Strides are not guarded: the
// compiled model copies a non-contiguous input contiguous first (compiler/compiled_model.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/nn/module.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

struct Guard {
  enum class Kind : uint8_t {
    dtype,       // inputs[input].dtype() == DType(value)
    device,      // inputs[input].device() is device type `value`, index `other`
    rank,        // inputs[input].dim() == value
    size,        // inputs[input].size(dim) == value
    size_range,  // value <= inputs[input].size(dim) <= other (a symbol's first occurrence)
    size_equal,  // inputs[input].size(dim) == inputs[other].size(other_dim) (a shared symbol)
    scalar,      // scalars[input] == scalar, bit for bit
    training,    // module->is_training() == bool(value)
  };
  Kind kind = Kind::dtype;
  uint32_t input = 0;
  int32_t dim = 0;
  int64_t value = 0;
  int64_t other = 0;
  int32_t other_dim = 0;
  double scalar = 0;
  const nn::Module* module = nullptr;
  std::string symbol;  // size_range, size_equal: the symbol's name (for messages)
};

// The guards of a trace whose placeholders had `types` (each dim a constant or a bare symbol;
// `ranges` gives a symbol's [min, max], default [2, INT64_MAX]), for these scalar values and,
// when `module` is set, its current training mode.
std::vector<Guard> make_guards(const std::vector<ir::TensorMeta>& types,
                               const std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                               const std::vector<double>& scalars, const nn::Module* module);

// The index of the first guard that fails on these inputs, or -1 when all pass. The inputs'
// count must have been checked (every guard list starts with the inputs' ranks).
int first_failing_guard(const std::vector<Guard>& guards, const std::vector<Tensor>& inputs,
                        const std::vector<double>& scalars);

// "x.size(0) == 8", "2 <= x.size(0) (s0)", "y.size(0) == x.size(0) (s0)", "x.dtype == f32",
// "scalar 0 == 0.5", "training == true"; `names`: the inputs' names.
std::string describe_guard(const Guard& guard, const std::vector<std::string>& names);
// What the inputs have where `guard` failed: "it is 16", "it is f64".
std::string describe_actual(const Guard& guard, const std::vector<Tensor>& inputs, const std::vector<double>& scalars);

// A number as C++ streams print it ("0.5", "3").
std::string number_text(double value);

}  // namespace kiln::compiler
