// `kiln dump MODEL [--stage NAME | --all-stages DIR] [--format text|json|dot]`: prints a
// model's graph IR as loaded ("traced") or after any stage of the default pipeline, or the
// code generator's stages: loop IR (loops), kernels (scheduled), generated C++ (cpp) and CUDA
// (cuda: the launch plan and the kernels), or
// the training stages (joint, forward, backward; --loss names the output to differentiate).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "compiler/codegen_stages.h"
#include "frontends/model_loader.h"
#include "compiler/training_stages.h"
#include "ir/dot_format.h"
#include "ir/json_format.h"
#include "ir/printer.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"
#include "runtime/error.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {
struct DumpOptions {
  std::string model;
  std::string format = "text";
  std::string stage = "traced";
  std::string all_stages_dir;
  std::string loss;
  bool show_source = false;
  bool verbose = false;
  bool freeze = false;
};

std::string render(const ir::Graph& graph, const DumpOptions& options) {
  if (options.format == "json") return ir::graph_to_json(graph).dump(2) + "\n";
  if (options.format == "dot") return ir::graph_to_dot(graph);
  ir::PrintOptions print_options;
  print_options.show_source = options.show_source;
  return ir::print_graph(graph, print_options);
}

std::string extension(const std::string& format) {
  if (format == "json") return ".json";
  if (format == "dot") return ".dot";
  return ".kiln";
}

// The joint graph, or the forward or backward graph headed by the partition's saved-bytes
// report: comment lines the IR parser skips, or on stderr beside JSON and dot.
int dump_training_stage(const ir::Graph& model, const DumpOptions& options) {
  passes::JointGraph joint = compiler::training_joint_graph(model, options.loss);
  if (options.stage == "joint") {
    std::cout << render(joint.graph, options);
    return 0;
  }
  passes::Partition partition = passes::partition_joint_graph(joint);
  (options.format == "text" ? std::cout : std::cerr) << partition.report();
  std::cout << render(options.stage == "forward" ? partition.forward : partition.backward, options);
  return 0;
}

int run_dump(const DumpOptions& options) {
  if (!options.loss.empty() && !compiler::is_training_stage(options.stage))
    fail("--loss applies only to --stage joint, forward or backward");
  ir::Graph graph = frontends::load_model(options.model);
  if (compiler::is_training_stage(options.stage)) return dump_training_stage(graph, options);
  passes::RunOptions run_options;
  run_options.verbose = options.verbose;
  run_options.pass_options.freeze = options.freeze;
  if (!options.all_stages_dir.empty()) {
    std::filesystem::create_directories(options.all_stages_dir);
    int index = 0;
    const auto& stages = passes::pipeline_stages();
    passes::run_pipeline(graph, stages.back().name, run_options,
                         [&](const passes::Stage& stage, const ir::Graph& at_stage) {
                           std::string file = std::to_string(index++) + "_" + std::string(stage.name) + extension(options.format);
                           std::filesystem::path path = std::filesystem::path(options.all_stages_dir) / file;
                           std::ofstream out(path);
                           if (!out) fail("cannot write ", path.string());
                           out << render(at_stage, options);
                           std::cout << "wrote " << path.string() << "\n";
                         });
    return 0;
  }
  if (compiler::is_codegen_stage(options.stage)) {
    if (options.format != "text") fail("--stage ", options.stage, " prints text only (not --format ", options.format, ")");
    compiler::CodegenStageOptions stage_options;
    stage_options.freeze = options.freeze;
    std::cout << compiler::dump_codegen_stage(graph, options.stage, stage_options);
    return 0;
  }
  passes::run_pipeline(graph, options.stage, run_options);
  std::cout << render(graph, options);
  return 0;
}

std::string stage_help() {
  std::string text = "Show the graph after this stage of the pipeline:";
  for (const passes::Stage& stage : passes::pipeline_stages())
    text += "\n  " + std::string(stage.name) + ": " + std::string(stage.summary);
  text += "\n  loops: the loop IR lowered from the simplified graph";
  text += "\n  scheduled: the kernels, the nodes fused into each, and the memory plan";
  text += "\n  cpp: the generated C++ source";
  text += "\n  cuda: the CUDA launch plan (as comments) and the generated kernels";
  text += "\n  joint: the forward+backward graph of the loss (--loss) against every floating parameter";
  text += "\n  forward: the forward half of the min-cut partition (outputs, then the saved values)";
  text += "\n  backward: the backward half (inputs: the saved values; outputs: the gradients)";
  return text;
}
}  // namespace

void add_dump_command(CLI::App& app) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* dump = app.add_subcommand("dump", "Print a model's graph IR (as torch.fx prints a graph), at any stage.");
  add_model_argument(*dump, options->model);
  dump->add_option("--format", options->format, "Output format: text, json or dot")
      ->check(CLI::IsMember({"text", "json", "dot"}))
      ->capture_default_str();
  std::vector<std::string> stage_names;
  for (const passes::Stage& stage : passes::pipeline_stages()) stage_names.emplace_back(stage.name);
  for (const char* codegen_stage : {"loops", "scheduled", "cpp", "cuda"}) stage_names.emplace_back(codegen_stage);
  for (const char* training_stage : {"joint", "forward", "backward"}) stage_names.emplace_back(training_stage);
  auto* stage = dump->add_option("--stage", options->stage, stage_help())
                    ->check(CLI::IsMember(stage_names))
                    ->capture_default_str();
  dump->add_option("--all-stages", options->all_stages_dir, "Write the graph after every stage into DIR, one file per stage")
      ->excludes(stage);
  dump->add_option("--loss", options->loss,
                   "With --stage joint, forward or backward: the output to differentiate (default: the only scalar output)");
  dump->add_flag("--show-source", options->show_source, "Append each node's origin as a comment");
  dump->add_flag("--verbose,-v", options->verbose, "Print each pass's time and the IR after it (to stderr)");
  dump->add_flag("--freeze", options->freeze, "Let constant folding fold parameters");
  register_action(dump, [options] { return run_dump(*options); });
}

}  // namespace kiln::tools
