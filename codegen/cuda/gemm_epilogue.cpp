// Recognising the GEMM epilogues cuBLASLt fuses. See codegen/cuda/gemm_epilogue.h.
#include "codegen/cuda/gemm_epilogue.h"

#include <algorithm>

namespace kiln::codegen::cuda {

namespace {

// The GELU (tanh) constants of passes/decompositions/activations.cpp.
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;
constexpr double kGeluTanhCoefficient = 0.044715;
// Bias offsets keep the bias pointer 16-byte aligned (f32: a multiple of 4 elements).
constexpr int64_t kBiasOffsetMultiple = 4;

bool is_f32(const Expr& e) { return e && e->dtype == DType::f32; }

bool is_constant(const Expr& e, double value) {
  return is_f32(e) && e->kind == ExprKind::Constant && float(e->float_value) == float(value);
}

bool is_op(const Expr& e, ExprKind kind, LoopOp op, size_t arity) {
  return is_f32(e) && e->kind == kind && e->op == op && e->args.size() == arity;
}

// Binary `op` of e with arguments matching (first, second) in either order.
template <typename First, typename Second>
bool commutative(const Expr& e, LoopOp op, const First& first, const Second& second) {
  if (!is_op(e, ExprKind::Binary, op, 2)) return false;
  return (first(e->args[0]) && second(e->args[1])) || (first(e->args[1]) && second(e->args[0]));
}

// Matches v = gemm[point] (+ bias[x_last + c]); every occurrence of v in an expression must
// match with the same bias.
class LinearMatcher {
 public:
  LinearMatcher(const ScheduledProgram& scheduled, const StridedView& gemm_out)
      : scheduled_(scheduled), gemm_out_(gemm_out), rank_(gemm_out.shape.size()),
        point_(flat_index(loop_vars(rank_), gemm_out.shape)) {}

  bool operator()(const Expr& e) {
    std::optional<StridedView> bias;
    bool matched = is_gemm_load(e) || commutative(e, LoopOp::add, [&](const Expr& a) { return is_gemm_load(a); },
                                                  [&](const Expr& b) { return (bias = bias_view(b)).has_value(); });
    if (!matched) return false;
    if (!seen_) {
      seen_ = true;
      bias_ = bias;
      return true;
    }
    return same_bias(bias, bias_);
  }

  const std::optional<StridedView>& bias() const { return bias_; }

 private:
  static bool plain_load(const Expr& e) {
    return is_f32(e) && e->kind == ExprKind::Load && e->indirect.empty() && !e->mask;
  }

  bool is_gemm_load(const Expr& e) const { return plain_load(e) && e->buffer == gemm_out_.buffer && e->index == point_; }

  std::optional<StridedView> bias_view(const Expr& e) const {
    if (!plain_load(e) || e->buffer == gemm_out_.buffer) return std::nullopt;
    const Buffer& buffer = scheduled_.program.buffer(e->buffer);
    const std::vector<int>& registers = scheduled_.register_buffers;
    if (buffer.dtype != DType::f32 || std::find(registers.begin(), registers.end(), e->buffer) != registers.end()) {
      return std::nullopt;
    }
    std::optional<int64_t> offset = (e->index - loop_var(rank_ - 1)).maybe_constant();
    if (!offset || *offset < 0 || *offset % kBiasOffsetMultiple != 0) return std::nullopt;
    return StridedView{e->buffer, SymInt(*offset), {gemm_out_.shape.back()}, {SymInt(1)}};
  }

  static bool same_bias(const std::optional<StridedView>& a, const std::optional<StridedView>& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a || (a->buffer == b->buffer && a->offset == b->offset);
  }

