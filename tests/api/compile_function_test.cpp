// kiln::compile(fn) (include/kiln/compile.h): results against the interpreter, guards,
// recompile counts for changing shapes, dtypes, scalars and training mode, automatic dynamic
// shapes (no recompile across batch sizes once a dim is dynamic; 0 and 1 specialized),
// mark_dynamic, the recompile limit and its fallback, bad calls, and concurrent calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "frontends/module/trace_graph.h"
#include "kiln/compile.h"
#include "kiln/nn/activation.h"
#include "kiln/nn/container.h"
#include "kiln/nn/dropout.h"
#include "kiln/nn/linear.h"
#include "kiln/random.h"
#include "kiln/trace.h"
#include "ir/interpreter.h"
#include "kiln/error.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

FunctionCompileOptions test_options(FunctionCompileOptions options = {}) {
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

Tensor ramp(const Sizes& sizes, DType dtype = DType::f32, double scale = 0.25) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = (double(i % 13) - 6) * scale;
  return Tensor::from_doubles(sizes, values, dtype);
}

// (x * 2 + y).relu() summed over dim 1, and x's mean: two outputs over two inputs.
std::vector<Var> two_outputs(const std::vector<Var>& in) {
  Var z = (in[0] * 2 + in[1]).relu();
  return {z.sum({1}), in[0].mean()};
}

// What the interpreter computes for `fn` on these inputs (a static trace).
std::vector<Tensor> reference(const TensorFunction& fn, const std::vector<Tensor>& inputs) {
  std::vector<ir::TensorMeta> types;
  for (const Tensor& input : inputs) types.push_back(example_meta(input));
  ir::Graph graph = trace_graph(fn, types);
  std::map<std::string, Tensor> named;
  std::vector<std::string> names = inputs.size() == 1 ? std::vector<std::string>{"x"} : std::vector<std::string>{};
  for (size_t i = 0; i < inputs.size(); ++i) named[inputs.size() == 1 ? "x" : "x" + std::to_string(i)] = inputs[i];
  return ir::interpret(graph, named);
}

void expect_close(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < actual.size(); ++o) {
    ASSERT_EQ(actual[o].sizes(), expected[o].sizes()) << "output " << o;
    ASSERT_EQ(actual[o].dtype(), expected[o].dtype()) << "output " << o;
    for (int64_t i = 0; i < actual[o].numel(); ++i)
      EXPECT_NEAR(actual[o].flat_double(i), expected[o].flat_double(i), 1e-5) << "output " << o << " element " << i;
  }
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(CompileFunction, FirstCallCompilesLaterCallsReuseTheVariant) {
  CompiledFunction f = compile(two_outputs, test_options());
  Tensor x = ramp({4, 3}), y = ramp({4, 3}, DType::f32, 0.5);
  expect_close(f(x, y), reference(two_outputs, {x, y}));
  Tensor x2 = ramp({4, 3}, DType::f32, -1.0);
  expect_close(f(x2, y), reference(two_outputs, {x2, y}));
  CompiledFunctionStats stats = f.stats();
  EXPECT_EQ(stats.calls, 2u);
  EXPECT_EQ(stats.traces, 1u);
  EXPECT_EQ(stats.variants, 1u);
}

TEST(CompileFunction, ANewDtypeRecompiles) {
  CompiledFunction f = compile(two_outputs, test_options());
  f(ramp({4, 3}), ramp({4, 3}));
  Tensor x = ramp({4, 3}, DType::f64), y = ramp({4, 3}, DType::f64);
  expect_close(f(x, y), reference(two_outputs, {x, y}));
  EXPECT_EQ(f.stats().traces, 2u);
  f(ramp({4, 3}), ramp({4, 3}));  // the first variant still serves f32
  f(x, y);
  EXPECT_EQ(f.stats().traces, 2u);
  EXPECT_THAT(f.guards_report(), HasSubstr("x0.dtype == f64"));
}

