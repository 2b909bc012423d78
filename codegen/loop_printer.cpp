// The loop program printer (codegen/loop_printer.h).
#include "codegen/loop_printer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ir/graph.h"
#include "passes/value_bounds.h"

namespace kiln::codegen {
namespace {

std::string_view kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::Input: return "Input";
    case BufferKind::Parameter: return "Parameter";
    case BufferKind::Output: return "Output";
    case BufferKind::Intermediate: return "Intermediate";
  }
  return "?";
}

std::string_view reduction_name(ReductionKind kind) {
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

std::string type_text(DType dtype, const SymShape& shape) {
  return std::string(dtype_name(dtype)) + ir::shape_string(shape);
}

template <typename T>
std::string joined(const std::vector<T>& items) {
  std::ostringstream out;
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
  return out.str();
}

// Whether `expr` prints as an infix operator (a binary op with an infix symbol in the table).
bool is_infix(const ExprNode& expr) {
  return expr.kind == ExprKind::Binary && !loop_op_info(expr.op).infix.empty();
}

class ExprPrinter {
 public:
  explicit ExprPrinter(const LoopProgram& program) : program_(program) {}

  std::string print(const Expr& expr) {
    const ExprNode& e = *expr;
    switch (e.kind) {
      case ExprKind::Constant: return constant_text(e);
      case ExprKind::Load: return load_text(e);
      case ExprKind::IndexValue: return std::string(dtype_name(e.dtype)) + "(" + e.index.to_string() + ")";
      case ExprKind::Unary: return std::string(loop_op_name(e.op)) + "(" + print(e.args[0]) + ")";
      case ExprKind::Binary:
        if (is_infix(e))
          return operand(e.args[0]) + " " + std::string(loop_op_info(e.op).infix) + " " + operand(e.args[1]);
        return std::string(loop_op_name(e.op)) + "(" + print(e.args[0]) + ", " + print(e.args[1]) + ")";
      case ExprKind::Where:
        return "where(" + print(e.args[0]) + ", " + print(e.args[1]) + ", " + print(e.args[2]) + ")";
      case ExprKind::Cast: return std::string(dtype_name(e.dtype)) + "(" + print(e.args[0]) + ")";
      case ExprKind::Random:
        return std::string(e.normal ? "randn" : "rand") + "(seed=" + std::to_string(e.seed) +
               ", offset=" + std::to_string(e.offset) + ", index=" + e.index.to_string() + ")";
    }
    return "?";
  }

 private:
  // An argument of an infix operator, parenthesized when it is itself infix.
  std::string operand(const Expr& expr) {
    std::string text = print(expr);
    if (is_infix(*expr)) return "(" + text + ")";
    return text;
  }

  std::string constant_text(const ExprNode& e) {
    std::string literal;
    if (is_floating(e.dtype)) literal = ir::float_repr(e.float_value);
    else if (e.dtype == DType::boolean) literal = e.int_value ? "True" : "False";
    else literal = std::to_string(e.int_value);
    if (e.dtype == DType::f32 || e.dtype == DType::i64 || e.dtype == DType::boolean) return literal;
    return std::string(dtype_name(e.dtype)) + "(" + literal + ")";
  }

  std::string load_text(const ExprNode& e) {
    std::string index = e.index.to_string();
    for (const IndirectTerm& term : e.indirect) {
      std::string stride = term.stride == SymInt(1) ? "" : term.stride.to_string() + "*";
      index += " + " + stride + "indirect(" + print(term.value) + ", size=" + term.size.to_string() + ")";
    }
    std::string text = program_.buffer(e.buffer).name + "[" + index + "]";
    if (!e.mask) return text;
    return "masked(" + print(e.mask) + ", " + text + ", " + (e.other ? print(e.other) : "?") + ")";
  }

  const LoopProgram& program_;
};

std::string view_text(const LoopProgram& program, const StridedView& view) {
  return program.buffer(view.buffer).name + "{offset=" + view.offset.to_string() + ", shape=" +
         ir::shape_string(view.shape) + ", strides=" + ir::shape_string(view.strides) + "}";
}

std::string names_of(const LoopProgram& program, const std::vector<int>& buffers) {
  std::vector<std::string> names;
  for (int id : buffers) names.push_back(program.buffer(id).name);
  return joined(names);
}

void print_node(std::ostringstream& out, const LoopProgram& program, const LoopNode& node, const SourceNotes* sources) {
  ExprPrinter printer(program);
  out << "node " << node.name << ": ";
  switch (node.kind) {
    case NodeKind::Pointwise: out << "Pointwise"; break;
    case NodeKind::Reduction: out << "Reduction " << reduction_name(node.reduction); break;
    case NodeKind::Extern: {
      ExternKind kind = node.extern_call.kind;
      out << "Extern " << (kind == ExternKind::Gemm ? "Gemm" : kind == ExternKind::Convolution ? "Convolution" : "Fallback");
      break;
    }
  }
  out << "  origins=[" << joined(node.origins) << "]" << source_note(node.origins, sources) << "\n";
  if (node.kind != NodeKind::Extern || !node.ranges.empty()) out << "    ranges " << ir::shape_string(node.ranges);
  if (node.kind == NodeKind::Reduction) {
    out << "  reduction_ranges " << ir::shape_string(node.reduction_ranges);
    if (!node.reduced_dims.empty()) out << "  reduced_dims [" << joined(node.reduced_dims) << "]";
  }
  if (node.kind != NodeKind::Extern || !node.ranges.empty()) out << "\n";
  std::string store_index = flat_index(loop_vars(node.ranges.size()), node.ranges).to_string();
  switch (node.kind) {
    case NodeKind::Pointwise:
      out << "    " << names_of(program, node.outputs) << "[" << store_index << "] = " << printer.print(node.body) << "\n";
      break;
    case NodeKind::Reduction: {
      std::vector<std::string> bounds;
      for (size_t k = 0; k < node.reduction_ranges.size(); ++k)
        bounds.push_back("r" + std::to_string(k) + " < " + node.reduction_ranges[k].to_string());
      std::string targets = node.outputs.size() == 1 ? names_of(program, node.outputs)
                                                     : "{" + names_of(program, node.outputs) + "}";
      out << "    " << targets << "[" << store_index << "] = " << reduction_name(node.reduction) << "("
          << printer.print(node.body) << " for " << (bounds.empty() ? "a single point" : joined(bounds)) << ")"
          << " in " << dtype_name(node.body->dtype) << "\n";
      break;
    }
    case NodeKind::Extern: {
      const ExternCall& call = node.extern_call;
      std::vector<std::string> inputs, outputs;
      for (const StridedView& view : call.inputs) inputs.push_back(view_text(program, view));
      for (const StridedView& view : call.outputs) outputs.push_back(view_text(program, view));
      std::string callee = call.kind == ExternKind::Gemm          ? "gemm"
                           : call.kind == ExternKind::Convolution ? "convolution_nhwc"
                                                                  : "fallback %" + call.graph_node;
      out << "    " << joined(outputs) << " = " << callee << "(" << joined(inputs) << ")";
      if (call.kind == ExternKind::Convolution) out << "  " << geometry_text(call.convolution);
      if (call.kind == ExternKind::Fallback && call.native.kind != NativeFallback::Kind::none)
        out << "  native " << native_fallback_text(call.native);
      // A finite bound (passes/value_bounds.h): the output has no NaN in calls whose inputs are in range.
      if (call.kind == ExternKind::Convolution && std::isfinite(call.small_input_output_bound)) {
        const bool wide = std::isfinite(call.output_bound);
        char bound[32];
        std::snprintf(bound, sizeof bound, "%.3g", wide ? call.output_bound : call.small_input_output_bound);
        out << "  |out| <= " << bound << " for inputs within "
            << (wide ? passes::kBoundedInputText : passes::kSmallInputText);
      }
      out << "\n";
      break;
    }
  }
}

}  // namespace

