// Finding the generated .pt2 test data and reading its OpInfo index.
#include "tests/pt2_conformance/pt2_test_data.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "tests/support/test_paths.h"

namespace kiln::pt2_conformance {

using nlohmann::json;

namespace {

fs::path data_root() {
  const char* configured = std::getenv("KILN_PT2_TEST_DATA");
  fs::path root = configured && *configured ? fs::path(configured) : fs::path(".cache") / "pt2-tests";
  if (root.is_relative()) root = fs::path(KILN_SOURCE_DIR) / root;
  return root;
}

json read_json(const fs::path& path) {
  std::ifstream file(path);
  if (!file) fail("cannot read '", path.string(), "'");
  std::stringstream text;
  text << file.rdbuf();
  json document = json::parse(text.str(), nullptr, false);
  if (document.is_discarded()) fail("'", path.string(), "' is not valid JSON");
  return document;
}

std::vector<std::string> strings(const json& list) {
  std::vector<std::string> values;
  if (list.is_array())
    for (const json& item : list) values.push_back(item.get<std::string>());
  return values;
}

}  // namespace

std::optional<fs::path> pt2_test_data(const std::string& part) {
  fs::path folder = data_root() / part;
  std::error_code status;
  if (!fs::exists(folder / "complete", status)) return std::nullopt;
  return folder;
}

std::string missing_pt2_test_data(const std::string& part) {
  return "the generated .pt2 test data (" + part + ") is not there (" + (data_root() / part).string() +
         "): run the test set-up step scripts/make-pt2-test-data (scripts/test runs it)";
}

bool pt2_test_data_required() {
  const char* required = std::getenv("KILN_PT2_TEST_DATA_REQUIRED");
  return required && std::string(required) == "1";
}

OpInfoData read_opinfo_data(const fs::path& folder) {
  OpInfoData data;
  for (const auto& entry : fs::directory_iterator(folder)) {
    fs::path meta_path = entry.path() / "meta.json";
    if (!fs::exists(meta_path)) continue;
    json meta = read_json(meta_path);
    std::string op = meta.value("key", entry.path().filename().string());
    OpInfoSkips skips{op, 0, 0};
    for (const json& sample : meta.value("samples", json::array())) {
      std::string status = sample.value("status", "");
      if (status == "export_refused") ++skips.export_refused;
      if (status == "not_applicable") ++skips.not_applicable;
      if (status != "exported") continue;
      std::string index = std::to_string(sample.value("index", 0));
      fs::path sample_folder = entry.path() / index;
      for (const char* form : {"training", "core"}) {
        std::string key = std::string(form) + "_targets";
        if (!sample.contains(key)) continue;
        OpInfoCase test_case;
        test_case.name = entry.path().filename().string() + "/" + index + "/" + form;
        test_case.pytorch_diverges = sample.value(std::string(form) + "_diverges", "");
        test_case.op = op;
        test_case.form = form;
        test_case.program = sample_folder / (std::string(form) + ".pt2");
        test_case.folder = sample_folder;
        test_case.targets = strings(sample[key]);
        test_case.atol = meta.value("atol", 1e-5);
        test_case.rtol = meta.value("rtol", 1.3e-6);
        data.cases.push_back(std::move(test_case));
      }
    }
    data.skips.push_back(skips);
  }
  std::sort(data.cases.begin(), data.cases.end(), [](const OpInfoCase& a, const OpInfoCase& b) { return a.name < b.name; });
  std::sort(data.skips.begin(), data.skips.end(), [](const OpInfoSkips& a, const OpInfoSkips& b) { return a.op < b.op; });
  if (fs::exists(folder / "core_aten_ops.json")) data.core_aten_ops = strings(read_json(folder / "core_aten_ops.json"));
  return data;
}

}  // namespace kiln::pt2_conformance
