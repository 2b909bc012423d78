// kiln::SymSize and kiln::Shape: the sizes of a traced tensor as the public API shows them.
// A SymSize is a known integer or a symbolic expression of the sizes a compile leaves dynamic
// ("s0", "2*s0", "(s0 + 1)//2"); a Shape is a list of them. Var::sym_sizes() returns one, and
// Var::reshape/view/expand and kiln::full take one, so traced code can keep a dynamic batch:
//
//   x.reshape({x.sym_sizes()[0], -1})
//
// Behind a symbolic SymSize is the IR's symbolic integer (ir/symbolic.h), held by pointer so
// this header needs nothing of the IR; arithmetic and comparison follow its canonical forms.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

namespace ir {
class SymInt;
}

class SymSize {
 public:
  SymSize() = default;                          // the constant 0
  SymSize(int64_t value) : constant_(value) {}  // NOLINT: implicit on purpose ({2, -1} shapes)

  // A dynamic size named `name` ([A-Za-z_][A-Za-z0-9_]*, not "max" or "min"; kiln::Error
  // otherwise), as Kiln names them: "s0", "s1", ...
  static SymSize symbol(const std::string& name);

  bool is_symbolic() const { return expression_ != nullptr; }
  // The value when it is a known integer.
  std::optional<int64_t> constant() const;
  // "784", "s0", "2*s0".
  std::string to_string() const;

  // Equal canonical forms (s0 + s0 == 2*s0); a symbol never equals a constant.
  friend bool operator==(const SymSize& a, const SymSize& b);
  friend SymSize operator+(const SymSize& a, const SymSize& b);
  friend SymSize operator-(const SymSize& a, const SymSize& b);
  friend SymSize operator*(const SymSize& a, const SymSize& b);
  // floor(a / b), as Python's a // b; a constant 0 divisor is a kiln::Error.
  friend SymSize floordiv(const SymSize& a, const SymSize& b);

 private:
  friend struct SymSizeAccess;  // frontends/module/public_types.h: to and from ir::SymInt
  int64_t constant_ = 0;
  std::shared_ptr<const ir::SymInt> expression_;  // set when symbolic
};

SymSize floordiv(const SymSize& a, const SymSize& b);

using Shape = std::vector<SymSize>;

// "[s0, 784]".
std::string shape_to_string(const Shape& shape);

}  // namespace kiln
