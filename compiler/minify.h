// `kiln verify --minify DIR`: shrinks a graph whose stage diverges from the interpreter to a
// small graph that still does, and writes it as a repro folder: the Inductor minifier's job.
//
// The test of a candidate is the stage's verdict (compiler/verify.h: check_graph_stage or
// check_code_stage) on the candidate itself against the interpreter on the candidate, so every
// candidate is judged on its own; a candidate counts when it fails the same way (a wrong value,
// or an error while the stage runs) as the original. The steps:
//   1. code stages: the prefix graph that ends at the first divergent node, returning only its
//      value when that still diverges (compiler/subgraphs.h);
//   2. delta debugging (Zeller's ddmin) over the computed nodes: sets of nodes become inputs
//      fed with their values (recorded by the interpreter), keeping what still diverges, down
//      to a set where no single node can be cut;
//   3. fewer outputs: each output alone, when one still diverges;
//   4. smaller sizes: each input dim halved (down to 1) while the divergence stays: a symbolic
//      dim by binding its symbol smaller (every input dim of that symbol cut), a static dim by
//      a copy of the graph whose nodes' types are inferred again for the smaller input (skipped
//      when an op no longer accepts it: a reshape to the old element count). Inputs are cut from
//      their start, so the values that remain are the original's.
// Each test compiles the candidate for code stages; `max_tests` bounds the work.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "compiler/verify.h"
#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::compiler {

struct MinifyOptions {
  VerifyOptions verify;
  std::string stage;                  // the divergent stage (a graph stage, loops, scheduled or a target)
  std::optional<std::string> start;   // code stages: the first divergent node (without '%'), when found
  int max_tests = 150;
};

struct MinifiedRepro {
  ir::Graph graph;
  std::map<std::string, Tensor> inputs;
  StageVerdict verdict;  // the stage's verdict on `graph`
  int tests = 0;         // candidates tried
  size_t original_nodes = 0;
};

// Throws kiln::Error when the stage does not diverge on `graph` to begin with.
MinifiedRepro minify(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs, const MinifyOptions& options);

// `minify` started where verify_model (compiler/verify.h) found the divergence: a graph stage's
// from `graph` as loaded, a code stage's from the simplified graph the code is made from.
MinifiedRepro minify_divergence(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                                const MinifyOptions& options);

// kiln::Error unless `directory` is absent, empty, or `overwrite`: checked before minifying.
void check_repro_directory(const std::filesystem::path& directory, bool overwrite);

// DIR/repro.kiln (+ repro.safetensors with its parameters), DIR/inputs/NAME.npy and
// DIR/repro.sh, which runs `kiln verify` on them with the same options and shows the
// divergence. DIR must be empty or absent unless `overwrite`.
void write_repro(const std::filesystem::path& directory, const MinifiedRepro& repro, const MinifyOptions& options,
                 const std::string& model_path, bool overwrite);

}  // namespace kiln::compiler