TEST(CompileFunction, AChangedDimBecomesDynamicAndServesEveryLaterSize) {
  CompiledFunction f = compile(two_outputs, test_options());
  f(ramp({8, 3}), ramp({8, 3}));
  Tensor x = ramp({5, 3}), y = ramp({5, 3}, DType::f32, 0.5);
  expect_close(f(x, y), reference(two_outputs, {x, y}));
  EXPECT_EQ(f.stats().traces, 2u);  // one recompile, now dynamic in dim 0
  for (int64_t batch = 2; batch <= 64; ++batch) {
    Tensor a = ramp({batch, 3}), b = ramp({batch, 3}, DType::f32, 0.5);
    std::vector<Tensor> out = f(a, b);
    if (batch == 2 || batch == 17 || batch == 64) expect_close(out, reference(two_outputs, {a, b}));
  }
  EXPECT_EQ(f.stats().traces, 2u);
  // Duck sizing: both inputs' dim 0 share s0, guarded as an equality.
  EXPECT_THAT(f.guards_report(), HasSubstr("2 <= x0.size(0) (s0)"));
  EXPECT_THAT(f.guards_report(), HasSubstr("x1.size(0) == x0.size(0) (s0)"));
  EXPECT_THAT(f.guards_report(), HasSubstr("x0.size(1) == 3"));
}

TEST(CompileFunction, SizesZeroAndOneAreSpecialized) {
  CompiledFunction f = compile(two_outputs, test_options());
  f(ramp({8, 3}), ramp({8, 3}));
  f(ramp({5, 3}), ramp({5, 3}));  // dynamic from here
  Tensor x = ramp({1, 3}), y = ramp({1, 3});
  expect_close(f(x, y), reference(two_outputs, {x, y}));
  EXPECT_EQ(f.stats().traces, 3u);  // size 1 gets a static variant of its own
  f(ramp({1, 3}), ramp({1, 3}));
  f(ramp({9, 3}), ramp({9, 3}));
  EXPECT_EQ(f.stats().traces, 3u);
  EXPECT_THAT(f.guards_report(), HasSubstr("x0.size(0) == 1"));
}

TEST(CompileFunction, DynamicNeverRecompilesEverySize) {
  CompiledFunction f = compile(two_outputs, test_options({.dynamic = DynamicShapes::never}));
  for (int64_t batch : {4, 5, 6}) f(ramp({batch, 3}), ramp({batch, 3}));
  EXPECT_EQ(f.stats().traces, 3u);
  EXPECT_THAT(f.guards_report(), Not(HasSubstr("s0")));
}

TEST(CompileFunction, DynamicAlwaysIsSymbolicFromTheFirstCall) {
  CompiledFunction f = compile(two_outputs, test_options({.dynamic = DynamicShapes::always}));
  for (int64_t batch : {4, 5, 6}) {
    Tensor x = ramp({batch, 7}), y = ramp({batch, 7}, DType::f32, 0.5);
    expect_close(f(x, y), reference(two_outputs, {x, y}));
  }
  f(ramp({3, 9}), ramp({3, 9}));  // dim 1 too
  EXPECT_EQ(f.stats().traces, 1u);
}

TEST(CompileFunction, MarkDynamicWithARange) {
  CompiledFunction f = compile(two_outputs, test_options());
  f.mark_dynamic(0, 0, 2, 16);
  f.mark_dynamic(1, 0, 2, 16);
  for (int64_t batch : {4, 16, 2}) f(ramp({batch, 3}), ramp({batch, 3}));
  EXPECT_EQ(f.stats().traces, 1u);
  EXPECT_THAT(f.guards_report(), HasSubstr("2 <= x0.size(0) <= 16 (s0)"));
  Tensor x = ramp({17, 3}), y = ramp({17, 3});
  expect_close(f(x, y), reference(two_outputs, {x, y}));  // outside the range: a static variant
  EXPECT_EQ(f.stats().traces, 2u);
  EXPECT_THAT(error_of([&] { f.mark_dynamic(0, 0, 5, 4); }), HasSubstr("empty"));
  CompiledFunction g = compile(two_outputs, test_options());
  g.mark_dynamic(1, 2);
  EXPECT_THAT(error_of([&] { g(ramp({4, 3}), ramp({4, 3})); }),
              HasSubstr("dim 2 of input 1 was marked dynamic, but the call has 2 inputs and that input has rank 2"));
}

