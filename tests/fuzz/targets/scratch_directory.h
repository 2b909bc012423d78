// A folder of this process under the temp directory for targets that must read files
// (kiln_fuzz_<pid>/<name>), emptied before each use and removed, with the process's folder, when
// the process exits (every fuzzing or replay run left one behind).
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace kiln::fuzz {

// kiln_fuzz_<pid> under the temp directory, removed at exit.
inline const std::filesystem::path& process_scratch_root() {
  struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kiln_fuzz_" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Root root;
  return root.path;
}

inline std::filesystem::path fresh_scratch_directory(const std::string& name) {
  std::filesystem::path path = process_scratch_root() / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

}  // namespace kiln::fuzz
