// kiln::Var's methods, operators and free functions: each records one registry op (var.h).
#include "kiln/var.h"

#include "frontends/module/public_types.h"
#include "frontends/module/tracer.h"
#include "kiln/error.h"

namespace kiln {

namespace {

using frontends::record;
using frontends::Tracer;
using ir::Argument;
using ir::Kwargs;

Argument dims_argument(const std::vector<int64_t>& dims) { return Argument::ints(dims); }

Argument optional_int(std::optional<int64_t> value) { return value ? Argument(*value) : Argument(); }
Argument optional_float(std::optional<double> value) { return value ? Argument(*value) : Argument(); }

Var require_defined(const Var& var, const char* what, const SourceLocation& loc) {
  if (!var.defined()) fail(Tracer::active(loc).where(loc), ": ", what, " is an undefined kiln::Var");
  return var;
}

}  // namespace

Var::Var(ir::Node* node) : node_(node), trace_id_(frontends::active_trace_id()) { track(); }
Var::Var(const Var& other) : node_(other.node_), trace_id_(other.trace_id_) { track(); }
Var::Var(Var&& other) noexcept : node_(other.node_), trace_id_(other.trace_id_) { track(); }
Var& Var::operator=(const Var& other) {
  if (this != &other) {
    untrack();
    node_ = other.node_;
    trace_id_ = other.trace_id_;
    track();
  }
  return *this;
}
Var& Var::operator=(Var&& other) noexcept { return *this = static_cast<const Var&>(other); }
Var::~Var() { untrack(); }
void Var::track() {
  if (node_ != nullptr) frontends::Tracer::track_var(this, trace_id_);
}
void Var::untrack() {
  if (node_ != nullptr) frontends::Tracer::untrack_var(this, trace_id_);
}

ir::Node* Var::node() const {
  if (node_ && trace_id_ != frontends::active_trace_id()) {
    fail("a kiln::Var of another trace was used (a Var is valid only inside the kiln::trace that recorded it)");
  }
  return node_;
}

const ir::TensorMeta& Var::meta() const {
  KILN_CHECK(node_ != nullptr, "meta() of an undefined kiln::Var");
  return node()->value();
}

DType Var::dtype() const { return meta().dtype; }
int64_t Var::dim() const { return meta().rank(); }
Shape Var::sym_sizes() const { return frontends::from_ir(meta().shape); }
std::string Var::type_string() const { return meta().type_string(); }

ir::Argument Operand::argument() const {
  return std::visit([](auto value) { return ir::Argument(value); }, value_);
}

std::vector<int64_t> Var::sizes(SourceLocation loc) const {
  std::optional<Sizes> shape = meta().static_shape();
  if (!shape)
    fail(Tracer::active(loc).where(loc), ": kiln::Var ", describe(*node()), " has symbolic sizes ", meta().type_string(),
         "; use sym_sizes()");
  return *shape;
}

int64_t Var::size(int64_t dim, SourceLocation loc) const {
  const ir::SymInt& size = meta().shape.at(size_t(wrap_dim(dim, this->dim())));
  if (!size.is_constant())
    fail(Tracer::active(loc).where(loc), ": dim ", dim, " of ", describe(*node()), " is symbolic (", size.to_string(),
         ")");
  return size.constant();
}

// ---- values while tracing ----
double Var::item(SourceLocation loc) const {
  require_defined(*this, "item()'s Var", loc);
  return Tracer::active(loc).value_of(node(), "Var::item()", loc);
}

bool Var::to_bool(SourceLocation loc) const {
  require_defined(*this, "a Var used as a bool", loc);
  return Tracer::active(loc).value_of(node(), "a kiln::Var used as a bool", loc) != 0;
}

// ---- pointwise ----
Var Var::add(const Operand& other, double alpha, SourceLocation loc) const {
  Kwargs kwargs;
  if (alpha != 1) kwargs.emplace_back("alpha", alpha);
  return record("add", {node(), other.argument()}, kwargs, loc);
}
Var Var::sub(const Operand& other, double alpha, SourceLocation loc) const {
  Kwargs kwargs;
  if (alpha != 1) kwargs.emplace_back("alpha", alpha);
  return record("sub", {node(), other.argument()}, kwargs, loc);
}
Var Var::mul(const Operand& other, SourceLocation loc) const { return record("mul", {node(), other.argument()}, {}, loc); }
Var Var::div(const Operand& other, SourceLocation loc) const { return record("div", {node(), other.argument()}, {}, loc); }
Var Var::pow(const Operand& exponent, SourceLocation loc) const {
  return record("pow", {node(), exponent.argument()}, {}, loc);
}
Var Var::maximum(const Operand& other, SourceLocation loc) const {
  return record("maximum", {node(), other.argument()}, {}, loc);
}
Var Var::minimum(const Operand& other, SourceLocation loc) const {
  return record("minimum", {node(), other.argument()}, {}, loc);
}
Var Var::neg(SourceLocation loc) const { return record("neg", {node()}, {}, loc); }
Var Var::abs(SourceLocation loc) const { return record("abs", {node()}, {}, loc); }
Var Var::exp(SourceLocation loc) const { return record("exp", {node()}, {}, loc); }
Var Var::log(SourceLocation loc) const { return record("log", {node()}, {}, loc); }
Var Var::sqrt(SourceLocation loc) const { return record("sqrt", {node()}, {}, loc); }
Var Var::rsqrt(SourceLocation loc) const { return record("rsqrt", {node()}, {}, loc); }
Var Var::reciprocal(SourceLocation loc) const { return record("reciprocal", {node()}, {}, loc); }
Var Var::sin(SourceLocation loc) const { return record("sin", {node()}, {}, loc); }
Var Var::cos(SourceLocation loc) const { return record("cos", {node()}, {}, loc); }
Var Var::tanh(SourceLocation loc) const { return record("tanh", {node()}, {}, loc); }
Var Var::sigmoid(SourceLocation loc) const { return record("sigmoid", {node()}, {}, loc); }
Var Var::erf(SourceLocation loc) const { return record("erf", {node()}, {}, loc); }
Var Var::erfinv(SourceLocation loc) const { return record("erfinv", {node()}, {}, loc); }
Var Var::relu(SourceLocation loc) const { return record("relu", {node()}, {}, loc); }
Var Var::gelu(const std::string& approximate, SourceLocation loc) const {
  Kwargs kwargs;
  if (approximate != "none") kwargs.emplace_back("approximate", approximate);
  return record("gelu", {node()}, kwargs, loc);
}
Var Var::silu(SourceLocation loc) const { return record("silu", {node()}, {}, loc); }
Var Var::clamp(std::optional<double> min, std::optional<double> max, SourceLocation loc) const {
  return record("clamp", {node(), optional_float(min), optional_float(max)}, {}, loc);
}
Var Var::logical_not(SourceLocation loc) const { return record("logical_not", {node()}, {}, loc); }
Var Var::eq(const Operand& other, SourceLocation loc) const { return record("eq", {node(), other.argument()}, {}, loc); }
Var Var::ne(const Operand& other, SourceLocation loc) const { return record("ne", {node(), other.argument()}, {}, loc); }
Var Var::lt(const Operand& other, SourceLocation loc) const { return record("lt", {node(), other.argument()}, {}, loc); }
Var Var::le(const Operand& other, SourceLocation loc) const { return record("le", {node(), other.argument()}, {}, loc); }
Var Var::gt(const Operand& other, SourceLocation loc) const { return record("gt", {node(), other.argument()}, {}, loc); }
Var Var::ge(const Operand& other, SourceLocation loc) const { return record("ge", {node(), other.argument()}, {}, loc); }
Var Var::masked_fill(const Var& mask, const Operand& value, SourceLocation loc) const {
  return record("where", {require_defined(mask, "the mask", loc).node(), value.argument(), node()}, {}, loc);
}
Var Var::to(DType dtype, SourceLocation loc) const {
  if (dtype == this->dtype()) return *this;
  return record("cast", {node(), dtype}, {}, loc);
}
Var Var::clone(SourceLocation loc) const { return record("clone", {node()}, {}, loc); }

// ---- reductions ----
Var Var::sum(SourceLocation loc) const { return record("sum", {node()}, {}, loc); }
Var Var::sum(const std::vector<int64_t>& dims, bool keepdim, SourceLocation loc) const {
  return record("sum", {node(), dims_argument(dims), keepdim}, {}, loc);
}
Var Var::mean(SourceLocation loc) const { return record("mean", {node()}, {}, loc); }
Var Var::mean(const std::vector<int64_t>& dims, bool keepdim, SourceLocation loc) const {
  return record("mean", {node(), dims_argument(dims), keepdim}, {}, loc);
}
Var Var::amax(const std::vector<int64_t>& dims, bool keepdim, SourceLocation loc) const {
  return record("amax", {node(), dims_argument(dims), keepdim}, {}, loc);
}
Var Var::amin(const std::vector<int64_t>& dims, bool keepdim, SourceLocation loc) const {
  return record("amin", {node(), dims_argument(dims), keepdim}, {}, loc);
}
Var Var::argmax(int64_t dim, bool keepdim, SourceLocation loc) const {
  return record("argmax", {node(), dim, keepdim}, {}, loc);
}
Var Var::var(const std::vector<int64_t>& dims, double correction, bool keepdim, SourceLocation loc) const {
  return record("var", {node(), dims_argument(dims)}, {{"correction", correction}, {"keepdim", keepdim}}, loc);
}
Var Var::softmax(int64_t dim, SourceLocation loc) const { return record("softmax", {node(), dim}, {}, loc); }
Var Var::log_softmax(int64_t dim, SourceLocation loc) const { return record("log_softmax", {node(), dim}, {}, loc); }

// ---- shape and views ----
Var Var::reshape(const Shape& shape, SourceLocation loc) const {
  return record("reshape", {node(), Argument::sym_ints(frontends::to_ir(shape))}, {}, loc);
}
Var Var::view(const Shape& shape, SourceLocation loc) const {
  return record("view", {node(), Argument::sym_ints(frontends::to_ir(shape))}, {}, loc);
}
Var Var::permute(const std::vector<int64_t>& dims, SourceLocation loc) const {
  return record("permute", {node(), dims_argument(dims)}, {}, loc);
}
Var Var::transpose(int64_t dim0, int64_t dim1, SourceLocation loc) const {
  return record("transpose", {node(), dim0, dim1}, {}, loc);
}
Var Var::t(SourceLocation loc) const {
  if (dim() != 2) fail(Tracer::active(loc).where(loc), ": t() expects a 2-d Var, got ", type_string());
  return transpose(0, 1, loc);
}
Var Var::unsqueeze(int64_t dim, SourceLocation loc) const { return record("unsqueeze", {node(), dim}, {}, loc); }
Var Var::squeeze(SourceLocation loc) const { return record("squeeze", {node()}, {}, loc); }
Var Var::squeeze(int64_t dim, SourceLocation loc) const {
  return record("squeeze", {node(), dims_argument({dim})}, {}, loc);
}
Var Var::flatten(int64_t start_dim, int64_t end_dim, SourceLocation loc) const {
  return record("flatten", {node(), start_dim, end_dim}, {}, loc);
}
Var Var::expand(const Shape& sizes, SourceLocation loc) const {
  return record("expand", {node(), Argument::sym_ints(frontends::to_ir(sizes))}, {}, loc);
}
Var Var::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step,
               SourceLocation loc) const {
  return record("slice", {node(), dim, optional_int(start), optional_int(end), step}, {}, loc);
}
Var Var::select(int64_t dim, int64_t index, SourceLocation loc) const {
  return record("select", {node(), dim, index}, {}, loc);
}
Var Var::matmul(const Var& other, SourceLocation loc) const {
  return record("matmul", {node(), require_defined(other, "the right operand", loc).node()}, {}, loc);
}
Var Var::index(const Var& indices, SourceLocation loc) const {
  require_defined(indices, "the index", loc);
  if (indices.dim() == 1) return index_select(0, indices, loc);
  Shape result_shape = indices.sym_sizes();
  Shape own = sym_sizes();
  result_shape.insert(result_shape.end(), own.begin() + 1, own.end());
  return index_select(0, indices.reshape({-1}, loc), loc).reshape(result_shape, loc);
}
Var Var::nonzero(SourceLocation loc) const {
  require_defined(*this, "nonzero()", loc);
  auto coordinates = [](const Tensor& value) {
    Sizes sizes = value.sizes();
    int64_t rank = int64_t(sizes.size()), count = value.numel();
    std::vector<int64_t> found, index(size_t(rank), 0);
    for (int64_t flat = 0; flat < count; ++flat) {
      if (value.flat_double(flat) != 0) found.insert(found.end(), index.begin(), index.end());
      for (int64_t d = rank - 1; d >= 0 && ++index[size_t(d)] == sizes[size_t(d)]; --d) index[size_t(d)] = 0;
    }
    return Tensor::from_vector({int64_t(found.size()) / std::max<int64_t>(rank, 1), rank}, found, DType::i64);
  };
  return Var(Tracer::active(loc).data_dependent(node(), "nonzero", coordinates, loc));
}
Var Var::masked_select(const Var& mask, SourceLocation loc) const {
  require_defined(mask, "the mask", loc);
  if (mask.dtype() != DType::boolean)
    fail(Tracer::active(loc).where(loc), ": masked_select needs a bool mask, got ", mask.type_string());
  Var flat_mask = mask.expand(sym_sizes(), loc).reshape({-1}, loc);
  return reshape({-1}, loc).index_select(0, flat_mask.nonzero(loc).reshape({-1}, loc), loc);
}
Var Var::index_select(int64_t dim, const Var& indices, SourceLocation loc) const {
  return record("index_select", {node(), dim, require_defined(indices, "the index", loc).node()}, {}, loc);
}
Var Var::gather(int64_t dim, const Var& indices, SourceLocation loc) const {
  return record("gather", {node(), dim, require_defined(indices, "the index", loc).node()}, {}, loc);
}

