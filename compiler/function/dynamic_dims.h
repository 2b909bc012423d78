// Which dims of a compiled callable's inputs are symbolic, shared by kiln::compile(fn)
// (compiler/function/compiled_function.cpp) and kiln::compile_training
// (compiler/training/compiled_training.cpp), as TorchDynamo's automatic dynamic shapes:
//   - a dim whose size differs from the first call's becomes dynamic (DynamicShapes::automatic),
//     or a dim is marked dynamic up front, with a range (mark_dynamic);
//   - a trace's placeholder types then give each dynamic dim a symbol, one per distinct size and
//     range (duck sizing: two dims of equal size share a symbol and are guarded equal);
//   - sizes 0 and 1 are never symbolic (they specialize, as PyTorch's do), nor a size outside
//     its marked range; each such specialization is noted.
// The guards of such a trace are compiler/function/guards.h's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kiln/compile_options.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

struct DimRange {
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};

// A symbol's range in a trace: name -> [min, max] (make_guards' `ranges`).
using SymbolRanges = std::map<std::string, std::pair<int64_t, int64_t>>;

class DynamicDims {
 public:
  // Dim `dim` of input `input` is dynamic for sizes in `range`.
  void mark(size_t input, int64_t dim, DimRange range = {}) { dims_[{input, dim}] = range; }
  bool contains(size_t input, int64_t dim) const { return dims_.count({input, dim}) != 0; }

  // Automatic dynamic: the first call's sizes are remembered; on a later call every dim (of an
  // input of the same rank) whose size differs becomes dynamic. Returns one note per new dynamic
  // dim ("x.size(0) changed from 8 to 16: made dynamic"), for the `dynamic` log channel.
  std::vector<std::string> note_sizes(const std::vector<Tensor>& inputs, const std::vector<std::string>& names);

  // Fails (naming `who`) when a marked dim is not a dim of these inputs.
  void check_marked(const std::vector<Tensor>& inputs, const std::string& who) const;

  // The placeholder types of a trace on these inputs: with `dynamic`, the dynamic dims (or every
  // dim, with DynamicShapes::always) become symbols s0, s1, ... whose ranges go to `ranges`;
  // `specializations` gets a note for each dim kept static by its size.
  std::vector<ir::TensorMeta> input_types(const std::vector<Tensor>& inputs, const std::vector<std::string>& names,
                                          DynamicShapes policy, bool dynamic, SymbolRanges& ranges,
                                          std::vector<std::string>& specializations) const;

 private:
  std::vector<Sizes> first_sizes_;
  std::map<std::pair<size_t, int64_t>, DimRange> dims_;  // (input, dim)
};

}  // namespace kiln::compiler
