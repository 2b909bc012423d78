// `kiln dump MODEL [--stage NAME | --all-stages DIR [--force]] [--target T] [--format text|json|dot]`:
// prints a model's graph IR as loaded ("traced") or after any stage of the default pipeline
// (compiler/graph_stages.h), the code generator's stages (compiler/compile_driver.h: the loop IR
// "loops", the kernels "scheduled", and each code target's generated code under its own name,
// "cpp" and "cuda", or "code" for the one of --target), or the training stages (joint, forward,
// backward; --loss names the output to differentiate).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "compiler/compile_driver.h"
#include "compiler/graph_formats.h"
#include "compiler/graph_stages.h"
#include "compiler/model_files.h"
#include "compiler/target_registry.h"
#include "compiler/training_stages.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "kiln/safetensors.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {
struct DumpOptions {
  std::string model;
  std::string format = "text";
  std::string stage = "traced";
  std::string target;  // empty: the stage's own (cpu for "code")
  std::string all_stages_dir;
  std::string loss;
  bool show_source = false;
  bool verbose = false;
  bool freeze = false;
  bool force = false;  // --all-stages may overwrite the files of a non-empty directory
};

// "code": the generated code of the target the user chose.
constexpr const char* kCodeStage = "code";

std::string render(const ir::Graph& graph, const DumpOptions& options) {
  return compiler::render_graph(graph, compiler::parse_graph_format(options.format), options.show_source);
}

// The joint graph, or the forward or backward graph headed by the partition's saved-bytes
// report: comment lines the IR parser skips, or on stderr beside JSON and dot.
int dump_training_stage(const ir::Graph& model, const DumpOptions& options) {
  passes::JointGraph joint = compiler::training_joint_graph(model, options.loss);
  if (options.stage == "joint") {
    std::cout << render(joint.graph, options);
    return 0;
  }
  passes::Partition partition = compiler::partition_training_graph(joint);
  (options.format == "text" ? std::cout : std::cerr) << partition.report();
  std::cout << render(options.stage == "forward" ? partition.forward : partition.backward, options);
  return 0;
}

// The file of a code stage: .cpp and .cu for generated code, .txt for the loop IR and kernels.
std::string code_stage_extension(const compiler::CodegenStage& stage) {
  if (stage.name == "cpp") return ".cpp";
  if (stage.name == "cuda") return ".cu";
  return ".txt";
}

// Every graph stage (each in --format, with its weights and folded constants beside it as
// N_stage.safetensors, so that each file loads and runs by itself), then every code stage.
// DIR must be empty unless --force.
int dump_all_stages(ir::Graph& graph, const DumpOptions& options, const compiler::GraphRunOptions& run_options) {
  namespace fs = std::filesystem;
  const fs::path directory(options.all_stages_dir);
  if (fs::exists(directory) && !fs::is_directory(directory)) fail("--all-stages ", directory.string(), " is a file");
  if (fs::exists(directory) && !fs::is_empty(directory) && !options.force)
    fail("--all-stages directory ", directory.string(), " exists and is not empty (pass --force to overwrite its files)");
  fs::create_directories(directory);
  int index = 0;
  compiler::GraphFormat format = compiler::parse_graph_format(options.format);
  const char* extension = compiler::graph_format_extension(format);
  auto write = [&](const std::string& file, const std::string& text) {
    fs::path path = directory / file;
    write_file_atomically(path.string(), text, /*overwrite=*/true);
    std::cout << "wrote " << path.string() << "\n";
  };
  ir::Graph original = compiler::load_model(options.model);
  compiler::run_graph_stages(graph, compiler::graph_stages().back().name, run_options,
                             [&](std::string_view stage, const ir::Graph& at_stage) {
                               std::string stem = std::to_string(index++) + "_" + std::string(stage);
                               if (format != compiler::GraphFormat::dot && !at_stage.parameters().empty()) {
                                 std::map<std::string, Tensor> weights(at_stage.parameters().begin(),
                                                                       at_stage.parameters().end());
                                 write_safetensors((directory / (stem + ".safetensors")).string(), weights);
                               }
                               write(stem + extension, render(at_stage, options));
                             });
  compiler::CodegenStageOptions stage_options;
  stage_options.freeze = options.freeze;
  stage_options.show_source = options.show_source;
  for (const compiler::CodegenStage& stage : compiler::codegen_stages()) {
    std::string file = std::to_string(index++) + "_" + stage.name + code_stage_extension(stage);
    try {
      write(file, compiler::dump_codegen_stage(original, stage.name, stage_options));
    } catch (const Error& error) {
      std::cout << "not written: " << (directory / file).string() << " (" << error.what() << ")\n";
    }
  }
  return 0;
}

