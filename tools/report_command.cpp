// `kiln report MODEL -o FILE.html [--target cpu|cuda|none] [--show-source] [--dim SYMBOL=N]...
//  [--isa I] [--sm N] [--no-cache] [--freeze] [--force]`: compiles a model through the one driver
// and writes one self-contained HTML page about the compile (compiler/report/: every stage as
// `kiln dump` prints it, the graph stages as pictures, the kernels and what each fuses, the memory
// plan as a picture, per-stage times, guards, cache key and hit or miss, fallbacks and warnings):
// the tlparse of Kiln. --target none stops after scheduling (nothing is built).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/model_files.h"
#include "compiler/report/compile_report.h"
#include "compiler/report/report_html.h"
#include "compiler/target_registry.h"
#include "kiln/error.h"
#include "runtime/atomic_file.h"
#include "tools/codegen_flags.h"
#include "tools/commands.h"
#include "tools/model_inputs.h"

namespace kiln::tools {

namespace {
struct ReportCommandOptions {
  std::string model;
  std::string out;
  std::string target = "cpu";
  CodegenFlags codegen;
  std::vector<std::string> dims;
  bool show_source = false;
  bool force = false;
};

// The options as given, for the page.
std::string options_text(const ReportCommandOptions& options) {
  std::string text = "--target " + options.target;
  if (!options.codegen.isa.empty()) text += " --isa " + options.codegen.isa;
  if (options.codegen.sm != 0) text += " --sm " + std::to_string(options.codegen.sm);
  if (options.codegen.no_cache) text += " --no-cache";
  if (options.codegen.freeze) text += " --freeze";
  if (options.show_source) text += " --show-source";
  for (const std::string& dim : options.dims) text += " --dim " + dim;
  return text;
}

int run_report(const ReportCommandOptions& options) {
  namespace fs = std::filesystem;
  if (options.target != "none") {
    check_target(options.target);
    compiler::find_code_target(options.target);  // interp and eager compile nothing: one line naming the code targets
  }
  check_codegen_flags(options.target, options.codegen);
  if (fs::is_directory(options.out)) fail("-o ", options.out, " is a directory (name the HTML file to write)");
  if (fs::exists(options.out) && !options.force) fail("-o ", options.out, " exists (pass --force to overwrite it)");
  fs::path folder = fs::path(options.out).parent_path();
  if (!folder.empty() && !fs::is_directory(folder)) fail("-o ", options.out, ": the folder ", folder.string(), " does not exist");
  std::map<std::string, int64_t> dims = parse_dim_flags(options.dims);
  ir::Graph graph = compiler::load_model(options.model);

  compiler::ReportOptions report_options;
  report_options.model = options.model;
  report_options.options = options_text(options);
  report_options.compile = codegen_compile_options(options.target == "none" ? "" : options.target, options.codegen);
  report_options.show_source = options.show_source;
  report_options.dims = dims;
  compiler::CompileReport report = compiler::make_compile_report(graph, report_options);
  std::string html = compiler::render_report_html(report);
  write_file_atomically(options.out, html, /*overwrite=*/true);
  std::cout << "wrote " << options.out << " (" << html.size() << " bytes: " << report.stages.size() << " stages, "
            << report.kernels.size() << (report.kernels.size() == 1 ? " kernel" : " kernels");
  if (report.result) std::cout << ", cache " << (report.result->cache_hit ? "hit" : "miss") << " " << report.result->key;
  std::cout << ")\n";
  if (!report.compile_error.empty()) fail("the compile for ", options.target, " failed (the page shows the stages before it): ", report.compile_error);
  return 0;
}
}  // namespace

void add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportCommandOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "Compile a model and write one self-contained HTML page about the compile (stages, kernels, memory, guards).");
  add_model_argument(*report, options->model);
  report->add_option("--out,-o", options->out, "The HTML file to write")->required();
  report->add_option("--target", options->target,
                     "What to compile for: cpu, cuda, or none (stop after scheduling: no code, nothing built)")
      ->capture_default_str();
  add_codegen_flags(*report, options->codegen, /*packages=*/false);
  report->add_flag("--show-source", options->show_source,
                   "Say where each node comes from (the user's file:line and module path) in the stages and kernels");
  report->add_option("--dim", options->dims,
                     "A shape symbol's value for the memory picture, SYMBOL=N (repeatable; default 8 within its range)");
  report->add_flag("--force", options->force, "Overwrite the HTML file when it exists");
  report->footer(
      "Examples:\n"
      "  kiln report samples/models/attention.kiln -o attention.html\n"
      "  kiln report samples/models/mlp.kiln -o mlp.html --dim s0=64 --show-source\n"
      "  kiln report samples/models/cnn.kiln -o cnn.html --target none --force");
  register_action(report, [options] { return run_report(*options); });
}

}  // namespace kiln::tools
