// Shape-deciding inputs fed at run time (frontends/onnx/onnx_specialization.h): the importer
// names the inputs it needs values of; OnnxSpecializedModel specializes on their values (one
// import and compile per new value, reused for a value seen before), runs the rest through
// the interpreter or a compiled backend; the freeze (OnnxImportOptions::input_values) checks
// what it is given; bad values end in one kiln::Error. The cases are tests/data/onnx/specialize/
// (ONNX Runtime's outputs for the values in input_<k>.npy).
#include <gmock/gmock.h>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_specialization.h"
#include "ir/interpreter.h"
#include "tests/frontends/onnx_test_support.h"

namespace kiln::frontends::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string specialize_case(const std::string& name) { return (kOnnxData / "specialize" / name / "model.onnx").string(); }

std::map<std::string, Tensor> inputs_of(const std::string& name, const std::vector<std::string>& names) {
  std::vector<Tensor> files = read_numbered(kOnnxData / "specialize" / name, "input");
  EXPECT_EQ(files.size(), names.size());
  std::map<std::string, Tensor> inputs;
  for (size_t k = 0; k < files.size() && k < names.size(); ++k) inputs[names[k]] = files[k];
  return inputs;
}

// Import options that freeze these inputs.
OnnxImportOptions frozen(std::map<std::string, Tensor> values) {
  OnnxImportOptions options;
  options.input_values = std::move(values);
  return options;
}

Tensor ints(const std::vector<int64_t>& values) {
  return Tensor::from_vector({int64_t(values.size())}, values, DType::i64);
}

TEST(OnnxSpecialization, TheImporterNamesTheInputsItNeedsValuesOf) {
  try {
    import_onnx(specialize_case("slice_and_pad_inputs"));
    ADD_FAILURE() << "imported without values";
  } catch (const OnnxInputValuesNeeded& needed) {
    // The first value needed (Slice's starts) names the input it comes from.
    EXPECT_THAT(needed.inputs(), ElementsAre("starts"));
    EXPECT_THAT(std::string(needed.what()),
                HasSubstr("node 'slice' (Slice): input 1 (starts) must be known when the model is imported, but it is "
                          "computed from the graph input 'starts' fed at run time"));
  }
}

TEST(OnnxSpecialization, OneSpecializationPerValueReusedForAValueSeenBefore) {
  OnnxSpecializedModel model(specialize_case("reshape_shape_input"));
  std::map<std::string, Tensor> inputs = inputs_of("reshape_shape_input", {"x", "shape"});
  expect_outputs_match(read_numbered(kOnnxData / "specialize" / "reshape_shape_input", "output"), model.run(inputs),
                       "reshape [3, 4]");
  EXPECT_THAT(model.value_inputs(), ElementsAre("shape"));
  EXPECT_EQ(model.specialization_count(), 1u);

  inputs["x"] = Tensor::full({2, 6}, 1.5, DType::f32);  // another x, the same shape: no new import
  EXPECT_EQ(model.run(inputs)[0].sizes(), (Sizes{3, 4}));
  EXPECT_EQ(model.specialization_count(), 1u);

  inputs["shape"] = ints({4, -1});  // a new value: a second specialization
  Tensor reshaped = model.run(inputs)[0];
  EXPECT_EQ(reshaped.sizes(), (Sizes{4, 3}));
  EXPECT_EQ(reshaped.flat_double(11), 1.5);
  EXPECT_EQ(model.specialization_count(), 2u);

  inputs["shape"] = ints({3, 4});  // the first value again
  EXPECT_EQ(model.run(inputs)[0].sizes(), (Sizes{3, 4}));
  EXPECT_EQ(model.specialization_count(), 2u);

  std::map<std::string, Tensor> run_inputs;
  OnnxSpecializedModel::Specialization& specialization = model.specialize(inputs, run_inputs);
  EXPECT_THAT(specialization.graph.placeholders(), ::testing::SizeIs(1));  // only x is fed at run time
  EXPECT_EQ(run_inputs.size(), 1u);
  EXPECT_EQ(run_inputs.count("x"), 1u);
}

