// Property tests of the passes on random graphs (tests/support/random_graph.h): every pass,
// run where its precondition holds, keeps what the graph computes, as the reference
// interpreter sees it, and keeps the graph valid:
//  - functionalize, on any graph: the original outputs are unchanged, each copy-back output
//    holds the final value of the input it names, inputs without a copy-back were never
//    written, and the result is functional (passes::is_functional);
//  - decompose, after functionalize: same outputs, and no composite op remains;
//  - cse, dce, constant_fold (with and without freeze), algebraic and simplify, on the
//    functional graph and on the decomposed one: same outputs;
//  - the whole default pipeline, to its last stage: the original outputs and copy-backs as
//    for functionalize, with the stage invariants checked as it goes;
//  - the verifier accepts every result, and a pass that says it changed nothing did not.
// Outputs compare with a tolerance (1e-4 relative + 1e-5 absolute) for floats, exactly for
// integers and bools; NaN equals NaN. A failure prints its seed and the graph before and
// after. KILN_PROPERTY_SEEDS=3,17 reruns just those seeds (in shard 0).
//
// The seeds 0..kShards*kSeedsPerShard-1 are split into shards (one gtest each) so that
// ctest -j runs them in parallel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/functionalize.h"
#include "passes/graph_queries.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"
#include "tests/support/random_graph.h"

namespace kiln::passes {
namespace {

constexpr uint64_t kShards = 16;
constexpr uint64_t kSeedsPerShard = 64;  // 1024 graphs in all

using Inputs = std::map<std::string, Tensor>;

Inputs copies(const Inputs& inputs) {
  Inputs result;
  for (const auto& [name, tensor] : inputs) result[name] = tensor.clone();
  return result;
}

// What a run produced: the outputs, and the inputs as the run left them (a graph with
// mutation writes into them).
struct Run {
  std::vector<Tensor> outputs;
  Inputs inputs_after;
};

Run run(const ir::Graph& graph, const Inputs& inputs) {
  Run result;
  result.inputs_after = copies(inputs);
  result.outputs = ir::Interpreter().run(graph, result.inputs_after);
  return result;
}

bool close(double expected, double actual, bool floating) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (!floating || std::isinf(expected) || std::isinf(actual)) return expected == actual;
  return std::fabs(expected - actual) <= 1e-5 + 1e-4 * std::fabs(expected);
}

// Empty when `actual` matches `expected`, else what differs.
std::string difference(const Tensor& expected, const Tensor& actual) {
  std::ostringstream out;
  if (expected.dtype() != actual.dtype())
    out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
  else if (expected.sizes() != actual.sizes())
    out << "shape " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
  if (!out.str().empty()) return out.str();
  bool floating = is_floating(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = floating ? expected.flat_double(i) : double(expected.flat_int(i));
    double b = floating ? actual.flat_double(i) : double(actual.flat_int(i));
    if (!close(a, b, floating)) {
      out.precision(9);
      out << "element " << i << " is " << b << ", expected " << a << "\n  expected " << expected.to_string(32)
          << "\n  actual   " << actual.to_string(32);
      return out.str();
    }
  }
  return "";
}

// How many graphs a shard checked and how many of them each pass changed: evidence that
// the random graphs give every pass work to do.
struct Tally {
  int graphs = 0;
  std::map<std::string, int> changed;
};

// The checks of one seed. Each failed check is reported with the seed and both graphs.
class SeedCheck {
 public:
  SeedCheck(uint64_t seed, Tally& tally) : seed_(seed), tally_(tally) {}

  void run_all() {
    original_ = test_support::random_graph(seed_);
    inputs_ = test_support::random_inputs(original_, seed_);
    ++tally_.graphs;
    try {
      ir::verify(original_);
      reference_ = run(original_, inputs_);
    } catch (const std::exception& error) {
      report("the original graph", original_, nullptr, std::string("is invalid: ") + error.what());
      return;
    }
    std::optional<ir::Graph> functional = check_functionalize();
    if (!functional) return;
    // check_functionalize ran it: the functional graph runs.
    std::vector<Tensor> functional_outputs = run(*functional, inputs_).outputs;
    std::optional<ir::Graph> decomposed = check_pass("decompose", *functional, functional_outputs);
    static const char* const kCleanups[] = {"cse",       "dce",     "constant_fold", "constant_fold --freeze",
                                            "algebraic", "simplify"};
    for (const char* pass : kCleanups) check_pass(pass, *functional, functional_outputs);
    if (decomposed) {
      std::vector<Tensor> decomposed_outputs = run(*decomposed, inputs_).outputs;
      for (const char* pass : kCleanups) check_pass(pass, *decomposed, decomposed_outputs, " (after decompose)");
    }
    check_pipeline();
  }

