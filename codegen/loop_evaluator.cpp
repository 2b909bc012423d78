// The scalar evaluator of the loop IR (codegen/loop_evaluator.h): buffers, symbol binding,
// expression semantics (the interpreter's; each op's from its row of the loop op table,
// codegen/loop_ops.h), and the node loops.
#include "codegen/loop_evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "kiln/error.h"
#include "runtime/philox.h"

namespace kiln::codegen {
namespace {

// A value of an expression: `f` for floating dtypes, `i` for integer and bool dtypes.
struct Value {
  double f = 0;
  int64_t i = 0;
};

// The store rules of runtime/tensor.cpp, through a scratch element.
double round_to(DType dtype, double value) {
  alignas(8) unsigned char scratch[8];
  store_double(dtype, scratch, value);
  return load_double(dtype, scratch);
}
int64_t wrap_to(DType dtype, int64_t value) {
  alignas(8) unsigned char scratch[8];
  store_int(dtype, scratch, value);
  return load_int(dtype, scratch);
}

// `value` of dtype `from` converted to `to` (float to integer truncates and saturates to
// int64 before wrapping, to bool tests != 0; NaN is true).
Value convert(Value value, DType from, DType to) {
  Value result;
  if (is_floating(from)) {
    if (is_floating(to)) {
      result.f = round_to(to, value.f);
    } else if (to == DType::boolean) {
      result.i = value.f != 0.0;
    } else {
      alignas(8) unsigned char scratch[8];
      store_double(to, scratch, value.f);
      result.i = load_int(to, scratch);
    }
  } else if (is_floating(to)) {
    // u64 values are held as their int64 bits: those from 2^63 up are negative there.
    result.f = round_to(to, from == DType::u64 ? double(uint64_t(value.i)) : double(value.i));
  } else {
    result.i = wrap_to(to, value.i);
  }
  return result;
}

Value normalized(DType dtype, Value value) {
  if (is_floating(dtype)) value.f = round_to(dtype, value.f);
  else value.i = wrap_to(dtype, value.i);
  return value;
}

// ---------------------------------------------------------------- ops

// A Unary or Binary op on arguments of `dtype` (unary ops ignore `b`), by its row of the loop op
// table: floating arguments in double, integer and bool arguments in int64.
Value apply_op(LoopOp op, DType dtype, Value a, Value b) {
  const LoopOpInfo& info = loop_op_info(op);
  Value r;
  if (is_floating(dtype)) {
    if (!info.on_float)
      throw InternalError("loop evaluator: " + std::string(info.name) + " on " + std::string(dtype_name(dtype)));
    double y = info.on_float(a.f, b.f);
    if (info.result == LoopResultDType::boolean) r.i = y != 0.0;
    else r.f = y;
  } else {
    if (!info.on_int)
      throw InternalError("loop evaluator: " + std::string(info.name) + " on " + std::string(dtype_name(dtype)));
    r.i = info.on_int(a.i, b.i);
  }
  return r;
}

// ---------------------------------------------------------------- the machine

class Machine {
 public:
  Machine(const LoopProgram& program, const ir::Graph& graph, const std::map<std::string, Tensor>& inputs)
      : program_(program), graph_(graph), inputs_(inputs) {}

  std::vector<Tensor> run() {
    bind_symbols();
    allocate();
    for (const LoopNode& node : program_.nodes) {
      switch (node.kind) {
        case NodeKind::Pointwise: run_pointwise(node); break;
        case NodeKind::Reduction: run_reduction(node); break;
        case NodeKind::Extern:
          if (node.extern_call.kind == ExternKind::Gemm) run_gemm(node);
          else if (node.extern_call.kind == ExternKind::Convolution) run_convolution(node);
          else run_fallback(node);
          break;
      }
    }
    std::vector<Tensor> outputs;
    for (int id : program_.outputs) outputs.push_back(buffers_.at(size_t(id)));
    return outputs;
  }

 private:
  const Tensor& input_tensor(const Buffer& buffer) const {
    auto found = inputs_.find(buffer.source);
    if (found == inputs_.end()) fail("loop evaluator: missing input '", buffer.source, "'");
    return found->second;
  }

