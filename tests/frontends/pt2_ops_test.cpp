// Single ATen ops through the .pt2 importer, on the committed programs of
// scripts/make_pt2_op_programs.py (tests/data/pt2/): adaptive max pooling's indices, n-d
// searchsorted, the CPU flash attention's logsumexp, the empty-input edges and torch.int16
// (an int16 weight and inputs, to(int16), wrapping arithmetic), the recurrent layers and cells
// (LSTM, GRU, RNN), the selections (topk, sort, argsort, kthvalue, median) and the rearranging
// ops (pixel and channel shuffles, tile, repeat_interleave, rot90) and compositions (one_hot,
// im2col, conv_transpose1d, tensordot, bilinear, cosine_similarity, pairwise_distance, trace) and
// sampling (affine_grid, grid_sample in its modes), weight normalization and the scans (cumprod,
// cummax, cummin, logcumsumexp with NaNs, ties and infinities), max_unpool2d, take_along_dim,
// nanmean, isclose, sum_to_size, logaddexp2, ldexp and embedding_bag match eager
// PyTorch through the interpreter and the CPU backend; the random training-mode ops (feature
// and alpha dropouts, rrelu, rand_like, randn_like, bernoulli) draw Kiln's own numbers, so their results
// are checked element by element against what each element may be (the script's NumPy maps of
// PyTorch's formulas) and for the spread a random draw has. Arguments these ops refuse (edited
// into the programs' model.json) give one kiln::Error naming the node.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <functional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "compiler/compile_driver.h"
#include "frontends/pt2/pt2_importer.h"
#include "ir/interpreter.h"
#include "kiln/error.h"
#include "tests/frontends/pt2_test_support.h"

