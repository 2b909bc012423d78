// Graph breaks of kiln::compile(fn): Var::item() and a Var used as a bool end a graph there, the
// graph runs, fn gets the value and goes on; results equal a direct computation on branches and
// loops driven by item(); another outcome compiles another graph; fullgraph turns a break into an
// error naming its line; kiln::trace refuses item(); kiln::cond keeps both branches in one graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "frontends/module/trace_graph.h"
#include "kiln/compile.h"
#include "kiln/trace.h"
#include "kiln/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

FunctionCompileOptions test_options(FunctionCompileOptions options = {}) {
  options.cache_dir = fs::path(KILN_BINARY_DIR) / "test-compile-cache";
  return options;
}

Tensor values(const std::vector<double>& data) { return Tensor::from_doubles({int64_t(data.size())}, data, DType::f32); }

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// Doubles x when its sum is positive, else subtracts 1.
std::vector<Var> branchy(const std::vector<Var>& in) {
  if (in[0].sum().item() > 0) return {in[0] * 2};
  return {in[0] - 1};
}

TEST(GraphBreak, AnItemDrivenBranchRunsTheTakenPathAndCompilesEachPathOnce) {
  CompiledFunction f = compile(branchy, test_options());
  Tensor positive = values({1, 2, -0.5}), negative = values({-1, 0.25, -3});
  std::vector<Tensor> out = f(positive);
  for (int64_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(float(out[0].flat_double(i)), float(positive.flat_double(i) * 2));
  EXPECT_EQ(f.stats().graph_breaks, 1u);
  EXPECT_EQ(f.stats().break_graphs, 2u);  // the sum, the doubling
  f(values({3, 3, 3}));
  EXPECT_EQ(f.stats().break_graphs, 2u);  // same path: nothing new
  out = f(negative);
  for (int64_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(float(out[0].flat_double(i)), float(negative.flat_double(i) - 1));
  EXPECT_EQ(f.stats().break_graphs, 3u);  // the other path's graph
  f(negative);
  f(positive);
  CompiledFunctionStats stats = f.stats();
  EXPECT_EQ(stats.break_graphs, 3u);
  EXPECT_EQ(stats.traces, 5u);  // a function with breaks is traced on every call
  EXPECT_EQ(stats.variants, 0u);
}

TEST(GraphBreak, AnItemDrivenLoopMatchesADirectComputation) {
  // Halve until every |value| <= 1: the number of iterations depends on the data.
  TensorFunction halve = [](const std::vector<Var>& in) {
    Var y = in[0];
    while (y.abs().amax({0}).item() > 1) y = y / 2;
    return std::vector<Var>{y};
  };
  CompiledFunction f = compile(halve, test_options());
  for (std::vector<double> data : {std::vector<double>{0.5, -0.25}, {3, -7}, {100, 1}, {-2, 2}}) {
    std::vector<Tensor> out = f(values(data));
    double peak = std::max(std::abs(data[0]), std::abs(data[1]));
    double scale = 1;
    while (peak * scale > 1) scale /= 2;
    for (size_t i = 0; i < data.size(); ++i) EXPECT_FLOAT_EQ(float(out[0].flat_double(int64_t(i))), float(data[i] * scale));
  }
  EXPECT_EQ(f.stats().graph_breaks, 2u);  // {-2, 2}: one halving, two checks
}

TEST(GraphBreak, PastTheRecompileLimitNewGraphsRunInTheInterpreter) {
  TensorFunction halve = [](const std::vector<Var>& in) {
    Var y = in[0];
    while (y.abs().amax({0}).item() > 1) y = y / 2;
    return std::vector<Var>{y};
  };
  CompiledFunction f = compile(halve, test_options({.name = "halve", .recompile_limit = 2}));
  ::testing::internal::CaptureStderr();
  for (double peak : {0.5, 1.5, 3.0, 6.0, 1.5}) {
    std::vector<Tensor> out = f(values({peak, -0.25}));
    double scale = 1;
    while (peak * scale > 1) scale /= 2;
    EXPECT_FLOAT_EQ(float(out[0].flat_double(0)), float(peak * scale)) << peak;
  }
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(warning, HasSubstr("halve has graph breaks and reached its recompile limit (2 graphs"));
  EXPECT_EQ(warning.find("recompile limit", warning.find("recompile limit") + 1), std::string::npos) << warning;
  CompiledFunctionStats stats = f.stats();
  EXPECT_EQ(stats.break_graphs, 4u);  // two of each kind
  EXPECT_GT(stats.fallback_calls, 0u);
}

TEST(GraphBreak, AVarUsedAsABoolBreaksToo) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    if (in[0].sum() > 0) return std::vector<Var>{in[0].relu()};
    return std::vector<Var>{in[0].neg()};
  };
  CompiledFunction f = compile(fn, test_options());
  EXPECT_FLOAT_EQ(float(f(values({-1, 2}))[0].flat_double(0)), 0.0f);
  EXPECT_FLOAT_EQ(float(f(values({-1, -2}))[0].flat_double(0)), 1.0f);
}

