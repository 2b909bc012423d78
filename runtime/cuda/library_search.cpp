// Finding the CUDA toolkit's libraries. See runtime/cuda/library_search.h.
#include "runtime/cuda/library_search.h"

#include <cstdlib>
#include <filesystem>

#include "kiln/error.h"

namespace kiln::cuda {

namespace {
// $CUDA_HOME, $CUDA_PATH (when set), then /usr/local/cuda.
std::vector<std::string> toolkit_roots() {
  std::vector<std::string> roots;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable); root != nullptr && *root != '\0') roots.push_back(root);
  }
  roots.push_back("/usr/local/cuda");
  return roots;
}
}  // namespace

std::vector<std::string> toolkit_library_candidates(const std::vector<std::string>& names, const char* override_variable) {
  if (const char* forced = std::getenv(override_variable); forced != nullptr && *forced != '\0') return {forced};
  std::vector<std::string> candidates = names;
  for (const std::string& root : toolkit_roots()) {
    for (const std::string& name : names) candidates.push_back(root + "/lib64/" + name);
  }
  return candidates;
}

SharedLibrary open_toolkit_library(const std::vector<std::string>& names, const char* override_variable, const std::string& what) {
  std::string tried;
  for (const std::string& candidate : toolkit_library_candidates(names, override_variable)) {
    try {
      return SharedLibrary::open(candidate);
    } catch (const Error& e) {
      tried += (tried.empty() ? " " : "; ") + std::string(e.what());  // one line (kiln/error.h)
    }
  }
  fail(what, " was not found; install the CUDA toolkit or set $", override_variable, ". Tried:", tried);
}

std::optional<std::string> toolkit_include_directory() {
  for (const std::string& root : toolkit_roots()) {
    if (std::filesystem::exists(root + "/include/cuda_fp16.h")) return root + "/include";
  }
  return std::nullopt;
}

}  // namespace kiln::cuda
