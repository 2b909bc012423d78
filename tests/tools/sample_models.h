// The sample models the command-line tests run (samples/models/NAME.kiln with NAME.safetensors
// and NAME_data/), and the MLP sample rewritten to return a scalar loss for the training
// commands. Header-only, beside cli_runner.h.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "tests/support/test_paths.h"

namespace kiln::cli_test {

inline const std::filesystem::path kSampleModels = std::filesystem::path(KILN_SOURCE_DIR) / "samples" / "models";

// The path of samples/models/NAME.kiln.
inline std::string sample_model(const std::string& name) { return (kSampleModels / (name + ".kiln")).string(); }

// `x=PATH` of the sample's bundled input, as `kiln run --input` takes it.
inline std::string sample_input(const std::string& name) {
  return "x=" + (kSampleModels / (name + "_data") / "inputs" / "x.npy").string();
}

// Writes DIR/NAME.kiln holding `text`, with the MLP sample's weights beside it; returns its path.
inline std::string write_mlp_model(const std::filesystem::path& dir, const std::string& name,
                                   const std::string& text) {
  std::ofstream(dir / (name + ".kiln"), std::ios::binary) << text;
  std::filesystem::copy_file(kSampleModels / "mlp.safetensors", dir / (name + ".safetensors"),
                             std::filesystem::copy_options::overwrite_existing);
  return (dir / (name + ".kiln")).string();
}

// A copy of the MLP sample in DIR/NAME.kiln (with its weights) whose return is replaced by
// `outputs` ("(a, b)"), after the node lines in `extra_nodes`, which may use %probs.
inline std::string write_mlp_with(const std::filesystem::path& dir, const std::string& name,
                                  const std::string& extra_nodes, const std::string& outputs) {
  std::string text = read_file(kSampleModels / "mlp.kiln");
  const std::string old_return = "    return (probs,)\n";
  size_t at = text.find(old_return);
  EXPECT_NE(at, std::string::npos);
  text.replace(at, old_return.size(), extra_nodes + "    return " + outputs + "\n");
  // probs gains users: drop its written use count (the parser checks it when written).
  const std::string probs_users = "%probs : f32[s0, 10] [num_users=1] =";
  at = text.find(probs_users);
  EXPECT_NE(at, std::string::npos);
  text.replace(at, probs_users.size(), "%probs : f32[s0, 10] =");
  return write_mlp_model(dir, name, text);
}

// The MLP sample returning (probs, loss = mean(probs)), as DIR/mlp_loss.kiln.
inline std::string write_mlp_with_loss(const std::filesystem::path& dir) {
  const std::string loss_node = "    %loss : f32[] = call_function[target=mean](args = (%probs,), kwargs = {})\n";
  return write_mlp_with(dir, "mlp_loss", loss_node, "(probs, loss)");
}

}  // namespace kiln::cli_test
