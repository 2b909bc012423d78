// Sequence and optional values (frontends/onnx/onnx_importer.h): resolved when the model is
// imported, specialized on what is fed at run time. A sequence input `s` is fed as s_0, s_1,
// ...; a sequence output `y` comes out as y_0, y_1, ...; an optional tensor input is fed or
// not. The sequence ops run on the element lists (SequenceInsert/At/Erase/Length,
// SplitToSequence, ConcatFromSequence, SequenceMap); bad input ends in one kiln::Error. The
// models are built here as ONNX protos; expected values are the inputs rearranged.
#include <gmock/gmock.h>
#include <unistd.h>

#include <fstream>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_specialization.h"
#include "tests/frontends/onnx_test_support.h"

namespace kiln::frontends::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A tensor type of these dims (-1: a dim of unknown size).
onnx::TypeProto tensor_type(int32_t element_type, std::vector<int64_t> dims) {
  onnx::TypeProto type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(element_type);
  auto* shape = tensor->mutable_shape();
  for (int64_t dim : dims) {
    auto* added = shape->add_dim();
    if (dim >= 0) added->set_dim_value(dim);
  }
  return type;
}

onnx::TypeProto float_tensor_type(std::vector<int64_t> dims) { return tensor_type(onnx::TensorProto::FLOAT, std::move(dims)); }

// A sequence of rank-1 float tensors.
onnx::TypeProto sequence_type() {
  onnx::TypeProto type;
  *type.mutable_sequence_type()->mutable_elem_type() = float_tensor_type({-1});
  return type;
}

onnx::TypeProto optional_tensor_type(std::vector<int64_t> dims) {
  onnx::TypeProto type;
  *type.mutable_optional_type()->mutable_elem_type() = float_tensor_type(std::move(dims));
  return type;
}

void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values, const std::string& name,
               const onnx::TypeProto& type) {
  onnx::ValueInfoProto* value = values->Add();
  value->set_name(name);
  *value->mutable_type() = type;
}

onnx::NodeProto* add_node(onnx::GraphProto& graph, const std::string& op, std::vector<std::string> inputs,
                          std::vector<std::string> outputs) {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op);
  node->set_name(outputs.front());
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

void set_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

Tensor floats(const Sizes& sizes, const std::vector<float>& values) { return Tensor::from_vector(sizes, values, DType::f32); }

std::vector<float> values_of(const Tensor& tensor) {
  std::vector<float> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(float(tensor.flat_double(i)));
  return values;
}

class OnnxSequences : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kiln_onnx_seq_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `graph` as an opset-17 model file.
  std::string write(const onnx::GraphProto& graph) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    *model.mutable_graph() = graph;
    model.mutable_graph()->set_name("g");
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << model.SerializeAsString();
    return path;
  }

  fs::path dir_;
};

// s (a sequence input), t: insert t at the end, its length, all concatenated, the last
// element, and the sequence itself as an output.
onnx::GraphProto insert_graph() {
  onnx::GraphProto graph;
  add_value(graph.mutable_input(), "s", sequence_type());
  add_value(graph.mutable_input(), "t", float_tensor_type({3}));
  add_node(graph, "SequenceInsert", {"s", "t"}, {"s2"});
  add_node(graph, "SequenceLength", {"s2"}, {"n"});
  set_int(add_node(graph, "ConcatFromSequence", {"s2"}, {"c"}), "axis", 0);
  onnx::NodeProto* last = add_node(graph, "Constant", {}, {"minus_one"});
  onnx::AttributeProto* value = last->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_int64_data(-1);
  add_node(graph, "SequenceAt", {"s2", "minus_one"}, {"back"});
  add_value(graph.mutable_output(), "n", tensor_type(onnx::TensorProto::INT64, {}));
  add_value(graph.mutable_output(), "c", float_tensor_type({-1}));
  add_value(graph.mutable_output(), "back", float_tensor_type({-1}));
  add_value(graph.mutable_output(), "s2", sequence_type());
  return graph;
}

