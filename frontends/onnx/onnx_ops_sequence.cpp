// ONNX's sequence and optional ops, resolved when the model is imported (onnx_value.h): a
// sequence is the list of its element values, so these ops move values between lists and emit
// graph nodes only for tensor work (a split's slices, a concatenation):
//  - SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt,
//    SequenceLength (a constant), SplitToSequence, ConcatFromSequence;
//  - SequenceMap: its body converted once per element (the sequences' lengths are known);
//  - Optional, OptionalHasElement (a constant), OptionalGetElement.
// Positions (SequenceAt's, SequenceInsert's, ...) must be known when the model is imported: a
// position computed from graph inputs fed at run time asks for their values (the model is
// specialized on them, onnx_specialization.h). An element's type must be the sequence's.
#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// Input `index`, which must be a sequence.
const OnnxValue& sequence_input(OnnxNodeContext& context, size_t index) {
  const OnnxValue& value = context.input(index);
  if (!value.is_sequence)
    context.fail("input ", index, " '", context.proto().input(int(index)), "' is ", value.kind_text(), ", where ",
                 context.op_type(), " takes a sequence");
  return value;
}

// The element type of `sequence` (its declared one, or its first element's).
std::optional<DType> element_dtype_of(const OnnxValue& sequence) {
  if (sequence.element_dtype) return sequence.element_dtype;
  if (!sequence.elements.empty()) return sequence.elements.front().dtype();
  return std::nullopt;
}

// A position input (`what`) into a sequence of `length` elements, wrapped from the end when
// negative; `inclusive_end` admits `length` itself (inserting at the end).
size_t position_of(OnnxNodeContext& context, size_t index, size_t length, bool inclusive_end) {
  std::vector<int64_t> values = context.constant_ints(index, "position");
  if (values.size() != 1) context.fail("position must hold one value, but it has ", values.size());
  int64_t position = values[0], size = int64_t(length);
  int64_t wrapped = position < 0 ? position + size : position;
  int64_t limit = inclusive_end ? size : size - 1;
  if (wrapped < 0 || wrapped > limit)
    context.fail("position ", position, " is outside the sequence of ", length, " elements (valid: ", -size, "..",
                 limit, ")");
  return size_t(wrapped);
}

void check_element(OnnxNodeContext& context, const OnnxValue& sequence, const OnnxValue& element) {
  std::optional<DType> expected = element_dtype_of(sequence);
  if (expected && element.dtype() != *expected)
    context.fail("the tensor is ", dtype_name(element.dtype()), ", but the sequence holds ", dtype_name(*expected),
                 " tensors");
}

void convert_sequence_empty(OnnxNodeContext& context) {
  int64_t type = context.int_attribute("dtype", onnx::TensorProto::FLOAT);
  std::optional<DType> dtype = dtype_from_onnx(int32_t(type));
  if (!dtype) context.fail("dtype ", onnx_type_name(int32_t(type)), " is not supported");
  context.set_output(0, OnnxValue::sequence({}, dtype));
}

void convert_sequence_construct(OnnxNodeContext& context) {
  if (context.input_count() == 0) context.fail("SequenceConstruct needs at least one input");
  std::vector<OnnxValue> elements;
  for (size_t i = 0; i < context.input_count(); ++i) {
    elements.push_back(context.tensor_value(i));
    if (elements.back().dtype() != elements.front().dtype())
      context.fail("input ", i, " is ", dtype_name(elements.back().dtype()), ", but input 0 is ",
                   dtype_name(elements.front().dtype()), " (a sequence holds one element type)");
  }
  DType dtype = elements.front().dtype();
  context.set_output(0, OnnxValue::sequence(std::move(elements), dtype));
}

void convert_sequence_insert(OnnxNodeContext& context) {
  OnnxValue sequence = sequence_input(context, 0);
  const OnnxValue& element = context.tensor_value(1);
  check_element(context, sequence, element);
  size_t at = context.has_input(2) ? position_of(context, 2, sequence.elements.size(), true) : sequence.elements.size();
  sequence.elements.insert(sequence.elements.begin() + long(at), element);
  sequence.element_dtype = element.dtype();
  context.set_output(0, std::move(sequence));
}

void convert_sequence_erase(OnnxNodeContext& context) {
  OnnxValue sequence = sequence_input(context, 0);
  if (sequence.elements.empty()) context.fail("cannot erase from an empty sequence");
  size_t at = context.has_input(1) ? position_of(context, 1, sequence.elements.size(), false) : sequence.elements.size() - 1;
  sequence.elements.erase(sequence.elements.begin() + long(at));
  context.set_output(0, std::move(sequence));
}

void convert_sequence_at(OnnxNodeContext& context) {
  const OnnxValue& sequence = sequence_input(context, 0);
  size_t at = position_of(context, 1, sequence.elements.size(), false);
  context.set_output(0, sequence.elements[at]);
}

void convert_sequence_length(OnnxNodeContext& context) {
  const OnnxValue& sequence = sequence_input(context, 0);
  context.set_output(0, OnnxValue::of_constant(Tensor::scalar(double(sequence.elements.size()), DType::i64)));
}