 private:
  // Reports a failed check with the seed, the graph before and, when there is one, after.
  void report(const std::string& what, const ir::Graph& before, const ir::Graph* after, const std::string& problem) {
    std::ostringstream message;
    message << "seed " << seed_ << ": " << what << ": " << problem << "\n(rerun: KILN_PROPERTY_SEEDS=" << seed_
            << ")\n--- graph before:\n"
            << ir::print_graph(before);
    if (after) message << "--- graph after:\n" << ir::print_graph(*after);
    ADD_FAILURE() << message.str();
  }

  // Runs the named pass (with "--freeze": constant folding of parameters) through the pass
  // manager, which verifies the result.
  bool apply(const std::string& pass, ir::Graph& graph) {
    RunOptions options;
    options.verify_each = true;
    std::string name = pass;
    if (name.ends_with(" --freeze")) {
      name.resize(name.size() - std::string(" --freeze").size());
      options.pass_options.freeze = true;
    }
    std::vector<PassRecord> records = run_passes(graph, {name}, options);
    bool changed = !records.empty() && records.front().changed;
    tally_.changed[pass] += changed;
    return changed;
  }

  // Outputs [0, expected.size()) of `actual` against `expected`; true when all match.
  bool compare_outputs(const std::string& what, const ir::Graph& before, const ir::Graph& after,
                       const std::vector<Tensor>& expected, const std::vector<Tensor>& actual) {
    if (actual.size() < expected.size()) {
      report(what, before, &after,
             std::to_string(actual.size()) + " outputs, expected " + std::to_string(expected.size()));
      return false;
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string problem = difference(expected[i], actual[i]);
      if (!problem.empty()) {
        report(what, before, &after, "output " + std::to_string(i) + ": " + problem);
        return false;
      }
    }
    return true;
  }

  void check_unchanged_when_unchanged(const std::string& what, bool changed, const ir::Graph& before,
                                      const ir::Graph& after) {
    if (!changed && ir::print_graph(before) != ir::print_graph(after))
      report(what, before, &after, "the pass said it changed nothing, but the graph differs");
  }

  // After functionalization (or the pipeline): the original outputs, then one copy-back per
  // mutated input, each equal to the input's final value in the original run; inputs
  // without a copy-back were not written; running the result writes no input.
  bool check_functional_result(const std::string& what, const ir::Graph& result) {
    if (!is_functional(result)) {
      report(what, original_, &result, "a node still mutates");
      return false;
    }
    Run after;
    try {
      after = run(result, inputs_);
    } catch (const std::exception& error) {
      report(what, original_, &result, std::string("the result does not run: ") + error.what());
      return false;
    }
    if (!compare_outputs(what, original_, result, reference_.outputs, after.outputs)) return false;
    std::vector<std::pair<size_t, ir::OutputSpec>> copy_backs = result.signature().mutations();
    if (after.outputs.size() != reference_.outputs.size() + copy_backs.size()) {
      report(what, original_, &result,
             std::to_string(after.outputs.size()) + " outputs: expected the " +
                 std::to_string(reference_.outputs.size()) + " original ones plus " +
                 std::to_string(copy_backs.size()) + " copy-backs");
      return false;
    }
    std::map<std::string, bool> copied_back;
    for (const auto& [output_index, spec] : copy_backs) {
      if (spec.kind != ir::OutputKind::user_input_mutation) {
        report(what, original_, &result, "a copy-back into '" + spec.target + "', which is no input");
        return false;
      }
      const std::string& input = spec.target;
      copied_back[input] = true;
      std::string problem = difference(reference_.inputs_after.at(input), after.outputs.at(output_index));
      if (!problem.empty()) {
        report(what, original_, &result, "copy-back of input '" + input + "': " + problem);
        return false;
      }
    }
    for (const auto& [name, tensor] : inputs_) {
      if (!copied_back[name]) {
        std::string problem = difference(tensor, reference_.inputs_after.at(name));
        if (!problem.empty()) {
          report(what, original_, &result,
                 "input '" + name + "' is written by the graph but has no copy-back: " + problem);
          return false;
        }
      }
      std::string problem = difference(tensor, after.inputs_after.at(name));
      if (!problem.empty()) {
        report(what, original_, &result, "running the result writes input '" + name + "': " + problem);
        return false;
      }
    }
    return true;
  }

  std::optional<ir::Graph> check_functionalize() {
    ir::Graph graph = original_.clone();
    bool changed = false;
    try {
      changed = apply("functionalize", graph);
    } catch (const std::exception& error) {
      report("functionalize", original_, nullptr, std::string("threw: ") + error.what());
      return std::nullopt;
    }
    check_unchanged_when_unchanged("functionalize", changed, original_, graph);
    if (is_functional(original_) && ir::print_graph(original_) != ir::print_graph(graph))
      report("functionalize", original_, &graph, "changed a graph without mutation");
    if (!check_functional_result("functionalize", graph)) return std::nullopt;
    return graph;
  }