namespace kiln::frontends {
namespace {

using testing::clones;
using testing::pt2_difference;
using testing::pt2_expected;
using testing::pt2_expected_count;
using testing::pt2_program;
using testing::rewrite_archive;
using nlohmann::json;

// (interpreter outputs, CPU backend outputs) of a committed program on its sample inputs.
std::pair<std::vector<Tensor>, std::vector<Tensor>> run_both(const std::string& name) {
  std::map<std::string, Tensor> inputs = read_pt2_sample_inputs(pt2_program(name));
  std::vector<Tensor> interpreted = ir::Interpreter().run(import_pt2(pt2_program(name)), clones(inputs));
  std::vector<Tensor> compiled = compiler::compile(import_pt2(pt2_program(name))).run(clones(inputs), 1);
  return {interpreted, compiled};
}

class Pt2OpPrograms : public ::testing::TestWithParam<std::string> {};

TEST_P(Pt2OpPrograms, MatchEagerPyTorchThroughTheInterpreterAndTheCpuBackend) {
  const std::string name = GetParam();
  auto [interpreted, compiled] = run_both(name);
  for (const auto& [runner, outputs] : {std::pair{"interpreter", interpreted}, std::pair{"cpu", compiled}}) {
    ASSERT_EQ(outputs.size(), pt2_expected_count(name)) << name << " (" << runner << ")";
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_EQ(pt2_difference(pt2_expected(name, "expected_" + std::to_string(i)), outputs[i]), "")
          << name << " output " << i << " (" << runner << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Committed, Pt2OpPrograms,
                         ::testing::Values("pooling_indices", "searchsorted", "flash_attention", "empty_edges",
                                           "int16_ops", "recurrent", "selection", "rearrange", "composites", "sampling", "weight_norm", "scans", "unpool_and_more", "embedding_bag"));

// The random program's inputs, in the order of its forward: image, volume, features, flat, rows,
// probabilities.
std::vector<Tensor> random_inputs() {
  std::map<std::string, Tensor> by_name = read_pt2_sample_inputs(pt2_program("random_training"));
  std::vector<Tensor> inputs;
  for (const std::string name : {"image", "volume", "features", "flat", "rows", "probabilities"}) {
    EXPECT_TRUE(by_name.count(name)) << name;
    inputs.push_back(by_name.at(name));
  }
  return inputs;
}

// Element i of `actual` equals element i of `kept` or of `dropped`, one choice per group of
// `group` consecutive elements (an (N, C) slice of a feature dropout; 1 for a per-element
// mask). Returns the fraction of kept groups; fails the test otherwise.
double kept_fraction(const Tensor& actual, const Tensor& kept, const Tensor& dropped, int64_t group, const std::string& what) {
  EXPECT_EQ(actual.sizes(), kept.sizes()) << what;
  if (actual.sizes() != kept.sizes() || actual.numel() == 0) return 0;
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-5 + 1e-5 * std::fabs(b); };
  int64_t groups = actual.numel() / group, kept_groups = 0;
  for (int64_t g = 0; g < groups; ++g) {
    bool all_kept = true, all_dropped = true;
    for (int64_t i = g * group; i < (g + 1) * group; ++i) {
      all_kept &= near(actual.flat_double(i), kept.flat_double(i));
      all_dropped &= near(actual.flat_double(i), dropped.flat_double(i));
    }
    EXPECT_TRUE(all_kept || all_dropped) << what << ": group " << g << " is neither kept nor dropped as a whole";
    kept_groups += all_kept ? 1 : 0;
  }
  return double(kept_groups) / double(groups);
}

TEST(Pt2RandomOps, TrainingModeDropoutsRreluAndRandomLikesHaveTheirDistributions) {
  auto [interpreted, compiled] = run_both("random_training");
  std::vector<Tensor> inputs = random_inputs();
  for (const auto& [runner, outputs] : {std::pair{"interpreter", interpreted}, std::pair{"cpu", compiled}}) {
    ASSERT_EQ(outputs.size(), 10u) << runner;
    for (size_t i = 0; i < outputs.size(); ++i) {
      Tensor expected = pt2_expected("random_training", "expected_" + std::to_string(i));
      EXPECT_EQ(outputs[i].sizes(), expected.sizes()) << runner << " output " << i;
      EXPECT_EQ(outputs[i].dtype(), expected.dtype()) << runner << " output " << i;
    }
    std::string in = std::string(" (") + runner + ")";
    auto maps = [](const std::string& op) {
      return std::pair{pt2_expected("random_training", op + "_kept"), pt2_expected("random_training", op + "_dropped")};
    };
    // dropout2d(p=0.5) on [4, 16, 3, 3]: 64 slices of 9, each kept (x * 2) or zero.
    auto [kept2d, dropped2d] = maps("dropout2d");
    double fraction = kept_fraction(outputs[0], kept2d, dropped2d, 9, "dropout2d" + in);
    EXPECT_GT(fraction, 0.25) << in;  // 64 draws of p = 0.5: 4 standard deviations
    EXPECT_LT(fraction, 0.75) << in;
    // dropout3d(p=0.25) on [2, 8, 2, 3, 3]: 16 slices of 18.
    auto [kept3d, dropped3d] = maps("dropout3d");
    fraction = kept_fraction(outputs[1], kept3d, dropped3d, 18, "dropout3d" + in);
    EXPECT_GT(fraction, 0.3) << in;
    EXPECT_LT(fraction, 1.0) << in;
    // feature_alpha_dropout(p=0.5) on [4, 16, 3, 3].
    auto [kept_alpha, dropped_alpha] = maps("feature_alpha_dropout");
    fraction = kept_fraction(outputs[2], kept_alpha, dropped_alpha, 9, "feature_alpha_dropout" + in);
    EXPECT_GT(fraction, 0.25) << in;
    EXPECT_LT(fraction, 0.75) << in;
    // alpha_dropout(p=0.2) on 400 elements, each its own draw.
    auto [kept_flat, dropped_flat] = maps("alpha_dropout");
    fraction = kept_fraction(outputs[3], kept_flat, dropped_flat, 1, "alpha_dropout" + in);
    EXPECT_GT(fraction, 0.72) << in;
    EXPECT_LT(fraction, 0.88) << in;
    // rrelu(lower=0.1, upper=0.3): x where x > 0, else x times a slope in [0.1, 0.3], one per element.
    const Tensor& flat = inputs[3];
    std::set<double> slopes;
    double low = 1, high = 0;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      double x = flat.flat_double(i), y = outputs[4].flat_double(i);
      if (x > 0) {
        EXPECT_EQ(y, x) << "rrelu element " << i << in;
        continue;
      }
      double slope = y / x;
      EXPECT_GE(slope, 0.1 - 1e-6) << "rrelu element " << i << in;
      EXPECT_LE(slope, 0.3 + 1e-6) << "rrelu element " << i << in;
      slopes.insert(slope), low = std::min(low, slope), high = std::max(high, slope);
    }
    EXPECT_GT(slopes.size(), 150u) << "rrelu draws one slope per negative element" << in;
    EXPECT_LT(low, 0.12) << in;  // ~200 uniform draws reach both ends of [0.1, 0.3]
    EXPECT_GT(high, 0.28) << in;
    // rand_like on 1000 elements: [0, 1), mean 1/2 within 4 standard deviations (0.0091 each).
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < outputs[5].numel(); ++i) {
      double u = outputs[5].flat_double(i);
      EXPECT_TRUE(u >= 0 && u < 1) << "rand_like element " << i << " is " << u << in;
      sum += u;
    }
    EXPECT_NEAR(sum / 1000, 0.5, 0.037) << in;
    // randn_like: finite, mean 0 and variance 1 within 4 standard deviations of their estimates.
    sum = 0;
    for (int64_t i = 0; i < outputs[6].numel(); ++i) {
      double z = outputs[6].flat_double(i);
      EXPECT_TRUE(std::isfinite(z)) << "randn_like element " << i << in;
      sum += z, squares += z * z;
    }
    EXPECT_NEAR(sum / 1000, 0.0, 0.13) << in;
    EXPECT_NEAR(squares / 1000, 1.0, 0.18) << in;
    // bernoulli(probabilities): 0 where the probability is 0 (the first 100), 1 where it is 1
    // (the next 100), 0 or 1 elsewhere; bernoulli.p(rows, 0.3): 0 or 1, 30% ones within 4
    // standard deviations (0.0145 each).
    const Tensor& probabilities = inputs[5];
    for (int64_t i = 0; i < probabilities.numel(); ++i) {
      double b = outputs[7].flat_double(i), q = probabilities.flat_double(i);
      EXPECT_TRUE(q == 0 ? b == 0 : q == 1 ? b == 1 : b == 0 || b == 1) << "bernoulli element " << i << " is " << b << in;
    }
    double ones = 0;
    for (int64_t i = 0; i < outputs[8].numel(); ++i) {
      double b = outputs[8].flat_double(i);
      EXPECT_TRUE(b == 0 || b == 1) << "bernoulli.p element " << i << " is " << b << in;
      ones += b;
    }
    EXPECT_NEAR(ones / 1000, 0.3, 0.06) << in;
    // A second rand_like of the same shape: its own numbers (each random node has its own seed).
    int64_t same = 0;
    for (int64_t i = 0; i < outputs[9].numel(); ++i) {
      double u = outputs[9].flat_double(i);
      EXPECT_TRUE(u >= 0 && u < 1) << "second rand_like element " << i << " is " << u << in;
      same += u == outputs[5].flat_double(i) ? 1 : 0;
    }
    EXPECT_LT(same, 10) << "the two rand_like draws are the same numbers" << in;
  }
  // Both run Kiln's Philox generator with the same seeds: the same draws.
  for (size_t i = 0; i < interpreted.size(); ++i)
    EXPECT_EQ(pt2_difference(interpreted[i], compiled[i]), "") << "output " << i << ": the interpreter and the CPU backend differ";
}