  void bind_symbols() {
    for (const LoopProgram::SymbolSource& source : program_.symbol_sources) {
      const Buffer& buffer = program_.buffer(program_.inputs.at(size_t(source.input)));
      const Tensor& tensor = input_tensor(buffer);
      if (source.dim >= tensor.dim())
        fail("loop evaluator: input '", buffer.source, "' has rank ", tensor.dim(), ", expected ", buffer.shape.size());
      bindings_[source.symbol] = tensor.sizes()[size_t(source.dim)];
    }
    for (const LoopProgram::SymbolRange& range : program_.symbol_ranges) {
      int64_t value = bindings_.at(range.symbol);
      if (value < range.min || (range.max && value > *range.max))
        fail("loop evaluator: ", range.symbol, " is ", value, ", outside its range [", range.min, ", ",
             range.max ? std::to_string(*range.max) : std::string("int_oo"), "]");
    }
  }

  Sizes evaluate_shape(const SymShape& shape) const {
    Sizes sizes;
    for (const SymInt& size : shape) sizes.push_back(size.evaluate(bindings_));
    return sizes;
  }

  void allocate() {
    for (const Buffer& buffer : program_.buffers) {
      Sizes sizes = evaluate_shape(buffer.shape);
      Tensor tensor;
      if (buffer.kind == BufferKind::Input) {
        const Tensor& given = input_tensor(buffer);
        if (given.dtype() != buffer.dtype || given.sizes() != sizes)
          fail("loop evaluator: input '", buffer.source, "' is ", dtype_name(given.dtype()),
               sizes_to_string(given.sizes()), ", expected ", dtype_name(buffer.dtype), sizes_to_string(sizes));
        tensor = given.contiguous();
      } else if (buffer.kind == BufferKind::Parameter) {
        const Tensor* value = graph_.parameter(buffer.source);
        if (!value) fail("loop evaluator: no parameter named '", buffer.source, "' in the graph");
        if (value->dtype() != buffer.dtype || value->sizes() != sizes)
          fail("loop evaluator: parameter '", buffer.source, "' is ", dtype_name(value->dtype()),
               sizes_to_string(value->sizes()), ", expected ", dtype_name(buffer.dtype), sizes_to_string(sizes));
        tensor = value->contiguous();
      } else {
        tensor = Tensor::empty(sizes, buffer.dtype);
      }
      buffers_.push_back(tensor);
      numels_.push_back(tensor.numel());
    }
  }

  // ---- elements

  char* element_address(int buffer, int64_t index, const char* what) const {
    const Tensor& tensor = buffers_.at(size_t(buffer));
    if (index < 0 || index >= numels_[size_t(buffer)])
      throw InternalError("loop evaluator: " + std::string(what) + " of buffer '" + program_.buffer(buffer).name +
                          "' at index " + std::to_string(index) + ", outside its " +
                          std::to_string(numels_[size_t(buffer)]) + " elements");
    return static_cast<char*>(tensor.data_ptr()) + index * int64_t(tensor.element_size());
  }

  Value read(int buffer, int64_t index) const {
    DType dtype = program_.buffer(buffer).dtype;
    const char* address = element_address(buffer, index, "load");
    Value value;
    if (is_floating(dtype)) value.f = load_double(dtype, address);
    else value.i = load_int(dtype, address);
    return value;
  }

  void write(int buffer, int64_t index, Value value, DType value_dtype) {
    DType dtype = program_.buffer(buffer).dtype;
    Value stored = convert(value, value_dtype, dtype);
    char* address = element_address(buffer, index, "store");
    if (is_floating(dtype)) store_double(dtype, address, stored.f);
    else store_int(dtype, address, stored.i);
  }

  int64_t index_of(const SymInt& index) const { return index.evaluate(bindings_); }

  // ---- expressions

