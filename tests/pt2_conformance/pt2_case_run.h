// Running OpInfo cases: each is classified first (a program that calls a target outside
// Kiln's ATen table is unsupported and not run), then imported, run on the archive's own
// sample inputs by the reference interpreter and by the CPU backend, and each output compared
// with eager PyTorch's (expected_<i>.npy) at the case's tolerances (OpInfo's), or, for ops whose
// results are random or uninitialized, checked for a property (random_output_checks.h). Where
// the op's float64 result is known (exact_<i>.npy), an output that misses eager's passes too when
// it meets the float64 result: where eager meets it at the tolerances, within the tolerances
// widened by eager's own largest distance from it (eager is one float32 evaluation and Kiln's
// another, rounding in another order; on an ill-conditioned sample, attention's logits near 70
// where one ulp of a logit moves an output by 1e-5, each lands about as far from float64 as the
// tolerance, on different sides); where eager misses it, no farther from it than eager is at
// its farthest (the tolerances where they are wider): a float32 evaluation of an ill-conditioned
// sample misses float64 whatever its order, and the order depends on the CPU (the libraries'
// kernels and the vector width differ between AVX2 and AVX-512 hosts); PyTorch's own reference
// tests judge precision against float64 the same way. A case passes when both match. The cases of
// one OpInfo entry are compiled together as one merged graph (graph_merge.h); a case whose merged
// result fails is compiled and run again alone, and that result is the one reported.
#pragma once

#include <string>
#include <vector>

#include "compiler/compile_driver.h"
#include "kiln/tensor.h"
#include "tests/pt2_conformance/pt2_test_data.h"

namespace kiln::pt2_conformance {

// diverging: failed, where PyTorch itself runs the program to other values than eager
// (OpInfoCase::pytorch_diverges): the program torch.export wrote is not the op, and Kiln runs
// the program as written; reported apart, not counted.
enum class CaseStatus { passed, failed, unsupported, diverging };
std::string status_name(CaseStatus status);
CaseStatus status_from_name(const std::string& name);

struct CaseOutcome {
  CaseStatus status = CaseStatus::failed;
  std::string detail;  // failed, diverging: the stage and the difference; unsupported: the missing targets
};

CaseOutcome run_opinfo_case(const OpInfoCase& test_case, const CompileOptions& options);
// The cases of one OpInfo entry, in order.
std::vector<CaseOutcome> run_opinfo_cases(const std::vector<const OpInfoCase*>& cases, const CompileOptions& options);

// Empty when `actual` matches `expected` (same dtype and shape; floats within atol + rtol *
// |expected|, NaN equal to NaN, infinities to themselves; integers and bools exactly), else
// the first difference in words.
std::string difference(const Tensor& expected, const Tensor& actual, double atol, double rtol);

}  // namespace kiln::pt2_conformance
