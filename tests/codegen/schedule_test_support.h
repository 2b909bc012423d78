// Helpers of the scheduler's tests (tests/codegen/schedule*_test.cpp): f32 (or `dtype`)
// placeholders and a graph scheduled after the default pipeline.
#pragma once

#include <string>
#include <vector>

#include "codegen/lowering.h"
#include "codegen/schedule.h"
#include "ir/graph.h"
#include "passes/pass_manager.h"

namespace kiln::codegen::testing {

inline ir::Node* input(ir::Graph& graph, const std::string& name, const std::vector<ir::SymInt>& shape,
                       DType dtype = DType::f32) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(dtype, shape));
}

inline ScheduledProgram schedule_graph(ir::Graph graph, const ScheduleOptions& options = {}) {
  passes::run_pipeline(graph, "simplified");
  return schedule(lower(graph), options);
}

}  // namespace kiln::codegen::testing
