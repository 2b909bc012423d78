// The C++ backend's library calls (codegen/cpp/cpp_source_printer.h lists the printer's parts):
// a GEMM as CBLAS calls (a batch folded into one call where the right operand is shared; on the
// thread pool, GEMMs of a batch and blocks of rows as one-thread calls in parallel; a fused
// epilogue applied per block of rows while it is in cache), a channels-last convolution as a oneDNN call (codegen/cpp/kiln_dnnl.h) followed by
// its fused epilogue, and a fallback node as a call of the host's handler with tensor descriptors.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include "codegen/cpp/cpp_source_printer.h"
#include "kiln/error.h"
#include "passes/value_bounds.h"
#include "runtime/log.h"

namespace kiln::codegen {

// The multiply-adds from which a GEMM or convolution is worth a parallel team (OpenBLAS's own
// threshold for threading a GEMM).
constexpr int64_t kTeamMacs = 262144;
// The same for a product of at most 4 rows with a frozen right operand (kKilnSmallRows,
// codegen/cpp/kiln_dnnl.h: a decoder's token, a recurrent step) in a module whose such products
// read more weights per call than a core's L2 holds (kiln_l2_bytes, known where the module runs):
// they stream their weights, one multiply-add each per row, and on the team each core keeps its
// half of every weight (the same panels on every call) in its own L2. Measured (2 threads, 2 MB
// of L2 per core, `kiln bench --freeze`, interleaved): a Llama decode step (2.6 MB of 256 -> 256
// and 256 <-> 512 layers: 65536 and 131072 multiply-adds each) 0.120 -> 0.054 ms, a GPT-2 decode
// step 0.060 -> 0.035; a CRNN's two bidirectional LSTM layers (1 MB of recurrent weights, steps
// of 2 rows) were 2-4% slower with their steps on the team, and keep kTeamMacs.
constexpr int64_t kFewRowsTeamMacs = 65536;
// The multiply-adds from which a run of GEMMs (a batch walked at two strides, BatchWalk) is worth
// one oneDNN matmul call rather than one-thread BLAS calls side by side: Swin-T's window attention
// (runs of 3 to 12 heads, 49 x 32 x 49 each: 0.23M to 0.92M) took 7% longer as oneDNN runs, a
// sequence-first encoder's at batch 8 (runs of 4 heads, 128 x 64 x 128: 4.2M) gained.
constexpr int64_t kRunMacs = 1 << 20;

// Whether `e` loads `buffer` plainly (no mask, no indirection) at `index`.
static bool plain_load_at(const Expr& e, int buffer, const SymInt& index) {
  return e && e->kind == ExprKind::Load && e->buffer == buffer && !e->mask && e->indirect.empty() && e->index == index;
}

// Whether `sum` is product + operand (either order), each loaded plainly at `index`: an epilogue's
// residual add.
static bool adds_residual(const Expr& sum, int product, int operand, const SymInt& index) {
  if (sum->kind != ExprKind::Binary || sum->op != LoopOp::add || sum->dtype != DType::f32) return false;
  return (plain_load_at(sum->args[0], product, index) && plain_load_at(sum->args[1], operand, index)) ||
         (plain_load_at(sum->args[1], product, index) && plain_load_at(sum->args[0], operand, index));
}

void CppSourcePrinter::emit_extern_kernel(const Kernel& kernel) {
  const LoopNode& node = p_.nodes[size_t(kernel.extern_node)];
  const ExternCall& call = node.extern_call;
  if (call.kind == ExternKind::Fallback) {
    emit_fallback(node);
    return;
  }
  if (call.kind == ExternKind::Convolution) {
    emit_convolution(kernel, node);
    return;
  }
  emit_gemm(kernel, node);
}

const std::vector<int>& CppSourcePrinter::readers_of(int buffer) {
  if (!readers_) readers_ = p_.readers_by_buffer();
  return readers_->at(size_t(buffer));
}

bool CppSourcePrinter::only_steps_read(const Kernel& kernel, int buffer) {
  if (std::find(p_.outputs.begin(), p_.outputs.end(), buffer) != p_.outputs.end()) return false;
  for (int reader : readers_of(buffer)) {
    if (std::any_of(kernel.steps.begin(), kernel.steps.end(), [&](const KernelStep& step) { return step.node == reader; }))
      continue;
    for (const Kernel& other : s_.kernels) {
      if (other.extern_node == reader) return false;
      for (const KernelStep& computed : other.steps)
        if (computed.node == reader) return false;
    }
  }
  return true;
}

const KernelStep* CppSourcePrinter::sole_pointwise_epilogue(const Kernel& kernel, const StridedView& out) {
  const KernelStep* step = pointwise_epilogue_step(kernel, out);
  // A result that takes the bytes of an operand it reads (MemoryPlan::in_place_of) must not be
  // written before the step has read that operand.
  if (step && s_.memory.in_place_of.count(step->outputs[0])) return nullptr;
  return step;
}

const KernelStep* CppSourcePrinter::pointwise_epilogue_step(const Kernel& kernel, const StridedView& out) {
  if (kernel.steps.size() != 1) return nullptr;
  const KernelStep& step = kernel.steps[0];
  if (step.kind != KernelStep::Kind::StoreOuter || step.outputs.size() != 1 || step.stash_buffer >= 0) return nullptr;
  const int conv_out = out.buffer, result = step.outputs[0];
  if (!(out.offset == SymInt(0)) || !(out.strides == contiguous_strides(out.shape))) return nullptr;
  if (p_.buffer(conv_out).dtype != DType::f32 || p_.buffer(result).dtype != DType::f32 ||
      !(p_.buffer(result).shape == out.shape) || !(p_.buffer(conv_out).shape == out.shape))
    return nullptr;
  // Only this step reads the output, among the nodes some kernel computes.
  if (!only_steps_read(kernel, conv_out)) return nullptr;
  // Each read of the output is of the element the step stores (so the result has the output's
  // layout, and an element is read before it is overwritten).
  bool pointwise = true;
  visit(step.body, [&](const ExprNode& node) {
    if (node.kind == ExprKind::Load && node.buffer == conv_out)
      pointwise = pointwise && !node.mask && node.indirect.empty() && node.index == step.store_index;
    if (node.kind == ExprKind::Load && node.buffer == result) pointwise = false;
  });
  return pointwise ? &step : nullptr;
}

// A convolution's epilogue that is one activation of its output, which nothing else reads, runs
// as oneDNN's post-op: the convolution writes the activation's buffer directly, and no loop reads
// the output back. Only activations whose oneDNN form keeps NaN (KilnConvolutionActivation).
std::pair<int, int> CppSourcePrinter::convolution_post_op(const Kernel& kernel, const StridedView& out) {
  const std::pair<int, int> none{0, -1};
  const KernelStep* epilogue = sole_pointwise_epilogue(kernel, out);
  if (epilogue == nullptr) return none;
  const KernelStep& step = *epilogue;
  const int conv_out = out.buffer, result = step.outputs[0];
  auto is_output_load = [&](const Expr& e) { return plain_load_at(e, conv_out, step.store_index); };
  const Expr& body = step.body;
  if (body->kind == ExprKind::Unary && body->op == LoopOp::tanh && is_output_load(body->args[0]))
    return {1, result};  // kKilnActivationTanh
  // PyTorch's hardswish decomposed: x * min(max(x + 3, 0), 6) / 6.
  auto is_number = [](const Expr& e, double value) {
    return e && e->kind == ExprKind::Constant && is_floating(e->dtype) && e->float_value == value;
  };
  auto is_binary = [](const Expr& e, LoopOp op) { return e && e->kind == ExprKind::Binary && e->op == op; };
  if (is_binary(body, LoopOp::div) && is_number(body->args[1], 6.0) && is_binary(body->args[0], LoopOp::mul)) {
    const Expr& product = body->args[0];
    for (int first = 0; first < 2; ++first) {
      const Expr& x = product->args[size_t(first)];
      const Expr& clamp = product->args[size_t(1 - first)];
      if (!is_output_load(x) || !is_binary(clamp, LoopOp::minimum) || !is_number(clamp->args[1], 6.0)) continue;
      const Expr& lower = clamp->args[0];
      if (!is_binary(lower, LoopOp::maximum) || !is_number(lower->args[1], 0.0)) continue;
      const Expr& shifted = lower->args[0];
      if (is_binary(shifted, LoopOp::add) && is_output_load(shifted->args[0]) && is_number(shifted->args[1], 3.0))
        return {2, result};  // kKilnActivationHardswish
    }
  }
  // A SiLU stays Kiln's loop after the call, in place: oneDNN's swish post-op costs more than the
  // loop does (a depthwise 3x3 of 32 channels at 112x112 alone: 69 us without it, 154 with it;
  // Kiln's SiLU of the same 401k values, 71 us; EfficientNet-B0 2-7% faster, bench/README.md).
  return none;
}

// `body` as a clamp of an expression: relu(x), or PyTorch's clamp min(max(x, low), high),
// max(x, low), min(x, high) (its max first), with bounds a float holds exactly (the clamp compares
// in float); the bounds and x, or nothing.
static std::optional<std::pair<std::pair<double, double>, Expr>> clamp_of(const Expr& body) {
  auto constant = [](const Expr& e) -> std::optional<double> {
    if (!e || e->kind != ExprKind::Constant || !is_floating(e->dtype) || std::isnan(e->float_value)) return std::nullopt;
    return e->float_value;
  };
  auto is_binary = [](const Expr& e, LoopOp op) { return e && e->kind == ExprKind::Binary && e->op == op; };
  const double inf = std::numeric_limits<double>::infinity();
  if (body->kind == ExprKind::Unary && body->op == LoopOp::relu) return std::pair{std::pair{0.0, inf}, body->args[0]};
  double low = -inf, high = inf;
  Expr x = body;
  if (is_binary(x, LoopOp::minimum) && constant(x->args[1])) {
    high = *constant(x->args[1]);
    x = x->args[0];
  }
  if (is_binary(x, LoopOp::maximum) && constant(x->args[1])) {
    low = *constant(x->args[1]);
    x = x->args[0];
  }
  if (x == body || !(low <= high)) return std::nullopt;
  if (double(float(low)) != low || double(float(high)) != high) return std::nullopt;
  return std::pair{std::pair{low, high}, x};
}

std::optional<std::pair<double, double>> CppSourcePrinter::clamp_epilogue(const Kernel& kernel, const LoopNode& node) {
  const ExternCall& call = node.extern_call;
  const StridedView& out = call.outputs.at(0);
  const KernelStep* epilogue = sole_pointwise_epilogue(kernel, out);
  if (epilogue == nullptr) return std::nullopt;
  const KernelStep& step = *epilogue;
  const auto clamp = clamp_of(step.body);
  if (!clamp || !plain_load_at(clamp->second, out.buffer, step.store_index)) return std::nullopt;
  return clamp->first;
}

std::optional<CppSourcePrinter::ResidualEpilogue> CppSourcePrinter::residual_epilogue(const Kernel& kernel,
                                                                                      const StridedView& out) {
  const KernelStep* step = pointwise_epilogue_step(kernel, out);
  if (step == nullptr) return std::nullopt;
  auto operand = s_.memory.in_place_of.find(step->outputs[0]);
  if (operand == s_.memory.in_place_of.end()) return std::nullopt;
  ResidualEpilogue residual;
  residual.result = step->outputs[0];
  residual.operand = operand->second;
  Expr sum = step->body;
  if (const auto clamp = clamp_of(step->body)) {
    residual.clamp = clamp->first;
    sum = clamp->second;
  }
  if (!adds_residual(sum, out.buffer, residual.operand, step->store_index)) return std::nullopt;
  // The clamp alone, over the result (its memory then holds the sum).
  if (residual.clamp) {
    KernelStep clamp = *step;
    const Expr sum_in_result = load(residual.result, DType::f32, step->store_index);
    std::function<Expr(const Expr&)> replace = [&](const Expr& e) -> Expr {
      if (!e) return e;
      if (e == sum) return sum_in_result;
      return map_children(e, replace);
    };
    clamp.body = replace(step->body);
    residual.clamp_step = clamp;
  }
  return residual;
}

namespace {

// `v` as a C++ float literal (hexadecimal: exact), or an infinity.
std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "-__builtin_inff()";
  char text[64];
  std::snprintf(text, sizeof text, "%af", double(float(v)));
  return text;
}

std::string bound_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

}  // namespace

