// KILN_LOG channels (runtime/log.h).
#include "runtime/log.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

#include "kiln/error.h"

namespace kiln {

namespace {

// Warns once per distinct KILN_LOG value about names that are not channels.
void warn_unknown_names(const std::string& value, const std::vector<std::string>& unknown) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(value).second) return;
  std::string known;
  for (std::string_view name : log_channels()) known += (known.empty() ? "" : ", ") + std::string(name);
  for (const std::string& name : unknown)
    std::cerr << "kiln: warning: KILN_LOG names an unknown log channel '" << name << "' (known: " << known
              << ", all)\n";
}

std::vector<std::string> split_names(const std::string& value) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string name = value.substr(start, end - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) names.push_back(name);
    start = end + 1;
  }
  return names;
}

}  // namespace

const std::vector<std::string_view>& log_channels() {
  static const std::vector<std::string_view> channels = {"recompiles", "guards", "graph_breaks", "dynamic",
                                                         "cache",      "passes", "fusion", "batch_split", "post_ops", "distributed"};
  return channels;
}

namespace {

// Whether `value` (a KILN_LOG value) enables `channel`; names that are not channels are warned about.
bool value_enables(const std::string& value, std::string_view channel) {
  const std::vector<std::string_view>& channels = log_channels();
  std::vector<std::string> unknown;
  bool enabled = false;
  for (const std::string& name : split_names(value)) {
    if (name == "all" || name == channel) enabled = true;
    if (name != "all" && std::find(channels.begin(), channels.end(), name) == channels.end()) unknown.push_back(name);
  }
  if (!unknown.empty()) warn_unknown_names(value, unknown);
  return enabled;
}

}  // namespace

bool log_enabled(std::string_view channel) {
  const std::vector<std::string_view>& channels = log_channels();
  KILN_CHECK(std::find(channels.begin(), channels.end(), channel) != channels.end(), "unknown log channel ",
             std::string(channel));
  const char* variable = std::getenv("KILN_LOG");
  if (variable == nullptr || *variable == '\0') return false;
  return value_enables(variable, channel);
}

void check_log_environment() {
  const char* variable = std::getenv("KILN_LOG");
  if (variable != nullptr && *variable != '\0') value_enables(variable, "");
}

void log(std::string_view channel, const std::string& message) {
  if (log_enabled(channel)) std::cerr << "kiln[" << channel << "]: " << message << "\n";
}

}  // namespace kiln