TEST(CompileFunction, ScalarArgumentsAreGuardedByValue) {
  CompiledFunction f = compile(
      ScalarFunction([](const std::vector<Var>& in, const std::vector<double>& s) { return std::vector<Var>{in[0] * s[0]}; }),
      test_options());
  Tensor x = ramp({3, 2});
  EXPECT_NEAR(f({x}, {3.0})[0].flat_double(1), x.flat_double(1) * 3, 1e-6);
  EXPECT_NEAR(f({x}, {3.0})[0].flat_double(1), x.flat_double(1) * 3, 1e-6);
  EXPECT_EQ(f.stats().traces, 1u);
  EXPECT_NEAR(f({x}, {-0.5})[0].flat_double(1), x.flat_double(1) * -0.5, 1e-6);
  EXPECT_EQ(f.stats().traces, 2u);
  EXPECT_THAT(f.guards_report(), HasSubstr("scalar 0 == -0.5"));
  EXPECT_THAT(error_of([&] { f({x}, {}); }), HasSubstr("takes 1 scalars; got 0"));
}

TEST(CompileFunction, AModuleRecompilesWhenItsTrainingModeChanges) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  model.eval();
  CompiledFunction f = compile(model, test_options());
  Tensor x = ramp({3, 4});
  std::vector<Tensor> first = f(x);
  std::vector<Tensor> expected =
      reference([&](const std::vector<Var>& in) { return model(in); }, {x});
  expect_close(first, expected);
  model.train();
  f(x);
  EXPECT_EQ(f.stats().traces, 2u);
  model.eval();
  f(x);
  EXPECT_EQ(f.stats().traces, 2u);
  EXPECT_THAT(f.guards_report(), HasSubstr("training == true"));
  EXPECT_THAT(f.guards_report(), HasSubstr("training == false"));
}

TEST(CompileFunction, PastTheRecompileLimitCallsRunInTheInterpreterWithOneWarning) {
  TensorFunction fn = [](const std::vector<Var>& in) { return std::vector<Var>{in[0].sum({1})}; };
  CompiledFunction f = compile(fn, test_options({.name = "summer", .recompile_limit = 2,
                                                 .dynamic = DynamicShapes::never}));
  f(ramp({2, 3}));
  f(ramp({2, 4}));
  ::testing::internal::CaptureStderr();
  Tensor x5 = ramp({2, 5}), x6 = ramp({2, 6});
  expect_close(f(x5), reference(fn, {x5}));
  expect_close(f(x6), reference(fn, {x6}));
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(warning, HasSubstr("summer reached its recompile limit (2 variants)"));
  EXPECT_THAT(warning, HasSubstr("x.size(1) == 4 failed: it is 5"));
  EXPECT_EQ(warning.find("recompile limit", warning.find("recompile limit") + 1), std::string::npos) << warning;
  CompiledFunctionStats stats = f.stats();
  EXPECT_EQ(stats.variants, 2u);
  EXPECT_EQ(stats.fallback_calls, 2u);
  f(ramp({2, 3}));  // a variant still runs what it accepts
  EXPECT_EQ(f.stats().fallback_calls, 2u);
}

TEST(CompileFunction, TheErrorFallbackNamesTheFailingGuard) {
  TensorFunction fn = [](const std::vector<Var>& in) { return std::vector<Var>{in[0] + 1}; };
  CompiledFunction f = compile(fn, test_options({.recompile_limit = 1, .fallback = RecompileFallback::error}));
  f(ramp({2, 3}));
  std::string message = error_of([&] { f(ramp({2, 3}, DType::f64)); });
  EXPECT_THAT(message, HasSubstr("recompile limit (1 variants)"));
  EXPECT_THAT(message, HasSubstr("x.dtype == f32 failed: it is f64"));
}

TEST(CompileFunction, BadCallsAreErrors) {
  CompiledFunction f = compile(two_outputs, test_options());
  EXPECT_THAT(error_of([&] { f(ramp({2, 3}), Tensor()); }), HasSubstr("input 1 is an undefined tensor"));
  f(ramp({2, 3}), ramp({2, 3}));
  EXPECT_THAT(error_of([&] { f(ramp({2, 3})); }), HasSubstr("takes 2 inputs; got 1"));
  EXPECT_THAT(error_of([] { compile(TensorFunction{}); }), HasSubstr("the function is empty"));
  EXPECT_THAT(error_of([] { compile(two_outputs, {.recompile_limit = 0}); }), HasSubstr("recompile_limit is 0"));
  // A trace error of fn reaches the caller.
  CompiledFunction bad = compile(TensorFunction([](const std::vector<Var>& in) { return std::vector<Var>{in[0].matmul(in[0])}; }),
                                 test_options());
  EXPECT_THAT(error_of([&] { bad(ramp({2, 3})); }), HasSubstr("matmul"));
}

