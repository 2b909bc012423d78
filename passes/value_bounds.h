// Value bounds: how large the elements of each value of a graph can be, for every call whose
// floating-point inputs are within +-kBoundedInput (a NaN is not), or within a tighter bound
// (kSmallInput: for_inputs_within), and that none of them is NaN or infinite.
//
// What for: oneDNN applies a clamp or a relu to a convolution's output as it writes it (a post-op,
// no pass of its own over memory), but its forms turn NaN into 0 where PyTorch keeps it. A
// convolution whose output has a finite bound has no NaN to lose, so there the post-op gives
// PyTorch's values exactly (MobileNet-v2 spent a fifth of its time at batch 1 on its relu6 passes;
// bench/README.md). The C++ target checks the inputs against kBoundedInput on each call and runs
// the exact loops when they are not (codegen/cpp/kiln_dnnl.h: kiln_inputs_bounded).
//
// A bound is an upper bound on |x| in exact arithmetic, derived op by op from its operands' bounds
// and from the values of frozen parameters: a convolution's output is within max over output
// channels of (sum of |w| over the channel's weights) times its input's bound, plus its largest
// |bias|; a clamp to [0, 6] is within 6 whatever its input's finite bound; a sum within the sum of
// its operands' bounds. Float rounding can exceed a bound by a relative K * 2^-24 for a sum of K
// terms: bounds are kept below kLargestBound, eight orders of magnitude under float's overflow,
// so that a finite bound still means finite values. An op without a rule here, an operand that
// may be NaN (an unknown bound), a bound past kLargestBound, a non-frozen parameter and a dtype
// other than f32, f64, the integers and bool give an unknown bound (+infinity).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// The bound every floating-point input of a call is checked against: 2^50, far above any image,
// audio sample or feature a model takes, and low enough that the first layers' bounds (before any
// clamp) stay far from overflow.
inline constexpr double kBoundedInput = 0x1p50;
inline constexpr const char* kBoundedInputText = "+-2^50";  // as messages and dumps say it
// A second, tighter bound the inputs are checked against: 2^8, which normalized images, features
// and audio and raw 8-bit pixel values are within. A deep network's bounds grow with every layer
// (a frozen MNASNet's 52 convolutions multiply them by up to 1e52 together), so that from 2^50
// they pass kLargestBound after a dozen or two layers; from 2^8, 42 bits later (GoogLeNet: 8 of
// its 55 convolutions' clamps without a bound instead of 32; bench/README.md).
inline constexpr double kSmallInput = 0x1p8;
inline constexpr const char* kSmallInputText = "+-2^8";
// Bounds past this are unknown (see the file's comment).
inline constexpr double kLargestBound = 1e30;

class ValueBounds {
 public:
  // With `frozen`, parameters are constants (CompileOptions::freeze) and their values count;
  // without, only constant tensors' do. The bounds hold in calls whose floating-point inputs are
  // within +-input_bound.
  ValueBounds(const ir::Graph& graph, bool frozen, double input_bound = kBoundedInput);

  // The same graph's bounds for calls whose inputs are within +-input_bound, reusing what this
  // analysis read of the parameters (their sums of |w|: a pass over every weight).
  ValueBounds for_inputs_within(double input_bound) const;

  // The bound of value `index` of `node` (a tuple-valued node's element): every element x has
  // |x| <= bound (up to rounding) and none is NaN or infinite; +infinity when unknown.
  double of(const ir::Node& node, size_t index = 0) const;

  // Why `node`'s (first) value has no bound: the value where the unknown bounds it reads begin,
  // and what that value is ("%log (log) has no bound rule", "%w is a parameter that is not
  // frozen", ...); empty when it has one.
  std::string unknown_reason(const ir::Node& node) const;

 private:
  std::vector<double> rule(const ir::Node& node) const;
  double argument(const ir::Argument& argument) const;
  const Tensor* frozen_value(const ir::Node* node) const;

  ValueBounds(const ValueBounds& scans_of, double input_bound);  // for_inputs_within's
  void compute();
  // A parameter's largest |x| (kind 0) or largest sum of |x| along its rows (1) or columns (2),
  // computed once and shared by the analyses of for_inputs_within.
  double scanned(const Tensor& value, int kind) const;

  const ir::Graph& graph_;
  bool frozen_;
  double input_bound_;
  std::shared_ptr<std::map<std::pair<const Tensor*, int>, double>> scans_;
  std::unordered_map<const ir::Node*, std::vector<double>> bounds_;
};

}  // namespace kiln::passes