  Value eval(const ExprNode& e) {
    switch (e.kind) {
      case ExprKind::Constant: {
        Value value;
        value.f = e.float_value;
        value.i = e.int_value;
        return normalized(e.dtype, value);
      }
      case ExprKind::Load: return eval_load(e);
      case ExprKind::IndexValue: {
        Value value;
        value.i = index_of(e.index);
        return convert(value, DType::i64, e.dtype);
      }
      case ExprKind::Unary: {
        const ExprNode& arg = *e.args.at(0);
        return normalized(e.dtype, apply_op(e.op, arg.dtype, eval(arg), Value{}));
      }
      case ExprKind::Binary: {
        const ExprNode& a = *e.args.at(0);
        const ExprNode& b = *e.args.at(1);
        KILN_CHECK(a.dtype == b.dtype, "loop evaluator: binary ", loop_op_name(e.op), " of ", dtype_name(a.dtype), " and ",
                   dtype_name(b.dtype), " (operands must share the computation dtype)");
        return normalized(e.dtype, apply_op(e.op, a.dtype, eval(a), eval(b)));
      }
      case ExprKind::Where: {
        const ExprNode& condition = *e.args.at(0);
        Value truth = eval(condition);
        bool taken = is_floating(condition.dtype) ? truth.f != 0.0 : truth.i != 0;
        const ExprNode& chosen = *e.args.at(taken ? 1 : 2);
        return convert(eval(chosen), chosen.dtype, e.dtype);
      }
      case ExprKind::Cast: {
        const ExprNode& arg = *e.args.at(0);
        return convert(eval(arg), arg.dtype, e.dtype);
      }
      case ExprKind::Random: {
        uint64_t index = uint64_t(index_of(e.index));
        float drawn = e.normal ? philox_normal(uint64_t(e.seed), uint64_t(e.offset), index)
                               : philox_uniform(uint64_t(e.seed), uint64_t(e.offset), index);
        Value value;
        value.f = drawn;
        return convert(value, DType::f32, e.dtype);
      }
    }
    throw InternalError("loop evaluator: unknown expression kind");
  }

  Value eval_load(const ExprNode& e) {
    if (e.mask) {
      Value truth = eval(*e.mask);
      bool on = is_floating(e.mask->dtype) ? truth.f != 0.0 : truth.i != 0;
      if (!on) {
        KILN_CHECK(e.other != nullptr, "loop evaluator: masked load without `other`");
        return convert(eval(*e.other), e.other->dtype, e.dtype);
      }
    }
    int64_t index = index_of(e.index);
    for (const IndirectTerm& term : e.indirect) {
      const ExprNode& value = *term.value;
      Value position = convert(eval(value), value.dtype, DType::i64);
      int64_t size = index_of(term.size);
      int64_t at = position.i < 0 ? position.i + size : position.i;
      if (at < 0 || at >= size)
        fail("loop evaluator: index ", position.i, " is out of bounds for dimension of size ", size, " (buffer '",
             program_.buffer(e.buffer).name, "')");
      index += at * index_of(term.stride);
    }
    return convert(read(e.buffer, index), program_.buffer(e.buffer).dtype, e.dtype);
  }

  // ---- loops

  // Binds x0.. (or r0..) to every point of `ranges` in row-major order, calling fn(flat).
  void for_each_point(const SymShape& ranges, char prefix, const std::function<void(int64_t)>& fn) {
    Sizes sizes = evaluate_shape(ranges);
    std::vector<int64_t*> slots;
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t& slot = bindings_[std::string(1, prefix) + std::to_string(d)];
      slot = 0;
      slots.push_back(&slot);
    }
    for (int64_t size : sizes)
      if (size == 0) return;
    int64_t flat = 0;
    while (true) {
      fn(flat++);
      int64_t d = int64_t(sizes.size()) - 1;
      while (d >= 0) {
        if (++*slots[size_t(d)] < sizes[size_t(d)]) break;
        *slots[size_t(d)] = 0;
        --d;
      }
      if (d < 0) return;
    }
  }

  void run_pointwise(const LoopNode& node) {
    KILN_CHECK(node.outputs.size() == 1, "loop evaluator: pointwise node ", node.name, " writes ", node.outputs.size(),
               " buffers");
    for_each_point(node.ranges, 'x', [&](int64_t flat) { write(node.outputs[0], flat, eval(*node.body), node.body->dtype); });
  }

