// The symbolic-int nodes of programs with dynamic dims: aten.sym_size / sym_numel /
// sym_stride / sym_storage_offset read sizes (as Kiln SymInts), Python's operators on them
// (_operator.add, mul, floordiv, ...; torch.sym_max / sym_min) compute new ones; comparisons
// give SymBools, decided when the sizes allow it. Runtime assertions on sizes
// (_assert_scalar, sym_constrain_range*) and metadata checks (_assert_tensor_metadata) are
// checked here when they can be decided and otherwise left to Kiln's own guards (input
// shapes, symbol ranges).
#include "frontends/pt2/aten_op_helpers.h"
#include "frontends/pt2/pt2_symbols.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// A positional input of a Python-operator node as a SymInt (ints and bools included).
SymInt operand(AtenNodeContext& c, size_t index) {
  if (index >= c.node().inputs.size()) c.fail("expected at least ", index + 1, " operands");
  return c.sym_int(c.node().inputs[index].name);
}

bool is_known_true(AtenNodeContext& c, const std::string& name) {
  const ExportArgument* arg = c.find(name);
  if (!arg) return true;
  if (arg->kind == "as_bool") return arg->value.get<bool>();
  if (arg->kind == "as_sym_bool") return c.bool_arg(name);
  return true;
}

void convert_sym_size(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim"), rank_of(x));
  c.set_sym_int_output(0, shape_of(x)[size_t(dim)]);
}

void convert_sym_numel(AtenNodeContext& c) {
  SymInt total = 1;
  for (const SymInt& size : shape_of(c.tensor("self"))) total = total * size;
  c.set_sym_int_output(0, total);
}

// The stride / storage offset PyTorch recorded for the tensor (Kiln's own layout may differ).
const ExportTensorMeta& recorded_meta(AtenNodeContext& c) {
  const ExportArgument& arg = *c.find("self");
  std::string name = arg.value.value("name", "");
  auto found = c.state().program->tensor_values.find(name);
  if (found == c.state().program->tensor_values.end()) c.fail("no tensor metadata for '", name, "'");
  return found->second;
}

SymInt recorded_size(AtenNodeContext& c, const ExportSymInt& value) {
  if (value.constant) return *value.constant;
  return parse_sympy_size(value.expression, c.where());
}

void convert_sym_stride(AtenNodeContext& c) {
  const ExportTensorMeta& meta = recorded_meta(c);
  int64_t dim = wrap_dim(c, c.int_arg("dim"), int64_t(meta.strides.size()));
  c.set_sym_int_output(0, recorded_size(c, meta.strides[size_t(dim)]));
}

void convert_sym_storage_offset(AtenNodeContext& c) { c.set_sym_int_output(0, recorded_size(c, recorded_meta(c).storage_offset)); }

AtenConverter arithmetic(std::function<SymInt(const SymInt&, const SymInt&)> op) {
  return [op](AtenNodeContext& c) {
    try {
      c.set_sym_int_output(0, op(operand(c, 0), operand(c, 1)));
    } catch (const ir::SymbolicError& error) {
      c.fail(error.what());
    }
  };
}

// A comparison: decided when the difference of the operands is a constant, else assumed to
// hold (torch.export checked it on the example inputs; Kiln's guards check the sizes).
AtenConverter comparison(std::function<bool(int64_t)> holds) {
  return [holds](AtenNodeContext& c) {
    SymInt difference = operand(c, 0) - operand(c, 1);
    c.set_sym_bool_output(0, difference.is_constant() ? holds(difference.constant()) : true);
  };
}

void convert_assert_scalar(AtenNodeContext& c) {
  if (!is_known_true(c, "self"))
    c.fail("a size assertion fails: ", c.string_arg("assert_msg", "(no message)"));
}

void convert_ignore(AtenNodeContext&) {}

void convert_assert_tensor_metadata(AtenNodeContext& c) {
  ir::Node* x = c.tensor("a");
  if (std::optional<DType> dtype = c.dtype_arg("dtype"); dtype && *dtype != dtype_of(x))
    c.fail("the tensor has dtype ", dtype_name(dtype_of(x)), " where the program asserts ", dtype_name(*dtype));
}

void convert_sym_not(AtenNodeContext& c) { c.set_sym_bool_output(0, !is_known_true(c, c.node().inputs.at(0).name)); }

}  // namespace

void register_aten_symbolic_ops(AtenOpTable& table) {
  table.add("aten.sym_size.int", convert_sym_size);
  table.add("aten.sym_numel.default", convert_sym_numel);
  table.add("aten.sym_stride.int", convert_sym_stride);
  table.add("aten.sym_storage_offset.default", convert_sym_storage_offset);
  table.add("_operator.add", arithmetic([](const SymInt& a, const SymInt& b) { return a + b; }));
  table.add("_operator.sub", arithmetic([](const SymInt& a, const SymInt& b) { return a - b; }));
  table.add("_operator.mul", arithmetic([](const SymInt& a, const SymInt& b) { return a * b; }));
  table.add("_operator.floordiv", arithmetic([](const SymInt& a, const SymInt& b) { return floordiv(a, b); }));
  table.add("_operator.mod", arithmetic([](const SymInt& a, const SymInt& b) { return mod(a, b); }));
  table.add("_operator.neg", [](AtenNodeContext& c) { c.set_sym_int_output(0, -operand(c, 0)); });
  table.add("_operator.pos", [](AtenNodeContext& c) { c.set_sym_int_output(0, operand(c, 0)); });
  table.add("torch.sym_max", arithmetic([](const SymInt& a, const SymInt& b) { return max(a, b); }));
  table.add("torch.sym_min", arithmetic([](const SymInt& a, const SymInt& b) { return min(a, b); }));
  table.add("_operator.eq", comparison([](int64_t d) { return d == 0; }));
  table.add("_operator.ne", comparison([](int64_t d) { return d != 0; }));
  table.add("_operator.lt", comparison([](int64_t d) { return d < 0; }));
  table.add("_operator.le", comparison([](int64_t d) { return d <= 0; }));
  table.add("_operator.gt", comparison([](int64_t d) { return d > 0; }));
  table.add("_operator.ge", comparison([](int64_t d) { return d >= 0; }));
  table.add("torch.sym_not", convert_sym_not);
  table.add("aten._assert_scalar.default", convert_assert_scalar);
  table.add("aten._assert_async.msg", convert_assert_scalar);
  table.add("aten.sym_constrain_range.default", convert_ignore);
  table.add("aten.sym_constrain_range_for_size.default", convert_ignore);
  table.add("aten._assert_tensor_metadata.default", convert_assert_tensor_metadata);
}

}  // namespace kiln::frontends