void CppSourcePrinter::emit_convolution(const Kernel& kernel, const LoopNode& node) {
  const ExternCall& call = node.extern_call;
  // oneDNN runs a 1-d convolution as the 2-d one of height 1; the epilogues match the output's
  // own view.
  const ExternCall flat = convolution_as_2d(call);
  const StridedView& in = flat.inputs.at(0);
  const StridedView& weight = flat.inputs.at(1);
  const StridedView& out = call.outputs.at(0);
  const StridedView& flat_out = flat.outputs.at(0);
  const ConvolutionGeometry& g = flat.convolution;
  // A 3-d one: [N, D, H, W, C] and its depth's geometry first.
  const bool volume = in.shape.size() == 5;
  const size_t rank = volume ? 5 : 4, h = volume ? 2 : 1, kh = volume ? 3 : 2, sh = volume ? 1 : 0;
  KILN_CHECK(p_.buffer(out.buffer).dtype == DType::f32 && in.shape.size() == rank && weight.shape.size() == rank &&
                 flat_out.shape.size() == rank && g.stride.size() == rank - 2 && g.padding.size() == rank - 2 &&
                 g.dilation.size() == rank - 2,
             "convolution " + node.name + ": not a 1-d, 2-d or 3-d f32 convolution");
  module_.uses_dnnl = true;
  bool constant_weights = options_.constant_parameters && p_.buffer(weight.buffer).kind == BufferKind::Parameter;
  w_.line("// " + geometry_text(g) + (constant_weights ? ", weights prepacked once (frozen parameters)" : ""));
  w_.line("static KilnConvolutionCache cache = KILN_CONVOLUTION_CACHE_INIT;");
  auto pointer = [&](const StridedView& v) { return buf(v.buffer) + " + (" + index_text(v.offset) + ")"; };
  std::string shape = "{" + index_text(in.shape[0]) + ", " + index_text(in.shape[rank - 1]) + ", " +
                      index_text(in.shape[h]) + ", " + index_text(in.shape[h + 1]) + ", " +
                      index_text(flat_out.shape[rank - 1]) + ", " + index_text(weight.shape[kh]) + ", " +
                      index_text(weight.shape[kh + 1]) + ", " + index_text(flat_out.shape[h]) + ", " +
                      index_text(flat_out.shape[h + 1]);
  for (int64_t v : {g.stride[sh], g.stride[sh + 1], g.padding[sh], g.padding[sh + 1], g.dilation[sh], g.dilation[sh + 1],
                    g.groups}) {
    shape += ", " + std::to_string(v);
  }
  // KilnConvolutionShape's depth fields (0 for a 2-d convolution), after the flags below.
  const std::string depth = volume ? ", " + index_text(in.shape[1]) + ", " + index_text(weight.shape[2]) + ", " +
                                         index_text(flat_out.shape[1]) + ", " + std::to_string(g.stride[0]) + ", " +
                                         std::to_string(g.padding[0]) + ", " + std::to_string(g.dilation[0])
                                   : ", 0, 0, 0, 0, 0, 0";
  const auto [activation, activation_buffer] = convolution_post_op(kernel, out);
  std::optional<std::pair<double, double>> clip = activation == 0 ? clamp_epilogue(kernel, node) : std::nullopt;
  // A residual added into the memory that holds it (the result in place of the operand): the
  // convolution accumulates there, and its clamp, if any, follows as the post-op or as the loop.
  const std::optional<ResidualEpilogue> residual = residual_epilogue(kernel, out);
  // What the clamp reads is within clip_input_bound in calls whose inputs are within
  // +-kBoundedInput; failing that, within clip_small_input_bound where they are within +-kSmallInput.
  double clip_input_bound = call.output_bound, clip_small_input_bound = call.small_input_output_bound;
  if (residual) {
    clip = residual->clamp;
    clip_input_bound = call.output_bound + p_.buffer(residual->operand).bound;
    clip_small_input_bound = call.small_input_output_bound + p_.buffer(residual->operand).small_input_bound;
  }
  const bool wide = clip_input_bound <= passes::kLargestBound;
  const std::string bounded_calls = std::string("calls whose inputs are within ") +
                                    (wide ? passes::kBoundedInputText : passes::kSmallInputText);
  bool relu = false;
  std::string clip_text;
  if (clip) {
    const auto [low, high] = *clip;
    relu = low == 0.0 && std::isinf(high);
    clip_text = relu ? "relu" : "clamp to [" + bound_text(low) + ", " + bound_text(high) + "]";
    std::string why_not;
    if (!options_.constant_parameters) why_not = "its weights may change between calls (no --freeze)";
    else if (!(call.small_input_output_bound <= passes::kLargestBound))
      why_not = "its output has no bound: " + (call.output_bound_note.empty() ? std::string("unknown") : call.output_bound_note);
    else if (!(clip_small_input_bound <= passes::kLargestBound))
      why_not = "the residual " + p_.buffer(residual->operand).name + " has no bound";
    kiln::log("post_ops", kernel.name + ": its " + clip_text +
                              (why_not.empty() ? " is oneDNN's post-op in " + bounded_calls + " (|in| <= " +
                                                     bound_text(wide ? clip_input_bound : clip_small_input_bound) + ")"
                                               : " stays Kiln's loop: " + why_not));
    if (!why_not.empty()) clip.reset();
  }
  // has_bias, threads, winograd and constant_weights: kiln_convolution sets them
  if (clip) {
    const std::string flag = wide ? "kiln_inputs_bounded" : "kiln_inputs_small";
    (wide ? checks_bounded_inputs_ : checks_small_inputs_) = true;
    w_.line("// the epilogue (a " + clip_text + ") as oneDNN's " + (relu ? "relu" : "clip") + " post-op in " + bounded_calls);
    w_.line("// (" + flag + "): what it clamps is then within +-" +
            bound_text(wide ? clip_input_bound : clip_small_input_bound) + " (passes/value_bounds.h), so it has");
    w_.line("// no NaN the post-op would turn into 0; in other calls, Kiln's loop after it");
    w_.line("const int clipped = " + flag + ";");
    shape += ", 0, 0, clipped ? 3 : 0, 0, 0, " + float_literal(clip->first) + ", " + float_literal(clip->second);
  } else {
    shape += ", 0, 0, " + std::to_string(activation) + ", 0, 0, 0.0f, 0.0f";
  }
  shape += (residual ? ", 1" : ", 0") + depth + "}";
  if (residual)
    w_.line("// the residual " + p_.buffer(residual->operand).name + " added as oneDNN's sum post-op: " +
            p_.buffer(residual->result).name + " takes its memory, into which the convolution accumulates");
  if (activation != 0)
    w_.line(std::string("// the epilogue (") + (activation == 1 ? "tanh" : "hardswish") +
            ") as oneDNN's post-op, written straight into " + p_.buffer(activation_buffer).name);
  w_.line("const KilnConvolutionShape shape = " + shape + ";");
  std::string bias = call.inputs.size() > 2 ? pointer(call.inputs[2]) : "nullptr";
  // An epilogue oneDNN cannot apply (relu6: its clip turns NaN into 0) but that reads only the
  // element it writes runs in place: the convolution writes the epilogue's buffer, which the
  // epilogue then reads and overwrites; one pass over memory and no read for ownership of a
  // second buffer (MobileNet-v2's relu6 after the 112x112x96 expansion: 38 MB per image batch of
  // 8 read, written, and read for ownership, now read and written).
  const KernelStep* in_place = activation == 0 ? sole_pointwise_epilogue(kernel, out) : nullptr;
  std::string destination = activation != 0 ? buf(activation_buffer) + " + (0)"
                            : residual      ? buf(residual->result) + " + (0)"
                            : in_place      ? buf(in_place->outputs[0]) + " + (0)"
                                            : pointer(out);
  if (in_place) w_.line("// the epilogue in place: the convolution writes " + p_.buffer(in_place->outputs[0]).name);
  std::string convolve = "kiln_convolution(&cache, shape, " + pointer(in) + ", " + pointer(weight) + ", " + bias + ", " +
                         destination + ", " + (constant_weights ? "1" : "0") + ", \"" + kernel.name +
                         "\", args->error, args->error_capacity)";
  // oneDNN's team (emit_onednn_team): a small convolution (LeNet's) runs on the calling thread.
  std::string macs = "(" + index_text(numel(out.shape)) + ")";
  for (size_t d = 1; d < weight.shape.size(); ++d) macs += " * (" + index_text(weight.shape[d]) + ")";
  if (uses_pool()) {
    w_.line("bool on_team = false;  // the convolution ran on OpenMP's team: so does its epilogue");
    w_.line("(void)on_team;");
  }
  emit_onednn_team(macs, std::to_string(kTeamMacs));
  w_.line("const int convolved = " + convolve + ";");
  w_.line("omp_set_num_threads(omp_threads);");
  w_.line("if (convolved != 0) return 1;");
  if (kernel.steps.empty() || activation != 0 || (residual && !residual->clamp)) return;
  if (clip) w_.open("if (!clipped)");
  on_team_ = uses_pool() ? "on_team" : "";
  // The epilogue over the output [N, (OD,) OH, OW, O], channels innermost (of a residual, the clamp).
  std::vector<KernelStep> steps = residual ? std::vector<KernelStep>{*residual->clamp_step} : kernel.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (&kernel.steps[i] == in_place) steps[i].body = with_loads_redirected(steps[i].body, out.buffer, steps[i].outputs[0]);
  }
  emit_output_epilogue(steps, out.shape);
  on_team_.clear();
  if (clip) w_.close();
}