// ---- in place ----
Var Var::add_(const Operand& other, double alpha, SourceLocation loc) const {
  Kwargs kwargs;
  if (alpha != 1) kwargs.emplace_back("alpha", alpha);
  return record("add_", {node(), other.argument()}, kwargs, loc);
}
Var Var::sub_(const Operand& other, double alpha, SourceLocation loc) const {
  Kwargs kwargs;
  if (alpha != 1) kwargs.emplace_back("alpha", alpha);
  return record("sub_", {node(), other.argument()}, kwargs, loc);
}
Var Var::mul_(const Operand& other, SourceLocation loc) const { return record("mul_", {node(), other.argument()}, {}, loc); }
Var Var::div_(const Operand& other, SourceLocation loc) const { return record("div_", {node(), other.argument()}, {}, loc); }
Var Var::relu_(SourceLocation loc) const { return record("relu_", {node()}, {}, loc); }
Var Var::sigmoid_(SourceLocation loc) const { return record("sigmoid_", {node()}, {}, loc); }
Var Var::tanh_(SourceLocation loc) const { return record("tanh_", {node()}, {}, loc); }
Var Var::exp_(SourceLocation loc) const { return record("exp_", {node()}, {}, loc); }
Var Var::gelu_(SourceLocation loc) const { return record("gelu_", {node()}, {}, loc); }
Var Var::silu_(SourceLocation loc) const { return record("silu_", {node()}, {}, loc); }
Var Var::clamp_(std::optional<double> min, std::optional<double> max, SourceLocation loc) const {
  return record("clamp_", {node(), optional_float(min), optional_float(max)}, {}, loc);
}
Var Var::copy_(const Var& src, SourceLocation loc) const {
  return record("copy_", {node(), require_defined(src, "the source", loc).node()}, {}, loc);
}
Var Var::fill_(double value, SourceLocation loc) const { return record("fill_", {node(), value}, {}, loc); }
Var Var::zero_(SourceLocation loc) const { return record("fill_", {node(), 0.0}, {}, loc); }
Var Var::masked_fill_(const Var& mask, const Operand& value, SourceLocation loc) const {
  return copy_(masked_fill(mask, value, loc), loc);
}
Var Var::index_put_(const Var& indices, const Var& values, bool accumulate, SourceLocation loc) const {
  std::vector<Argument> index_list{require_defined(indices, "the index", loc).node()};
  return record("index_put_", {node(), Argument(index_list), require_defined(values, "the values", loc).node(), accumulate},
                {}, loc);
}

