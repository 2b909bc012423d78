// kiln::trace as Kiln's own code and tests call it: the recorded ir::Graph itself, with input
// types as ir::TensorMeta (the public kiln::trace, kiln/trace.h, wraps the same graph in a
// kiln::Graph). What is recorded is described in kiln/trace.h.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "kiln/trace.h"

namespace kiln {

namespace frontends {
struct BreakCarrier;
}  // namespace frontends

ir::Graph trace_graph(nn::Module& module, const std::vector<Tensor>& example_inputs, const TraceOptions& options = {});
ir::Graph trace_graph(nn::Module& module, const std::vector<ir::TensorMeta>& input_types,
                      const TraceOptions& options = {});
// With `carrier`, code that needs a traced value breaks the graph and carries the live values
// across (frontends/module/tracer.h: BreakCarrier); the graph returned is the one after the last
// break.
ir::Graph trace_graph(const TracedFunction& function, const std::vector<ir::TensorMeta>& input_types,
                      const TraceOptions& options = {}, frontends::BreakCarrier* carrier = nullptr);

// The placeholder type of an example input: its dtype and shape, contiguous.
ir::TensorMeta example_meta(const Tensor& example);

}  // namespace kiln