std::string CppSourcePrinter::view_pointer(const StridedView& view, const std::vector<std::string>& batch_vars) {
  std::string offset = index_text(view.offset);
  for (size_t i = 0; i < batch_vars.size(); ++i) {
    offset += " + " + batch_vars[i] + " * (" + index_text(view.strides[i]) + ")";
  }
  return buf(view.buffer) + " + (" + offset + ")";
}

// A batch dim of C that can be the rows of each GEMM in place of C's own row dim, when it has
// more elements: the right operand is the same matrix along it (B's stride there is 0), and A
// and C keep a BLAS row layout along it (unit last strides, a row stride of at least K and N).
// x[seq, batch, d] @ w[d, n] (a sequence-first transformer, whose batch dim cannot fold into
// the rows) is then `batch` GEMMs of `seq` rows rather than `seq` GEMMs of `batch` rows, each of
// which packed all of w again.
//
// A symbolic extent (a dynamic batch or sequence) is unknown until run time; the choice is made
// now, so it counts as kSymbolicRows rows. The costly mistake is many GEMMs of one row or a few
// (each reads all of B again), so a constant extent of kSymbolicRows or more wins over a
// symbolic one (x[40, batch, d]: batch GEMMs of 40 rows at any batch) and a smaller one loses to
// it (x[seq, 2, d]: 2 GEMMs of seq rows).
constexpr int64_t kSymbolicRows = 8;

// Whether `stride` is at least `least` for every size its symbols may take: a constant, or an
// expression that is at least `least` with each symbol 0 and with each symbol 1 (strides are
// products of sizes and max(size, 1), increasing in each symbol).
static bool stride_at_least(const SymInt& stride, int64_t least) {
  if (std::optional<int64_t> value = stride.maybe_constant()) return *value >= least;
  std::map<std::string, int64_t> zeros, ones;
  for (const std::string& symbol : stride.free_symbols()) {
    zeros[symbol] = 0;
    ones[symbol] = 1;
  }
  try {
    return stride.evaluate(zeros) >= least && stride.evaluate(ones) >= least;
  } catch (const ir::SymbolicError&) {
    return false;
  }
}

static std::optional<size_t> batch_dim_as_rows(const StridedView& a, const StridedView& b, const StridedView& c) {
  const size_t rank = c.shape.size();
  const std::optional<int64_t> n = c.shape[rank - 1].maybe_constant(), k = a.shape[rank - 1].maybe_constant();
  if (!n || !k || !(a.strides[rank - 1] == SymInt(1)) || !(c.strides[rank - 1] == SymInt(1))) return std::nullopt;
  // Rows as (count, symbolic): a symbolic extent counts kSymbolicRows and loses a tie to a constant.
  auto worth = [](const SymInt& extent) {
    std::optional<int64_t> value = extent.maybe_constant();
    return std::pair<int64_t, bool>{value ? *value : kSymbolicRows, !value};
  };
  auto more_rows = [](std::pair<int64_t, bool> x, std::pair<int64_t, bool> y) {
    return x.first > y.first || (x.first == y.first && !x.second && y.second);
  };
  std::optional<size_t> best;
  std::pair<int64_t, bool> rows = worth(c.shape[rank - 2]);
  for (size_t d = 0; d + 2 < rank; ++d) {
    const std::pair<int64_t, bool> extent = worth(c.shape[d]);
    if (!(b.strides[d] == SymInt(0)) || !more_rows(extent, rows)) continue;
    if (!stride_at_least(a.strides[d], *k) || !stride_at_least(c.strides[d], *n)) continue;
    best = d;
    rows = extent;
  }
  return best;
}

