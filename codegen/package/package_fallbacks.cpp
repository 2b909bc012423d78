// The fallback handler of a package. See codegen/package/package_fallbacks.h.
#include "codegen/package/package_fallbacks.h"

#include <cmath>
#include <cstdio>

#include "codegen/c_like/c_printer.h"
#include "codegen/package/package_texts.h"
#include "ir/kernels/portable_kernels.h"
#include "ir/op_registry.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::codegen {

namespace {

// The tensor arguments of a call, as the kernels pass them to the handler
// (codegen/lowering.cpp's lower_fallback): per schema parameter, the positions in `in` of its
// tensors, -1 for a None entry of a list.
std::vector<std::vector<int>> input_positions(const ir::OpCall& call) {
  const std::vector<ir::Param>& params = call.op().schema.params;
  std::vector<std::vector<int>> positions(params.size());
  int next = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Argument& argument = call.arg(i);
    switch (params[i].type) {
      case ir::ParamType::tensor:
      case ir::ParamType::optional_tensor:
      case ir::ParamType::tensor_or_scalar:
        if (argument.is_node()) positions[i].push_back(next++);
        break;
      case ir::ParamType::tensor_list:
      case ir::ParamType::optional_tensor_list:
        if (argument.is_node()) {
          for (size_t v = 0; v < argument.node()->meta.values.size(); ++v) positions[i].push_back(next++);
        } else if (argument.is_list()) {
          for (const ir::Argument& item : argument.list()) positions[i].push_back(item.is_node() ? next++ : -1);
        }
        break;
      default:
        break;
    }
  }
  return positions;
}

std::string in(int position) { return "view(in[" + std::to_string(position) + "])"; }
std::string out(int position) { return "view(out[" + std::to_string(position) + "])"; }

// A double as a C++ expression that reads back exactly.
std::string double_literal(double value) {
  if (std::isnan(value)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(value)) return value > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return text;
}

std::string int_literal(int64_t value) {
  if (value == INT64_MIN) return "INT64_MIN";
  return "int64_t(" + std::to_string(value) + "LL)";
}

// A list argument of one value per spatial dim (a single value repeats, as PyTorch's do).
std::string spatial_list(const std::vector<int64_t>& values, size_t spatial) {
  std::string text = "{";
  for (size_t i = 0; i < spatial; ++i)
    text += (i ? ", " : "") + int_literal(values.size() == 1 ? values[0] : values.at(i));
  return text + "}";
}

int64_t rank_of(const ir::OpCall& call, size_t index) { return int64_t(call.tensor(index).rank()); }