// ---- operators ----
namespace {
Var binary(const std::string& op, const Operand& a, const Operand& b) {
  return record(op, {a.argument(), b.argument()}, {}, a.location());
}
Var in_place(const std::string& op, const Var& a, const Operand& b) {
  return record(op, {a.node(), b.argument()}, {}, b.location());
}
}  // namespace

Var operator+(const Operand& a, const Operand& b) { return binary("add", a, b); }
Var operator-(const Operand& a, const Operand& b) { return binary("sub", a, b); }
Var operator*(const Operand& a, const Operand& b) { return binary("mul", a, b); }
Var operator/(const Operand& a, const Operand& b) { return binary("div", a, b); }
Var operator-(const Operand& a) { return record("neg", {a.argument()}, {}, a.location()); }
Var operator<(const Operand& a, const Operand& b) { return binary("lt", a, b); }
Var operator<=(const Operand& a, const Operand& b) { return binary("le", a, b); }
Var operator>(const Operand& a, const Operand& b) { return binary("gt", a, b); }
Var operator>=(const Operand& a, const Operand& b) { return binary("ge", a, b); }
Var operator==(const Operand& a, const Operand& b) { return binary("eq", a, b); }
Var operator!=(const Operand& a, const Operand& b) { return binary("ne", a, b); }
Var operator+=(const Var& a, const Operand& b) { return in_place("add_", a, b); }
Var operator-=(const Var& a, const Operand& b) { return in_place("sub_", a, b); }
Var operator*=(const Var& a, const Operand& b) { return in_place("mul_", a, b); }
Var operator/=(const Var& a, const Operand& b) { return in_place("div_", a, b); }

