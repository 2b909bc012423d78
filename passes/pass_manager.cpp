// The pass table, the default pipeline, and the runner (verify, time, log).
#include "passes/pass_manager.h"

#include <cstdlib>
#include <iomanip>
#include <iostream>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/algebraic_simplification.h"
#include "passes/channel_scale_folding.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/constant_folding.h"
#include "passes/convolution_affine_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/decompose.h"
#include "passes/functionalize.h"
#include "passes/matmul_scale_motion.h"
#include "kiln/error.h"
#include "runtime/log.h"

namespace kiln::passes {

namespace {

// simplify: the cleanup passes repeated until none of them changes the graph.
bool simplify(ir::Graph& graph, const PassOptions& options) {
  bool changed_any = false;
  for (int round = 0; round < 16; ++round) {
    bool changed = fold_constants(graph, options.freeze);
    changed |= fold_affine_into_convolutions(graph, options.freeze);
    changed |= simplify_algebra(graph);
    changed |= fold_channel_scales_into_convolutions(graph);
    changed |= move_scales_to_matmul_products(graph);
    changed |= eliminate_common_subexpressions(graph);
    changed |= eliminate_dead_code(graph);
    changed_any |= changed;
    if (!changed) break;
  }
  return changed_any;
}

const PassInfo kPasses[] = {
    {"functionalize", "remove every mutation: in-place ops and writes through views become out-of-place",
     [](ir::Graph& g, const PassOptions&) { return functionalize(g); }},
    {"decompose", "rewrite composite ops (softmax, layer_norm, linear, ...) into core ops",
     [](ir::Graph& g, const PassOptions&) { return decompose(g); }},
    {"constant_fold", "evaluate nodes whose inputs are all constants (parameters only with --freeze)",
     [](ir::Graph& g, const PassOptions& o) { return fold_constants(g, o.freeze); }},
    {"conv_affine", "fold per-channel scales and shifts (batch norm) into convolution weights (only with --freeze)",
     [](ir::Graph& g, const PassOptions& o) { return fold_affine_into_convolutions(g, o.freeze); }},
    {"algebraic", "algebraic identities: x*1, x+0, double transpose, reshape of reshape, same-dtype cast, max pool before relu",
     [](ir::Graph& g, const PassOptions&) { return simplify_algebra(g); }},
    {"channel_scale", "fold a per-channel scale of one sample (squeeze-and-excitation) into the convolution reading it",
     [](ir::Graph& g, const PassOptions&) { return fold_channel_scales_into_convolutions(g); }},
    {"matmul_scale", "move a number multiplying a matmul's operands (attention's q and k) to its product",
     [](ir::Graph& g, const PassOptions&) { return move_scales_to_matmul_products(g); }},
    {"cse", "merge nodes that compute the same value from the same inputs",
     [](ir::Graph& g, const PassOptions&) { return eliminate_common_subexpressions(g); }},
    {"dce", "remove nodes whose values are never used",
     [](ir::Graph& g, const PassOptions&) { return eliminate_dead_code(g); }},
    {"simplify", "constant_fold, conv_affine, algebraic, channel_scale, matmul_scale, cse and dce repeated until nothing changes", simplify},
};

const Stage kStages[] = {
    {"traced", "the graph as captured or loaded", {}},
    {"functional", "no node mutates anything", {"functionalize"}},
    {"decomposed", "only core ops remain", {"decompose"}},
    {"simplified", "folded, deduplicated, dead code removed", {"simplify"}},
};

std::string joined(auto&& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + std::string(item.name);
  return text;
}

}  // namespace

std::span<const PassInfo> all_passes() { return kPasses; }

const PassInfo& find_pass(std::string_view name) {
  for (const PassInfo& pass : kPasses)
    if (pass.name == name) return pass;
  fail("unknown pass '", name, "' (known passes: ", joined(kPasses), ")");
}

std::span<const Stage> pipeline_stages() { return kStages; }

const Stage& find_stage(std::string_view name) {
  for (const Stage& stage : kStages)
    if (stage.name == name) return stage;
  fail("unknown stage '", name, "' (stages: ", joined(kStages), ")");
}

bool RunOptions::default_verify_each() {
#ifndef NDEBUG
  return true;
#else
  const char* flag = std::getenv("KILN_VERIFY");
  return flag != nullptr && std::string_view(flag) == "1";
#endif
}

namespace {
bool logging_passes() { return log_enabled("passes"); }
}  // namespace

std::vector<PassRecord> run_passes(ir::Graph& graph, const std::vector<std::string_view>& passes,
                                   const RunOptions& options) {
  std::ostream& log = options.log ? *options.log : std::cerr;
  bool verbose = options.verbose || logging_passes();
  std::vector<PassRecord> records;
  for (std::string_view name : passes) {
    const PassInfo& pass = find_pass(name);
    auto start = std::chrono::steady_clock::now();
    bool changed = pass.run(graph, options.pass_options);
    auto time = std::chrono::steady_clock::now() - start;
    records.push_back({std::string(name), changed, std::chrono::duration_cast<std::chrono::nanoseconds>(time)});
    if (options.verify_each) {
      try {
        ir::verify(graph);
      } catch (const InternalError& error) {
        throw InternalError("after pass '" + std::string(name) + "': " + error.what());
      }
    }
    if (verbose) {
      log << "[pass " << name << "] " << std::fixed << std::setprecision(3)
          << std::chrono::duration<double, std::milli>(time).count() << " ms"
          << (changed ? "" : " (unchanged)") << "\n";
      if (changed) log << ir::print_graph(graph);
    }
  }
  return records;
}

std::vector<PassRecord> run_pipeline(ir::Graph& graph, std::string_view stage_name, const RunOptions& options,
                                     const std::function<void(const Stage&, const ir::Graph&)>& on_stage) {
  find_stage(stage_name);  // fails early on an unknown name
  std::vector<PassRecord> records;
  for (const Stage& stage : kStages) {
    std::vector<PassRecord> ran = run_passes(graph, stage.passes, options);
    records.insert(records.end(), ran.begin(), ran.end());
    if (on_stage) on_stage(stage, graph);
    if (stage.name == stage_name) break;
  }
  return records;
}

}  // namespace kiln::passes
