// `kiln compile MODEL [-o DIR] [--target cpu|cuda] [--isa scalar|avx2|avx512] [--sm N] [--no-cache]
// [--force] [--freeze] [--train [--loss NAME]] [--name NAME] [--embed-weights] [--onednn|--portable]`: compiles a model
// for a code target of the registry (compiler/target_registry.h; cpu: C++ and the system
// compiler; cuda: CUDA source and NVRTC, no GPU needed) through the one driver
// (compiler/compile_driver.h) into the compile cache, printing each stage with its time. With
// -o it writes a package into DIR instead (compiler/package_writer.h: NAME.h, the sources,
// NAME.safetensors, libNAME.so and libNAME.a; cpu: built for --isa all by default, convolutions
// through oneDNN with im2col + GEMM ones beside for builds without it, or one kind alone with
// --onednn or --portable; cuda: the device code built by nvcc, else NVRTC, for --sm); with --train, -o writes the artifacts
// (module.so, manifest.json, module.cpp). With
// --train it compiles the model's training step: the joint graph of the loss output (--loss,
// default the only floating scalar output) against every floating parameter, split by the
// min-cut partition as `kiln dump --stage forward|backward` shows it
// (compiler/training_stages.h), prints the saved-bytes report, and compiles the forward and the
// backward modules (into DIR/forward and DIR/backward with -o).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "compiler/compile_driver.h"
#include "compiler/model_files.h"
#include "compiler/package_writer.h"
#include "compiler/target_registry.h"
#include "compiler/targets/cpu_toolchain.h"
#include "compiler/training_stages.h"
#include "runtime/cpu_features.h"
#include "tools/codegen_flags.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {
struct CompileOptions {
  std::string model;
  std::string out_dir;
  std::string target = "cpu";
  CodegenFlags codegen;  // --isa, --sm, --no-cache, --freeze
  bool force = false;
  bool train = false;
  std::string loss;
  std::string name;
  bool embed_weights = false;
  bool onednn = false;
  bool portable = false;
};

void print_timing(const std::string& stage, double ms) {
  char line[128];
  std::snprintf(line, sizeof line, "  %-12s %9.2f ms", stage.c_str(), ms);
  std::cout << line << "\n";
}

// Compiles one graph, printing each stage's time and the result.
void compile_and_report(const ir::Graph& graph, kiln::CompileOptions compile_options) {
  double total = 0;
  compile_options.on_stage = [&](const std::string& stage, double ms) {
    total += ms;
    print_timing(stage, ms);
  };
  compiler::CompiledModel model = compiler::compile(graph, compile_options);
  const CompileResult& result = model.result();
  print_timing("total", total);
  std::cout << (result.cache_hit ? "cache hit" : "compiled") << ": key " << result.key << ", " << result.kernel_count
            << (result.kernel_count == 1 ? " kernel, " : " kernels, ") << result.details << "\n";
  std::cout << "artifact: " << result.artifact_dir.string() << "\n";
}

// The training step: the partition's report, then the forward and the backward modules.
void compile_training_step(const ir::Graph& graph, const CompileOptions& options,
                           const kiln::CompileOptions& compile_options) {
  passes::Partition partition = compiler::partition_training_graph(compiler::training_joint_graph(graph, options.loss));
  std::cout << partition.report();
  for (const char* half : {"forward", "backward"}) {
    kiln::CompileOptions half_options = compile_options;
    if (compile_options.output_dir) half_options.output_dir = *compile_options.output_dir / half;
    std::cout << "compiling the " << half << " graph of " << options.model << "\n";
    compile_and_report(std::string(half) == "forward" ? partition.forward : partition.backward, half_options);
  }
}

// -o: a package of the model.
int write_package(const ir::Graph& graph, const CompileOptions& options, kiln::CompileOptions compile_options) {
  compiler::PackageOptions package;
  package.directory = options.out_dir;
  package.name = options.name.empty() ? compiler::default_package_name(options.model) : options.name;
  package.source = options.model;
  package.embed_weights = options.embed_weights;
  using Convolutions = compiler::PackageOptions::Convolutions;
  package.convolutions = options.onednn ? Convolutions::library : options.portable ? Convolutions::portable : Convolutions::both;
  package.overwrite = options.force;
  if (!options.codegen.isa.empty() && options.codegen.isa != "all") package.isas = {parse_isa(options.codegen.isa)};
  compile_options.isa.reset();
  std::cout << "compiling " << options.model << " into package " << package.name << " for " << options.target << "\n";
  double total = 0;
  compile_options.on_stage = [&](const std::string& stage, double ms) {
    total += ms;
    print_timing(stage, ms);
  };
  compiler::PackageResult result = compiler::write_package(graph, compile_options, package);
  print_timing("total", total);
  std::cout << "package: " << result.directory.string() << " (" << package.name << ".h, lib" << package.name
            << ".so, lib" << package.name << ".a, " << package.name << ".safetensors of " << result.weights_bytes
            << " bytes; " << result.kernel_count << (result.kernel_count == 1 ? " kernel" : " kernels") << ")\n";
  if (result.portable_kernels)
    std::cout << "note: the kernels call oneDNN for convolutions (and matrix products of frozen weights), as `kiln run` "
                 "does (the libraries built here link libdnnl); the package also carries kernels without it (im2col + "
                 "GEMM), which its CMakeLists.txt builds where oneDNN is not found (or with -D" << package.name
              << "_ONEDNN=OFF); --portable writes those alone\n";
  return 0;
}

