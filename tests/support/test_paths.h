// Where the tests find the source tree, the build tree and the programs built beside them
// (`kiln`, the samples, the distributed worker): KILN_SOURCE_DIR and the other macros below.
// Their values are compiled into tests/support/test_paths.cpp alone, not into every test
// object, so that no other object depends on where the clone is: ccache then serves a clone in
// another folder (CI builds a fresh one each run) every object a build here already made.
#pragma once

#include <string>

namespace kiln::test_paths {

std::string source_dir();  // the source tree: samples/, tests/data/, golden files
std::string binary_dir();  // the build tree
// A program or plugin this build made, by its CMake target ("kiln", "kiln_clang",
// "distributed_worker", "compile_fn", "train_mlp", "train_ddp"); empty when this build does not
// make it.
std::string program(const std::string& target);

}  // namespace kiln::test_paths

#define KILN_SOURCE_DIR (::kiln::test_paths::source_dir())
#define KILN_BINARY_DIR (::kiln::test_paths::binary_dir())
#define KILN_EXECUTABLE (::kiln::test_paths::program("kiln"))
#define KILN_DISTRIBUTED_WORKER (::kiln::test_paths::program("distributed_worker"))
#define KILN_COMPILE_FN_SAMPLE (::kiln::test_paths::program("compile_fn"))
#define KILN_TRAIN_MLP_SAMPLE (::kiln::test_paths::program("train_mlp"))
#define KILN_TRAIN_DDP_SAMPLE (::kiln::test_paths::program("train_ddp"))