TEST_F(OnnxSequences, SequenceInputsAndOutputsAreNamedElements) {
  OnnxSpecializedModel model(write(insert_graph()));
  std::map<std::string, Tensor> inputs = {
      {"s_0", floats({2}, {1, 2})}, {"s_1", floats({1}, {3})}, {"t", floats({3}, {4, 5, 6})}};
  std::map<std::string, Tensor> run_inputs;
  const ir::Graph& graph = model.specialize(inputs, run_inputs).graph;
  EXPECT_THAT(graph.output_names(), ElementsAre("n", "c", "back", "s2_0", "s2_1", "s2_2"));
  std::vector<Tensor> outputs = model.run(inputs);
  ASSERT_EQ(outputs.size(), 6u);
  EXPECT_EQ(outputs[0].flat_int(0), 3);
  EXPECT_THAT(values_of(outputs[1]), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(values_of(outputs[2]), ElementsAre(4, 5, 6));
  EXPECT_THAT(values_of(outputs[3]), ElementsAre(1, 2));
  EXPECT_THAT(values_of(outputs[4]), ElementsAre(3));
  EXPECT_THAT(values_of(outputs[5]), ElementsAre(4, 5, 6));
  EXPECT_EQ(model.specialization_count(), 1u);

  // Another length is another specialization (the key holds what is fed); the same one again reuses it.
  std::map<std::string, Tensor> shorter = {{"s_0", floats({2}, {7, 8})}, {"t", floats({3}, {4, 5, 6})}};
  outputs = model.run(shorter);
  ASSERT_EQ(outputs.size(), 5u);
  EXPECT_EQ(outputs[0].flat_int(0), 2);
  EXPECT_THAT(values_of(outputs[1]), ElementsAre(7, 8, 4, 5, 6));
  EXPECT_EQ(model.specialization_count(), 2u);
  model.run(inputs);
  EXPECT_EQ(model.specialization_count(), 2u);

  // No element at all: an empty sequence.
  outputs = model.run({{"t", floats({3}, {4, 5, 6})}});
  EXPECT_EQ(outputs[0].flat_int(0), 1);
  EXPECT_THAT(values_of(outputs[1]), ElementsAre(4, 5, 6));
}

TEST_F(OnnxSequences, SplitToSequenceAndSequenceMap) {
  onnx::GraphProto graph;
  add_value(graph.mutable_input(), "x", float_tensor_type({2, 3}));
  onnx::NodeProto* split = add_node(graph, "SplitToSequence", {"x"}, {"columns"});
  set_int(split, "axis", 1);
  set_int(split, "keepdims", 0);
  onnx::GraphProto body;
  body.set_name("body");
  add_value(body.mutable_input(), "e", float_tensor_type({2}));
  add_node(body, "Add", {"e", "e"}, {"twice"});
  add_value(body.mutable_output(), "twice", float_tensor_type({2}));
  onnx::NodeProto* map = add_node(graph, "SequenceMap", {"columns"}, {"y"});
  onnx::AttributeProto* attribute = map->add_attribute();
  attribute->set_name("body");
  attribute->set_type(onnx::AttributeProto::GRAPH);
  *attribute->mutable_g() = body;
  add_value(graph.mutable_output(), "y", sequence_type());
  OnnxSpecializedModel model(write(graph));
  std::vector<Tensor> outputs = model.run({{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_THAT(values_of(outputs[0]), ElementsAre(2, 8));
  EXPECT_THAT(values_of(outputs[1]), ElementsAre(4, 10));
  EXPECT_THAT(values_of(outputs[2]), ElementsAre(6, 12));
  EXPECT_EQ(outputs[0].sizes(), (Sizes{2}));
}

TEST_F(OnnxSequences, ElementsOfDifferentShapesThroughTheCpuBackend) {
  // The element type's dim_params (H, W) are shared symbols only where every element agrees;
  // here the elements differ, so each keeps its size. Their shapes are constants, outputs as such.
  onnx::GraphProto graph;
  onnx::TypeProto elements;
  auto* element_type = elements.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
  element_type->set_elem_type(onnx::TensorProto::FLOAT);
  element_type->mutable_shape()->add_dim()->set_dim_param("H");
  element_type->mutable_shape()->add_dim()->set_dim_param("W");
  add_value(graph.mutable_input(), "s", elements);
  onnx::GraphProto body;
  body.set_name("body");
  add_value(body.mutable_input(), "e", float_tensor_type({-1, -1}));
  add_node(body, "Shape", {"e"}, {"size"});
  add_value(body.mutable_output(), "size", tensor_type(onnx::TensorProto::INT64, {2}));
  onnx::NodeProto* map = add_node(graph, "SequenceMap", {"s"}, {"sizes"});
  onnx::AttributeProto* attribute = map->add_attribute();
  attribute->set_name("body");
  attribute->set_type(onnx::AttributeProto::GRAPH);
  *attribute->mutable_g() = body;
  onnx::TypeProto sizes;
  *sizes.mutable_sequence_type()->mutable_elem_type() = tensor_type(onnx::TensorProto::INT64, {2});
  add_value(graph.mutable_output(), "sizes", sizes);
  OnnxSpecializedModel model(write(graph), [](const ir::Graph& imported) {
    auto compiled = std::make_shared<compiler::CompiledModel>(compiler::compile(imported));
    return [compiled](const std::map<std::string, Tensor>& inputs) { return compiled->run(inputs); };
  });
  std::vector<Tensor> outputs = model.run({{"s_0", Tensor::zeros({2, 3}, DType::f32)}, {"s_1", Tensor::zeros({4, 5}, DType::f32)}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].flat_int(0), 2);
  EXPECT_EQ(outputs[0].flat_int(1), 3);
  EXPECT_EQ(outputs[1].flat_int(0), 4);
  EXPECT_EQ(outputs[1].flat_int(1), 5);
}

TEST_F(OnnxSequences, OptionalInputsAreFedOrNot) {
  onnx::GraphProto graph;
  add_value(graph.mutable_input(), "o", optional_tensor_type({2}));
  add_node(graph, "OptionalHasElement", {"o"}, {"has"});
  add_value(graph.mutable_output(), "has", tensor_type(onnx::TensorProto::BOOL, {}));
  OnnxSpecializedModel model(write(graph));
  EXPECT_EQ(model.run({})[0].flat_int(0), 0);
  EXPECT_EQ(model.run({{"o", floats({2}, {1, 2})}})[0].flat_int(0), 1);
  EXPECT_EQ(model.specialization_count(), 2u);
}

TEST_F(OnnxSequences, BadSequencesAreOneLineErrors) {
  std::string path = write(insert_graph());
  // Imported without what is fed: the convention is named.
  EXPECT_EQ(error_of([&] { import_onnx(path); }),
            "'" + path + "': graph input 's' is a sequence: Kiln specializes it on the tensors fed at run time (its "
            "elements as s_0, s_1, ...), so give them (kiln run --input ...)");
  // An element of another dtype than the sequence's.
  OnnxSpecializedModel model(path);
  EXPECT_THAT(error_of([&] { model.run({{"s_0", Tensor::from_vector<int64_t>({1}, {1}, DType::i64)}, {"t", floats({3}, {4, 5, 6})}}); }),
              HasSubstr("the tensor fed as 's_0' is i64, but the input holds FLOAT"));
  // A tensor op on a sequence.
  onnx::GraphProto graph;
  add_value(graph.mutable_input(), "s", sequence_type());
  add_node(graph, "Relu", {"s"}, {"r"});
  add_value(graph.mutable_output(), "r", float_tensor_type({-1}));
  OnnxSpecializedModel relu(write(graph));
  EXPECT_THAT(error_of([&] { relu.run({{"s_0", floats({1}, {1})}}); }),
              HasSubstr("node 'r' (Relu): input 0 's' is a sequence of 1 tensors, where Relu takes a tensor"));
  // A position outside the sequence.
  onnx::GraphProto at;
  add_value(at.mutable_input(), "s", sequence_type());
  add_value(at.mutable_input(), "p", tensor_type(onnx::TensorProto::INT64, {}));
  add_node(at, "SequenceAt", {"s", "p"}, {"e"});
  add_value(at.mutable_output(), "e", float_tensor_type({-1}));
  OnnxSpecializedModel sequence_at(write(at));
  EXPECT_THAT(values_of(sequence_at.run({{"s_0", floats({1}, {5})}, {"s_1", floats({1}, {6})}, {"p", Tensor::scalar(1, DType::i64)}})[0]),
              ElementsAre(6));
  EXPECT_THAT(error_of([&] {
                sequence_at.run({{"s_0", floats({1}, {5})}, {"p", Tensor::scalar(2, DType::i64)}});
              }),
              HasSubstr("node 'e' (SequenceAt): position 2 is outside the sequence of 1 elements (valid: -1..0)"));
}

}  // namespace
}  // namespace kiln::frontends::testing