  void run_reduction(const LoopNode& node) {
    DType dtype = node.body->dtype;
    bool floating = is_floating(dtype);
    for_each_point(node.ranges, 'x', [&](int64_t flat) {
      std::vector<Value> values;
      for_each_point(node.reduction_ranges, 'r', [&](int64_t) { values.push_back(eval(*node.body)); });
      switch (node.reduction) {
        case ReductionKind::Sum:
        case ReductionKind::Prod: {
          bool product = node.reduction == ReductionKind::Prod;
          Value total;
          if (floating) {
            total.f = product ? 1.0 : 0.0;
            for (const Value& v : values) total.f = product ? total.f * v.f : total.f + v.f;
          } else {
            uint64_t accumulator = product ? 1 : 0;
            for (const Value& v : values) accumulator = product ? accumulator * uint64_t(v.i) : accumulator + uint64_t(v.i);
            total.i = wrap_to(dtype, int64_t(accumulator));
          }
          write(node.outputs.at(0), flat, total, floating ? DType::f64 : dtype);
          break;
        }
        case ReductionKind::Max:
        case ReductionKind::Min: {
          bool is_max = node.reduction == ReductionKind::Max;
          Value best;
          if (floating) {
            best.f = is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
            // NaN-propagating, as the maximum and minimum ops.
            FloatEvaluator combine = loop_op_info(is_max ? LoopOp::maximum : LoopOp::minimum).on_float;
            for (const Value& v : values) best.f = combine(best.f, v.f);
          } else {
            best.i = is_max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
            for (const Value& v : values) best.i = is_max ? std::max(best.i, v.i) : std::min(best.i, v.i);
          }
          write(node.outputs.at(0), flat, best, floating ? DType::f64 : DType::i64);
          break;
        }
        case ReductionKind::ArgMax:
        case ReductionKind::ArgMin: {
          bool is_max = node.reduction == ReductionKind::ArgMax;
          size_t best = 0;
          for (size_t k = 1; k < values.size(); ++k) {
            bool better;
            if (floating) {
              double value = values[k].f, current = values[best].f;
              if (std::isnan(current)) break;
              better = std::isnan(value) || (is_max ? value > current : value < current);
            } else {
              better = is_max ? values[k].i > values[best].i : values[k].i < values[best].i;
            }
            if (better) best = k;
          }
          Value index;
          index.i = int64_t(best);
          write(node.outputs.at(0), flat, index, DType::i64);
          break;
        }
        case ReductionKind::Welford: {
          KILN_CHECK(floating && node.outputs.size() == 2, "loop evaluator: Welford node ", node.name,
                     " needs a floating body and two outputs");
          double sum = 0;
          for (const Value& v : values) sum += v.f;
          Value mean, m2;
          mean.f = sum / double(values.size());
          for (const Value& v : values) m2.f += (v.f - mean.f) * (v.f - mean.f);
          // As Welford's updates in compiled code and PyTorch: the value after an infinity
          // has the delta inf - inf, so the mean is NaN unless the only infinity comes last.
          for (size_t i = 0; i + 1 < values.size(); ++i)
            if (std::isinf(values[i].f)) mean.f = std::numeric_limits<double>::quiet_NaN();
          write(node.outputs[0], flat, mean, DType::f64);
          write(node.outputs[1], flat, m2, DType::f64);
          break;
        }
      }
    });
  }

  struct EvaluatedView {
    int buffer;
    int64_t offset;
    Sizes sizes, strides;
  };

  EvaluatedView evaluate_view(const StridedView& view, const std::string& node) {
    EvaluatedView result{view.buffer, index_of(view.offset), evaluate_shape(view.shape), evaluate_shape(view.strides)};
    KILN_CHECK(result.sizes.size() == result.strides.size(), "loop evaluator: view of ", node, " has ",
               result.sizes.size(), " sizes and ", result.strides.size(), " strides");
    int64_t lowest = result.offset, highest = result.offset;
    bool empty = false;
    for (size_t d = 0; d < result.sizes.size(); ++d) {
      if (result.sizes[d] == 0) empty = true;
      int64_t reach = (result.sizes[d] - 1) * result.strides[d];
      (reach >= 0 ? highest : lowest) += reach;
    }
    if (!empty && (lowest < 0 || highest >= numels_[size_t(view.buffer)]))
      throw InternalError("loop evaluator: a view of buffer '" + program_.buffer(view.buffer).name + "' in " + node +
                          " reaches elements " + std::to_string(lowest) + ".." + std::to_string(highest) +
                          " outside its " + std::to_string(numels_[size_t(view.buffer)]));
    return result;
  }

