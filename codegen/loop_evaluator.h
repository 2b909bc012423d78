// A straightforward scalar evaluator of the loop IR (codegen/loop_ir.h): the oracle that
// lowering is checked against, independent of any code generation.
//
// It binds the program's symbols from the inputs (LoopProgram::symbol_sources) and checks
// every input against its Input buffer, allocates every buffer (parameters come from the
// graph), runs the nodes in order, and returns the Output buffers in the program's order.
//  - Pointwise and Reduction nodes loop over every point of their ranges (and reduction
//    ranges); expressions evaluate in double (floating dtypes) or int64 (integer and bool
//    dtypes) and every expression node's result is rounded or wrapped to its dtype, so an
//    f32 expression behaves like f32 arithmetic with correctly rounded operations.
//  - Reductions accumulate floating values in double and round once when they store, like
//    the interpreter (Welford's {mean, m2} are computed in two passes in double); integer
//    sums and products wrap in int64.
//  - Gemm externs run plain loops, summing in double; Fallback externs run the graph node's
//    reference kernel (ir::run_reference_kernel) on tensors that view the buffers.
// Every load, indirect index and extern view is bounds-checked: an out-of-range index is a
// kiln::InternalError (a lowering bug), except an indirect index out of range of its dim,
// which is the user's kiln::Error (as in the interpreter). Integer division by zero is a
// kiln::Error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/loop_ir.h"
#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::codegen {

std::vector<Tensor> evaluate_loop_program(const LoopProgram& program, const ir::Graph& graph,
                                          const std::map<std::string, Tensor>& inputs);

}  // namespace kiln::codegen