std::string print_expr(const LoopProgram& program, const Expr& expr) { return ExprPrinter(program).print(expr); }

std::string source_note(const std::vector<std::string>& origins, const SourceNotes* sources) {
  if (sources == nullptr) return "";
  std::vector<std::string> notes;
  for (const std::string& origin : origins) {
    auto found = sources->find(origin);
    if (found != sources->end() && std::find(notes.begin(), notes.end(), found->second) == notes.end())
      notes.push_back(found->second);
  }
  std::string text;
  for (const std::string& note : notes) text += (text.empty() ? "  # from " : "; ") + note;
  return text;
}

std::string print_loop_program(const LoopProgram& program, const SourceNotes* sources) {
  std::ostringstream out;
  out << "loop_program():\n";
  if (!program.symbols.empty()) {
    std::vector<std::string> symbols;
    for (const std::string& symbol : program.symbols) {
      std::string text = symbol;
      for (const LoopProgram::SymbolSource& source : program.symbol_sources)
        if (source.symbol == symbol && source.input >= 0 && size_t(source.input) < program.inputs.size())
          text += " = " + program.buffer(program.inputs[size_t(source.input)]).name + ".size(" +
                  std::to_string(source.dim) + ")";
      symbols.push_back(text);
    }
    out << "symbols: " << joined(symbols) << "\n";
  }
  out << "buffers:\n";
  for (const Buffer& buffer : program.buffers) {
    out << "  " << buffer.name << ": " << kind_name(buffer.kind) << " " << type_text(buffer.dtype, buffer.shape);
    if (!buffer.source.empty() && buffer.source != buffer.name) out << " from " << buffer.source;
    if (buffer.kind == BufferKind::Input) out << " (input " << buffer.position << ")";
    if (buffer.kind == BufferKind::Output) out << " (output " << buffer.position << ")";
    out << "\n";
  }
  for (const LoopNode& node : program.nodes) print_node(out, program, node, sources);
  return out.str();
}

}  // namespace kiln::codegen