  void run_gemm(const LoopNode& node) {
    const ExternCall& call = node.extern_call;
    KILN_CHECK(call.inputs.size() == 2 && call.outputs.size() == 1, "loop evaluator: gemm ", node.name, " arity");
    EvaluatedView a = evaluate_view(call.inputs[0], node.name), b = evaluate_view(call.inputs[1], node.name);
    EvaluatedView out = evaluate_view(call.outputs[0], node.name);
    size_t rank = out.sizes.size();
    KILN_CHECK(rank >= 2 && a.sizes.size() == rank && b.sizes.size() == rank, "loop evaluator: gemm ", node.name,
               " ranks");
    int64_t m = out.sizes[rank - 2], n = out.sizes[rank - 1], k = a.sizes[rank - 1];
    KILN_CHECK(a.sizes[rank - 2] == m && b.sizes[rank - 2] == k && b.sizes[rank - 1] == n, "loop evaluator: gemm ",
               node.name, " shapes do not fit");
    Sizes batch(out.sizes.begin(), out.sizes.end() - 2);
    for (size_t d = 0; d < batch.size(); ++d)
      KILN_CHECK(a.sizes[d] == batch[d] && b.sizes[d] == batch[d], "loop evaluator: gemm ", node.name, " batch dims");
    for_each_index(batch, [&](std::span<const int64_t> index) {
      int64_t a_base = a.offset, b_base = b.offset, out_base = out.offset;
      for (size_t d = 0; d < index.size(); ++d) {
        a_base += index[d] * a.strides[d];
        b_base += index[d] * b.strides[d];
        out_base += index[d] * out.strides[d];
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          Value sum;
          for (int64_t p = 0; p < k; ++p)
            sum.f += read(a.buffer, a_base + i * a.strides[rank - 2] + p * a.strides[rank - 1]).f *
                     read(b.buffer, b_base + p * b.strides[rank - 2] + j * b.strides[rank - 1]).f;
          write(out.buffer, out_base + i * out.strides[rank - 2] + j * out.strides[rank - 1], sum, DType::f64);
        }
    });
  }

