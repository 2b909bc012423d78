// Coverage: every core op of the registry either has a derivative (passes/derivatives/) or is
// listed, with its reason, in ops_without_derivative.txt. A new op must be classified: this
// test names each op that is in neither list, and each listed op that has since gained a
// derivative or left the registry. Composite ops (decomposed before autodiff) and ops that
// mutate (removed by functionalize) never reach autodiff and are not classified.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "ir/op_registry.h"
#include "passes/derivatives/derivatives.h"
#include "passes/graph_queries.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

std::set<std::string> listed_without_derivative() {
  std::ifstream file(std::string(KILN_SOURCE_DIR) + "/tests/autodiff/ops_without_derivative.txt");
  EXPECT_TRUE(file.good()) << "tests/autodiff/ops_without_derivative.txt is missing";
  std::set<std::string> ops;
  std::string line;
  while (std::getline(file, line)) {
    line = line.substr(0, line.find('#'));
    size_t end = line.find_last_not_of(" \t");
    if (end == std::string::npos) continue;
    ops.insert(line.substr(0, end + 1));
  }
  return ops;
}

TEST(DerivativeCoverage, EveryCoreOpHasADerivativeOrIsListedWithoutOne) {
  std::set<std::string> without = listed_without_derivative();
  std::set<std::string> core;
  for (const ir::OpInfo* op : ir::OpRegistry::global().all()) {
    if (op->composite || op->is_inplace() || passes::op_mutates(*op)) continue;
    core.insert(op->name());
    bool has_derivative = passes::derivatives::find_derivative(op->name()) != nullptr;
    if (!has_derivative && !without.count(op->name()))
      ADD_FAILURE() << "op '" << op->name() << "' has no derivative and is not in ops_without_derivative.txt";
    if (has_derivative && without.count(op->name()))
      ADD_FAILURE() << "op '" << op->name() << "' has a derivative but is listed in ops_without_derivative.txt";
  }
  for (const std::string& op : without)
    if (!core.count(op)) ADD_FAILURE() << "ops_without_derivative.txt lists '" << op << "', which is not a core op";
  for (const std::string& op : passes::derivatives::ops_with_derivative())
    if (!core.count(op)) ADD_FAILURE() << "the derivative table has '" << op << "', which is not a core op";
}

}  // namespace
}  // namespace kiln