// The driver call that computes `node`, or "" when the package cannot.
std::string driver_call(const ir::Node& node) {
  ir::OpCall call = ir::OpCall::of(node);
  std::vector<std::vector<int>> at = input_positions(call);
  const std::string& op = node.target();
  if (op == "cumsum" || op == "cumprod") {
    int64_t dim = rank_of(call, 0) == 0 ? 0 : wrap_dim(call.int_arg(1), rank_of(call, 0));
    return "fallback_kernels::prefix_scan(" + in(at[0][0]) + ", " + out(0) + ", " + std::to_string(dim) + ", " +
           (op == "cumprod" ? "true" : "false") + ");";
  }
  if (op == "logcumsumexp") {
    int64_t dim = rank_of(call, 0) == 0 ? 0 : wrap_dim(call.int_arg(1), rank_of(call, 0));
    return "fallback_kernels::logcumsumexp(" + in(at[0][0]) + ", " + out(0) + ", " + std::to_string(dim) + ");";
  }
  if (op == "cummax" || op == "cummin") {
    int64_t dim = rank_of(call, 0) == 0 ? 0 : wrap_dim(call.int_arg(1), rank_of(call, 0));
    return "fallback_kernels::cummax(" + in(at[0][0]) + ", " + out(0) + ", " + out(1) + ", " + std::to_string(dim) + ", " +
           (op == "cummax" ? "true" : "false") + ");";
  }
  if (op == "matmul" || op == "bmm") {  // integer, f16 and bf16 operands (f32 and f64 are GEMMs)
    return "fallback_kernels::matmul(" + in(at[0][0]) + ", " + in(at[1][0]) + ", " + out(0) + ");";
  }
  if (op == "topk") {
    int64_t dim = rank_of(call, 0) == 0 ? 0 : wrap_dim(call.int_arg(2), rank_of(call, 0));
    return "fallback_kernels::topk(" + in(at[0][0]) + ", " + int_literal(call.int_arg(1)) + ", " + std::to_string(dim) +
           ", " + (call.bool_arg(3) ? "true" : "false") + ", " + out(0) + ", " + out(1) + ");";
  }
  if (op == "scatter") {
    DType self = call.tensor(0).dtype;
    int64_t dim = rank_of(call, 0) == 0 ? 0 : wrap_dim(call.int_arg(1), rank_of(call, 0));
    std::string reduce_name = call.is_none(4) ? "" : call.string_arg(4);
    static const char* const reductions[] = {"none", "sum", "prod", "amax", "amin"};
    std::string reduce;
    try {
      reduce = reductions[int(portable::scatter_reduction(reduce_name))];
    } catch (const portable::KernelFailure& failure) {
      call.fail(failure.what());
    }
    std::string src = "nullptr", number_double = "0.0", number_int = "0";
    if (call.is_tensor(3)) {
      src = "&src";
    } else {
      // The number as self's dtype holds it (the interpreter's number_tensor).
      Tensor number = Tensor::empty({}, self);
      const ir::Argument& value = call.arg(3);
      if (value.is_float()) number.set_double({}, value.floating());
      else number.set_int({}, value.is_bool() ? int64_t(value.boolean()) : value.integer());
      if (is_floating(self)) number_double = double_literal(number.item_double({}));
      else number_int = int_literal(number.item_int({}));
    }
    std::string text = call.is_tensor(3) ? "const fallback_kernels::View src = " + in(at[3][0]) + ";\n      " : "";
    return text + "fallback_kernels::scatter(" + in(at[0][0]) + ", " + in(at[2][0]) + ", " + src + ", " + number_double +
           ", " + number_int + ", " + out(0) + ", " + std::to_string(dim) + ", fallback_kernels::ScatterReduce::" + reduce +
           ");";
  }
  if (op == "convolution") {
    size_t spatial = size_t(std::max<int64_t>(rank_of(call, 1) - 2, 0));
    bool transposed = call.bool_arg(6);
    std::string text = call.is_tensor(2) ? "const fallback_kernels::View bias = " + in(at[2][0]) + ";\n      " : "";
    return text + "fallback_kernels::convolution(" + in(at[0][0]) + ", " + in(at[1][0]) + ", " +
           (call.is_tensor(2) ? "&bias" : "nullptr") + ", " + spatial_list(call.ints(3), spatial) + ", " +
           spatial_list(call.ints(4), spatial) + ", " + spatial_list(call.ints(5), spatial) + ", " +
           (transposed ? "true" : "false") + ", " +
           (transposed ? spatial_list(call.ints(7), spatial) : spatial_list({0}, spatial)) + ", " +
           int_literal(call.int_arg(8)) + ", " + out(0) + ");";
  }
  if (op == "grid_sample") {
    static const char* const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char* const paddings[] = {"zeros", "border", "reflection"};
    std::string mode, padding;
    try {
      mode = modes[int(portable::grid_sample_mode(call.string_arg(2)))];
      padding = paddings[int(portable::grid_sample_padding(call.string_arg(3)))];
    } catch (const portable::KernelFailure& failure) {
      call.fail(failure.what());
    }
    return "fallback_kernels::grid_sample(" + in(at[0][0]) + ", " + in(at[1][0]) +
           ", fallback_kernels::GridSampleMode::" + mode + ", fallback_kernels::GridSamplePadding::" + padding + ", " +
           (call.bool_arg(4) ? "true" : "false") + ", " + out(0) + ");";
  }
  if (op == "roi_align") {
    return "fallback_kernels::roi_align(" + in(at[0][0]) + ", " + in(at[1][0]) + ", " + in(at[2][0]) + ", " +
           int_literal(call.int_arg(3)) + ", " + int_literal(call.int_arg(4)) + ", " + int_literal(call.int_arg(5)) +
           ", " + double_literal(call.float_arg(6)) + ", " + (call.string_arg(7) == "max" ? "true" : "false") + ", " +
           (call.bool_arg(8) ? "true" : "false") + ", " + out(0) + ");";
  }
  if (op == "deform_conv2d") {
    std::string views;
    if (call.is_tensor(3)) views += " mask = " + in(at[3][0]);
    if (call.is_tensor(4)) views += std::string(views.empty() ? "" : ",") + " bias = " + in(at[4][0]);
    std::string text = views.empty() ? "" : "const fallback_kernels::View" + views + ";\n      ";
    return text + "fallback_kernels::deform_conv2d(" + in(at[0][0]) + ", " + in(at[1][0]) + ", " + in(at[2][0]) + ", " +
           (call.is_tensor(3) ? "&mask" : "nullptr") + ", " + (call.is_tensor(4) ? "&bias" : "nullptr") + ", " +
           spatial_list(call.ints(5), 2) + ", " + spatial_list(call.ints(6), 2) + ", " + spatial_list(call.ints(7), 2) +
           ", " + int_literal(call.int_arg(8)) + ", " + int_literal(call.int_arg(9)) + ", " + out(0) + ");";
  }
  if (op == "det") return "fallback_kernels::det(" + in(at[0][0]) + ", " + out(0) + ");";
  if (op == "index_put") {
    std::string text = "fallback_kernels::View";
    std::string list;
    int named = 0;
    for (int position : at[1]) {
      if (position < 0) {
        list += std::string(list.empty() ? "" : ", ") + "nullptr";
        continue;
      }
      std::string name = "index" + std::to_string(named++);
      text += std::string(named > 1 ? "," : "") + " " + name + " = " + in(position);
      list += std::string(list.empty() ? "" : ", ") + "&" + name;
    }
    text = named > 0 ? text + ";\n      " : "";
    return text + "fallback_kernels::index_put(" + in(at[0][0]) + ", {" + list + "}, " + in(at[2][0]) + ", " + out(0) +
           ", " + (call.bool_arg(3) ? "true" : "false") + ");";
  }
  return "";
}

