// Lowering of the random graphs of tests/support/random_graph.h, after the default pipeline:
// for every seed the loop program's outputs match the interpreter's on the same graph
// (tolerances of tests/codegen/lowering_test_support.h). Half of the seeds bind the symbols
// to other sizes than the default; a quarter lower a handful of common ops through the
// Fallback too, so native nodes and fallbacks meet in one program. A failure prints the
// seed, the graph and the loop program. A quarter of the seeds are also lowered right after
// functionalization, where composite ops remain and go to the Fallback.
// KILN_LOWERING_SEEDS=3,17 reruns just those seeds (in shard 0).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "passes/pass_manager.h"
#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

constexpr uint64_t kShards = 8;
constexpr uint64_t kSeedsPerShard = 128;  // 1024 graphs in all

std::vector<uint64_t> seeds_of(uint64_t shard) {
  std::vector<uint64_t> seeds;
  if (const char* chosen = std::getenv("KILN_LOWERING_SEEDS")) {
    if (shard != 0) return seeds;
    std::stringstream list(chosen);
    std::string item;
    while (std::getline(list, item, ',')) seeds.push_back(std::stoull(item));
    return seeds;
  }
  for (uint64_t i = 0; i < kSeedsPerShard; ++i) seeds.push_back(shard * kSeedsPerShard + i);
  return seeds;
}

class LoweringRandomGraphs : public ::testing::TestWithParam<uint64_t> {};

TEST_P(LoweringRandomGraphs, MatchTheInterpreter) {
  std::map<std::string, int> kinds;
  int graphs = 0;
  for (uint64_t seed : seeds_of(GetParam())) {
    ir::Graph graph = test_support::random_graph(seed);
    passes::run_pipeline(graph, "simplified");
    std::map<std::string, int64_t> sizes = seed % 2 == 0 ? test_support::default_symbol_sizes()
                                                         : std::map<std::string, int64_t>{{"s0", 5}, {"s1", 4}};
    Inputs inputs = test_support::random_inputs(graph, seed, sizes);
    LoweringOptions options;
    if (seed % 4 == 3) options.force_fallback_ops = {"add", "mul", "sum", "exp", "matmul", "cat", "var_mean"};
    std::string problem = check_lowering(graph, inputs, options);
    if (!problem.empty()) {
      ADD_FAILURE() << "seed " << seed << " (rerun: KILN_LOWERING_SEEDS=" << seed << "): " << problem;
      continue;
    }
    ++graphs;
    for (const auto& [kind, count] : node_kinds(lower(graph, options))) kinds[kind] += count;
  }
  std::cout << "shard " << GetParam() << ": " << graphs << " graphs;";
  for (const auto& [kind, count] : kinds) std::cout << " " << kind << " " << count;
  std::cout << "\n";
  if (!std::getenv("KILN_LOWERING_SEEDS")) {
    EXPECT_GT(kinds["Pointwise"], 0);
    EXPECT_GT(kinds["Reduction"], 0);
  }
}

// Before decomposition, composite ops (softmax, layer_norm, ...) lower to Fallback externs.
TEST_P(LoweringRandomGraphs, FunctionalGraphsLowerWithCompositeFallbacks) {
  int fallbacks = 0;
  for (uint64_t seed : seeds_of(GetParam())) {
    if (seed % 4 != 1) continue;
    ir::Graph graph = test_support::random_graph(seed);
    passes::run_pipeline(graph, "functional");
    Inputs inputs = test_support::random_inputs(graph, seed);
    std::string problem = check_lowering(graph, inputs);
    if (!problem.empty()) {
      ADD_FAILURE() << "seed " << seed << " (rerun: KILN_LOWERING_SEEDS=" << seed << "): " << problem;
      continue;
    }
    fallbacks += node_kinds(lower(graph))["Fallback"];
  }
  if (!std::getenv("KILN_LOWERING_SEEDS")) {
    EXPECT_GT(fallbacks, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, LoweringRandomGraphs, ::testing::Range<uint64_t>(0, kShards));

}  // namespace
}  // namespace kiln::codegen::testing
