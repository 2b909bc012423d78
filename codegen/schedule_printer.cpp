// `kiln dump --stage scheduled`: the kernels, what each fuses, and the memory plan, as text.
#include <set>
#include <sstream>

#include "codegen/loop_printer.h"
#include "codegen/schedule.h"

namespace kiln::codegen {

namespace {

const char* kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::Pointwise: return "pointwise";
    case KernelKind::Reduction: return "reduction";
    case KernelKind::Extern: return "extern";
  }
  return "?";
}

const char* step_name(KernelStep::Kind kind) {
  switch (kind) {
    case KernelStep::Kind::Reduce: return "reduce";
    case KernelStep::Kind::StoreInner: return "row";
    case KernelStep::Kind::StoreOuter: return "point";
  }
  return "?";
}

const char* reduction_name(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::Sum: return "sum";
    case ReductionKind::Prod: return "prod";
    case ReductionKind::Max: return "max";
    case ReductionKind::Min: return "min";
    case ReductionKind::ArgMax: return "argmax";
    case ReductionKind::ArgMin: return "argmin";
    case ReductionKind::Welford: return "welford";
  }
  return "?";
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

}  // namespace

std::string print_schedule(const ScheduledProgram& scheduled, const std::map<std::string, std::string>* sources) {
  const LoopProgram& p = scheduled.program;
  std::set<int> registers(scheduled.register_buffers.begin(), scheduled.register_buffers.end());
  std::ostringstream out;
  out << "# " << scheduled.kernels.size() << " kernels\n";
  for (const Kernel& kernel : scheduled.kernels) {
    out << kernel.name << ": " << kind_name(kernel.kind);
    if (kernel.kind == KernelKind::Extern) {
      const LoopNode& node = p.nodes[size_t(kernel.extern_node)];
      ExternKind kind = node.extern_call.kind;
      out << " " << (kind == ExternKind::Gemm ? "gemm" : kind == ExternKind::Convolution ? "convolution" : "fallback " + node.extern_call.graph_node);
    } else {
      out << " outer=" << ir::shape_string(kernel.outer);
      if (kernel.kind == KernelKind::Reduction) out << " row=" << ir::shape_string(kernel.inner);
    }
    std::vector<std::string> origins;
    std::set<std::string> seen;
    for (const std::string& o : kernel.origins) {
      if (seen.insert(o).second) origins.push_back(o);
    }
    out << "\n    fuses: " << join(origins) << source_note(origins, sources) << "\n";
    for (const KernelStep& step : kernel.steps) {
      out << "    " << step_name(step.kind);
      if (step.kind == KernelStep::Kind::Reduce) out << " " << reduction_name(step.reduction);
      out << " " << p.nodes[size_t(step.node)].name << " -> ";
      std::vector<std::string> outputs;
      for (int b : step.outputs) outputs.push_back(p.buffer(b).name + (registers.count(b) ? " (register)" : ""));
      out << join(outputs) << "\n";
    }
  }
  for (const SideBySide& g : scheduled.side_by_side) {
    auto name = [&](int k) { return scheduled.kernels[size_t(k)].name; };
    out << "# side by side: " << name(g.first) << " .. " << name(g.first + g.lane0 - 1) << " (" << g.lane0 << ") | "
        << name(g.first + g.lane0) << " .. " << name(g.first + g.lane0 + g.lane1 - 1) << " (" << g.lane1 << ")\n";
  }
  out << "# memory plan: workspace " << scheduled.memory.peak_bytes.to_string() << " bytes (without reuse "
      << scheduled.memory.naive_bytes.to_string() << ")\n";
  for (const auto& [buffer, offset] : scheduled.memory.offsets) {
    const Buffer& b = p.buffer(buffer);
    out << "    " << b.name << ": " << dtype_name(b.dtype) << ir::shape_string(b.shape) << " at "
        << offset.to_string();
    auto in_place = scheduled.memory.in_place_of.find(buffer);
    if (in_place != scheduled.memory.in_place_of.end()) out << " (in place of " << p.buffer(in_place->second).name << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace kiln::codegen
