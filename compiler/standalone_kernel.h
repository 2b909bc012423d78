// `kiln kernel`: one fused kernel as a standalone C++ header (codegen/cpp/kernel_header.h), made
// from a tensor expression (frontends/expression/expression_parser.h) or picked out of a model.
// The graph goes through the driver's own steps (compiler/compile_driver.h: passes, lowering,
// scheduling), so the header holds exactly the kernel code a compiled model runs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kiln::compiler {

// The graph of `expression` over the inputs `input_specs` ("x=f32[s0, 4096]", in order).
// Throws kiln::Error naming the spec, or the expression's column.
ir::Graph expression_graph(std::string_view expression, const std::vector<std::string>& input_specs);

struct StandaloneKernelRequest {
  std::string name;            // the entry function: a C identifier
  std::string target = "cpu";  // cpu (a C++ header) or cuda (a .cuh)
  // Which kernel of the graph: by its name (`kiln dump --stage scheduled`), or the one that
  // computes graph node `node`; neither: the whole graph (every kernel, in order).
  std::optional<std::string> kernel;
  std::optional<std::string> node;
  std::vector<std::string> description;   // the header's first comment lines
  std::vector<std::string> output_names;  // the entry's names for the graph outputs (whole graph)
};

// The header's text. Throws kiln::Error for a bad name or target, an unknown kernel or node
// (listing the kernels), and a kernel a header cannot hold (a oneDNN convolution, a fallback; for
// cuda, a cuBLAS call).
std::string standalone_kernel_header(const ir::Graph& graph, const StandaloneKernelRequest& request);

}  // namespace kiln::compiler