int run_compile(const CompileOptions& options) {
  compiler::find_code_target(options.target);  // an unknown target, or one that compiles nothing, fails first
  if (!options.loss.empty() && !options.train) fail("--loss applies only with --train");
  check_codegen_flags(options.target, options.codegen);
  bool package = !options.out_dir.empty() && (options.target == "cpu" || options.target == "cuda") && !options.train;
  if (!package && (!options.name.empty() || options.embed_weights || options.codegen.isa == "all" || options.onednn ||
                   options.portable))
    fail(!options.name.empty() ? "--name"
         : options.embed_weights ? "--embed-weights"
         : options.onednn        ? "--onednn"
         : options.portable      ? "--portable"
                                 : "--isa all",
         " applies only to packages: -o DIR with --target cpu or cuda, without --train");
  if (options.onednn && options.target != "cpu") fail("--onednn applies only to --target cpu packages (not --target ", options.target, ")");
  if (options.portable && options.target != "cpu")
    fail("--portable applies only to --target cpu packages (not --target ", options.target, ")");
  if (options.onednn && options.portable) fail("--onednn and --portable exclude each other: pick one kind of convolutions");
  ir::Graph graph = compiler::load_model(options.model);
  kiln::CompileOptions compile_options = codegen_compile_options(options.target, options.codegen);
  compile_options.overwrite = options.force;
  if (!options.out_dir.empty()) compile_options.output_dir = options.out_dir;
  if (options.train) {
    compile_training_step(graph, options, compile_options);
    return 0;
  }
  if (package) return write_package(graph, options, compile_options);
  std::cout << "compiling " << options.model << " for " << options.target << "\n";
  compile_and_report(graph, compile_options);
  return 0;
}
}  // namespace

void add_compile_command(CLI::App& app) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App* compile = app.add_subcommand("compile", "Compile a model for a target: fused C++ and a shared object, or CUDA and a cubin.");
  add_model_argument(*compile, options->model);
  compile->add_option("--out,-o", options->out_dir,
                      "Write a package into DIR (NAME.h, sources, weights, libNAME.so/.a that build without Kiln; "
                      "cuda: with the device code, run through the driver loaded at run time); "
                      "with --train, the artifacts and their generated source");
  add_target_option(*compile, options->target, "What to compile for (the targets that generate code):")->capture_default_str();
  add_codegen_flags(*compile, options->codegen, /*packages=*/true);
  compile->add_option("--name", options->name,
                      "Packages: the name every symbol, file and class of the package starts with (default: the model file's stem)");
  compile->add_flag("--embed-weights", options->embed_weights,
                    "Packages: also compile the weights into the libraries (NAME_create(NULL) uses them)");
  compile->add_flag("--onednn", options->onednn,
                    "cpu packages: only oneDNN's convolutions (the package then needs libdnnl to build). Default, where Kiln "
                    "has oneDNN: oneDNN's, as `kiln run` runs them, in the libraries built here, and im2col + GEMM ones too, "
                    "which the package's CMakeLists.txt builds where oneDNN is not found");
  compile->add_flag("--portable", options->portable,
                    "cpu packages: only im2col + GEMM convolutions (the package and its libraries need only a C++ compiler, "
                    "OpenMP and BLAS)");
  compile->add_flag("--force", options->force, "Overwrite DIR when it is not empty");
  compile->add_flag("--train", options->train,
                    "Compile the training step: the forward and backward graphs of the loss against every floating "
                    "parameter (min-cut partition), with the saved-bytes report");
  compile->add_option("--loss", options->loss, "With --train: the output to differentiate (default: the only scalar output)");
  compile->footer(
      "Examples:\n"
      "  kiln compile samples/models/attention.kiln                  (cached; prints each stage's time)\n"
      "  kiln compile samples/models/attention.kiln -o attention_pkg/  (a package that builds without Kiln)\n"
      "  kiln compile samples/models/cnn.kiln --target cuda\n"
      "  kiln compile samples/models/classifier.kiln --train --loss loss");
  register_action(compile, [options] { return run_compile(*options); });
}

}  // namespace kiln::tools
