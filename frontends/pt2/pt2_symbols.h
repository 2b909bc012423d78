// Symbolic sizes of an exported program as Kiln symbols. torch.export writes each symbolic
// size as sympy's srepr text ("Symbol('s77', positive=True, integer=True)",
// "Mul(Integer(2), Symbol('s77', ...))", "FloorDiv(Add(Symbol('s0'), Integer(-1)), Integer(2))");
// parse_sympy_size reads it into a SymInt over symbols of the same names (s77 stays s77, so
// dumps read like PyTorch's). Understood: Symbol, Integer, Add, Mul (with a Rational
// coefficient when the division is exact), Pow with a constant exponent, FloorDiv, CleanDiv,
// Mod, PythonMod, Max, Min, CeilToInt/FloorToInt of IntTrueDiv. Anything else, and unbacked
// symbols (u0: sizes that depend on tensor values), is a kiln::Error naming the expression.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/symbolic.h"

namespace kiln::frontends {

// `where` prefixes messages ("'m.pt2': tensor 'x' dim 0").
ir::SymInt parse_sympy_size(const std::string& text, const std::string& where);

}  // namespace kiln::frontends
