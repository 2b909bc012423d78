// The paths of tests/support/test_paths.h, as tests/CMakeLists.txt defines them for this file.
#include "tests/support/test_paths.h"

#include <map>

// The programs a build does not make (the samples and the worker of a runtime-only build) are "".
#ifndef KILN_TEST_PATHS_KILN_CLANG
#define KILN_TEST_PATHS_KILN_CLANG ""
#endif
#ifndef KILN_TEST_PATHS_DISTRIBUTED_WORKER
#define KILN_TEST_PATHS_DISTRIBUTED_WORKER ""
#endif
#ifndef KILN_TEST_PATHS_COMPILE_FN
#define KILN_TEST_PATHS_COMPILE_FN ""
#endif
#ifndef KILN_TEST_PATHS_TRAIN_MLP
#define KILN_TEST_PATHS_TRAIN_MLP ""
#endif
#ifndef KILN_TEST_PATHS_TRAIN_DDP
#define KILN_TEST_PATHS_TRAIN_DDP ""
#endif

namespace kiln::test_paths {

std::string source_dir() { return KILN_TEST_PATHS_SOURCE_DIR; }
std::string binary_dir() { return KILN_TEST_PATHS_BINARY_DIR; }

std::string program(const std::string& target) {
  static const std::map<std::string, std::string> programs = {
      {"kiln", KILN_TEST_PATHS_KILN},
      {"kiln_clang", KILN_TEST_PATHS_KILN_CLANG},
      {"distributed_worker", KILN_TEST_PATHS_DISTRIBUTED_WORKER},
      {"compile_fn", KILN_TEST_PATHS_COMPILE_FN},
      {"train_mlp", KILN_TEST_PATHS_TRAIN_MLP},
      {"train_ddp", KILN_TEST_PATHS_TRAIN_DDP}};
  auto found = programs.find(target);
  return found == programs.end() ? std::string() : found->second;
}

}  // namespace kiln::test_paths
