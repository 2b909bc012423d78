// Tests for runtime/cpu/artifact_manifest: the format example of the header parses into exactly its
// fields, writing and reading back round-trips, and each malformed manifest names the field.
#include "runtime/cpu/artifact_manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "kiln/error.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* kExample = R"({"format": "kiln-artifact", "abi": 1, "kiln_version": "0.1.0", "isa": "avx512", "key": "00ff",
 "inputs": [{"name": "x", "dtype": "f32", "rank": 2}], "outputs": [{"name": "probs", "dtype": "f32", "rank": 2}],
 "parameters": [{"name": "fc1.weight", "dtype": "f32", "shape": [512, 784]}],
 "symbols": ["s0"], "fallbacks": ["scatter_1"], "library": "module.so", "source": "module.cpp"})";

std::string error_of(const std::string& text) {
  try {
    parse_artifact_manifest(text, "dir/manifest.json");
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// kExample with `field` replaced by `value` (or removed when value is null).
std::string with(const std::string& field, const nlohmann::json& value) {
  nlohmann::json document = nlohmann::json::parse(kExample);
  if (value.is_null()) document.erase(field);
  else document[field] = value;
  return document.dump();
}

TEST(ArtifactManifest, ParsesTheFormatExample) {
  ArtifactManifest manifest = parse_artifact_manifest(kExample, "example");
  EXPECT_EQ(manifest.abi, 1);
  EXPECT_EQ(manifest.kiln_version, "0.1.0");
  EXPECT_EQ(manifest.isa, Isa::avx512);
  EXPECT_EQ(manifest.key, "00ff");
  ASSERT_EQ(manifest.inputs.size(), 1u);
  EXPECT_EQ(manifest.inputs[0].name, "x");
  EXPECT_EQ(manifest.inputs[0].dtype, DType::f32);
  EXPECT_EQ(manifest.inputs[0].rank, 2);
  ASSERT_EQ(manifest.outputs.size(), 1u);
  EXPECT_EQ(manifest.outputs[0].name, "probs");
  ASSERT_EQ(manifest.parameters.size(), 1u);
  EXPECT_EQ(manifest.parameters[0].name, "fc1.weight");
  EXPECT_THAT(manifest.parameters[0].shape, ElementsAre(512, 784));
  EXPECT_THAT(manifest.symbols, ElementsAre("s0"));
  EXPECT_THAT(manifest.fallbacks, ElementsAre("scatter_1"));
  EXPECT_EQ(manifest.library, "module.so");
  EXPECT_EQ(manifest.source, "module.cpp");
}

TEST(ArtifactManifest, WritesAndReadsBack) {
  ArtifactManifest manifest;
  manifest.kiln_version = "0.1.0";
  manifest.isa = Isa::avx2;
  manifest.key = "0123456789abcdef";
  manifest.inputs = {{"x", DType::i64, 0}, {"mask", DType::boolean, 3}};
  manifest.outputs = {{"y", DType::bf16, 1}};
  manifest.parameters = {{"w", DType::f16, {2, 0, 3}}};
  manifest.symbols = {"s0", "s1"};
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("kiln_manifest_test_" + std::to_string(::getpid()) + ".json");
  write_artifact_manifest(file, manifest);
  ArtifactManifest back = read_artifact_manifest(file);
  std::filesystem::remove(file);
  EXPECT_EQ(artifact_manifest_to_json(back), artifact_manifest_to_json(manifest));
  EXPECT_EQ(back.abi, 1);  // kKilnAbiVersion by default
  EXPECT_EQ(back.inputs[1].dtype, DType::boolean);
  EXPECT_EQ(back.inputs[1].rank, 3);
  EXPECT_THAT(back.parameters[0].shape, ElementsAre(2, 0, 3));
  nlohmann::json document = nlohmann::json::parse(artifact_manifest_to_json(manifest));
  EXPECT_EQ(document["format"], "kiln-artifact");
  EXPECT_EQ(document["isa"], "avx2");
  EXPECT_EQ(document["inputs"][1]["dtype"], "bool");
  EXPECT_EQ(document["outputs"][0]["dtype"], "bf16");
}

TEST(ArtifactManifest, MissingFileNamesTheDirectory) {
  try {
    read_artifact_manifest("/nonexistent/artifact/manifest.json");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "no compiled artifact in /nonexistent/artifact: manifest.json is missing");
  }
}

TEST(ArtifactManifest, EachMalformedFieldIsNamed) {
  EXPECT_EQ(error_of("{\"format\": "), "dir/manifest.json: not valid JSON");
  EXPECT_EQ(error_of("[1, 2]"), "dir/manifest.json: expected a JSON object, got [1,2]");
  EXPECT_EQ(error_of(with("format", "onnx")),
            "dir/manifest.json: not a Kiln artifact manifest (format is \"onnx\", expected \"kiln-artifact\")");
  EXPECT_EQ(error_of(with("inputs", nullptr)), "dir/manifest.json: field 'inputs' is missing");
  EXPECT_EQ(error_of(with("abi", "1")), "dir/manifest.json: field 'abi' must be an integer, got \"1\"");
  EXPECT_THAT(error_of(with("isa", "neon")), HasSubstr("dir/manifest.json: field 'isa': unknown instruction set 'neon'"));
  EXPECT_EQ(error_of(with("inputs", nlohmann::json::parse(R"([{"name": "x", "dtype": "float128", "rank": 2}])"))),
            "dir/manifest.json: field 'inputs[0].dtype' must be a dtype name such as \"f32\", got \"float128\"");
  EXPECT_EQ(error_of(with("outputs", nlohmann::json::parse(R"([{"name": "y", "dtype": "f32", "rank": -1}])"))),
            "dir/manifest.json: field 'outputs[0].rank' must be a rank from 0 to 64, got -1");
  EXPECT_EQ(error_of(with("outputs", nlohmann::json::parse(R"([{"dtype": "f32", "rank": 1}])"))),
            "dir/manifest.json: field 'outputs[0].name' is missing");
  EXPECT_EQ(error_of(with("parameters", nlohmann::json::parse(R"([{"name": "w", "dtype": "f32", "shape": [2, -3]}])"))),
            "dir/manifest.json: field 'parameters[0].shape' must be an array of sizes >= 0, got [2,-3]");
  EXPECT_EQ(error_of(with("symbols", nlohmann::json::parse(R"(["s0", 1])"))),
            "dir/manifest.json: field 'symbols[1]' must be a string, got 1");
  EXPECT_EQ(error_of(with("library", "../../elsewhere.so")),
            "dir/manifest.json: field 'library' must be a file name inside the artifact directory, got "
            "\"../../elsewhere.so\"");
  EXPECT_EQ(error_of(with("library", "/lib/evil.so")),
            "dir/manifest.json: field 'library' must be a file name inside the artifact directory, got \"/lib/evil.so\"");
}

}  // namespace
}  // namespace kiln
