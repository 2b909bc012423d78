// Bad .pt2 files: each gives one kiln::Error that names the file and what is wrong, never a
// crash or an internal error. The damaged archives are made from a committed good one
// (tests/data/pt2/cnn_train.pt2) by rewriting entries (pt2_test_support.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "frontends/model_loader.h"
#include "frontends/pt2/pt2_importer.h"
#include "kiln/error.h"
#include "tests/frontends/pt2_test_support.h"

namespace kiln::frontends {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using testing::pt2_program;
using testing::rewrite_archive;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class Pt2BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / ("kiln_pt2_bad_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  // The message of the kiln::Error that importing `path` throws.
  static std::string import_error(const std::string& path) {
    try {
      load_model(path);
    } catch (const kiln::Error& error) {
      return error.what();
    } catch (const std::exception& error) {
      return std::string("NOT A kiln::Error: ") + error.what();
    }
    return "no error";
  }

  std::string write(const std::string& name, const std::string& bytes) const {
    fs::path path = folder_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  static std::string read(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), {});
  }

  // cnn_train.pt2 with its model.json edited.
  std::string with_model_json(const std::function<void(json&)>& edit) const {
    return rewrite_archive(pt2_program("cnn_train"), folder_ / "edited.pt2",
                           [&](const std::string& name, std::string bytes) -> std::optional<std::string> {
                             if (!ends_with(name, "models/model.json")) return bytes;
                             json document = json::parse(bytes);
                             edit(document);
                             return document.dump();
                           });
  }

  // cnn_train.pt2 with one entry (by the end of its name) replaced, or dropped.
  std::string with_entry(const std::string& suffix, std::optional<std::string> replacement) const {
    return rewrite_archive(pt2_program("cnn_train"), folder_ / "edited.pt2",
                           [&](const std::string& name, std::string bytes) -> std::optional<std::string> {
                             if (!ends_with(name, suffix)) return bytes;
                             return replacement;
                           });
  }

  fs::path folder_;
};

void expect_message(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST_F(Pt2BadInput, NotAZip) {
  std::string path = write("text.pt2", "this is not a zip archive\n");
  expect_message(import_error(path), {"text.pt2", "is not a zip archive"});
}

TEST_F(Pt2BadInput, Truncated) {
  std::string bytes = read(pt2_program("cnn_train"));
  std::string path = write("truncated.pt2", bytes.substr(0, bytes.size() / 2));
  std::string message = import_error(path);
  expect_message(message, {"truncated.pt2"});
  EXPECT_TRUE(message.find("not a zip") != std::string::npos || message.find("truncated") != std::string::npos ||
              message.find("damaged") != std::string::npos) << message;
}

TEST_F(Pt2BadInput, TruncatedEntryData) {
  // The central directory intact but an entry's bytes cut: the CRC / size check catches it.
  std::string bytes = read(pt2_program("cnn_train"));
  size_t at = bytes.find("models/model.json");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 200] ^= 0x5a;  // flip bits inside the first entries' data region
  std::string message = import_error(write("flipped.pt2", bytes));
  expect_message(message, {"flipped.pt2"});
  EXPECT_EQ(message.find("NOT A kiln::Error"), std::string::npos) << message;
}

TEST_F(Pt2BadInput, AZipThatIsNotAnExportArchive) {
  std::string path = rewrite_archive(pt2_program("cnn_train"), folder_ / "other.pt2",
                                     [](const std::string& name, std::string bytes) -> std::optional<std::string> {
                                       if (name.find("archive_format") != std::string::npos) return std::nullopt;
                                       return bytes;
                                     });
  expect_message(import_error(path), {"other.pt2", "not a torch.export archive"});
}

TEST_F(Pt2BadInput, NoModelJson) {
  expect_message(import_error(with_entry("models/model.json", std::nullopt)), {"edited.pt2", "has no model"});
}

TEST_F(Pt2BadInput, ModelJsonThatIsNotJson) {
  expect_message(import_error(with_entry("models/model.json", std::string("{not json"))), {"edited.pt2", "is not valid JSON"});
}