// The codegen stage to print: "code" becomes --target's code stage; a target-specific stage
// must agree with --target when both are given.
std::string codegen_stage(const DumpOptions& options) {
  if (options.stage == kCodeStage)
    return std::string(compiler::find_code_target(options.target.empty() ? "cpu" : options.target).code_stage());
  if (options.target.empty()) return options.stage;
  for (const compiler::CodegenStage& stage : compiler::codegen_stages()) {
    if (stage.name != options.stage || stage.target.empty() || stage.target == options.target) continue;
    fail("--stage ", options.stage, " is the code of target ", stage.target, ", not of --target ", options.target,
         " (--stage code shows the code of --target)");
  }
  return options.stage;
}

bool is_code_stage(const std::string& stage) { return stage == kCodeStage || compiler::is_codegen_stage(stage); }

// "code, cpp, cuda": the stages whose text depends on the target.
std::string target_stages() {
  std::string names = kCodeStage;
  for (const compiler::CodegenStage& stage : compiler::codegen_stages())
    if (!stage.target.empty()) names += ", " + stage.name;
  return names;
}

int run_dump(const DumpOptions& options) {
  if (!options.target.empty()) {
    check_target(options.target);
    bool target_specific = options.stage == kCodeStage;
    for (const compiler::CodegenStage& stage : compiler::codegen_stages())
      target_specific |= stage.name == options.stage && !stage.target.empty();
    if (!target_specific) fail("--target applies to the stages of generated code (", target_stages(), "), not --stage ", options.stage);
  }
  if (!options.loss.empty() && !compiler::is_training_stage(options.stage))
    fail("--loss applies only to --stage joint, forward or backward");
  ir::Graph graph = compiler::load_model(options.model);
  if (compiler::is_training_stage(options.stage)) return dump_training_stage(graph, options);
  compiler::GraphRunOptions run_options;
  run_options.verbose = options.verbose;
  run_options.freeze = options.freeze;
  if (!options.all_stages_dir.empty()) return dump_all_stages(graph, options, run_options);
  if (is_code_stage(options.stage)) {
    if (options.format != "text") fail("--stage ", options.stage, " prints text only (not --format ", options.format, ")");
    compiler::CodegenStageOptions stage_options;
    stage_options.freeze = options.freeze;
    stage_options.show_source = options.show_source;
    std::cout << compiler::dump_codegen_stage(graph, codegen_stage(options), stage_options);
    return 0;
  }
  compiler::run_graph_stages(graph, options.stage, run_options);
  std::cout << render(graph, options);
  return 0;
}

std::string stage_help() {
  std::string text = "Show the graph after this stage of the pipeline:";
  for (const compiler::GraphStep& stage : compiler::graph_stages()) text += "\n  " + stage.name + ": " + stage.summary;
  for (const compiler::CodegenStage& stage : compiler::codegen_stages()) text += "\n  " + stage.name + ": " + stage.summary;
  text += "\n  code: the generated code of --target (default cpu)";
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
  for (const compiler::GraphStep& stage : compiler::graph_stages()) stage_names.push_back(stage.name);
  for (const compiler::CodegenStage& stage : compiler::codegen_stages()) stage_names.push_back(stage.name);
  stage_names.emplace_back(kCodeStage);
  for (const char* training_stage : {"joint", "forward", "backward"}) stage_names.emplace_back(training_stage);
  auto* stage = dump->add_option("--stage", options->stage, stage_help())
                    ->check(CLI::IsMember(stage_names))
                    ->capture_default_str();
  add_target_option(*dump, options->target, "With --stage code: the target whose generated code to show (default cpu):");
  auto* all_stages = dump->add_option("--all-stages", options->all_stages_dir,
                                      "Write every stage into DIR, one file each: the graph stages (with their weights "
                                      "beside them, so each file runs by itself), then loops, scheduled and the code")
                         ->excludes(stage);
  dump->add_flag("--force", options->force, "With --all-stages: write into a directory that is not empty")->needs(all_stages);
  dump->add_option("--loss", options->loss,
                   "With --stage joint, forward or backward: the output to differentiate (default: the only scalar output)");
  dump->add_flag("--show-source", options->show_source, "Append each node's origin as a comment");
  dump->add_flag("--verbose,-v", options->verbose, "Print each pass's time and the IR after it (to stderr)");
  dump->add_flag("--freeze", options->freeze, "Let constant folding fold parameters");
  dump->footer(
      "Examples:\n"
      "  kiln dump samples/models/attention.kiln\n"
      "  kiln dump samples/models/attention.kiln --stage decomposed\n"
      "  kiln dump samples/models/attention.kiln --stage scheduled\n"
      "  kiln dump samples/models/attention.kiln --stage cpp\n"
      "  kiln dump samples/models/cnn.kiln --format dot | dot -Tsvg > cnn.svg\n"
      "  kiln dump samples/models/attention.kiln --all-stages stages/\n"
      "  kiln dump samples/models/classifier.kiln --stage backward");
  register_action(dump, [options] { return run_dump(*options); });
}

}  // namespace kiln::tools
