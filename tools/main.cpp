// The `kiln` command line: parses flags (CLI11) and prints. The work is done by the
// libraries; each subcommand lives in its own file (dump_command.cpp, run_command.cpp).
// Exit status: 0 success, 1 a user error (one line on stderr), 2 an internal error.
#include <cstdio>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "kiln/error.h"
#include "runtime/log.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kiln: an ahead-of-time graph compiler for machine-learning models.\n"
      "Reads a model (a torch.export .pt2 archive, ONNX .onnx, or Kiln IR text .kiln or JSON\n"
      ".json with weights in a .safetensors file of the same stem), shows its IR, compiles it\n"
      "for the CPU or CUDA, and runs it.",
      "kiln"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  app.footer(
      "Examples:\n"
      "  kiln dump samples/models/mlp.kiln\n"
      "  kiln dump samples/models/cnn.kiln --format dot | dot -Tsvg > cnn.svg\n"
      "  kiln dump samples/models/attention.kiln --stage decomposed\n"
      "  kiln opt samples/models/inplace.kiln --passes functionalize,dce --verbose\n"
      "  kiln run samples/models/mlp.kiln --random-inputs 0 --dim s0=4\n"
      "  kiln run samples/models/cnn.kiln --input x=image.npy --out results/\n"
      "  kiln kernel --expr 'gelu(x * w + b)' --input x=f32[s0,4096] --input w=f32[4096] --input b=f32[4096] --name fused_gelu\n"
      "  kiln verify samples/models/attention.kiln\n"
      "  kiln report samples/models/attention.kiln -o attention.html\n"
      "  kiln cache stats\n"
      "  kiln launch -n 2 build/samples/train_ddp/train_ddp\n"
      "Run 'kiln COMMAND --help' for a command's options.");

  kiln::tools::add_dump_command(app);
  kiln::tools::add_run_command(app);
  kiln::tools::add_opt_command(app);
  kiln::tools::add_cache_command(app);
  kiln::tools::add_compile_command(app);
  kiln::tools::add_bench_command(app);
  kiln::tools::add_kernel_command(app);
  kiln::tools::add_verify_command(app);
  kiln::tools::add_report_command(app);
  kiln::tools::add_launch_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    std::cerr << "kiln: error: " << error.what() << "\n"
              << "Run 'kiln --help' for usage.\n";
    return 1;
  }

  try {
    kiln::check_log_environment();  // an unknown KILN_LOG channel is reported by every command
    return kiln::tools::run_selected_command(app);
  } catch (const kiln::Error& error) {
    std::cerr << "kiln: error: " << error.what() << "\n";
    return 1;
  } catch (const kiln::InternalError& error) {
    std::cerr << "kiln: internal error (a bug in Kiln; please report it): " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "kiln: internal error (a bug in Kiln; please report it): " << error.what() << "\n";
    return 2;
  }
}
