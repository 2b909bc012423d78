// One case of ONNX's backend node tests (onnx/backend/test/data/node/<case>/ in the onnx
// package: model.onnx and test_data_set_0/{input,output}_<k>.pb), as the conformance runner
// sees it before running anything: its opset, the op types its graph uses (subgraphs
// included), the op it tests, and whether Kiln can import it at all. Also where the cases are:
// scripts/make-onnx-test-data copies them into node/ of the generated ONNX test data
// (tests/frontends/onnx_generated_data.h) in the test set-up.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::conformance {

namespace fs = std::filesystem;

// The folder of node cases, or nullopt when the set-up step has not been run.
std::optional<fs::path> node_tests_folder();
// What to tell a user when node_tests_folder() is nullopt.
std::string missing_node_tests_message();

// Every case folder's name under `folder`, sorted.
std::vector<std::string> node_test_case_names(const fs::path& folder);

struct NodeTestCase {
  std::string name;   // "test_add_bcast"
  fs::path folder;
  int64_t opset = 0;  // of the default domain; 0 when it imports none
  // Op types of every node, subgraphs included; ops of other domains as "domain.Op".
  std::set<std::string> op_types;
  // The op the case tests: the ONNX op whose name the case's name starts with (longest match,
  // case and underscores ignored: test_reduce_sum_keepdims -> ReduceSum, test_softmax_axis_0_expanded
  // -> Softmax), else its first node's op.
  std::string tested_op;
  // The element types of its graph inputs, outputs and Cast targets that Kiln has no dtype
  // for, and its non-tensor inputs and outputs, as "type:UINT16", "type:sequence", ...
  std::set<std::string> unsupported_types;
};

// Reads the case's model (throws kiln::Error when it cannot be parsed).
NodeTestCase read_node_test_case(const fs::path& folder);

// Whether Kiln imports the case's opset (kMinOnnxOpset..kMaxOnnxOpset).
bool opset_is_importable(const NodeTestCase& test_case);
// What keeps the importer from running the case: the op types it does not convert, then the
// unsupported types (each sorted). Empty when the case can run.
std::vector<std::string> unsupported_parts(const NodeTestCase& test_case);

}  // namespace kiln::conformance
