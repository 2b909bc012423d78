// Index analysis for the loop IR: recognizing index expressions (SymInts over loop variables
// and shape symbols) that are affine in a chosen set of variables, and asking whether an
// index depends on a variable. Lowering uses it to turn accessors into strided views for
// library calls; the scheduler uses it to find strides for loop ordering and vectorization.
//
// The method is exact with respect to SymInt's canonical form (ir/symbolic.h): an index is
// reported affine only when offset + sum_i coefficients[i] * vars[i] simplifies to the very
// same canonical expression. An index that is affine mathematically but that the canonical
// form cannot show to be (x0//2*2 + x0%2) is reported as not affine: the answer is
// conservative, never wrong.
#pragma once

#include <optional>
#include <vector>

#include "ir/symbolic.h"

namespace kiln::codegen {

using ir::SymInt;

// index == offset + sum_i coefficients[i] * vars[i]. Coefficients and the offset may use
// shape symbols (s0) and variables outside `vars`, but never any of `vars`.
struct AffineIndex {
  SymInt offset;
  std::vector<SymInt> coefficients;  // one per var, in the order of `vars`
};

// The affine form of `index` in `vars` (each a bare symbol), or nullopt when the index is not
// affine in them: a floordiv, mod, max or min of a var, a product of two vars, a power of one.
std::optional<AffineIndex> affine_form(const SymInt& index, const std::vector<SymInt>& vars);

// Whether `var` (a bare symbol) occurs in `index`.
bool depends_on(const SymInt& index, const SymInt& var);

}  // namespace kiln::codegen
