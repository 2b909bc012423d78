// The symbols that stand for an ONNX model's dynamic input dims. A dim_param ("batch",
// "sequence length", "2d") becomes a symbol of that name made valid for Kiln: characters
// outside [A-Za-z0-9_] become '_', a leading digit gets a 'd' prefix, and names Kiln keeps
// for itself (max, min, and the loop variables x<digits>, r<digits>) get a '_' suffix. The
// same dim_param is the same symbol everywhere; two dim_params that would sanitize to one
// name get distinct ones (suffix _2, _3, ...). A dim with neither a value nor a dim_param gets
// a fresh symbol named after its input and axis ("x_dim0").
//
// Two names may stand for one size: an exporter that names each input's dynamic dims apart
// ("input_ids_dynamic_axes_1", "attention_mask_dynamic_axes_1") gives the batch two names, which
// a later Add must broadcast. The importer then makes them equal (make_equal) and imports again:
// the symbol handed out for such a name is the one it was made equal to (a symbol, or a
// constant when a dim_param met a fixed size), which the run-time guards check on every input.
#pragma once

#include <map>
#include <set>
#include <string>

#include "ir/symbolic.h"

namespace kiln::frontends {

class OnnxSymbols {
 public:
  OnnxSymbols() = default;
  // With the equalities found by earlier imports of the model (symbol name -> its size, an
  // expression of symbols claimed earlier or later, or a constant).
  explicit OnnxSymbols(std::map<std::string, ir::SymInt> equal_to) : equal_to_(std::move(equal_to)) {}

  ir::SymInt for_dim_param(const std::string& dim_param);
  ir::SymInt for_unnamed_dim(const std::string& input_name, int64_t axis);

 private:
  std::string claim(const std::string& wanted);
  ir::SymInt resolved(const std::string& name) const;
  std::map<std::string, ir::SymInt> equal_to_;
  std::map<std::string, std::string> by_dim_param_;
  std::set<std::string> used_;
};

// The valid symbol name for `text` (before making it unique).
std::string sanitize_symbol_name(const std::string& text);

}  // namespace kiln::frontends