// ---- free functions ----
namespace {
Argument var_list(const std::vector<Var>& vars, const SourceLocation& loc) {
  std::vector<Argument> nodes;
  for (const Var& var : vars) nodes.emplace_back(require_defined(var, "a list element", loc).node());
  return Argument(nodes);
}
}  // namespace

Var cat(const std::vector<Var>& vars, int64_t dim, SourceLocation loc) {
  return record("cat", {var_list(vars, loc), dim}, {}, loc);
}
Var stack(const std::vector<Var>& vars, int64_t dim, SourceLocation loc) {
  return record("stack", {var_list(vars, loc), dim}, {}, loc);
}
Var where(const Var& condition, const Operand& self, const Operand& other, SourceLocation loc) {
  return record("where", {require_defined(condition, "the condition", loc).node(), self.argument(), other.argument()},
                {}, loc);
}
Var matmul(const Var& a, const Var& b, SourceLocation loc) { return require_defined(a, "the left operand", loc).matmul(b, loc); }
Var full(const Shape& size, double value, DType dtype, SourceLocation loc) {
  return record("full", {Argument::sym_ints(frontends::to_ir(size)), value}, {{"dtype", dtype}}, loc);
}
Var arange(int64_t end, DType dtype, SourceLocation loc) {
  return record("arange", {int64_t(0), end}, {{"dtype", dtype}}, loc);
}