// The kiln::Error of importing the committed program `name` with `edit` applied to the
// arguments of its nodes that call `target` (torch.ops.aten.<target>).
std::string import_error_when_edited(const std::string& name, const std::string& target,
                                     const std::function<void(json& inputs)>& edit) {
  std::filesystem::path edited =
      std::filesystem::temp_directory_path() / ("kiln_pt2_ops_" + std::to_string(::getpid()) + ".pt2");
  rewrite_archive(pt2_program(name), edited, [&](const std::string& entry, std::string bytes) -> std::optional<std::string> {
    if (!entry.ends_with("models/model.json")) return bytes;
    json model = json::parse(bytes);
    for (json& node : model["graph_module"]["graph"]["nodes"])
      if (node["target"] == "torch.ops.aten." + target) edit(node["inputs"]);
    return model.dump();
  });
  std::string message = "no error";
  try {
    import_pt2(edited.string());
  } catch (const kiln::Error& error) {
    message = error.what();
  } catch (const std::exception& error) {
    message = std::string("NOT A kiln::Error: ") + error.what();
  }
  std::filesystem::remove(edited);
  return message;
}

// The argument `name` of a node's inputs.
json& argument(json& inputs, const std::string& name) {
  for (json& input : inputs)
    if (input["name"] == name) return input["arg"];
  ADD_FAILURE() << "no argument " << name;
  return inputs;
}

