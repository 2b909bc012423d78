// erfinv in the interpreter (the op's reference kernel, ir/kernels/erfinv.h): against PyTorch's
// torch.erfinv on the values of tests/data/erfinv/erfinv_torch.safetensors (written by
// scripts/make_erfinv_goldens.py: edge values, a grid, points crowding towards +-1, in f64, f32,
// i64 and bool), the round trip erf(erfinv(x)) = x, and its shape and dtype rule.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/interpreter.h"
#include "ir/kernels/erfinv.h"
#include "kiln/safetensors.h"
#include "tests/support/test_paths.h"

namespace kiln::ir {
namespace {

const std::map<std::string, Tensor>& torch_values() {
  static const std::map<std::string, Tensor> values =
      read_safetensors(std::string(KILN_SOURCE_DIR) + "/tests/data/erfinv/erfinv_torch.safetensors");
  return values;
}

// `op`(x) by the interpreter, for a 1-d input x.
Tensor run_unary(const std::string& op, const Tensor& x) {
  Graph graph;
  Node* input = graph.create_placeholder("x", TensorMeta::contiguous(x.dtype(), {SymInt(x.sizes().at(0))}));
  graph.create_output({graph.create_call(op, {input})});
  return interpret(graph, {{"x", x}}).at(0);
}

// The error of `got` in units in the last place of `expected` at `dtype`'s precision; 0 when
// both are the same NaN, infinity or signed zero, infinite when they differ in kind.
double ulp_error(double got, double expected, DType dtype) {
  if (std::isnan(expected) || std::isnan(got)) return std::isnan(expected) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(expected) || std::isinf(got)) return got == expected ? 0 : INFINITY;
  if (got == 0 && expected == 0) return std::signbit(got) == std::signbit(expected) ? 0 : INFINITY;
  double magnitude = std::fabs(expected);
  double ulp = dtype == DType::f64 ? std::nextafter(magnitude, INFINITY) - magnitude
                                   : double(std::nextafter(float(magnitude), INFINITY)) - double(float(magnitude));
  if (dtype == DType::f32 && magnitude < 0x1p-126) ulp = 0x1p-149;
  return std::fabs(got - expected) / ulp;
}

void expect_matches_torch(const std::string& name, DType result_dtype, double max_ulp) {
  const Tensor& x = torch_values().at("x_" + name);
  const Tensor& expected = torch_values().at("erfinv_" + name);
  Tensor got = run_unary("erfinv", x);
  ASSERT_EQ(got.dtype(), result_dtype) << name;
  ASSERT_EQ(expected.dtype(), result_dtype) << name;
  ASSERT_EQ(got.sizes(), expected.sizes()) << name;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double error = ulp_error(got.flat_double(i), expected.flat_double(i), result_dtype);
    EXPECT_LE(error, max_ulp) << name << ": erfinv(" << std::hexfloat << x.flat_double(i) << ") = "
                              << got.flat_double(i) << ", torch.erfinv gives " << expected.flat_double(i);
    if (std::isfinite(error)) worst = std::max(worst, error);
  }
  std::printf("erfinv %s: %lld values, max %.3f ulp from torch.erfinv\n", name.c_str(),
              static_cast<long long>(got.numel()), worst);
}

TEST(Erfinv, MatchesPyTorchInDouble) { expect_matches_torch("f64", DType::f64, 1.0); }
TEST(Erfinv, MatchesPyTorchInFloat) { expect_matches_torch("f32", DType::f32, 1.0); }
// Integers and bools compute in the default float, as PyTorch's unary float ops do.
TEST(Erfinv, IntegerInputsPromoteToFloat) { expect_matches_torch("i64", DType::f32, 0.0); }
TEST(Erfinv, BoolInputsPromoteToFloat) { expect_matches_torch("bool", DType::f32, 0.0); }

TEST(Erfinv, EdgeValues) {
  EXPECT_EQ(kernels::erfinv(1.0), INFINITY);
  EXPECT_EQ(kernels::erfinv(-1.0), -INFINITY);
  EXPECT_TRUE(std::isnan(kernels::erfinv(std::nextafter(1.0, 2.0))));
  EXPECT_TRUE(std::isnan(kernels::erfinv(-INFINITY)));
  EXPECT_TRUE(std::isnan(kernels::erfinv(std::nan(""))));
  EXPECT_TRUE(std::signbit(kernels::erfinv(-0.0)) && kernels::erfinv(-0.0) == 0.0);
  EXPECT_EQ(kernels::erfinv(0x1p-1074), 0x1p-1074);  // sqrt(pi)/2 x rounds back to the subnormal x
}

// erf(erfinv(x)) = x: through the interpreter's two kernels, over random values in (-1, 1) and
// values whose erfinv is large (within 2 ulps; erf's own error bounds how close it can come).
TEST(Erfinv, ErfUndoesIt) {
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values;
  for (int i = 0; i < 20000; ++i) values.push_back(uniform(random));
  for (int k = 1; k <= 50; ++k) values.push_back(1.0 - std::ldexp(1.0, -k));
  Tensor x = Tensor::from_doubles({int64_t(values.size())}, values, DType::f64);
  Tensor round_trip = run_unary("erf", run_unary("erfinv", x));
  for (size_t i = 0; i < values.size(); ++i) {
    double back = round_trip.flat_double(int64_t(i));
    EXPECT_LE(ulp_error(back, values[i], DType::f64), 2.0)
        << std::hexfloat << "erf(erfinv(" << values[i] << ")) = " << back;
  }
  // And in float: erfinv rounded to float, then erf of that, lands within a few float ulps of x
  // wherever erf's slope is not steep (|x| < 0.9).
  std::vector<double> moderate = {-0.875, -0.3, 0.001, 0.5, 0.875};
  Tensor xf = Tensor::from_doubles({5}, moderate, DType::f32);
  Tensor back = run_unary("erf", run_unary("erfinv", xf));
  for (int64_t i = 0; i < 5; ++i) EXPECT_LE(ulp_error(back.flat_double(i), xf.flat_double(i), DType::f32), 2.0);
}

TEST(Erfinv, KeepsShapeAndPromotesLikeTheUnaryFloatOps) {
  Graph graph;
  Node* half = graph.create_placeholder("h", TensorMeta::contiguous(DType::f16, {SymInt::symbol("s0"), SymInt(3)}));
  Node* integer = graph.create_placeholder("i", TensorMeta::contiguous(DType::i32, {SymInt(2)}));
  Node* a = graph.create_call("erfinv", {half});
  Node* b = graph.create_call("erfinv", {integer});
  EXPECT_EQ(a->value().dtype, DType::f16);
  EXPECT_EQ(shape_string(a->value().shape), "[s0, 3]");
  EXPECT_EQ(b->value().dtype, DType::f32);
}

}  // namespace
}  // namespace kiln::ir