void CppSourcePrinter::emit_gemm(const Kernel& kernel, const LoopNode& node) {
  const ExternCall& call = node.extern_call;
  StridedView a = call.inputs.at(0);
  StridedView b = call.inputs.at(1);
  StridedView c = call.outputs.at(0);
  const size_t rank = c.shape.size();
  KILN_CHECK(rank >= 2 && a.shape.size() == rank && b.shape.size() == rank, "gemm views must share a rank");
  // The loop variable of each dim of the views (the epilogue's expressions name the output's own
  // dims), and the batch dim that becomes the rows when one is longer (batch_dim_as_rows).
  std::vector<std::string> vars;
  for (size_t i = 0; i < rank; ++i) vars.push_back(loop_var(i).to_string());
  std::optional<size_t> rows_dim;
  const bool folds = rank == 2 || gemm_folded_row_stride(a, b).has_value();
  if (!folds) rows_dim = batch_dim_as_rows(a, b, c);
  if (rows_dim) {
    const size_t d = *rows_dim, m = rank - 2;
    std::swap(a.shape[d], a.shape[m]);
    std::swap(a.strides[d], a.strides[m]);
    std::swap(c.shape[d], c.shape[m]);
    std::swap(c.strides[d], c.strides[m]);
    b.shape[d] = c.shape[d];  // B is the same matrix along the old rows too
    std::swap(vars[d], vars[m]);
  }
  DType dtype = p_.buffer(c.buffer).dtype;
  KILN_CHECK(dtype == DType::f32 || dtype == DType::f64, "gemm of a dtype BLAS lacks");
  module_.uses_blas = true;
  const std::string t = ctype(dtype);
  w_.line("const int64_t M = " + index_text(c.shape[rank - 2]) + ", N = " + index_text(c.shape[rank - 1]) + ", K = " +
          index_text(a.shape[rank - 1]) + ";");
  w_.line("int ta = 0, lda = 0, tb = 0, ldb = 0;");
  w_.line("if (!kiln_blas_layout(" + index_text(a.strides[rank - 2]) + ", " + index_text(a.strides[rank - 1]) +
          ", M, K, &ta, &lda) || !kiln_blas_layout(" + index_text(b.strides[rank - 2]) + ", " + index_text(b.strides[rank - 1]) +
          ", K, N, &tb, &ldb)) {");
  w_.line("  const char* parts[] = {\"" + kernel.name + ": an operand has no BLAS layout\"};");
  w_.line("  kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
  w_.line("  return 1;");
  w_.line("}");
  const size_t batch_rank = rank - 2;
  SymInt batch = 1;
  for (size_t i = 0; i < batch_rank; ++i) batch = batch * c.shape[i];
  if (library_matmul(node)) {
    // A right operand that may change between calls (no frozen parameters) goes to oneDNN only
    // where the GEMM is worth a team (kTeamMacs multiply-adds, known at run time): in smaller ones
    // OpenBLAS, below, was faster (1 x 784 x 128: 5.0 against 8.9 us; bench/README.md), and not
    // where oneDNN's kernel for it is slow (kiln_runtime_b_matmul_allowed, codegen/cpp/kiln_dnnl.h).
    // KILN_ONEDNN_MATMUL=0 keeps them all on OpenBLAS.
    const bool runtime_b = !options_.constant_parameters;
    if (runtime_b)
      w_.open("if (" + index_text(batch * c.shape[rank - 2]) + " * N * K >= " + std::to_string(kTeamMacs) +
              " && kiln_runtime_b_matmul_allowed(ldb))");
    if (folds) {
      std::optional<SymInt> row_stride = batch_rank == 0 ? std::optional<SymInt>(a.strides[0]) : gemm_folded_row_stride(a, b);
      emit_library_matmul(kernel, a, c, batch * c.shape[rank - 2], *row_stride);
    } else {
      emit_batched_library_matmul(kernel, a, c, batch, vars);
    }
    if (!runtime_b) return;
    w_.line("return 0;");
    w_.close();
  }
  if (batch_rank > 0 && !rows_dim && !folds) {
    if (std::optional<BatchWalk> walk = batched_runtime_matmul(node, a, b, c)) {
      // oneDNN's matmul over the batch where it has kTeamMacs multiply-adds (each run kRunMacs),
      // else OpenBLAS below.
      const SymInt gemms = walk->two_level ? walk->run : batch;
      w_.open("if (" + index_text(gemms * c.shape[rank - 2]) + " * N * K >= " +
              std::to_string(walk->two_level ? kRunMacs : kTeamMacs) + " && kiln_runtime_b_matmul_allowed(ldb))");
      emit_batched_runtime_matmul(kernel, a, b, c, batch, *walk);
      w_.line("return 0;");
      w_.close();
    }
  }
  if (batch_rank > 0 && !rows_dim) {
    if (std::optional<SymInt> row_stride = gemm_folded_row_stride(a, b)) {
      emit_folded_gemm(kernel, a, b, c, *row_stride, batch, t);
      return;
    }
  }
  w_.line("const int64_t batch = " + index_text(batch) + ";");
  w_.line("if (M == 0 || N == 0 || batch == 0) return 0;");
  // An empty inner dim: the products are zeros (the output is contiguous).
  w_.line("if (K == 0) { for (int64_t i = 0; i < batch * M * N; ++i) " + buf(c.buffer) + "[" + index_text(c.offset) +
          " + i] = 0; }");
  std::string sam = index_text(a.strides[rank - 2]);
  // C's row stride (N, but for rows taken from a batch dim).
  const std::string ldc = rows_dim ? index_text(c.strides[rank - 2]) : "N";
  if (rows_dim)
    w_.line("// the rows are the output's dim " + std::to_string(*rows_dim) +
            " (the right operand is the same matrix along it), longer than its own rows");
  bool epilogue = !kernel.steps.empty();
  // Small GEMMs of a batch run in parallel, each on one thread, when the whole batch is worth
  // a parallel region (~1M multiply-adds); otherwise each GEMM is one BLAS call that threads
  // itself. The two paths must stay apart: a BLAS call inside an inactive region (`if(0)`)
  // starts a nested team, and GNU OpenMP creates and joins fresh threads for every nested
  // team, which made a transformer layer 7x slower on 2 threads.
  const bool pool = uses_pool();
  // On the pool, a task is a block of rows [lo, hi) and columns [n0, n1) of one GEMM of the batch.
  w_.open(pool ? "auto gemm_entry = [&](int64_t bi, int64_t lo, int64_t hi, int64_t n0, int64_t n1)"
               : "auto gemm_entry = [&](int64_t bi)");
  std::vector<std::string> batch_vars;
  emit_batch_entry_vars(c, vars, batch_rank);
  for (size_t i = 0; i < batch_rank; ++i) batch_vars.push_back(vars[i]);
  w_.line("const " + t + "* pa = " + view_pointer(a, batch_vars) + ";");
  w_.line("const " + t + "* pb = " + view_pointer(b, batch_vars) + ";");
  w_.line(t + "* pc = " + view_pointer(c, batch_vars) + ";");
  if (!epilogue) {
    if (pool) {
      w_.line("kiln_gemm_block(ta, tb, hi - lo, n0, n1, K, pa + lo * (" + sam + "), lda, pb, ldb, pc + lo * " + ldc + ", " + ldc + ");");
    } else {
      w_.line("kiln_gemm_block(ta, tb, M, 0, N, K, pa, lda, pb, ldb, pc, " + ldc + ");");
    }
  } else {
    std::string block = std::to_string(options_.gemm_block_rows);
    std::string lo = pool ? "lo" : "0", hi = pool ? "hi" : "M";
    w_.open("for (int64_t m0 = " + lo + "; m0 < " + hi + "; m0 += " + block + ")");
    w_.line("const int64_t mb = " + hi + " - m0 < " + block + " ? " + hi + " - m0 : " + block + ";");
    if (pool) {
      w_.line("kiln_gemm_block(ta, tb, mb, n0, n1, K, pa + m0 * (" + sam + "), lda, pb, ldb, pc + m0 * " + ldc + ", " + ldc + ");");
    } else {
      w_.line("kiln_gemm_block(ta, tb, mb, 0, N, K, pa + m0 * (" + sam + "), lda, pb, ldb, pc + m0 * " + ldc + ", " + ldc + ");");
    }
    std::string row = vars[rank - 2], col = vars[rank - 1];
    w_.open("for (int64_t " + row + " = m0; " + row + " < m0 + mb; ++" + row + ")");
    w_.line("#pragma omp simd");
    w_.open("for (int64_t " + col + " = " + (pool ? "n0" : "0") + "; " + col + " < " + (pool ? "n1" : "N") + "; ++" + col + ")");
    int number = 0;
    for (const KernelStep& step : kernel.steps) emit_point_step(step, number++);
    w_.close();
    w_.close();
    w_.close();
  }
  w_.close(";");
  if (pool) {
    emit_gemm_dispatch("batch", "M", batch * c.shape[rank - 2] * c.shape[rank - 1] * a.shape[rank - 1]);
  } else if (batch_rank > 0 && uses_runner()) {
    // One call of the team's runner for both paths (the entry compiled once), parallel or not.
    w_.open("auto gemm_batch = [&](int64_t b0, int64_t b1)");
    w_.line("for (int64_t bi = b0; bi < b1; ++bi) gemm_entry(bi);");
    w_.close(";");
    w_.line("kiln_team_for(batch, gemm_batch, batch > 1 && M * N * K < " + std::to_string(kTeamMacs) + " && batch * M * N * K >= 1048576);");
  } else if (batch_rank > 0) {
    w_.open("if (batch > 1 && M * N * K < " + std::to_string(kTeamMacs) + " && batch * M * N * K >= 1048576)");
    w_.line("#pragma omp parallel for schedule(static)");
    w_.line("for (int64_t bi = 0; bi < batch; ++bi) gemm_entry(bi);");
    w_.close();
    w_.open("else");
    w_.line("for (int64_t bi = 0; bi < batch; ++bi) gemm_entry(bi);");
    w_.close();
  } else {
    w_.line("gemm_entry(0);");
  }
}

// On the thread pool: the GEMMs of a batch (`batch` GEMMs of `rows` rows and N columns,
// `gemm_entry(bi, lo, hi, n0, n1)` computing rows [lo, hi) and columns [n0, n1) of one) as tasks
// of whole GEMMs, blocks of rows, or blocks of columns (kiln_gemm_splits_columns), each a
// BLAS call on one thread. OpenBLAS's OpenMP build runs a call on omp_get_max_threads() threads, so the
// calling thread asks for one while the tasks run (the pool's workers always do); large single
// GEMMs are thus split by Kiln rather than by OpenBLAS, and never start an OpenMP team. `macs`
// (batch * rows * N * K) decides, when it is known now, whether the tasks run on the pool or
// directly on the caller; otherwise kiln_parallel_for decides at run time (one call either way, so
// that the tasks' code is compiled once: codegen/cpp/kiln_thread_pool.h).
void CppSourcePrinter::emit_gemm_dispatch(const std::string& batch, const std::string& rows, const SymInt& macs) {
  w_.line("const int64_t task_rows = kiln_gemm_task_rows(" + batch + ", " + rows + ", N);");
  w_.line("const int64_t row_tasks = (" + rows + " + task_rows - 1) / task_rows;");
  w_.line("const int64_t task_cols = kiln_gemm_task_cols(" + batch + ", " + rows + ", N);");
  w_.line("const int64_t col_tasks = (N + task_cols - 1) / task_cols;");
  w_.line("const int64_t gemm_tasks_each = row_tasks * col_tasks;");
  w_.open("auto gemm_tasks = [&](int64_t t0, int64_t t1)");
  w_.open("for (int64_t task = t0; task < t1; ++task)");
  w_.line("const int64_t lo = (task % gemm_tasks_each / col_tasks) * task_rows;");
  w_.line("const int64_t n0 = (task % col_tasks) * task_cols;");
  w_.line("gemm_entry(task / gemm_tasks_each, lo, lo + task_rows < " + rows + " ? lo + task_rows : " + rows +
          ", n0, n0 + task_cols < N ? n0 + task_cols : N);");
  w_.close();
  w_.close(";");
  w_.line("const int omp_threads = omp_get_max_threads();");
  w_.line("omp_set_num_threads(1);");
  const int64_t threshold = kTeamMacs;
  std::optional<int64_t> known = macs.maybe_constant();
  if (!known) {
    w_.line("kiln_parallel_for(" + batch + " * gemm_tasks_each, gemm_tasks, " + batch + " * " + rows + " * N * K >= " +
            std::to_string(threshold) + ");");
  } else if (*known >= threshold) {
    w_.line("kiln_parallel_for(" + batch + " * gemm_tasks_each, gemm_tasks);");
  } else {
    w_.line("gemm_tasks(0, " + batch + " * gemm_tasks_each);");
  }
  w_.line("omp_set_num_threads(omp_threads);");
}

int64_t CppSourcePrinter::few_rows_weight_bytes() {
  if (few_rows_bytes_) return *few_rows_bytes_;
  int64_t bytes = 0;
  std::set<int> counted;  // each weight once, however many steps of an unrolled loop read it
  for (const LoopNode& node : p_.nodes) {
    if (node.kind != NodeKind::Extern || !library_matmul(node)) continue;
    const StridedView& b = node.extern_call.inputs.at(1);
    const StridedView& c = node.extern_call.outputs.at(0);
    std::optional<int64_t> elements = numel(c.shape).maybe_constant(), n = c.shape.back().maybe_constant();
    // B's matrix: a batch dim of B is broadcast (stride 0) or 1 in a library matmul.
    std::optional<int64_t> weights = (b.shape[b.shape.size() - 2] * b.shape.back()).maybe_constant();
    if (!elements || !n || !weights || *n == 0 || *elements / *n > 4 || !counted.insert(b.buffer).second) continue;
    bytes += *weights * int64_t(sizeof(float));
  }
  few_rows_bytes_ = options_.constant_parameters ? bytes : 0;
  return *few_rows_bytes_;
}

bool CppSourcePrinter::library_matmul(const LoopNode& node) {
  if (node.extern_call.kind != ExternKind::Gemm || !options_.library_matmul) return false;
  if (!uses_pool() && !options_.team_library_matmul) return false;
  const ExternCall& call = node.extern_call;
  const StridedView& a = call.inputs.at(0);
  const StridedView& b = call.inputs.at(1);
  const StridedView& c = call.outputs.at(0);
  const size_t rank = c.shape.size();
  if (p_.buffer(c.buffer).dtype != DType::f32 || p_.buffer(b.buffer).kind != BufferKind::Parameter) return false;
  // One GEMM, or a batch that folds into the rows of one (the right operand shared).
  if (rank == 2 || gemm_folded_row_stride(a, b).has_value()) return true;
  // A batch of GEMMs that share the right operand but do not fold (x[seq, batch, d] @ w, whose
  // output rows interleave the batch): one call each, C's rows strided, the calls one after
  // another. So each must be worth both threads (the pool's threshold, known now): smaller ones
  // keep the BLAS path, whose tasks run the batch's GEMMs side by side.
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (!(b.strides[i] == SymInt(0)) && !(b.shape[i] == SymInt(1))) return false;
  }
  if (!(c.strides[rank - 1] == SymInt(1))) return false;
  std::optional<size_t> rows_dim = batch_dim_as_rows(a, b, c);
  std::optional<int64_t> m = c.shape[rows_dim ? *rows_dim : rank - 2].maybe_constant();
  std::optional<int64_t> n = c.shape[rank - 1].maybe_constant(), k = a.shape[rank - 1].maybe_constant();
  return m && n && k && *m * *n * *k >= kTeamMacs;
}

// Before a oneDNN call of `macs` multiply-adds: it runs on OpenMP threads, as many as the module
// may use (with the pool: while the pool's workers sleep), or on the calling thread alone under
// `threshold` (kTeamMacs unless the caller knows better), where a team costs more than it saves.
// Declares `omp_threads` (restored after).
void CppSourcePrinter::emit_onednn_team(const std::string& macs, const std::string& threshold) {
  w_.line("const int omp_threads = omp_get_max_threads();");
  w_.line("const int64_t macs = " + macs + ";");
  if (uses_pool()) {
    w_.line("if (macs >= " + threshold + ") kiln_pool_park();");
    w_.line("omp_set_num_threads(macs >= " + threshold + " ? kiln_pool_threads() : 1);");
    w_.line("on_team = macs >= " + threshold + " && kiln_pool_threads() > 1;");
  } else {
    w_.line("if (macs < " + threshold + ") omp_set_num_threads(1);");
  }
}

