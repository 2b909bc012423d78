// The prelude's float functions under test (codegen/cpp/kiln_prelude.h): each with its
// double-precision reference (libm's; for erfinv, which libm lacks, the interpreter's,
// ir/kernels/erfinv.h), the range swept by an even grid, the largest input magnitude it is
// checked on, and the error bound the prelude's header states (in ulps of the exact value, or
// absolute where the header says so). Shared by prelude_math_test.cpp
// and the program prelude_compile_test.cpp builds with generated code's compiler flags, so both
// check the same table.
#pragma once

#include <cmath>
#include <vector>

#include "codegen/cpp/kiln_prelude.h"
#include "ir/kernels/erfinv.h"

namespace kiln::prelude_test {

struct UnaryFunction {
  const char* name;
  float (*approx)(float);
  double (*exact)(double);
  double bound_ulp;            // as stated in kiln_prelude.h
  double grid_low, grid_high;  // an even grid over the function's main domain
  float max_magnitude;         // inputs beyond are outside the stated domain (INFINITY: none)
  double absolute_unit = 0;    // > 0: the bound is an absolute error in this unit (ulps of 1: 2^-23)
};

inline const std::vector<UnaryFunction>& unary_functions() {
  static const std::vector<UnaryFunction> functions = {
      {"exp", [](float x) { return kiln_exp(x); }, [](double x) { return std::exp(x); }, 1, -104, 89, INFINITY},
      {"expm1", [](float x) { return kiln_expm1(x); }, [](double x) { return std::expm1(x); }, 2, -18, 89, INFINITY},
      {"log", [](float x) { return kiln_log(x); }, [](double x) { return std::log(x); }, 1, 0, 16, INFINITY},
      {"log1p", [](float x) { return kiln_log1p(x); }, [](double x) { return std::log1p(x); }, 1, -1, 16, INFINITY},
      {"sigmoid", [](float x) { return kiln_sigmoid(x); }, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 2.5,
       -104, 20, INFINITY},
      {"tanh", [](float x) { return kiln_tanh(x); }, [](double x) { return std::tanh(x); }, 2, -10, 10, INFINITY},
      {"erf", [](float x) { return kiln_erf(x); }, [](double x) { return std::erf(x); }, 2, -4, 4, INFINITY},
      // 1 + erf(x): bounded absolutely, in ulps of 1, as 1 + erf(x) computed in float is.
      {"one_plus_erf", [](float x) { return kiln_one_plus_erf(x); }, [](double x) { return std::erfc(-x); }, 1.5,
       -4.5, 4.5, INFINITY, 0x1p-23},
      {"sin", [](float x) { return kiln_sin(x); }, [](double x) { return std::sin(x); }, 1, -1e4, 1e4, INFINITY},
      {"cos", [](float x) { return kiln_cos(x); }, [](double x) { return std::cos(x); }, 1, -1e4, 1e4, INFINITY},
      {"erfinv", [](float x) { return kiln_erfinv(x); }, [](double x) { return kiln::ir::kernels::erfinv(x); }, 1, -1,
       1, INFINITY},
      // e^x for x <= 0 (softmax's exp of a value minus its row's max, sigmoid's): swept as e^-|x|.
      {"exp_nonpositive", [](float x) { return kiln_exp_nonpositive(-std::fabs(x)); },
       [](double x) { return std::exp(-std::fabs(x)); }, 1, -104, 104, INFINITY},
  };
  return functions;
}

// Keeps the inputs within the function's stated domain (NaN stays: it must give NaN).
inline std::vector<float> within_domain(const std::vector<float>& inputs, float max_magnitude) {
  std::vector<float> kept;
  kept.reserve(inputs.size());
  for (float x : inputs)
    if (!(std::fabs(x) > max_magnitude)) kept.push_back(x);
  return kept;
}

}  // namespace kiln::prelude_test
