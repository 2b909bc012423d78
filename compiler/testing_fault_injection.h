// Test-only fault injection, as Inductor's `inject_relu_bug_TESTING_ONLY`: the tests of
// `kiln verify` (compiler/verify.h) make one code-generation step wrong on purpose and check
// that verify names that step and the node. Set by the environment, read in one place:
//
//   KILN_TESTING_INJECT_BUG=POINT:OP   POINT is "lowering" (the loop IR as lowered),
//                                      "schedule" (the loop IR after inlining and fusion) or
//                                      "code" (only what the emitters print); OP a graph op
//                                      ("relu"). Every pointwise loop node (or kernel step)
//                                      that computes a node of that op adds 1 to its value.
//                                      POINT "source" (the cpu target's C++ source, with OP
//                                      any word): the source ends in a line the C++ compiler
//                                      rejects, as a code generator's bug would make it.
//
// Unset (always, outside these tests) nothing changes. A malformed value is a kiln::Error.
#pragma once

#include <string>
#include <string_view>

#include "codegen/loop_ir.h"
#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kiln::compiler {

// kiln::Error when KILN_TESTING_INJECT_BUG is set but malformed (verify checks it first, so the
// error is not taken for a stage's failure).
void check_testing_fault();

// Apply the fault when KILN_TESTING_INJECT_BUG names their point; `graph` is the simplified
// graph the program was lowered from (to find each origin's op).
void inject_lowering_fault(const ir::Graph& graph, codegen::LoopProgram& program);
void inject_schedule_fault(const ir::Graph& graph, codegen::ScheduledProgram& scheduled);
void inject_code_fault(const ir::Graph& graph, codegen::ScheduledProgram& scheduled);
void inject_source_fault(std::string& source);

}  // namespace kiln::compiler
