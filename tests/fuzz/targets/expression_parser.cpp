// Fuzz target: `kiln kernel --expr` expressions (frontends/expression/expression_parser.h) over
// fixed inputs x=f32[s0, 8], y=f32[8], i=i64[s0, 8], m=bool[8]: parse; if it reads, verify the
// graph, then run the pipeline up to the standalone C++ header (compiler/standalone_kernel.h:
// passes, lowering, scheduling, the header's text; no compiler runs). An error past the parser
// is reported as the expression's. Expressions of more than kMaxBytes are skipped.
#include "compiler/standalone_kernel.h"
#include "ir/verifier.h"
#include "kiln/error.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/targets/fuzz_targets.h"

namespace kiln::fuzz {

namespace {
constexpr size_t kMaxBytes = 512;
}  // namespace

void fuzz_expression_parser(std::string_view input) {
  if (input.size() > kMaxBytes) return;
  ir::Graph graph = compiler::expression_graph(input, {"x=f32[s0, 8]", "y=f32[8]", "i=i64[s0, 8]", "m=bool[8]"});
  ir::verify(graph);
  compiler::StandaloneKernelRequest request;
  request.name = "fuzz_kernel";
  request.output_names = {"out"};
  try {
    compiler::standalone_kernel_header(graph, request);
  } catch (const Error& error) {
    throw Error("expression: " + std::string(error.what()));
  }
}

}  // namespace kiln::fuzz