TEST(OnnxSpecialization, ACompiledBackendRunsEachSpecialization) {
  int compiles = 0;
  OnnxSpecializedModel model(specialize_case("slice_and_pad_inputs"), [&compiles](const ir::Graph& graph) {
    ++compiles;
    auto compiled = std::make_shared<compiler::CompiledModel>(compiler::compile(graph, onnx_test_compile_options()));
    return [compiled](const std::map<std::string, Tensor>& inputs) { return compiled->run(inputs); };
  });
  std::map<std::string, Tensor> inputs = inputs_of("slice_and_pad_inputs", {"x", "starts", "ends", "axes", "steps", "pads"});
  expect_outputs_match(read_numbered(kOnnxData / "specialize" / "slice_and_pad_inputs", "output"), model.run(inputs),
                       "slice and pad");
  EXPECT_THAT(model.value_inputs(), ElementsAre("axes", "ends", "pads", "starts", "steps"));
  model.run(inputs);
  EXPECT_EQ(compiles, 1);
  inputs["pads"] = ints({0, 0, 0, 0, 0, 0});
  EXPECT_EQ(model.run(inputs)[0].sizes(), (Sizes{2, 1, 5}));
  EXPECT_EQ(compiles, 2);
}

TEST(OnnxSpecialization, BadValuesAndMissingInputsAreUserErrors) {
  OnnxSpecializedModel model(specialize_case("reshape_shape_input"));
  std::map<std::string, Tensor> inputs = inputs_of("reshape_shape_input", {"x", "shape"});
  inputs["shape"] = ints({5, 5});  // 25 elements for 12
  EXPECT_THAT(error_of([&] { model.run(inputs); }), HasSubstr("node 'reshape' (Reshape)"));
  inputs["shape"] = ints({-3, 4});  // the converter checks it before ONNX's shape inference runs
  EXPECT_THAT(error_of([&] { model.run(inputs); }),
              HasSubstr("node 'reshape' (Reshape): node %y (reshape): invalid shape dimension -3"));
  inputs.erase("shape");
  OnnxSpecializedModel fresh(specialize_case("reshape_shape_input"));
  EXPECT_THAT(error_of([&] { fresh.run(inputs); }),
              HasSubstr("input 1 (shape) must be known when the model is imported, but it is computed from the graph "
                        "input 'shape' fed at run time: give its value (kiln run and kiln bench specialize the model on "
                        "the values --input gives); the input 'shape' was not given"));
  inputs["shape"] = ints({3, 4});
  fresh.run(inputs);
  inputs.erase("shape");
  EXPECT_THAT(error_of([&] { fresh.run(inputs); }),
              HasSubstr("input 'shape' decides shapes in this model (its value is needed to compile it), but it was not given"));
}

TEST(OnnxSpecialization, TheFreezeChecksWhatItIsGiven) {
  std::string path = specialize_case("reshape_shape_input");
  ir::Graph graph = import_onnx(path, frozen({{"shape", ints({6, 2})}}));
  ASSERT_THAT(graph.placeholders(), ::testing::SizeIs(1));
  EXPECT_EQ(ir::interpret(graph, {{"x", Tensor::zeros({2, 6}, DType::f32)}})[0].sizes(), (Sizes{6, 2}));
  EXPECT_EQ(error_of([&] { import_onnx(path, frozen({{"shapes", ints({6, 2})}})); }),
            "'" + path + "': 'shapes' is not a graph input fed at run time (the inputs are 'x', 'shape')");
  EXPECT_EQ(error_of([&] { import_onnx(path, frozen({{"shape", Tensor::zeros({2}, DType::i32)}})); }),
            "'" + path + "': the value given for graph input 'shape' is i32, but the input is declared INT64");
  EXPECT_EQ(error_of([&] { import_onnx(path, frozen({{"shape", ints({6, 2, 1})}})); }),
            "'" + path + "': the value given for graph input 'shape' has shape [3], but the input is declared [2]");
}

}  // namespace
}  // namespace kiln::frontends::testing