  // Runs `pass` on a copy of `before` and compares every output with `expected`.
  std::optional<ir::Graph> check_pass(const std::string& pass, const ir::Graph& before,
                                      const std::vector<Tensor>& expected, const std::string& note = "") {
    std::string what = pass + note;
    ir::Graph graph = before.clone();
    bool changed = false;
    try {
      changed = apply(pass, graph);
    } catch (const std::exception& error) {
      report(what, before, nullptr, std::string("threw: ") + error.what());
      return std::nullopt;
    }
    check_unchanged_when_unchanged(what, changed, before, graph);
    if (pass == "decompose") {
      for (ir::Node* node : graph.nodes()) {
        const ir::OpInfo* op =
            node->op() == ir::OpKind::call_function ? ir::OpRegistry::global().find(node->target()) : nullptr;
        if (op && op->composite) {
          report(what, before, &graph, "composite op left: " + describe(*node));
          return std::nullopt;
        }
      }
    }
    Run after;
    try {
      after = run(graph, inputs_);
    } catch (const std::exception& error) {
      report(what, before, &graph, std::string("the result does not run: ") + error.what());
      return std::nullopt;
    }
    if (after.outputs.size() != expected.size()) {
      report(what, before, &graph,
             std::to_string(after.outputs.size()) + " outputs, expected " + std::to_string(expected.size()));
      return std::nullopt;
    }
    if (!compare_outputs(what, before, graph, expected, after.outputs)) return std::nullopt;
    return graph;
  }

  void check_pipeline() {
    ir::Graph graph = original_.clone();
    RunOptions options;
    options.verify_each = true;
    std::string last(pipeline_stages().back().name);
    std::string problem;
    try {
      run_pipeline(graph, last, options, [&](const Stage& stage, const ir::Graph& at) {
        if (!problem.empty()) return;
        if (stage.name == "functional" && !is_functional(at)) problem = "a node mutates after stage 'functional'";
        if (stage.name == "decomposed")
          for (ir::Node* node : at.nodes())
            if (const ir::OpInfo* op = ir::OpRegistry::global().find(node->target());
                op && node->op() == ir::OpKind::call_function && op->composite)
              problem = "composite op left after stage 'decomposed': " + describe(*node);
      });
    } catch (const std::exception& error) {
      report("pipeline to '" + last + "'", original_, nullptr, std::string("threw: ") + error.what());
      return;
    }
    if (!problem.empty()) {
      report("pipeline to '" + last + "'", original_, &graph, problem);
      return;
    }
    check_functional_result("pipeline to '" + last + "'", graph);
  }

  uint64_t seed_;
  Tally& tally_;
  ir::Graph original_;
  Inputs inputs_;
  Run reference_;
};

// Seeds from KILN_PROPERTY_SEEDS ("3,17"), if set.
std::optional<std::vector<uint64_t>> seeds_from_environment() {
  const char* text = std::getenv("KILN_PROPERTY_SEEDS");
  if (!text || !*text) return std::nullopt;
  std::vector<uint64_t> seeds;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty()) seeds.push_back(std::stoull(item));
  return seeds;
}

class RandomGraphProperties : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RandomGraphProperties, PassesPreserveResults) {
  uint64_t shard = GetParam();
  std::vector<uint64_t> seeds;
  if (std::optional<std::vector<uint64_t>> chosen = seeds_from_environment()) {
    if (shard == 0) seeds = *chosen;
  } else {
    for (uint64_t seed = shard * kSeedsPerShard; seed < (shard + 1) * kSeedsPerShard; ++seed) seeds.push_back(seed);
  }
  Tally tally;
  for (uint64_t seed : seeds) SeedCheck(seed, tally).run_all();
  std::ostringstream summary;
  summary << tally.graphs << " random graphs checked; graphs each pass changed (on the functional and on the "
          << "decomposed graph):";
  for (const auto& [pass, count] : tally.changed) summary << " " << pass << " " << count << ",";
  std::cout << summary.str() << "\n";
}

std::string shard_name(const ::testing::TestParamInfo<uint64_t>& shard) {
  return "seeds_" + std::to_string(shard.param * kSeedsPerShard) + "_to_" +
         std::to_string((shard.param + 1) * kSeedsPerShard - 1);
}

INSTANTIATE_TEST_SUITE_P(Shards, RandomGraphProperties, ::testing::Range<uint64_t>(0, kShards), shard_name);

}  // namespace
}  // namespace kiln::passes