  // ExternKind::Convolution (codegen/loop_ir.h): channels-last input and output, sums in double;
  // a 1-d or 2-d one walked as the 3-d one of depth 1.
  void run_convolution(const LoopNode& node) {
    const ExternCall call = convolution_as_2d(node.extern_call);
    KILN_CHECK((call.inputs.size() == 2 || call.inputs.size() == 3) && call.outputs.size() == 1,
               "loop evaluator: convolution ", node.name, " arity");
    EvaluatedView in = evaluate_view(call.inputs[0], node.name), weight = evaluate_view(call.inputs[1], node.name);
    EvaluatedView out = evaluate_view(call.outputs[0], node.name);
    const size_t rank = in.sizes.size();
    KILN_CHECK((rank == 4 || rank == 5) && weight.sizes.size() == rank && out.sizes.size() == rank,
               "loop evaluator: convolution ", node.name, " ranks");
    ConvolutionGeometry g = call.convolution;
    // [N, (D,) H, W, C] and [O, C/groups, (KD,) KH, KW] as 3-d: a depth of 1 inserted where missing.
    auto with_depth = [&](EvaluatedView& v, size_t at) {
      if (rank == 5) return;
      v.sizes.insert(v.sizes.begin() + std::ptrdiff_t(at), 1);
      v.strides.insert(v.strides.begin() + std::ptrdiff_t(at), 0);
    };
    with_depth(in, 1);
    with_depth(out, 1);
    with_depth(weight, 2);
    if (rank == 4) {
      g.stride.insert(g.stride.begin(), 1);
      g.padding.insert(g.padding.begin(), 0);
      g.dilation.insert(g.dilation.begin(), 1);
    }
    const int64_t batch = in.sizes[0];
    const int64_t out_channels = out.sizes[4], group_in = weight.sizes[1], group_out = out_channels / g.groups;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t od = 0; od < out.sizes[1]; ++od)
        for (int64_t oh = 0; oh < out.sizes[2]; ++oh)
          for (int64_t ow = 0; ow < out.sizes[3]; ++ow)
            for (int64_t o = 0; o < out_channels; ++o) {
              Value sum;
              if (call.inputs.size() == 3) {
                EvaluatedView bias = evaluate_view(call.inputs[2], node.name);
                sum.f = read(bias.buffer, bias.offset + o * bias.strides[0]).f;
              }
              const int64_t group = o / group_out;
              for (int64_t c = 0; c < group_in; ++c)
                for (int64_t kd = 0; kd < weight.sizes[2]; ++kd)
                  for (int64_t kh = 0; kh < weight.sizes[3]; ++kh)
                    for (int64_t kw = 0; kw < weight.sizes[4]; ++kw) {
                      const int64_t d = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
                      const int64_t h = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
                      const int64_t w = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2];
                      if (d < 0 || d >= in.sizes[1] || h < 0 || h >= in.sizes[2] || w < 0 || w >= in.sizes[3]) continue;
                      const int64_t channel = group * group_in + c;
                      double x = read(in.buffer, in.offset + n * in.strides[0] + d * in.strides[1] + h * in.strides[2] +
                                                     w * in.strides[3] + channel * in.strides[4]).f;
                      double k = read(weight.buffer, weight.offset + o * weight.strides[0] + c * weight.strides[1] +
                                                         kd * weight.strides[2] + kh * weight.strides[3] +
                                                         kw * weight.strides[4]).f;
                      sum.f += x * k;
                    }
              write(out.buffer, out.offset + n * out.strides[0] + od * out.strides[1] + oh * out.strides[2] +
                                    ow * out.strides[3] + o * out.strides[4], sum, DType::f64);
            }
  }

  Tensor view_tensor(const StridedView& view, const std::string& node) {
    EvaluatedView evaluated = evaluate_view(view, node);
    const Tensor& buffer = buffers_.at(size_t(view.buffer));
    return Tensor(buffer.storage(), evaluated.sizes, evaluated.strides, buffer.storage_offset() + evaluated.offset,
                  buffer.dtype());
  }

  void run_fallback(const LoopNode& node) {
    const ExternCall& call = node.extern_call;
    const ir::Node* graph_node = graph_.find(call.graph_node);
    if (!graph_node) throw InternalError("loop evaluator: fallback of unknown graph node '" + call.graph_node + "'");
    ir::OpCall op_call = ir::OpCall::of(*graph_node);
    // ir::tensor_arguments asks for each tensor argument occurrence in order; the extern's
    // inputs list them in that order, a tuple passed whole taking one view per element.
    std::deque<std::vector<Tensor>> arguments;
    size_t next = 0;
    std::vector<std::vector<Tensor>> tensors = ir::tensor_arguments(
        op_call, [&](const ir::Node* input) -> const std::vector<Tensor>& {
          std::vector<Tensor> values;
          for (size_t i = 0; i < input->meta.values.size(); ++i) {
            KILN_CHECK(next < call.inputs.size(), "loop evaluator: fallback ", node.name, " has too few input views");
            values.push_back(view_tensor(call.inputs[next++], node.name));
          }
          arguments.push_back(std::move(values));
          return arguments.back();
        });
    KILN_CHECK(next == call.inputs.size(), "loop evaluator: fallback ", node.name, " has ", call.inputs.size(),
               " input views but the node reads ", next);
    std::vector<Tensor> results = ir::run_reference_kernel(op_call, tensors, bindings_);
    KILN_CHECK(results.size() == call.outputs.size(), "loop evaluator: fallback ", node.name, " produced ",
               results.size(), " values for ", call.outputs.size(), " outputs");
    for (size_t i = 0; i < results.size(); ++i) view_tensor(call.outputs[i], node.name).copy_from(results[i]);
  }

  const LoopProgram& program_;
  const ir::Graph& graph_;
  const std::map<std::string, Tensor>& inputs_;
  std::map<std::string, int64_t> bindings_;
  std::vector<Tensor> buffers_;
  std::vector<int64_t> numels_;
};

}  // namespace

std::vector<Tensor> evaluate_loop_program(const LoopProgram& program, const ir::Graph& graph,
                                          const std::map<std::string, Tensor>& inputs) {
  return Machine(program, graph, inputs).run();
}

}  // namespace kiln::codegen