// SplitToSequence: `split` absent cuts size-1 pieces (squeezed unless keepdims=1), a scalar
// cuts pieces of that size (the last one shorter), a vector gives the sizes.
void convert_split_to_sequence(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), rank);
  SymInt size = context.shape(0)[size_t(axis)];
  if (!size.is_constant()) context.fail("the split axis ", axis, " needs a static size, not ", size);
  int64_t total = size.constant();
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!context.has_input(1)) {
    sizes.assign(size_t(total), 1);
    squeeze = context.int_attribute("keepdims", 1) == 0;
  } else {
    std::vector<int64_t> given = context.constant_ints(1, "split");
    if (context.rank(1) == 0) {
      if (given[0] <= 0) context.fail("split ", given[0], " must be positive");
      for (int64_t start = 0; start < total; start += given[0]) sizes.push_back(std::min(given[0], total - start));
    } else {
      int64_t sum = 0;
      for (int64_t piece : given) {
        if (piece < 0) context.fail("split has a negative size ", piece);
        sum += piece;
      }
      if (sum != total) context.fail("split's sizes add up to ", sum, ", but the axis has ", total, " elements");
      sizes = given;
    }
  }
  std::vector<OnnxValue> elements;
  int64_t start = 0;
  for (int64_t piece : sizes) {
    ir::Node* part = context.call("slice", {context.tensor(0), axis, start, start + piece});
    if (squeeze) part = context.call("squeeze", {part, ir::Argument::ints({axis})});
    elements.push_back(OnnxValue::of_node(part));
    start += piece;
  }
  context.set_output(0, OnnxValue::sequence(std::move(elements), context.dtype(0)));
}

// ConcatFromSequence: the elements concatenated along `axis`, or stacked along a new one.
void convert_concat_from_sequence(OnnxNodeContext& context) {
  OnnxValue sequence = sequence_input(context, 0);
  if (sequence.elements.empty()) context.fail("cannot concatenate an empty sequence (its result has no shape)");
  bool new_axis = context.int_attribute("new_axis", 0) != 0;
  int64_t rank = int64_t(sequence.elements.front().shape().size());
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), new_axis ? rank + 1 : rank);
  std::vector<ir::Argument> parts;
  for (OnnxValue& element : sequence.elements) {
    ir::Node* node = context.node_of(element);
    parts.emplace_back(new_axis ? context.call("unsqueeze", {node, axis}) : node);
  }
  context.emit(0, "cat", {ir::Argument(parts), axis});
}

// SequenceMap: the body once per position; its inputs are the sequences' elements at that
// position and the other inputs as they are; each body output gathers into a sequence.
void convert_sequence_map(OnnxNodeContext& context) {
  const onnx::GraphProto& body = context.graph_attribute("body");
  const OnnxValue& first = sequence_input(context, 0);
  size_t length = first.elements.size();
  if (body.input_size() != int(context.input_count()))
    context.fail("the body takes ", body.input_size(), " inputs, but the node has ", context.input_count());
  for (size_t i = 1; i < context.input_count(); ++i) {
    const OnnxValue& input = context.input(i);
    if (input.is_sequence && input.elements.size() != length)
      context.fail("input ", i, " has ", input.elements.size(), " elements, but input 0 has ", length);
  }
  std::vector<std::vector<OnnxValue>> gathered(context.output_count());
  for (size_t position = 0; position < length; ++position) {
    std::vector<OnnxValue> inputs;
    for (size_t i = 0; i < context.input_count(); ++i) {
      const OnnxValue& input = context.input(i);
      inputs.push_back(input.is_sequence ? input.elements[position] : input);
    }
    std::vector<OnnxValue> outputs = context.convert_subgraph(body, inputs);
    if (outputs.size() != context.output_count())
      context.fail("the body returns ", outputs.size(), " values, but the node has ", context.output_count(), " outputs");
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!outputs[k].is_tensor()) context.fail("the body's output ", k, " is ", outputs[k].kind_text(), ", not a tensor");
      gathered[k].push_back(outputs[k]);
    }
  }
  for (size_t k = 0; k < gathered.size(); ++k) {
    std::optional<DType> dtype;
    if (!gathered[k].empty()) dtype = gathered[k].front().dtype();
    else if (k < size_t(body.output_size()) && body.output(int(k)).type().has_tensor_type())
      dtype = dtype_from_onnx(body.output(int(k)).type().tensor_type().elem_type());
    context.set_output(k, OnnxValue::sequence(std::move(gathered[k]), dtype));
  }
}

// Optional: its input (an optional holding a value is the value), or none without one.
void convert_optional(OnnxNodeContext& context) {
  if (context.has_input(0)) return context.set_output(0, context.input(0));
  if (!context.attribute("type")) context.fail("an Optional without an input needs the 'type' attribute");
  context.set_output(0, OnnxValue::none());
}

void convert_optional_has_element(OnnxNodeContext& context) {
  bool present = context.has_input(0) && !context.input(0).is_none;
  context.set_output(0, OnnxValue::of_constant(Tensor::scalar(present ? 1.0 : 0.0, DType::boolean)));
}

void convert_optional_get_element(OnnxNodeContext& context) {
  const OnnxValue& value = context.input(0);
  if (value.is_none) context.fail("the optional input '", context.proto().input(0), "' is empty");
  context.set_output(0, value);
}

}  // namespace

void register_onnx_sequence_ops(OnnxOpTable& table) {
  table.add("SequenceEmpty", convert_sequence_empty);
  table.add("SequenceConstruct", convert_sequence_construct);
  table.add("SequenceInsert", convert_sequence_insert);
  table.add("SequenceErase", convert_sequence_erase);
  table.add("SequenceAt", convert_sequence_at);
  table.add("SequenceLength", convert_sequence_length);
  table.add("SplitToSequence", convert_split_to_sequence);
  table.add("ConcatFromSequence", convert_concat_from_sequence);
  table.add("SequenceMap", convert_sequence_map);
  table.add("Optional", convert_optional);
  table.add("OptionalHasElement", convert_optional_has_element);
  table.add("OptionalGetElement", convert_optional_get_element);
}

}  // namespace kiln::frontends