TEST_F(Pt2BadInput, UnknownSchemaVersion) {
  std::string path = with_model_json([](json& model) { model["schema_version"]["major"] = 99; });
  expect_message(import_error(path), {"edited.pt2", "schema version 99.", "Kiln reads version 8.x"});
}

TEST_F(Pt2BadInput, UnknownArchiveVersion) {
  expect_message(import_error(with_entry("/archive_version", std::string("7"))), {"edited.pt2", "archive version 7"});
}

TEST_F(Pt2BadInput, MissingWeightFile) {
  expect_message(import_error(with_entry("data/weights/weight_0", std::nullopt)),
                 {"edited.pt2", "data/weights/weight_0", "is missing from the archive"});
}

TEST_F(Pt2BadInput, WeightFileOfTheWrongSize) {
  expect_message(import_error(with_entry("data/weights/weight_0", std::string(10, '\0'))),
                 {"edited.pt2", "weight_0", "holds 10 bytes", "needs"});
}

TEST_F(Pt2BadInput, UnsupportedDtype) {
  std::string path = rewrite_archive(pt2_program("cnn_train"), folder_ / "complex.pt2",
                                     [](const std::string& name, std::string bytes) -> std::optional<std::string> {
                                       if (name.find("model_weights_config.json") == std::string::npos) return bytes;
                                       json config = json::parse(bytes);
                                       config["config"]["conv.weight"]["tensor_meta"]["dtype"] = 10;  // complex64
                                       return config.dump();
                                     });
  expect_message(import_error(path), {"complex.pt2", "conv.weight", "torch.complex64", "Kiln does not support"});
}

TEST_F(Pt2BadInput, UnknownOpsAreListedTogetherWithTheirCounts) {
  std::string path = with_model_json([](json& model) {
    int renamed = 0;
    for (json& node : model["graph_module"]["graph"]["nodes"]) {
      std::string target = node["target"];
      if (target == "torch.ops.aten.relu_.default") node["target"] = "torch.ops.aten.frobnicate.default";
      if (target == "torch.ops.aten.mean.dim" && renamed++ == 0) node["target"] = "torch.ops.mylib.custom_op.default";
    }
  });
  expect_message(import_error(path), {"edited.pt2", "uses 2 operators that Kiln does not support, in 2 nodes",
                                      "aten.frobnicate.default (1 node: 'relu_')", "mylib.custom_op.default (1 node"});
}

TEST_F(Pt2BadInput, ANodeReadingAnUndefinedValue) {
  std::string path = with_model_json([](json& model) {
    for (json& node : model["graph_module"]["graph"]["nodes"])
      if (node["target"] == "torch.ops.aten.linear.default") node["inputs"][0]["arg"]["as_tensor"]["name"] = "no_such_value";
  });
  expect_message(import_error(path), {"edited.pt2", "node 'linear' (aten.linear.default)", "'no_such_value'",
                                      "which no earlier node or graph input defines"});
}

TEST_F(Pt2BadInput, AMissingField) {
  std::string path = with_model_json([](json& model) { model["graph_module"]["graph"].erase("tensor_values"); });
  expect_message(import_error(path), {"edited.pt2", "graph_module.graph.tensor_values is missing"});
}

TEST_F(Pt2BadInput, NoSampleInputs) {
  std::string path = with_entry("data/sample_inputs/model.pt", std::nullopt);
  try {
    read_pt2_sample_inputs(path);
    FAIL() << "no error";
  } catch (const kiln::Error& error) {
    expect_message(error.what(), {"edited.pt2", "holds no sample inputs"});
  }
}

TEST_F(Pt2BadInput, SampleInputsThatAreNotATorchSaveFile) {
  std::string path = with_entry("data/sample_inputs/model.pt", std::string("garbage"));
  try {
    read_pt2_sample_inputs(path);
    FAIL() << "no error";
  } catch (const kiln::Error& error) {
    expect_message(error.what(), {"edited.pt2", "sample_inputs/model.pt"});
  }
}

}  // namespace
}  // namespace kiln::frontends