// runtime/half.h's functions (the body of its namespace kiln).
std::string half_conversions() {
  std::string_view text = half_conversions_text();
  const std::string_view open = "namespace kiln {\n", close = "}  // namespace kiln";
  size_t begin = text.find(open), end = text.rfind(close);
  KILN_CHECK(begin != std::string_view::npos && end != std::string_view::npos && begin < end,
             "runtime/half.h: the namespace block was not found");
  return std::string(text.substr(begin + open.size(), end - begin - open.size()));
}

}  // namespace

std::string package_fallback_handler(const ir::Graph& graph, const std::vector<std::string>& fallbacks,
                                     const std::string& package_name) {
  if (fallbacks.empty()) return "";
  std::string cases, refused;
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    const ir::Node* node = graph.find(fallbacks[i]);
    KILN_CHECK(node != nullptr, "fallback node ", fallbacks[i], " is not in the graph");
    std::string driver = driver_call(*node);
    if (driver.empty()) {
      refused += std::string(refused.empty() ? "" : ", ") + "%" + node->name() + " (" + node->target() + ")";
      continue;
    }
    std::string prefix = "node %" + node->name() + " (" + node->target() + "): ";
    cases += "    case " + std::to_string(i) + ": {\n      node = " + quoted(prefix) + ";\n      " + driver +
             "\n      return 0;\n    }\n";
  }
  if (!refused.empty())
    fail("the model has nodes that the code generator does not compile and a package cannot carry: ", refused,
         "; a package computes such nodes for cumsum, cumprod, cummax, cummin, logcumsumexp, scatter, index_put, topk, det, convolution, matmul, grid_sample, roi_align and deform_conv2d only. Run the model with `kiln run --target cpu`, or embed Kiln (include/kiln)");
  std::string ns = package_name + "_fallback_kernels";
  return "// The model's fallback nodes (ops the code generator does not lower), computed with the math of\n"
         "// Kiln's reference kernels (ir/kernels/portable_kernels.h, below).\n"
         "#define KILN_PORTABLE_NAMESPACE " + ns + "\n#define KILN_PORTABLE_STANDALONE\n"
         "// ---- runtime/half.h: f16 and bf16 read and written as the interpreter does\n"
         "#include <cstdint>\n#include <cstring>\nnamespace " + ns + " {\n" + half_conversions() + "}  // namespace " + ns + "\n" + std::string(portable_kernels_text()) +
         "\nnamespace {\n\nnamespace fallback_kernels = " + ns + ";\n\n"
         "fallback_kernels::View view(const KilnTensorDesc& tensor) {\n"
         "  return {tensor.data, fallback_kernels::Shape(tensor.sizes, tensor.sizes + tensor.rank),\n"
         "          fallback_kernels::Shape(tensor.strides, tensor.strides + tensor.rank), tensor.dtype};\n"
         "}\n\n"
         "// The kernels' fallback handler: computes node `index` (the kernels' order) from `in` into `out`.\n"
         "int32_t run_fallback(void*, int32_t index, const KilnTensorDesc* in, int32_t, const KilnTensorDesc* out, int32_t,\n"
         "                     char* error, int64_t capacity) {\n"
         "  std::string node, message;\n"
         "  try {\n"
         "    switch (index) {\n" + cases +
         "    default:\n"
         "      message = \"no fallback node \" + std::to_string(index);\n"
         "    }\n"
         "  } catch (const std::bad_alloc&) {\n"
         "    message = \"out of memory\";\n"
         "  } catch (const std::exception& failure) {\n"
         "    message = failure.what();\n"
         "  }\n"
         "  message = node + message;\n"
         "  if (capacity > 0) {\n"
         "    size_t length = std::min(message.size(), size_t(capacity - 1));\n"
         "    memcpy(error, message.data(), length);\n"
         "    error[length] = '\\0';\n"
         "  }\n"
         "  return 1;\n"
         "}\n\n"
         "}  // namespace\n\n"
         "static const KilnFallbackFn kFallback = run_fallback;";
}

}  // namespace kiln::codegen