// C [rows, N] = A [rows, K] @ B [K, N] through oneDNN (codegen/cpp/kiln_dnnl.h: B reordered once,
// the primitive made once per row count and thread count): in blocks of rows on the pool's
// threads (emit_matmul_blocks) when it is worth them, else on OpenMP's threads while the pool's
// workers sleep, as the convolutions run (a GEMM of few rows), or on one thread; then the epilogue
// over the output.
void CppSourcePrinter::emit_library_matmul(const Kernel& kernel, const StridedView& a, const StridedView& c,
                                           const SymInt& rows, const SymInt& row_stride) {
  const LoopNode& node = p_.nodes[size_t(kernel.extern_node)];
  const StridedView& b = node.extern_call.inputs.at(1);
  const size_t rank = c.shape.size();
  module_.uses_dnnl = true;
  if (options_.constant_parameters)
    w_.line("// the right operand is a frozen parameter: oneDNN's matmul, the operand prepacked once");
  else
    w_.line("// the right operand is a parameter, which may change between calls: oneDNN's matmul, reading it in place");
  const MatmulEpilogue epilogue = matmul_epilogue(kernel, c);
  emit_matmul_epilogue_comment(kernel, epilogue);
  StridedView out = c;
  out.buffer = epilogue.destination;
  if (out.buffer != c.buffer) w_.line("(void)" + buf(c.buffer) + ";  // the product goes to the epilogue's destination");
  w_.line("static KilnMatmulCache cache = KILN_MATMUL_CACHE_INIT;");
  w_.line("const int64_t rows = " + index_text(rows) + ";");
  w_.line("if (!kiln_blas_layout(" + index_text(row_stride) + ", " + index_text(a.strides[rank - 1]) + ", rows, K, &ta, &lda)) {");
  w_.line("  const char* parts[] = {\"" + kernel.name + ": an operand has no BLAS layout\"};");
  w_.line("  kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
  w_.line("  return 1;");
  w_.line("}");
  w_.line("if (rows == 0 || N == 0) return 0;");
  w_.line("bool on_team = false;  // the matmul ran on OpenMP's team: so does its epilogue");
  w_.line("(void)on_team;");
  const std::string bias_flag = epilogue.bias == "nullptr" ? "0" : "1";
  // An empty inner dim: the product is zeros (plus the bias; added to the residual).
  const std::string assign = epilogue.accumulate ? " += " : " = ";
  w_.open("if (K == 0)");
  if (epilogue.bias == "nullptr") {
    if (!epilogue.accumulate)
      w_.line("for (int64_t i = 0; i < rows * N; ++i) " + buf(out.buffer) + "[" + index_text(out.offset) + " + i] = 0;");
  } else {
    w_.line("const float* bias = " + epilogue.bias + ";");
    w_.line("for (int64_t i = 0; i < rows * N; ++i) " + buf(out.buffer) + "[" + index_text(out.offset) + " + i]" + assign +
            "bias[i % N];");
  }
  w_.close();
  w_.open("else");
  w_.line("const KilnMatmulShape shape = {rows, K, N, ta, lda, tb, ldb, 0, N, 0, " + std::string(options_.constant_parameters ? "0" : "1") +
          ", 1, 0, 0, 0, " + bias_flag + ", " + (epilogue.accumulate ? "1" : "0") + ", 0};");
  const std::string b_pointer = buf(b.buffer) + " + (" + index_text(b.offset) + ")";
  w_.line("int multiplied;");
  const bool blocks = emit_matmul_blocks(kernel, "rows", "1", b_pointer, epilogue.bias, [&] {
    w_.line("*pa = " + buf(a.buffer) + " + (" + index_text(a.offset) + ");");
    w_.line("*pc = " + buf(out.buffer) + " + (" + index_text(out.offset) + ");");
  });
  w_.open(blocks ? "else" : "");
  // A frozen B and at most 4 rows: Kiln's product over panels (kiln_panel_gemm_suits, which also
  // takes more rows where oneDNN lacks AVX-512), worth a team earlier where the module's such
  // products stream their weights (kFewRowsTeamMacs).
  const int64_t few_rows_bytes = few_rows_weight_bytes();
  const std::string few_rows = few_rows_bytes > 0 ? "rows <= 4 && " + std::to_string(few_rows_bytes) +
                                                        " > kiln_l2_bytes() ? " + std::to_string(kFewRowsTeamMacs) + " : "
                                                  : "";
  emit_onednn_team("rows * N * K", few_rows.empty() ? std::to_string(kTeamMacs) : "(" + few_rows + std::to_string(kTeamMacs) + ")");
  w_.line("multiplied = kiln_matmul(&cache, shape, " + buf(a.buffer) + " + (" + index_text(a.offset) + "), " + b_pointer +
          ", " + epilogue.bias + ", " + buf(out.buffer) + " + (" + index_text(out.offset) + "), \"" + kernel.name +
          "\", args->error, args->error_capacity);");
  w_.line("omp_set_num_threads(omp_threads);");
  w_.close();
  w_.line("if (multiplied != 0) return 1;");
  w_.close();
  on_team_ = "on_team";
  emit_matmul_epilogue(epilogue.steps, c);
  on_team_.clear();
}

// The batch of GEMMs that share a frozen right operand but do not fold into one (library_matmul):
// oneDNN's matmul for each entry (one primitive and one prepacked operand serve them all: the
// cache entry's shape is the same), C's row stride its own; the entries, or blocks of their rows,
// on the pool's threads (emit_matmul_blocks), else each on OpenMP's threads in turn.
void CppSourcePrinter::emit_batched_library_matmul(const Kernel& kernel, const StridedView& a, const StridedView& c,
                                                   const SymInt& batch, const std::vector<std::string>& vars) {
  const LoopNode& node = p_.nodes[size_t(kernel.extern_node)];
  const StridedView& b = node.extern_call.inputs.at(1);
  const size_t rank = c.shape.size();
  module_.uses_dnnl = true;
  if (options_.constant_parameters) {
    w_.line("// the right operand is a frozen parameter shared by the batch: oneDNN's matmul for each GEMM, the operand");
    w_.line("// prepacked once");
  } else {
    w_.line("// the right operand is a parameter shared by the batch, which may change between calls: oneDNN's matmul for");
    w_.line("// each GEMM, reading it in place");
  }
  // Over the output's own dims (`c` may have a batch dim swapped in as the rows).
  const StridedView& own = node.extern_call.outputs.at(0);
  const MatmulEpilogue epilogue = matmul_epilogue(kernel, own);
  emit_matmul_epilogue_comment(kernel, epilogue);
  StridedView out = c;
  out.buffer = epilogue.destination;
  if (out.buffer != c.buffer) w_.line("(void)" + buf(c.buffer) + ";  // the product goes to the epilogue's destination");
  w_.line("static KilnMatmulCache cache = KILN_MATMUL_CACHE_INIT;");
  w_.line("const int64_t batch = " + index_text(batch) + ", ldc = " + index_text(c.strides[rank - 2]) + ";");
  w_.line("if (M == 0 || N == 0 || batch == 0) return 0;");
  w_.line("const KilnMatmulShape shape = {M, K, N, ta, lda, tb, ldb, 0, ldc, 0, " + std::string(options_.constant_parameters ? "0" : "1") +
          ", 1, 0, 0, 0, " + std::string(epilogue.bias == "nullptr" ? "0" : "1") + ", " +
          (epilogue.accumulate ? "1" : "0") + ", 0};");
  const std::string b_pointer = buf(b.buffer) + " + (" + index_text(b.offset) + ")";
  std::vector<std::string> batch_vars(vars.begin(), vars.begin() + long(rank - 2));
  w_.line("int multiplied = 0;");
  w_.line("bool on_team = false;  // the matmuls ran on OpenMP's team: so does their epilogue");
  w_.line("(void)on_team;");
  const bool blocks = emit_matmul_blocks(kernel, "M", "batch", b_pointer, epilogue.bias, [&] {
    emit_batch_entry_vars(c, vars, rank - 2);
    w_.line("*pa = " + view_pointer(a, batch_vars) + ";");
    w_.line("*pc = " + view_pointer(out, batch_vars) + ";");
  });
  w_.open(blocks ? "else" : "");
  emit_onednn_team("M * N * K", std::to_string(kTeamMacs));
  w_.open("for (int64_t bi = 0; bi < batch && multiplied == 0; ++bi)");
  emit_batch_entry_vars(c, vars, rank - 2);
  w_.line("float* pc = " + view_pointer(out, batch_vars) + ";");
  const std::string assign = epilogue.accumulate ? " += " : " = ";
  w_.open("if (K == 0)");
  if (epilogue.bias == "nullptr") {
    if (!epilogue.accumulate) w_.line("for (int64_t m = 0; m < M; ++m) for (int64_t n = 0; n < N; ++n) pc[m * ldc + n] = 0;");
  } else {
    w_.line("const float* bias = " + epilogue.bias + ";");
    w_.line("for (int64_t m = 0; m < M; ++m) for (int64_t n = 0; n < N; ++n) pc[m * ldc + n]" + assign + "bias[n];");
  }
  w_.close();
  w_.open("else");
  w_.line("multiplied = kiln_matmul(&cache, shape, " + view_pointer(a, batch_vars) + ", " + b_pointer + ", " + epilogue.bias +
          ", pc, \"" + kernel.name + "\", args->error, args->error_capacity);");
  w_.close();
  w_.close();
  w_.line("omp_set_num_threads(omp_threads);");
  w_.close();
  w_.line("if (multiplied != 0) return 1;");
  on_team_ = "on_team";
  emit_matmul_epilogue(epilogue.steps, own);
  on_team_.clear();
}

// The stride of `view` over its batch dims [begin, end) when they walk memory as one dim (each
// dim's stride the next one's times its size; dims of size 1 skipped); nothing otherwise.
static std::optional<SymInt> collapsed_batch_stride(const StridedView& view, size_t begin, size_t end) {
  std::optional<SymInt> inner;  // the stride of the innermost batch dim of more than one element
  SymInt expected;              // the stride the next dim out must have
  for (size_t i = end; i-- > begin;) {
    if (view.shape[i] == SymInt(1)) continue;
    if (!inner) {
      inner = view.strides[i];
    } else if (!(view.strides[i] == expected)) {
      return std::nullopt;
    }
    expected = view.strides[i] * view.shape[i];
  }
  return inner ? inner : std::optional<SymInt>(SymInt(0));
}

std::optional<CppSourcePrinter::BatchWalk> CppSourcePrinter::batched_runtime_matmul(const LoopNode& node,
                                                                                   const StridedView& a,
                                                                                   const StridedView& b,
                                                                                   const StridedView& c) {
  if (!options_.library_matmul || p_.buffer(c.buffer).dtype != DType::f32) return std::nullopt;
  const size_t batch_rank = c.shape.size() - 2;
  if (batch_rank == 0 || node.extern_call.kind != ExternKind::Gemm || !(c.strides[batch_rank + 1] == SymInt(1)))
    return std::nullopt;
  // The batch dims split where each operand walks the dims after the split at one stride and the
  // dims before it at another: at 0 (one stride, the whole batch), else as far out as that holds
  // (a head split of a sequence-first projection, q viewed [b, h, s, d] with b's stride 3 * h * d
  // and h's d: runs of h GEMMs, b of them).
  for (size_t split = 0; split < batch_rank; ++split) {
    std::optional<SymInt> ia = collapsed_batch_stride(a, split, batch_rank),
                          ib = collapsed_batch_stride(b, split, batch_rank),
                          ic = collapsed_batch_stride(c, split, batch_rank);
    std::optional<SymInt> oa = collapsed_batch_stride(a, 0, split), ob = collapsed_batch_stride(b, 0, split),
                          oc = collapsed_batch_stride(c, 0, split);
    if (!ia || !ib || !ic || !oa || !ob || !oc) continue;
    // An operand shared by the batch (stride 0) is the other paths' (folded, or one GEMM each).
    if (*ia == SymInt(0) || *ib == SymInt(0)) return std::nullopt;
    SymInt run(1);
    for (size_t i = split; i < batch_rank; ++i) run = run * c.shape[i];
    return BatchWalk{run, {*ia, *ib, *ic}, {*oa, *ob, *oc}, split > 0};
  }
  return std::nullopt;
}

// oneDNN's matmul over a batch of GEMMs with their own operands, [batch, M, K] @ [batch, K, N]
// (KilnMatmulShape::batch; B read in place): on the pool, the batch in one slice per thread, each
// slice one matmul on one thread (attention's 128 x 64 x 128 products ran 1.3-1.4x faster so
// than as OpenBLAS calls side by side; on OpenMP's team instead, waking it for two small GEMMs a
// layer made a batch-1 encoder layer 20% slower: bench/README.md); in a module whose loops run on
// OpenMP's team, on that team. Then the epilogue.
void CppSourcePrinter::emit_batched_runtime_matmul(const Kernel& kernel, const StridedView& a, const StridedView& b,
                                                   const StridedView& c, const SymInt& batch, const BatchWalk& walk) {
  const size_t rank = c.shape.size();
  module_.uses_dnnl = true;
  w_.line("// a batch of GEMMs with their own right operands: oneDNN's matmul over the batch, reading them in place");
  // Frozen parameters as right operands (an MoE's experts): Kiln's product over panels packs them
  // once where oneDNN lacks AVX-512 (kiln_panel_batch_suits).
  const bool frozen_b = options_.constant_parameters && p_.buffer(b.buffer).kind == BufferKind::Parameter;
  if (frozen_b) w_.line("// (frozen parameters: where oneDNN lacks AVX-512, Kiln's product over panels packs each once)");
  w_.line("static KilnMatmulCache cache = KILN_MATMUL_CACHE_INIT;");
  w_.line("const int64_t batch = " + index_text(batch) + ";");
  w_.line("if (M == 0 || N == 0 || batch == 0) return 0;");
  w_.line("const KilnMatmulShape shape = {M, K, N, ta, lda, tb, ldb, 0, " + index_text(c.strides[rank - 2]) +
          ", 0, 1, batch, " + index_text(walk.strides[0]) + ", " + index_text(walk.strides[1]) + ", " +
          index_text(walk.strides[2]) + ", 0, 0, " + (frozen_b ? "1" : "0") + "};");
  // GEMM bi of the batch is entry bi % run of run bi / run; each run is one oneDNN matmul over its
  // entries (the whole batch is one run unless its dims walk memory at two strides).
  if (walk.two_level) {
    w_.line("const int64_t run = " + index_text(walk.run) + ";  // GEMMs one stride apart; runs lie at the outer strides");
    w_.line("const int64_t outer_a = " + index_text(walk.outer[0]) + ", outer_b = " + index_text(walk.outer[1]) +
            ", outer_c = " + index_text(walk.outer[2]) + ";");
  } else {
    w_.line("const int64_t run = batch, outer_a = 0, outer_b = 0, outer_c = 0;");
  }
  w_.line("const float* pa = " + buf(a.buffer) + " + (" + index_text(a.offset) + ");");
  w_.line("const float* pb = " + buf(b.buffer) + " + (" + index_text(b.offset) + ");");
  w_.line("float* pc = " + buf(c.buffer) + " + (" + index_text(c.offset) + ");");
  w_.line("int multiplied = 0;");
  w_.line("bool on_team = false;  // the matmul ran on OpenMP's team: so does its epilogue");
  w_.line("(void)on_team;");
  w_.open("if (K == 0)");
  w_.line("for (int64_t bi = 0; bi < batch; ++bi) for (int64_t m = 0; m < M; ++m) for (int64_t n = 0; n < N; ++n) "
          "pc[(bi / run) * outer_c + (bi % run) * shape.batch_stride_c + m * shape.ldc + n] = 0;");
  w_.close();
  const std::string call = "kiln_matmul(&cache, part, pa + o * outer_a + i * shape.batch_stride_a, pb + o * outer_b + i * "
                           "shape.batch_stride_b, nullptr, pc + o * outer_c + i * shape.batch_stride_c, \"" + kernel.name + "\", ";
  if (uses_pool()) {
    // Each thread's share of the batch, cut where runs end.
    w_.open("else");
    w_.line("const int64_t parts = kiln_pool_threads() < batch ? kiln_pool_threads() : batch;");
    w_.line("const int64_t per_part = (batch + parts - 1) / parts;");
    w_.line("const int omp_threads = omp_get_max_threads();");
    w_.line("omp_set_num_threads(1);");
    w_.open("auto slices = [&](int64_t s0, int64_t s1)");
    w_.open("for (int64_t s = s0; s < s1; ++s)");
    w_.line("int64_t b0 = s * per_part, count = batch - b0 < per_part ? batch - b0 : per_part;");
    w_.line("char error[512];");
    w_.open("while (count > 0)");
    w_.line("const int64_t o = b0 / run, i = b0 % run, taken = count < run - i ? count : run - i;");
    w_.line("KilnMatmulShape part = shape;");
    w_.line("part.batch = taken;");
    w_.open("if (" + call + "error, sizeof error) != 0)");
    // The first slice that fails tells why (the others' messages would race for args->error).
    w_.line("int none = 0;");
    w_.open("if (__atomic_compare_exchange_n(&multiplied, &none, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))");
    w_.line("for (int64_t e = 0; e + 1 < args->error_capacity && (args->error[e] = error[e]) != 0; ++e) {}");
    w_.close();
    w_.line("break;");
    w_.close();
    w_.line("b0 += taken;");
    w_.line("count -= taken;");
    w_.close();
    w_.close();
    w_.close(";");
    w_.line("kiln_parallel_for(parts, slices);");
    w_.line("omp_set_num_threads(omp_threads);");
    w_.close();
  } else {
    w_.open("else");
    emit_onednn_team("batch * M * N * K", std::to_string(kTeamMacs));
    w_.open("for (int64_t o = 0; o < batch / run && multiplied == 0; ++o)");
    w_.line("const int64_t i = 0;");
    w_.line("KilnMatmulShape part = shape;");
    w_.line("part.batch = run;");
    w_.line("multiplied = " + call + "args->error, args->error_capacity);");
    w_.close();
    w_.line("omp_set_num_threads(omp_threads);");
    w_.close();
  }
  w_.line("if (multiplied != 0) return 1;");
  // On the pool the epilogue runs on the pool; on OpenMP's team, on that team.
  if (!uses_pool()) on_team_ = "on_team";
  emit_matmul_epilogue(kernel.steps, c);
  on_team_.clear();
}

// In a module on the pool, opens `if (block > 0) { ... }` and returns true (the caller continues
// with its `else`; in a module on OpenMP's team it writes nothing and returns false): a batch of `batch` GEMMs
// of `rows` rows each (`shape`, `cache` and `multiplied` declared), at least kTeamMacs
// multiply-adds each, as blocks of rows on the pool's threads (kiln_matmul_rows in kiln_dnnl.h),
// so that no OpenMP team starts beside the pool; `locate` writes the body that sets GEMM bi's
// `*pa` and `*pc`; `bias` is the pointer of the vector oneDNN adds to every row, or nullptr.
bool CppSourcePrinter::emit_matmul_blocks(const Kernel& kernel, const std::string& rows, const std::string& batch,
                                          const std::string& b_pointer, const std::string& bias,
                                          const std::function<void()>& locate) {
  if (!uses_pool()) return false;  // a module on OpenMP's team runs its GEMMs there whole
  w_.line("const int64_t block = K > 0 && " + rows + " * N * K >= " + std::to_string(kTeamMacs) +
          " ? kiln_matmul_split_rows(" + rows + ", " + batch + ", kiln_pool_threads(), K, N) : 0;");
  w_.open("if (block > 0)");
  w_.line("const int omp_threads = omp_get_max_threads();");
  w_.line("omp_set_num_threads(1);");
  w_.open("const auto locate = [&](int64_t bi, const float** pa, float** pc)");
  w_.line("(void)bi;");
  locate();
  w_.close(";");
  w_.line("multiplied = kiln_matmul_rows(&cache, shape, block, " + batch + ", locate, " + b_pointer + ", " + bias + ", \"" + kernel.name +
          "\", args->error, args->error_capacity, [](int64_t n, const auto& body) { kiln_parallel_for(n, body); });");
  w_.line("omp_set_num_threads(omp_threads);");
  w_.close();
  return true;
}

// The batch coordinates of GEMM `bi` of a batch over C's first `batch_rank` dims, as `vars`
// (the last dim fastest).
void CppSourcePrinter::emit_batch_entry_vars(const StridedView& c, const std::vector<std::string>& vars,
                                             size_t batch_rank) {
  w_.line("int64_t rest = bi;");
  w_.line("(void)rest;");
  for (size_t i = batch_rank; i-- > 0;) {
    w_.line("const int64_t " + vars[i] + " = rest % (" + index_text(c.shape[i]) + ");");
    w_.line("rest /= (" + index_text(c.shape[i]) + ");");
  }
}

// `expr` with each add of C's load and the bias's (either order) replaced by C's load; `bare` set
// where C is loaded outside such an add, or `bias` is loaded at all but inside one.
static Expr without_bias_adds(const Expr& expr, int c_buffer, const SymInt& c_index, const Expr& bias_load, bool& bare) {
  auto is_c = [&](const Expr& e) { return plain_load_at(e, c_buffer, c_index); };
  auto is_bias = [&](const Expr& e) { return plain_load_at(e, bias_load->buffer, bias_load->index); };
  if (expr->kind == ExprKind::Binary && expr->op == LoopOp::add && expr->dtype == DType::f32) {
    if (is_c(expr->args[0]) && is_bias(expr->args[1])) return expr->args[0];
    if (is_bias(expr->args[0]) && is_c(expr->args[1])) return expr->args[1];
  }
  if (expr->kind == ExprKind::Load && (expr->buffer == c_buffer || expr->buffer == bias_load->buffer)) bare = true;
  return map_children(expr, [&](const Expr& child) {
    return child ? without_bias_adds(child, c_buffer, c_index, bias_load, bare) : child;
  });
}

CppSourcePrinter::MatmulEpilogue CppSourcePrinter::matmul_epilogue(const Kernel& kernel, const StridedView& c) {
  MatmulEpilogue result;
  result.destination = c.buffer;
  result.steps = kernel.steps;
  if (kernel.steps.empty()) return result;
  for (const KernelStep& step : kernel.steps)
    if (step.kind != KernelStep::Kind::StoreOuter || step.stash_buffer >= 0) return result;
  const size_t rank = c.shape.size();
  const std::vector<SymInt> vars = loop_vars(rank);
  const SymInt c_index = flat_index(vars, c.shape);
  // A buffer a step of this kernel stores exists only after the matmul.
  auto made_here = [&](int buffer) {
    return std::any_of(kernel.steps.begin(), kernel.steps.end(), [&](const KernelStep& step) {
      return std::find(step.outputs.begin(), step.outputs.end(), buffer) != step.outputs.end();
    });
  };
  // The bias: a load, in an add with C's, of an f32 buffer in memory along C's last dim alone.
  Expr bias_load;
  if (p_.buffer(c.buffer).dtype == DType::f32 && c.offset == SymInt(0) && c.strides == contiguous_strides(c.shape) &&
      only_steps_read(kernel, c.buffer)) {
    visit(kernel.steps[0].body, [&](const ExprNode& node) {
      if (bias_load || node.kind != ExprKind::Binary || node.op != LoopOp::add || node.dtype != DType::f32) return;
      for (int i = 0; i < 2; ++i) {
        const Expr& mine = node.args[size_t(i)];
        const Expr& other = node.args[size_t(1 - i)];
        if (!plain_load_at(mine, c.buffer, c_index)) continue;
        if (other->kind != ExprKind::Load || other->buffer == c.buffer || other->mask || !other->indirect.empty() ||
            p_.buffer(other->buffer).dtype != DType::f32 || in_register(other->buffer) || made_here(other->buffer))
          continue;
        std::optional<AffineIndex> form = affine_form(other->index, vars);
        if (!form || !(form->coefficients[rank - 1] == SymInt(1))) continue;
        bool along_columns = true;
        for (size_t d = 0; d + 1 < rank; ++d) along_columns = along_columns && form->coefficients[d] == SymInt(0);
        if (along_columns) bias_load = other;
      }
    });
  }
  if (bias_load) {
    bool bare = false;
    std::vector<KernelStep> stripped = kernel.steps;
    for (KernelStep& step : stripped) step.body = without_bias_adds(step.body, c.buffer, c_index, bias_load, bare);
    if (!bare) {
      std::optional<AffineIndex> form = affine_form(bias_load->index, vars);
      result.bias = buf(bias_load->buffer) + " + (" + index_text(form->offset) + ")";
      result.steps = std::move(stripped);
    }
  }
  Kernel left = kernel;
  left.steps = result.steps;
  // A residual whose bytes the memory plan gave the result (MemoryPlan::in_place_of), added and
  // nothing else: the matmul accumulates into that memory, and no loop follows.
  if (const KernelStep* step = pointwise_epilogue_step(left, c)) {
    auto operand = s_.memory.in_place_of.find(step->outputs[0]);
    if (operand != s_.memory.in_place_of.end() && adds_residual(step->body, c.buffer, operand->second, step->store_index)) {
      result.accumulate = true;
      result.destination = step->outputs[0];
      result.steps.clear();
      return result;
    }
  }
  // The sole step in place: the matmul writes its buffer, which it reads back at each point.
  if (const KernelStep* in_place = sole_pointwise_epilogue(left, c)) {
    KernelStep step = *in_place;
    result.destination = step.outputs[0];
    step.body = with_loads_redirected(step.body, c.buffer, step.outputs[0]);
    const bool copies = step.body->kind == ExprKind::Load && step.body->buffer == step.outputs[0] &&
                        !step.body->mask && step.body->indirect.empty() && step.body->index == step.store_index;
    result.steps.clear();
    if (!copies) result.steps.push_back(std::move(step));
  }
  return result;
}

void CppSourcePrinter::emit_matmul_epilogue_comment(const Kernel& kernel, const MatmulEpilogue& epilogue) {
  const int c = p_.nodes[size_t(kernel.extern_node)].extern_call.outputs.at(0).buffer;
  const bool bias = epilogue.bias != "nullptr", in_place = epilogue.destination != c;
  const std::string into = p_.buffer(epilogue.destination).name;
  if (epilogue.accumulate)
    w_.line(std::string("// the epilogue (") + (bias ? "a bias along the rows and " : "") +
            "a residual) in the matmul: " + into + " holds the residual, into which it accumulates" +
            (bias ? " (oneDNN's bias and sum post-op)" : " (oneDNN's sum post-op)"));
  else if (bias && epilogue.steps.empty())
    w_.line("// the epilogue (a bias along the rows) as oneDNN's bias: the matmul writes " + into);
  else if (bias)
    w_.line("// the epilogue's bias as oneDNN's bias; the rest " + std::string(in_place ? "in place: the matmul writes " + into
                                                                                      : "after it"));
  else if (in_place)
    w_.line("// the epilogue in place: the matmul writes " + into);
}

// A library matmul's epilogue (what is left of it: matmul_epilogue) over the output's own
// coordinates.
void CppSourcePrinter::emit_matmul_epilogue(const std::vector<KernelStep>& steps, const StridedView& c) {
  if (steps.empty()) return;
  emit_output_epilogue(steps, c.shape);
}

// The steps of an epilogue over an output of `shape` (its dims x0, x1, ...) rewritten over one
// variable that runs over all the output's elements, where every index of the steps walks the
// dims as one contiguous range (index coefficient of each dim = the next dim's times its size,
// size-1 dims aside); the variable is the last dim of more than one element. Nothing otherwise
// (a bias read along the channels only, a transposed store).
static std::optional<std::pair<std::vector<KernelStep>, size_t>> flattened_steps(const std::vector<KernelStep>& steps,
                                                                                  const SymShape& shape) {
  std::vector<size_t> walked;  // dims of more than one element (or of a symbolic size)
  std::vector<SymInt> vars;
  for (size_t d = 0; d < shape.size(); ++d) {
    vars.push_back(loop_var(d));
    if (!(shape[d] == SymInt(1))) walked.push_back(d);
  }
  if (walked.size() < 2) return std::nullopt;  // one loop already
  bool contiguous = true;
  auto check = [&](const SymInt& index) {
    std::optional<AffineIndex> form = contiguous ? affine_form(index, vars) : std::nullopt;
    if (!form) {
      contiguous = false;
      return index;
    }
    for (size_t j = 0; j + 1 < walked.size(); ++j) {
      const size_t outer = walked[j], inner = walked[j + 1];
      if (!(form->coefficients[outer] == form->coefficients[inner] * shape[inner])) contiguous = false;
    }
    return index;
  };
  for (const KernelStep& step : steps) {
    if (step.kind != KernelStep::Kind::StoreOuter) return std::nullopt;
    map_indices(step.body, check);
    check(step.store_index);
  }
  if (!contiguous) return std::nullopt;
  // x_last stays, as the flat variable; every other dim's variable is 0 (x_last * its coefficient
  // then reaches each element, as the dims' sum did).
  std::map<std::string, SymInt> zeros;
  for (size_t d = 0; d < shape.size(); ++d)
    if (d != walked.back()) zeros[vars[d].to_string()] = 0;
  std::vector<KernelStep> flat = steps;
  for (KernelStep& step : flat) {
    step.body = substitute(step.body, zeros);
    step.store_index = step.store_index.substitute(zeros);
  }
  return std::make_pair(std::move(flat), walked.back());
}

// A library call's epilogue (`steps`) over its output's coordinates, the last dim innermost; where
// the steps walk the output as one contiguous range (a residual add, a clamp of a dense output),
// one loop over all its elements, vectorized along it: a channels-last output of 24 channels ran
// a simd loop of 24 per pixel (16 and a remainder of 8), the pixel's coordinates divided out of
// the chunk index (bench/README.md, "Epilogues over a library call's output as one loop").
void CppSourcePrinter::emit_output_epilogue(const std::vector<KernelStep>& steps, const SymShape& shape) {
  const size_t rank = shape.size();
  interleave_simd_ = std::any_of(steps.begin(), steps.end(), [](const KernelStep& step) { return applies_expensive_op(step.body); });
  auto emit_steps = [&](const std::vector<KernelStep>& list) {
    int number = 0;
    for (const KernelStep& step : list) emit_point_step(step, number++);
  };
  if (std::optional<std::pair<std::vector<KernelStep>, size_t>> flat = flattened_steps(steps, shape)) {
    const SymInt count = numel(shape);
    parallel_loops(count, {LoopDim{loop_var(flat->second).to_string(), index_text(count)}}, " simd", /*simd=*/true,
                   [&] { emit_steps(flat->first); });
    interleave_simd_ = false;
    return;
  }
  const std::string collapse = rank > 2 ? " collapse(" + std::to_string(rank - 1) + ")" : "";
  parallel_loops(numel(shape), loop_dims(shape, rank - 1), collapse, false, [&] {
    std::string var = loop_var(rank - 1).to_string();
    simd_pragma();
    w_.open("for (int64_t " + var + " = 0; " + var + " < " + index_text(shape[rank - 1]) + "; ++" + var + ")");
    emit_steps(steps);
    w_.close();
  });
  interleave_simd_ = false;
}

void CppSourcePrinter::emit_folded_gemm(const Kernel& kernel, const StridedView& a, const StridedView& b,
                                        const StridedView& c, const SymInt& row_stride, const SymInt& batch,
                                        const std::string& t) {
  const size_t rank = c.shape.size();
  w_.line("// batch folded into M: one GEMM");
  w_.line("const int64_t rows = (" + index_text(batch) + ") * M;");
  w_.line("if (rows == 0 || N == 0) return 0;");
  w_.line("if (!kiln_blas_layout(" + index_text(row_stride) + ", " + index_text(a.strides[rank - 1]) + ", rows, K, &ta, &lda)) {");
  w_.line("  const char* parts[] = {\"" + kernel.name + ": an operand has no BLAS layout\"};");
  w_.line("  kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
  w_.line("  return 1;");
  w_.line("}");
  w_.line("if (K == 0) { for (int64_t i = 0; i < rows * N; ++i) " + buf(c.buffer) + "[" + index_text(c.offset) + " + i] = 0; }");
  w_.line("const " + t + "* pa = " + buf(a.buffer) + " + (" + index_text(a.offset) + ");");
  w_.line("const " + t + "* pb = " + buf(b.buffer) + " + (" + index_text(b.offset) + ");");
  w_.line(t + "* pc = " + buf(c.buffer) + " + (" + index_text(c.offset) + ");");
  const bool pool = uses_pool();
  if (pool) w_.open("auto gemm_entry = [&](int64_t, int64_t lo, int64_t hi, int64_t n0, int64_t n1)");
  if (kernel.steps.empty()) {
    if (pool) {
      w_.line("kiln_gemm_block(ta, tb, hi - lo, n0, n1, K, pa + lo * (" + index_text(row_stride) + "), lda, pb, ldb, pc + lo * N, N);");
      w_.close(";");
      emit_gemm_dispatch("1", "rows", batch * c.shape[rank - 2] * c.shape[rank - 1] * a.shape[rank - 1]);
    } else {
      w_.line("kiln_gemm_block(ta, tb, rows, 0, N, K, pa, lda, pb, ldb, pc, N);");
    }
    return;
  }
  std::string block = std::to_string(options_.gemm_block_rows);
  std::string lo = pool ? "lo" : "0", hi = pool ? "hi" : "rows";
  w_.open("for (int64_t m0 = " + lo + "; m0 < " + hi + "; m0 += " + block + ")");
  w_.line("const int64_t mb = " + hi + " - m0 < " + block + " ? " + hi + " - m0 : " + block + ";");
  if (pool) {
    w_.line("kiln_gemm_block(ta, tb, mb, n0, n1, K, pa + m0 * (" + index_text(row_stride) + "), lda, pb, ldb, pc + m0 * N, N);");
  } else {
    w_.line("kiln_gemm_block(ta, tb, mb, 0, N, K, pa + m0 * (" + index_text(row_stride) + "), lda, pb, ldb, pc + m0 * N, N);");
  }
  w_.open("for (int64_t folded = m0; folded < m0 + mb; ++folded)");
  // The epilogue is written over the output's own coordinates: unfold the row.
  w_.line("int64_t rest = folded;");
  std::string row = loop_var(rank - 2).to_string(), col = loop_var(rank - 1).to_string();
  w_.line("const int64_t " + row + " = rest % M;");
  w_.line("rest /= M;");
  for (size_t i = rank - 2; i-- > 0;) {
    std::string var = loop_var(i).to_string();
    w_.line("const int64_t " + var + " = rest % (" + index_text(c.shape[i]) + ");");
    w_.line("rest /= (" + index_text(c.shape[i]) + ");");
    w_.line("(void)" + var + ";");
  }
  w_.line("#pragma omp simd");
  w_.open("for (int64_t " + col + " = " + (pool ? "n0" : "0") + "; " + col + " < " + (pool ? "n1" : "N") + "; ++" + col + ")");
  int number = 0;
  for (const KernelStep& step : kernel.steps) emit_point_step(step, number++);
  w_.close();
  w_.close();
  w_.close();
  if (pool) {
    w_.close(";");
    emit_gemm_dispatch("1", "rows", batch * c.shape[rank - 2] * c.shape[rank - 1] * a.shape[rank - 1]);
  }
}

// A fallback node the backend computes itself (NativeFallback: codegen/cpp/kiln_sequence_kernels.h),
// its tasks of lines on the module's runner.
void CppSourcePrinter::emit_native_fallback(const LoopNode& node) {
  const ExternCall& call = node.extern_call;
  const NativeFallback& native = call.native;
  auto pointer = [&](const StridedView& view, const std::string& type) {
    return "(" + type + "*)(" + buf(view.buffer) + " + (" + index_text(view.offset) + "))";
  };
  auto element = [&](const StridedView& view) {
    DType dtype = p_.buffer(view.buffer).dtype;
    return dtype == DType::boolean ? std::string("unsigned char") : ctype(dtype);
  };
  const StridedView& in = call.inputs.at(0);
  w_.line("// " + native_fallback_text(native) + " (as its reference kernel computes it)");
  w_.line("const int64_t kiln_outer = " + index_text(native.outer) + ", kiln_length = " + index_text(native.length) +
          ", kiln_inner = " + index_text(native.inner) + ";");
  std::string task, tasks = "kiln_line_tasks(kiln_outer, kiln_inner, kiln_scan_lanes)",
                    work = "kiln_outer * kiln_length * kiln_inner";
  if (native.kind == NativeFallback::Kind::grid_sample) {
    const StridedView& grid = call.inputs.at(1);
    const SymShape& x = in.shape;
    w_.line("const KilnGridSample kiln_sample = {" + index_text(x[0]) + ", " + index_text(x[1]) + ", " + index_text(x[2]) +
            ", " + index_text(x[3]) + ", " + index_text(grid.shape[1]) + ", " + index_text(grid.shape[2]) + ", " +
            std::to_string(int(native.nearest)) + ", " + std::to_string(native.padding) + ", " +
            std::to_string(int(native.align_corners)) + ", " +
            std::to_string(int(p_.buffer(grid.buffer).dtype != DType::f64)) + "};");
    task = "kiln_grid_sample_tasks<" + element(in) + ", " + element(grid) + ">(" + pointer(in, "const " + element(in)) +
           ", " + pointer(grid, "const " + element(grid)) + ", " + pointer(call.outputs.at(0), element(in)) +
           ", &kiln_sample, kiln_t0, kiln_t1);";
    tasks = "kiln_sample.n * kiln_sample.out_h";
    // A point's coordinates and taps, in double, weigh as 32 copied points: [2, 1, 28, 28] (1568
    // points) on both threads 0.021 ms, on one 0.032.
    work = "32 * kiln_sample.n * kiln_sample.c * kiln_sample.out_h * kiln_sample.out_w";
  } else if (native.kind == NativeFallback::Kind::scatter || native.kind == NativeFallback::Kind::scatter_add) {
    const std::string t = element(in);
    const bool add = native.kind == NativeFallback::Kind::scatter_add;
    const std::string accumulator = !add ? t : is_floating(p_.buffer(in.buffer).dtype) ? "double" : "uint64_t";
    task = "kiln_scatter_tasks<" + t + ", " + accumulator + ">(" + pointer(in, "const " + t) + ", " +
           pointer(call.inputs.at(1), "const int64_t") + ", " + pointer(call.inputs.at(2), "const " + t) + ", " +
           pointer(call.outputs.at(0), t) + ", kiln_outer, kiln_length, " + index_text(native.index_length) +
           ", kiln_inner, " + (add ? "true" : "false") + ", kiln_t0, kiln_t1);";
    tasks = "kiln_scatter_tasks_count(kiln_outer, kiln_inner, kiln_scatter_lanes(kiln_length))";
  } else if (native.kind == NativeFallback::Kind::top_k) {
    tasks = "kiln_line_tasks(kiln_outer, kiln_inner, kiln_lanes)";
    const std::string t = element(in);
    task = "kiln_top_k_tasks<" + t + ">(" + pointer(in, "const " + t) + ", " + pointer(call.outputs.at(0), t) + ", " +
           pointer(call.outputs.at(1), "int64_t") + ", kiln_outer, kiln_length, kiln_inner, " + std::to_string(native.k) +
           ", " + (native.largest ? "true" : "false") + ", kiln_t0, kiln_t1);";
  } else {
    const DType out = p_.buffer(call.outputs.at(0).buffer).dtype;
    const std::string accumulator = is_floating(out) ? "double" : "uint64_t";
    task = "kiln_prefix_scan_tasks<" + element(in) + ", " + element(call.outputs.at(0)) + ", " + accumulator + ">(" +
           pointer(in, "const " + element(in)) + ", " + pointer(call.outputs.at(0), element(call.outputs.at(0))) +
           ", kiln_outer, kiln_length, kiln_inner, " +
           (native.kind == NativeFallback::Kind::cumulative_product ? "true" : "false") + ", kiln_t0, kiln_t1);";
  }
  w_.line("const int64_t kiln_tasks = " + tasks + ";");
  w_.line("auto kiln_chunk = [&](int64_t kiln_t0, int64_t kiln_t1) { " + task + " };");
  const std::string parallel = "kiln_tasks > 1 && " + work + " >= " + std::to_string(options_.parallel_threshold);
  if (!uses_runner()) {
    w_.line("#pragma omp parallel for if(" + parallel + ")");
    w_.line("for (int64_t kiln_t = 0; kiln_t < kiln_tasks; ++kiln_t) kiln_chunk(kiln_t, kiln_t + 1);");
  } else {
    runner_call("(kiln_tasks, kiln_chunk, " + parallel + ");");
  }
}

void CppSourcePrinter::emit_fallback(const LoopNode& node) {
  const ExternCall& call = node.extern_call;
  if (call.native.kind != NativeFallback::Kind::none) {
    emit_native_fallback(node);
    return;
  }
  int index = int(module_.fallbacks.size());
  module_.fallbacks.push_back(call.graph_node);
  auto describe = [&](const std::vector<StridedView>& views, const std::string& name) {
    w_.line("KilnTensorDesc " + name + "[" + std::to_string(std::max<size_t>(views.size(), 1)) + "];");
    for (size_t i = 0; i < views.size(); ++i) {
      const StridedView& v = views[i];
      std::string sizes = name + "_sizes" + std::to_string(i), strides = name + "_strides" + std::to_string(i);
      std::string size_list, stride_list;
      for (size_t d = 0; d < v.shape.size(); ++d) {
        size_list += (d ? ", " : "") + index_text(v.shape[d]);
        stride_list += (d ? ", " : "") + index_text(v.strides[d]);
      }
      size_t n = std::max<size_t>(v.shape.size(), 1);
      w_.line("const int64_t " + sizes + "[" + std::to_string(n) + "] = {" + (size_list.empty() ? "0" : size_list) + "};");
      w_.line("const int64_t " + strides + "[" + std::to_string(n) + "] = {" + (stride_list.empty() ? "0" : stride_list) + "};");
      std::string item = name + "[" + std::to_string(i) + "]";
      w_.line(item + ".data = (void*)(" + buf(v.buffer) + " + (" + index_text(v.offset) + "));");
      w_.line(item + ".sizes = " + sizes + ";");
      w_.line(item + ".strides = " + strides + ";");
      w_.line(item + ".dtype = " + std::to_string(int(p_.buffer(v.buffer).dtype)) + ";");
      w_.line(item + ".rank = " + std::to_string(v.shape.size()) + ";");
    }
  };
  describe(call.inputs, "in");
  describe(call.outputs, "out");
  w_.open("if (args->fallback == nullptr)");
  w_.line("const char* parts[] = {\"node " + call.graph_node + " runs on the reference kernel, and no fallback handler was given\"};");
  w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
  w_.line("return 1;");
  w_.close();
  w_.line("return args->fallback(args->fallback_state, " + std::to_string(index) + ", in, " +
          std::to_string(call.inputs.size()) + ", out, " + std::to_string(call.outputs.size()) +
          ", args->error, args->error_capacity);");
}

}  // namespace kiln::codegen