  const ScheduledProgram& scheduled_;
  const StridedView& gemm_out_;
  size_t rank_;
  SymInt point_;
  bool seen_ = false;
  std::optional<StridedView> bias_;
};

// 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), as the decomposition writes it and the scheduler
// spells it (1 + tanh(a) as 2 sigmoid(2a): codegen/schedule_tanh_complements.cpp), with v matched by
// `linear` (products and sums in either order).
bool is_gelu_tanh(const Expr& e, LinearMatcher& linear) {
  auto v = [&](const Expr& x) { return linear(x); };
  auto constant = [](double value) { return [value](const Expr& x) { return is_constant(x, value); }; };
  auto square = [&](const Expr& x) { return commutative(x, LoopOp::mul, v, v); };
  auto cube = [&](const Expr& x) { return commutative(x, LoopOp::mul, square, v); };
  auto cubic_term = [&](const Expr& x) { return commutative(x, LoopOp::mul, cube, constant(kGeluTanhCoefficient)); };
  auto polynomial = [&](const Expr& x) { return commutative(x, LoopOp::add, v, cubic_term); };
  auto scaled = [&](const Expr& x) { return commutative(x, LoopOp::mul, polynomial, constant(kSqrtTwoOverPi)); };
  auto doubled = [&](const Expr& x) { return commutative(x, LoopOp::mul, scaled, constant(2.0)); };
  auto sigmoid_of = [&](const Expr& x) { return is_op(x, ExprKind::Unary, LoopOp::sigmoid, 1) && doubled(x->args[0]); };
  auto one_plus = [&](const Expr& x) { return commutative(x, LoopOp::mul, constant(2.0), sigmoid_of); };
  auto half_v = [&](const Expr& x) { return commutative(x, LoopOp::mul, v, constant(0.5)); };
  return commutative(e, LoopOp::mul, half_v, one_plus);
}

// Whether a kernel other than `kernel` reads `buffer` (in a step or as a library call's input).
bool read_by_another_kernel(const ScheduledProgram& scheduled, int kernel, int buffer) {
  for (size_t k = 0; k < scheduled.kernels.size(); ++k) {
    const Kernel& other = scheduled.kernels[k];
    if (int(k) == kernel) continue;
    for (const KernelStep& step : other.steps) {
      std::vector<int> loads = loaded_buffers(step.body);
      if (std::find(loads.begin(), loads.end(), buffer) != loads.end()) return true;
    }
    if (other.kind == KernelKind::Extern) {
      for (const StridedView& input : scheduled.program.nodes[size_t(other.extern_node)].extern_call.inputs) {
        if (input.buffer == buffer) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<FusedGemmEpilogue> fused_gemm_epilogue(const ScheduledProgram& scheduled, int kernel_index) {
  const LoopProgram& p = scheduled.program;
  const Kernel& kernel = scheduled.kernels.at(size_t(kernel_index));
  if (kernel.kind != KernelKind::Extern || kernel.steps.size() != 1) return std::nullopt;
  const ExternCall& call = p.nodes.at(size_t(kernel.extern_node)).extern_call;
  if (call.kind != ExternKind::Gemm) return std::nullopt;
  const StridedView& out = call.outputs.at(0);
  for (const StridedView& view : {call.inputs.at(0), call.inputs.at(1), out}) {
    if (p.buffer(view.buffer).dtype != DType::f32) return std::nullopt;
  }
  const Buffer& gemm_buffer = p.buffer(out.buffer);
  if (gemm_buffer.kind != BufferKind::Intermediate || !(out.offset == SymInt(0)) ||
      read_by_another_kernel(scheduled, kernel_index, out.buffer)) {
    return std::nullopt;
  }

  const KernelStep& step = kernel.steps[0];
  if (step.kind != KernelStep::Kind::StoreOuter || step.outputs.size() != 1 || !is_f32(step.body)) return std::nullopt;
  const int output = step.outputs[0];
  if (p.buffer(output).dtype != DType::f32) return std::nullopt;
  // The fused call writes the epilogue's output through the GEMM output's view (contiguous, at
  // offset 0: lowering's contract): the step must store each point where the GEMM keeps it.
  if (!(step.store_index == flat_index(loop_vars(out.shape.size()), out.shape))) return std::nullopt;

  FusedGemmEpilogue fused;
  fused.output = output;
  LinearMatcher linear(scheduled, out);
  const Expr& body = step.body;
  if (is_op(body, ExprKind::Unary, LoopOp::relu, 1)) {
    if (!linear(body->args[0])) return std::nullopt;
    fused.activation = GemmActivation::relu;
  } else if (is_gelu_tanh(body, linear)) {
    fused.activation = GemmActivation::gelu_tanh;
  } else if (!linear(body) || !linear.bias()) {
    return std::nullopt;  // not a form cuBLASLt runs, or no epilogue worth a fused call
  }
  fused.bias = linear.bias();
  return fused;
}

std::string epilogue_name(const FusedGemmEpilogue& epilogue) {
  std::string activation = epilogue.activation == GemmActivation::relu        ? "relu"
                           : epilogue.activation == GemmActivation::gelu_tanh ? "gelu_tanh"
                                                                              : "";
  if (!epilogue.bias) return activation;
  return activation.empty() ? "bias" : "bias_" + activation;
}

}  // namespace kiln::codegen::cuda