TEST(CompileFunction, AFunctionThatNeedsAStaticSizeStaysStatic) {
  // reshape to constants needs the batch size: the dynamic attempt fails and the variant is static.
  TensorFunction fn = [](const std::vector<Var>& in) { return std::vector<Var>{in[0].reshape({in[0].size(0) * 3})}; };
  CompiledFunction f = compile(fn, test_options());
  f(ramp({4, 3}));
  Tensor x = ramp({5, 3});
  expect_close(f(x), reference(fn, {x}));
  EXPECT_EQ(f.stats().traces, 2u);
  EXPECT_THAT(f.guards_report(), HasSubstr("x.size(0) == 5"));
}

TEST(CompileFunction, LogsSayWhyARecompileHappened) {
  setenv("KILN_LOG", "recompiles,guards,dynamic,nonsense", 1);
  ::testing::internal::CaptureStderr();
  CompiledFunction f = compile(two_outputs, test_options({.name = "two"}));
  f(ramp({8, 3}), ramp({8, 3}));
  f(ramp({5, 3}), ramp({5, 3}));
  std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("KILN_LOG");
  EXPECT_THAT(log, HasSubstr("kiln[recompiles]: two: recompiling (variant 1): x0.size(0) == 8 failed: it is 5"));
  EXPECT_THAT(log, HasSubstr("kiln[dynamic]: two: x0.size(0) changed from 8 to 5: made dynamic"));
  EXPECT_THAT(log, HasSubstr("kiln[guards]: two: variant 0"));
  EXPECT_THAT(log, HasSubstr("unknown log channel 'nonsense' (known: recompiles, guards, graph_breaks"));
}

// KILN_LOG=cache: a miss that builds and stores, a hit from a second callable of the same
// function, and a damaged entry rebuilt (never loaded) with a warning.
TEST(CompileFunction, TheCacheChannelLogsMissesHitsAndRebuilds) {
  fs::path cache = fs::path(KILN_BINARY_DIR) / "cache-channel-test";
  fs::remove_all(cache);
  auto logged_call = [&] {
    ::testing::internal::CaptureStderr();
    CompiledFunction f = compile(two_outputs, FunctionCompileOptions{.cache_dir = cache});
    Tensor x = ramp({4, 3}), y = ramp({4, 3}, DType::f32, 0.5);
    expect_close(f(x, y), reference(two_outputs, {x, y}));
    return ::testing::internal::GetCapturedStderr();
  };
  setenv("KILN_LOG", "cache", 1);
  std::string first = logged_call(), second = logged_call();
  std::smatch key;
  ASSERT_TRUE(std::regex_search(first, key, std::regex("kiln\\[cache\\]: miss \\(built and stored\\) ([0-9a-f]+) \\(cpu\\)"))) << first;
  EXPECT_THAT(second, HasSubstr("kiln[cache]: hit " + key[1].str() + " (cpu)"));
  {
    std::fstream so(cache / "entries" / key[1].str() / "module.so", std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(so.is_open());
    so.seekp(64);
    so.write("damaged!", 8);
  }
  std::string third = logged_call();
  unsetenv("KILN_LOG");
  EXPECT_THAT(third, HasSubstr("kiln: warning: the compile cache entry"));
  EXPECT_THAT(third, HasSubstr("it was rebuilt"));
}

TEST(CompileFunction, ConcurrentCallsOfOneCompiledFunction) {
  CompiledFunction f = compile(two_outputs, test_options());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        int64_t batch = 2 + (t + i) % 5;
        Tensor x = ramp({batch, 3}), y = ramp({batch, 3}, DType::f32, 0.5);
        std::vector<Tensor> out = f(x, y);
        if (out.size() != 2 || out[0].sizes() != Sizes{batch}) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(f.stats().calls, 80u);
  EXPECT_LE(f.stats().traces, 3u);  // static, then dynamic; a third when a 2-row call raced the first
}

}  // namespace
}  // namespace kiln
