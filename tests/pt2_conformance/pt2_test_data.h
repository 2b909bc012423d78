// Where the generated .pt2 test data lives and what it holds. scripts/make-pt2-test-data (a
// step of the test set-up, scripts/test) generates it once into a cache outside the clone
// (~/.cache/kiln-test-data/pt2-*-<hash of the generating scripts>/) and points
// .cache/pt2-tests/{opinfo,models} of the source tree at it ($KILN_PT2_TEST_DATA overrides
// the .cache/pt2-tests folder):
//   opinfo/<op>/meta.json, <k>/training.pt2, <k>/core.pt2, <k>/expected_<i>.npy, <k>/exact_<i>.npy
//       PyTorch's OpInfo samples exported with torch.export (scripts/make_pt2_opinfo_samples.py)
//   opinfo/core_aten_ops.json   the Core ATen opset of the torch that exported them
//   models/<model>/...           torchvision classifiers and transformers (scripts/make_pt2_models.py)
// Each part is marked complete last.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::pt2_conformance {

namespace fs = std::filesystem;

// The folder of one part ("opinfo", "models"), or nullopt when it is not (completely) there.
std::optional<fs::path> pt2_test_data(const std::string& part);
// What to tell a user when pt2_test_data() is nullopt.
std::string missing_pt2_test_data(const std::string& part);
// scripts/test sets KILN_PT2_TEST_DATA_REQUIRED=1 after writing the data: tests that need it
// then fail instead of skipping when it is missing.
bool pt2_test_data_required();

// One exported OpInfo sample in one IR form: "<op>/<k>/training" or "<op>/<k>/core".
struct OpInfoCase {
  std::string name;    // "add/3/training"
  std::string op;      // the OpInfo entry ("nn.functional.conv2d")
  std::string form;    // "training" or "core"
  fs::path program;    // the .pt2 file
  fs::path folder;     // the sample's folder (expected_<i>.npy)
  std::vector<std::string> targets;  // the ATen targets the program calls
  double atol = 0, rtol = 0;
  // Non-empty when PyTorch itself runs the exported program to other values than eager's
  // (the generator's "<form>_diverges": its first difference). Random ops, whose OpInfo entries
  // seed eager, are among them.
  std::string pytorch_diverges;
};

// Samples torch.export itself refused, or that have no tensor output, per OpInfo entry.
struct OpInfoSkips {
  std::string op;
  int export_refused = 0;
  int not_applicable = 0;
};

struct OpInfoData {
  std::vector<OpInfoCase> cases;  // sorted by name
  std::vector<OpInfoSkips> skips;
  std::vector<std::string> core_aten_ops;  // "aten.add.Tensor", ...
};

// Reads every op's meta.json; throws kiln::Error on a malformed one.
OpInfoData read_opinfo_data(const fs::path& folder);

}  // namespace kiln::pt2_conformance
