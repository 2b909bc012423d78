// A folder of this process under the temp directory for targets that must read files
// (kiln_fuzz_<pid>/<name>), emptied before each use.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

namespace kiln::fuzz {

inline std::filesystem::path fresh_scratch_directory(const std::string& name) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kiln_fuzz_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

}  // namespace kiln::fuzz
