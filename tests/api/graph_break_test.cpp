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

// The graph after a break takes the values live Vars hold from the graph before it, as inputs,
// rather than computing them again from the function's inputs.
TEST(GraphBreak, ValuesComputedBeforeABreakCarryOverRatherThanBeingComputedAgain) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    Var h = (in[0] * 3).exp();
    double total = h.sum().item();
    return std::vector<Var>{h + total};
  };
  Tensor x = values({0.5, -1, 0.25});
  Explanation explanation = explain(fn, {x}, test_options());
  ASSERT_EQ(explanation.graphs.size(), 2u);
  EXPECT_THAT(explanation.graphs[0].text, HasSubstr("exp"));
  EXPECT_THAT(explanation.graphs[1].text, ::testing::Not(HasSubstr("exp(")));
  EXPECT_THAT(explanation.graphs[1].text, HasSubstr("break0_exp"));
  EXPECT_EQ(explanation.graphs[1].op_count, 1u);  // the add
  CompiledFunction f = compile(fn, test_options());
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> out = f(x);
    double total = 0;
    for (int64_t i = 0; i < 3; ++i) total += std::exp(3 * x.flat_double(i));
    for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(out[0].flat_double(i), std::exp(3 * x.flat_double(i)) + total, 1e-5 * total);
  }
  EXPECT_EQ(f.stats().break_graphs, 2u);
}

// An in-place update of an input before a break happens once: the graph before the break does
// it (and writes it back), the graph after it reads the updated input.
TEST(GraphBreak, AnInputUpdatedInPlaceBeforeABreakIsUpdatedOnce) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    in[0].add_(1);
    if (in[0].sum().item() > 0) return std::vector<Var>{in[0] * 2};
    return std::vector<Var>{in[0] * -2};
  };
  CompiledFunction f = compile(fn, test_options());
  Tensor x = values({1, 2, 3});
  std::vector<Tensor> out = f(x);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(float(x.flat_double(i)), float(i + 2)) << "the caller's input after the call";
    EXPECT_FLOAT_EQ(float(out[0].flat_double(i)), float(2 * (i + 2)));
  }
}

// A live view made before a break aliases its base, which a copied value would not: such values
// are computed again after the break, and an in-place update through the view reaches the base.
TEST(GraphBreak, AViewLiveAcrossABreakStillAliasesItsBase) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    Var base = in[0] * 1;
    Var row = base.select(0, 0);
    double first = row.sum().item();
    row.mul_(first);
    return std::vector<Var>{base};
  };
  CompiledFunction f = compile(fn, test_options());
  std::vector<double> data = {1, 2, 3, 4};
  Tensor x = Tensor::from_doubles({2, 2}, data, DType::f32);
  std::vector<Tensor> out = f(x);
  std::vector<double> expected = {3, 6, 3, 4};
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(float(out[0].flat_double(i)), float(expected[size_t(i)]));
}

// With a view live across the break the graph after it computes everything again, the input
// update included: the graph before it must not have updated the caller's input already.
TEST(GraphBreak, AnInputUpdatedInPlaceBeforeABreakWithAViewLiveIsUpdatedOnce) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    in[0].add_(1);
    Var row = in[0].select(0, 0);
    if (row.sum().item() > 0) return std::vector<Var>{row * 2};
    return std::vector<Var>{row * -2};
  };
  CompiledFunction f = compile(fn, test_options());
  std::vector<double> data = {1, 2, 3, 4};
  Tensor x = Tensor::from_doubles({2, 2}, data, DType::f32);
  std::vector<Tensor> out = f(x);
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(float(x.flat_double(i)), float(data[size_t(i)] + 1)) << i;
  for (int64_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(float(out[0].flat_double(i)), float(2 * (data[size_t(i)] + 1))) << i;
}

// nonzero's result has as many rows as the data has nonzero elements: the graph breaks there, and
// the coordinates enter the rest as an input; each count is another final graph.
TEST(GraphBreak, NonzeroBreaksAndItsCoordinatesFeedTheRest) {
  TensorFunction fn = [](const std::vector<Var>& in) {
    Var positive = (in[0] > 0).nonzero();  // i64[n, 2]
    Var rows = positive.select(1, 0);
    return std::vector<Var>{positive, in[0].index_select(0, rows).sum(), in[0].masked_select(in[0] < 0)};
  };
  CompiledFunction f = compile(fn, test_options());
  for (std::vector<double> data : {std::vector<double>{1, -2, 0, 3, -1, 5}, {-1, -2, -3, -4, -5, -6}, {2, 2, 2, 2, 2, 2}}) {
    Tensor x = Tensor::from_doubles({3, 2}, data, DType::f32);
    std::vector<Tensor> out = f(x);
    std::vector<int64_t> coordinates;
    std::vector<double> negatives;
    double picked = 0;
    for (int64_t i = 0; i < 6; ++i) {
      if (data[size_t(i)] > 0) {
        coordinates.insert(coordinates.end(), {i / 2, i % 2});
        picked += data[size_t(i / 2 * 2)] + data[size_t(i / 2 * 2 + 1)];
      }
      if (data[size_t(i)] < 0) negatives.push_back(data[size_t(i)]);
    }
    ASSERT_EQ(out[0].sizes(), (Sizes{int64_t(coordinates.size() / 2), 2}));
    EXPECT_EQ(out[0].dtype(), DType::i64);
    for (size_t k = 0; k < coordinates.size(); ++k) EXPECT_EQ(out[0].flat_double(int64_t(k)), double(coordinates[k]));
    EXPECT_FLOAT_EQ(float(out[1].item()), float(picked));
    ASSERT_EQ(out[2].sizes(), (Sizes{int64_t(negatives.size())}));
    for (size_t k = 0; k < negatives.size(); ++k) EXPECT_EQ(out[2].flat_double(int64_t(k)), negatives[k]);
  }
  EXPECT_GE(f.stats().graph_breaks, 2u);
}

TEST(GraphBreak, NonzeroUnderKilnTraceOrFullgraphIsAnErrorNamingTheLine) {
  TensorFunction fn = [](const std::vector<Var>& in) { return std::vector<Var>{in[0].nonzero()}; };
  std::string traced = error_of([&] { trace_graph(fn, {example_meta(values({1, 0}))}); });
  EXPECT_THAT(traced, HasSubstr("graph_break_test.cpp:"));
  EXPECT_THAT(traced, HasSubstr("nonzero() gives a shape that depends on the data"));
  CompiledFunction f = compile(fn, test_options({.fullgraph = true}));
  EXPECT_THAT(error_of([&] { f(values({1, 0})); }), HasSubstr("fullgraph"));
  TensorFunction int_mask = [](const std::vector<Var>& in) { return std::vector<Var>{in[0].masked_select(in[0])}; };
  CompiledFunction g = compile(int_mask, test_options());
  EXPECT_THAT(error_of([&] { g(values({1, 0})); }), HasSubstr("masked_select needs a bool mask, got f32[2]"));
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