void expect_message(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(Pt2OpArguments, SearchsortedRefusesAnUnknownSideMismatchedLeadingDimsAndAWrongSorter) {
  expect_message(import_error_when_edited("searchsorted", "searchsorted.Tensor",
                                          [](json& inputs) {
                                            for (json& input : inputs)
                                              if (input["name"] == "side") input["arg"]["as_string"] = "middle";
                                          }),
                 {"node 'searchsorted_2' (aten.searchsorted.Tensor)", "side must be 'left' or 'right', but got 'middle'"});
  expect_message(import_error_when_edited("searchsorted", "searchsorted.Tensor",
                                          [](json& inputs) {
                                            if (argument(inputs, "sorted_sequence")["as_tensor"]["name"] == "boundaries")
                                              argument(inputs, "self")["as_tensor"]["name"] = "flat_values";
                                          }),
                 {"(aten.searchsorted.Tensor)",
                  "n-d boundaries (sorted_sequence) [2, 3, 6] need values with the same leading dims, but got [2, 5]"});
  expect_message(import_error_when_edited("searchsorted", "searchsorted.Tensor",
                                          [](json& inputs) {
                                            for (json& input : inputs)
                                              if (input["name"] == "sorter") input["arg"]["as_tensor"]["name"] = "values";
                                          }),
                 {"node 'searchsorted_3' (aten.searchsorted.Tensor)", "the sorter must have the sorted_sequence's shape"});
}

TEST(Pt2OpArguments, DropoutsAndBernoulliRefuseProbabilitiesOutsideTheUnitIntervalAndFeatureDropoutA1dInput) {
  expect_message(import_error_when_edited("random_training", "feature_dropout.default",
                                          [](json& inputs) { argument(inputs, "p")["as_float"] = 1.5; }),
                 {"(aten.feature_dropout.default)", "dropout probability has to be between 0 and 1, but got 1.5"});
  expect_message(import_error_when_edited("random_training", "feature_dropout.default",
                                          [](json& inputs) { argument(inputs, "input")["as_tensor"]["name"] = "flat"; }),
                 {"(aten.feature_dropout.default)", "feature dropout requires at least 2 dimensions in the input, but got 1"});
  expect_message(import_error_when_edited("random_training", "bernoulli.p",
                                          [](json& inputs) { argument(inputs, "p")["as_float"] = 2.0; }),
                 {"(aten.bernoulli.p)", "bernoulli expects p to be in [0, 1], but got p=2"});
}

TEST(Pt2OpArguments, RecurrentLayersRefuseDropoutInTrainingParametersThatDoNotFitAndA2dInput) {
  expect_message(import_error_when_edited("recurrent", "lstm.input",
                                          [](json& inputs) {
                                            if (argument(inputs, "num_layers")["as_int"] != 2) return;
                                            argument(inputs, "train")["as_bool"] = true;
                                            argument(inputs, "dropout")["as_float"] = 0.5;
                                          }),
                 {"(aten.lstm.input)", "dropout between layers in training mode is not supported"});
  expect_message(import_error_when_edited("recurrent", "gru.input",
                                          [](json& inputs) { argument(inputs, "params")["as_tensors"].erase(0); }),
                 {"(aten.gru.input)", "gru: 7 parameters do not fit 2 layers of 1 directions with biases"});
  expect_message(import_error_when_edited("recurrent", "rnn_tanh.input",
                                          [](json& inputs) { argument(inputs, "input")["as_tensor"]["name"] = "h0"; }),
                 {"(aten.rnn_tanh.input)", "rnn_tanh: input.size(-1) must be equal to input_size. Expected 6, got 5"});
  expect_message(import_error_when_edited("recurrent", "lstm_cell.default",
                                          [](json& inputs) { argument(inputs, "hx")["as_tensors"].erase(1); }),
                 {"(aten.lstm_cell.default)", "lstm_cell: hx must hold (h, c), got 1 tensors"});
}

TEST(Pt2OpArguments, SelectionsRefuseKOutsideTheDim) {
  expect_message(import_error_when_edited("selection", "topk.default",
                                          [](json& inputs) { argument(inputs, "k")["as_int"] = 7; }),
                 {"(aten.topk.default)", "k = 7 is out of range for dim 1 of length 6"});
  expect_message(import_error_when_edited("selection", "kthvalue.default",
                                          [](json& inputs) { argument(inputs, "k")["as_int"] = 0; }),
                 {"(aten.kthvalue.default)", "k = 0 is out of range for dim 1 of length 6"});
}

TEST(Pt2OpArguments, ShufflesAndRot90RefuseSizesTheirFactorsDoNotDivideAndEqualDims) {
  expect_message(import_error_when_edited("rearrange", "pixel_shuffle.default",
                                          [](json& inputs) { argument(inputs, "upscale_factor")["as_int"] = 3; }),
                 {"(aten.pixel_shuffle.default)", "channels (8) to be divisible by upscale_factor^2 = 9"});
  expect_message(import_error_when_edited("rearrange", "pixel_unshuffle.default",
                                          [](json& inputs) { argument(inputs, "downscale_factor")["as_int"] = 3; }),
                 {"(aten.pixel_unshuffle.default)", "to be divisible by downscale_factor = 3"});
  expect_message(import_error_when_edited("rearrange", "channel_shuffle.default",
                                          [](json& inputs) { argument(inputs, "groups")["as_int"] = 3; }),
                 {"(aten.channel_shuffle.default)", "number of channels (8) must be divisible by groups (3)"});
  expect_message(import_error_when_edited("rearrange", "rot90.default",
                                          [](json& inputs) { argument(inputs, "dims")["as_ints"] = json::array({1, -3}); }),
                 {"(aten.rot90.default)", "expected rotation dims to be different"});
}

TEST(Pt2OpArguments, CompositionsRefuseADataDependentClassCountMismatchedShapesAndWrongRanks) {
  expect_message(import_error_when_edited("composites", "one_hot.default",
                                          [](json& inputs) { argument(inputs, "num_classes")["as_int"] = -1; }),
                 {"(aten.one_hot.default)", "num_classes = -1 takes the number of classes from the data"});
  expect_message(import_error_when_edited("composites", "one_hot.default",
                                          [](json& inputs) { argument(inputs, "self")["as_tensor"]["name"] = "x1"; }),
                 {"(aten.one_hot.default)", "one_hot is only applicable to index tensor of type LongTensor, got f32[2, 5]"});
  expect_message(import_error_when_edited("composites", "im2col.default",
                                          [](json& inputs) { argument(inputs, "self")["as_tensor"]["name"] = "x1"; }),
                 {"(aten.im2col.default)", "im2col expects a 3-d or 4-d input ([C, H, W] or [N, C, H, W]), got f32[2, 5]"});
  expect_message(import_error_when_edited("composites", "tensordot.default",
                                          [](json& inputs) { argument(inputs, "dims_other")["as_ints"] = json::array({0}); }),
                 {"(aten.tensordot.default)", "both dimension lists should have same length, got 2 and 1"});
  expect_message(import_error_when_edited("composites", "tensordot.default",
                                          [](json& inputs) { argument(inputs, "dims_other")["as_ints"] = json::array({1, 2}); }),
                 {"(aten.tensordot.default)", "contracted dimensions need to match, but first has size 3 in dim 1 and second has size 4 in dim 1"});
  expect_message(import_error_when_edited("composites", "bilinear.default",
                                          [](json& inputs) { argument(inputs, "input2")["as_tensor"]["name"] = "x2"; }),
                 {"(aten.bilinear.default)", "input1's last dim must be weight's dim 1 and input2's its dim 2"});
  expect_message(import_error_when_edited("composites", "trace.default",
                                          [](json& inputs) { argument(inputs, "self")["as_tensor"]["name"] = "a"; }),
                 {"(aten.trace.default)", "trace: expected a matrix, but got tensor with dim 3"});
}

TEST(Pt2OpArguments, SamplingRefusesUnknownModesBicubicBorderPaddingAndAThetaOfTheWrongShape) {
  auto edit_first = [](const std::function<void(json&)>& edit) {
    return [edit, done = false](json& inputs) mutable {
      if (!std::exchange(done, true)) edit(inputs);
    };
  };
  expect_message(import_error_when_edited("sampling", "grid_sampler.default",
                                          edit_first([](json& inputs) { argument(inputs, "interpolation_mode")["as_int"] = 3; })),
                 {"(aten.grid_sampler.default)", "interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got 3"});
  expect_message(import_error_when_edited("sampling", "grid_sampler.default",
                                          edit_first([](json& inputs) { argument(inputs, "padding_mode")["as_int"] = -1; })),
                 {"(aten.grid_sampler.default)", "padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got -1"});
  expect_message(import_error_when_edited("sampling", "grid_sampler.default",
                                          [](json& inputs) {
                                            if (argument(inputs, "interpolation_mode")["as_int"] == 2)
                                              argument(inputs, "padding_mode")["as_int"] = 1;
                                          }),
                 {"(aten.grid_sampler.default)", "bicubic grid sampling with border padding is not supported"});
  expect_message(import_error_when_edited("sampling", "affine_grid_generator.default",
                                          edit_first([](json& inputs) { argument(inputs, "size")["as_ints"] = json::array({2, 3, 5, 6, 7}); })),
                 {"(aten.affine_grid_generator.default)", "expected theta [N, 3, 4] for 3 spatial dims, got f32[2, 2, 3]"});
  expect_message(import_error_when_edited("sampling", "affine_grid_generator.default",
                                          edit_first([](json& inputs) { argument(inputs, "size")["as_ints"] = json::array({2, 3, 5}); })),
                 {"(aten.affine_grid_generator.default)", "affine_grid only supports 4D and 5D sizes, got 3 sizes"});
}

TEST(Pt2OpArguments, UnpoolingTakeAlongDimNanmeanAndSumToSizeRefuseWhatDoesNotFit) {
  expect_message(import_error_when_edited("unpool_and_more", "max_unpool2d.default",
                                          [](json& inputs) { argument(inputs, "output_size")["as_ints"] = json::array({6}); }),
                 {"(aten.max_unpool2d.default)", "output_size must have 2 elements, got 1"});
  expect_message(import_error_when_edited("unpool_and_more", "max_unpool2d.default",
                                          [](json& inputs) { argument(inputs, "indices")["as_tensor"]["name"] = "order"; }),
                 {"(aten.max_unpool2d.default)", "expected indices of the input's shape f32[2, 3, 3, 4], got i64[3, 4]"});
  expect_message(import_error_when_edited("unpool_and_more", "take_along_dim.default",
                                          [](json& inputs) { argument(inputs, "indices")["as_tensor"]["name"] = "getitem_1"; }),
                 {"(aten.take_along_dim.default)", "input and indices should have the same number of dimensions"});
  expect_message(import_error_when_edited("unpool_and_more", "nanmean.default",
                                          [](json& inputs) { argument(inputs, "self")["as_tensor"]["name"] = "order"; }),
                 {"(aten.nanmean.default)", "nanmean(): expected input to have floating point dtype but got i64[3, 4]"});
  expect_message(import_error_when_edited("unpool_and_more", "sum_to_size.default",
                                          [](json& inputs) { argument(inputs, "size")["as_ints"] = json::array({2, 6}); }),
                 {"(aten.sum_to_size.default)", "size [2, 6] is not expandable to f32[3, 6]"});
  expect_message(import_error_when_edited("unpool_and_more", "isclose.default",
                                          [](json& inputs) { argument(inputs, "rtol")["as_float"] = -1.0; }),
                 {"(aten.isclose.default)", "rtol and atol must be non-negative, got rtol=-1 and atol=1e-08"});
}

TEST(Pt2OpArguments, EmbeddingBagRefusesAnUnknownModeAndWeightsOutsideSum) {
  expect_message(import_error_when_edited("embedding_bag", "embedding_bag.padding_idx",
                                          [](json& inputs) { argument(inputs, "mode")["as_int"] = 3; }),
                 {"(aten.embedding_bag.padding_idx)", "embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got 3"});
  expect_message(import_error_when_edited("embedding_bag", "embedding_bag.padding_idx",
                                          [](json& inputs) {
                                            if (argument(inputs, "per_sample_weights").contains("as_tensor"))
                                              argument(inputs, "mode")["as_int"] = 1;
                                          }),
                 {"(aten.embedding_bag.padding_idx)", "per_sample_weights is only supported for mode='sum'"});
}

}  // namespace
}  // namespace kiln::frontends
