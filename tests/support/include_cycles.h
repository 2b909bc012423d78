// Include cycles inside the folders of the source tree. A module is a header and its .cpp
// (ir/graph.h + ir/graph.cpp, or either alone); module A depends on module B of the same
// folder when A's header or .cpp includes B's header. Dependencies inside a folder must form
// a DAG: a cycle (ir/graph.cpp includes ir/op_registry.h, which includes ir/graph.h) means two
// modules that cannot be understood, tested or moved apart.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::test_support {

// Every include cycle among the modules of each folder under `root`/`folder` (that folder
// and each folder below it, each on its own), as "ir/a -> ir/b -> ir/a"; empty when none.
std::vector<std::string> include_cycles(const std::filesystem::path& root, const std::string& folder);

}  // namespace kiln::test_support