TEST(GraphBreak, FullgraphMakesABreakAnErrorNamingTheLine) {
  CompiledFunction f = compile(branchy, test_options({.fullgraph = true}));
  std::string message = error_of([&] { f(values({1, 2})); });
  EXPECT_THAT(message, HasSubstr("graph break at "));
  EXPECT_THAT(message, HasSubstr("graph_break_test.cpp:"));
  EXPECT_THAT(message, HasSubstr("fullgraph"));
}

TEST(GraphBreak, KilnTraceRefusesItemAndNamesTheLine) {
  std::string message = error_of([] { trace_graph(branchy, {example_meta(values({1, 2}))}); });
  EXPECT_THAT(message, HasSubstr("graph_break_test.cpp:"));
  EXPECT_THAT(message, HasSubstr("Var::item() needs the value of a traced tensor"));
  std::string many = error_of([] {
    trace_graph([](const std::vector<Var>& in) { return std::vector<Var>{in[0] * in[0].item()}; },
          {example_meta(values({1, 2}))}, {.on_value = [](const ir::Graph&, const ir::Node&, const std::string&) { return 1.0; }});
  });
  EXPECT_THAT(many, HasSubstr("f32[2]; it needs exactly one element"));
}

TEST(GraphBreak, CondKeepsBothBranchesInOneGraph) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    const Var& x = in[0];
    return cond(x.sum() > 0, [&] { return std::vector<Var>{x * 2}; }, [&] { return std::vector<Var>{x - 1}; });
  };
  CompiledFunction f = compile(fn, test_options({.fullgraph = true}));
  Tensor positive = values({1, 2}), negative = values({-1, -2});
  EXPECT_FLOAT_EQ(float(f(positive)[0].flat_double(1)), 4.0f);
  EXPECT_FLOAT_EQ(float(f(negative)[0].flat_double(1)), -3.0f);
  EXPECT_EQ(f.stats().traces, 1u);
  EXPECT_EQ(f.stats().graph_breaks, 0u);
  std::string mismatch = error_of([] {
    trace_graph(
        [](const std::vector<Var>& in) {
          return cond(in[0].sum() > 0, [&] { return std::vector<Var>{in[0]}; },
                      [&] { return std::vector<Var>{in[0].sum()}; });
        },
        {example_meta(values({1, 2}))});
  });
  EXPECT_THAT(mismatch, HasSubstr("cond's branches disagree on value 0: f32[2] and f32[]"));
  std::string predicate = error_of([] {
    trace_graph([](const std::vector<Var>& in) { return cond(in[0], [&] { return std::vector<Var>{in[0]}; }, [&] { return std::vector<Var>{in[0]}; }); },
          {example_meta(values({1, 2}))});
  });
  EXPECT_THAT(predicate, HasSubstr("predicate is f32[2]"));
}

}  // namespace
}  // namespace kiln