std::vector<Var> cond(const Var& pred, const std::function<std::vector<Var>()>& true_fn,
                      const std::function<std::vector<Var>()>& false_fn, SourceLocation loc) {
  require_defined(pred, "cond's predicate", loc);
  Tracer& tracer = Tracer::active(loc);
  if (pred.dtype() != DType::boolean || pred.meta().numel() != ir::SymInt(1))
    fail(tracer.where(loc), ": kiln::cond's predicate is ", pred.type_string(), "; it must be one bool element");
  std::vector<Var> on_true = true_fn(), on_false = false_fn();
  if (on_true.size() != on_false.size())
    fail(tracer.where(loc), ": kiln::cond's branches return ", on_true.size(), " and ", on_false.size(), " values");
  std::vector<Var> outputs;
  for (size_t i = 0; i < on_true.size(); ++i) {
    require_defined(on_true[i], "a value of cond's true branch", loc);
    require_defined(on_false[i], "a value of cond's false branch", loc);
    if (on_true[i].meta().dtype != on_false[i].meta().dtype || on_true[i].meta().shape != on_false[i].meta().shape)
      fail(tracer.where(loc), ": kiln::cond's branches disagree on value ", i, ": ", on_true[i].type_string(), " and ",
           on_false[i].type_string());
    outputs.push_back(where(pred.reshape(Shape{}, loc), on_true[i], on_false[i], loc));
  }
  return outputs;
}

}  // namespace kiln
