// Include cycles per folder: read each module's quoted #include lines, keep the edges to
// modules of the same folder, and report every strongly connected part by a cycle through it.
#include "tests/support/include_cycles.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace kiln::test_support {

namespace {

namespace fs = std::filesystem;

using Graph = std::map<std::string, std::set<std::string>>;  // module -> modules it includes

// The modules of one folder (paths relative to root, without extension) and their edges
// inside that folder.
Graph folder_graph(const fs::path& root, const fs::path& folder) {
  static const std::regex include_line(R"(^\s*#\s*include\s+"([^"]+)\.h")");
  Graph graph;
  for (const auto& entry : fs::directory_iterator(root / folder)) {
    std::string extension = entry.path().extension().string();
    if (!entry.is_regular_file() || (extension != ".h" && extension != ".cpp")) continue;
    std::string module = (folder / entry.path().stem()).generic_string();
    std::set<std::string>& edges = graph[module];
    std::ifstream file(entry.path());
    std::smatch match;
    for (std::string line; std::getline(file, line);)
      if (std::regex_search(line, match, include_line)) edges.insert(match[1].str());
  }
  for (auto& [module, edges] : graph) {
    std::set<std::string> inside;
    for (const std::string& target : edges)
      if (target != module && graph.count(target)) inside.insert(target);
    edges = std::move(inside);
  }
  return graph;
}

// A cycle through `start` inside `part` (a strongly connected set of two or more modules).
std::string cycle_through(const Graph& graph, const std::string& start, const std::set<std::string>& part) {
  std::vector<std::string> path{start};
  std::set<std::string> visited{start};
  std::function<bool(const std::string&)> walk = [&](const std::string& module) {
    for (const std::string& next : graph.at(module)) {
      if (!part.count(next)) continue;
      if (next == start) return true;
      if (!visited.insert(next).second) continue;
      path.push_back(next);
      if (walk(next)) return true;
      path.pop_back();
    }
    return false;
  };
  walk(start);
  std::string text;
  for (const std::string& module : path) text += module + " -> ";
  return text + start;
}

// Tarjan's strongly connected components of two or more modules.
std::vector<std::set<std::string>> cyclic_parts(const Graph& graph) {
  std::map<std::string, int> index, low;
  std::vector<std::string> stack;
  std::set<std::string> on_stack;
  std::vector<std::set<std::string>> parts;
  int counter = 0;
  std::function<void(const std::string&)> visit = [&](const std::string& module) {
    index[module] = low[module] = counter++;
    stack.push_back(module);
    on_stack.insert(module);
    for (const std::string& next : graph.at(module)) {
      if (!index.count(next)) {
        visit(next);
        low[module] = std::min(low[module], low[next]);
      } else if (on_stack.count(next)) {
        low[module] = std::min(low[module], index[next]);
      }
    }
    if (low[module] != index[module]) return;
    std::set<std::string> part;
    std::string member;
    do {
      member = stack.back();
      stack.pop_back();
      on_stack.erase(member);
      part.insert(member);
    } while (member != module);
    if (part.size() > 1) parts.push_back(std::move(part));
  };
  for (const auto& [module, edges] : graph)
    if (!index.count(module)) visit(module);
  return parts;
}

}  // namespace

std::vector<std::string> include_cycles(const fs::path& root, const std::string& folder) {
  std::vector<fs::path> folders{folder};
  for (const auto& entry : fs::recursive_directory_iterator(root / folder))
    if (entry.is_directory()) folders.push_back(fs::relative(entry.path(), root));
  std::vector<std::string> cycles;
  for (const fs::path& each : folders) {
    Graph graph = folder_graph(root, each);
    for (const std::set<std::string>& part : cyclic_parts(graph))
      cycles.push_back(cycle_through(graph, *part.begin(), part));
  }
  std::sort(cycles.begin(), cycles.end());
  return cycles;
}

}  // namespace kiln::test_support
