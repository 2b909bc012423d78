// The pass manager: one table of every named pass (name, one-line summary, function), the
// default pipeline as a straight list of stages, and a runner that verifies the graph after
// each pass (in tests and debug builds, or when asked), times each pass, and with `verbose`
// prints the IR after each pass or "(unchanged)".
//
// A pass is a free function `bool pass(Graph&, const PassOptions&)` that rewrites the graph in
// place and returns whether it changed anything.
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

struct PassOptions {
  bool freeze = false;  // constant folding may fold parameters into constants
};

using PassFunction = std::function<bool(ir::Graph&, const PassOptions&)>;

struct PassInfo {
  std::string_view name;     // the flag name: "dce", "functionalize"
  std::string_view summary;  // one line
  PassFunction run;
};

// Every pass, in a fixed order.
std::span<const PassInfo> all_passes();
// Throws kiln::Error naming the unknown pass and listing the known ones.
const PassInfo& find_pass(std::string_view name);

// A named point of the default pipeline: the graph after `passes` have run, in order, on the
// graph of the previous stage. The first stage, "traced", is the graph as loaded.
struct Stage {
  std::string_view name;
  std::string_view summary;
  std::vector<std::string_view> passes;
};
std::span<const Stage> pipeline_stages();
// Throws kiln::Error naming the unknown stage and listing the known ones.
const Stage& find_stage(std::string_view name);

struct RunOptions {
  PassOptions pass_options;
  // Verify the graph after every pass. Defaults to on in debug builds and when the
  // environment sets KILN_VERIFY=1; tests turn it on.
  bool verify_each = default_verify_each();
  // Print each pass's time and the IR after it (or "(unchanged)") to `log`.
  bool verbose = false;
  std::ostream* log = nullptr;  // defaults to std::cerr
  static bool default_verify_each();
};

struct PassRecord {
  std::string name;
  bool changed = false;
  std::chrono::nanoseconds time{0};
};

// Runs `passes` in order on `graph`. Returns one record per pass run.
std::vector<PassRecord> run_passes(ir::Graph& graph, const std::vector<std::string_view>& passes,
                                   const RunOptions& options = {});

// Runs the default pipeline up to and including `stage`. `on_stage` (optional) sees the graph
// at every stage reached, "traced" included.
std::vector<PassRecord> run_pipeline(
    ir::Graph& graph, std::string_view stage, const RunOptions& options = {},
    const std::function<void(const Stage&, const ir::Graph&)>& on_stage = nullptr);

}  // namespace kiln::passes
