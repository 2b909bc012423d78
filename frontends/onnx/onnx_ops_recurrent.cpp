// ONNX's recurrent layers RNN, GRU and LSTM, unrolled over the (static) sequence length into
// core ops: the input projection of every step is one matmul (X @ W^T + Wb + Rb), then each
// step multiplies the hidden state by R^T and applies the gates as ONNX defines them
// (activations and their alpha/beta, clip, GRU's linear_before_reset, LSTM's peepholes and
// input_forget), per direction (forward, reverse, bidirectional). sequence_lens masks the
// steps past each sequence's end (their outputs are 0, the state is kept). layout 1 (batch
// first) transposes in and out. Outputs: Y [seq, directions, batch, hidden], Y_h and (LSTM)
// Y_c [directions, batch, hidden].
#include <map>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

enum class Cell { rnn, gru, lstm };

constexpr int64_t kMaxUnrolledSteps = 4096;

// The activation functions of one direction, applied by name with their alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

ir::Node* activate(OnnxNodeContext& context, const Activation& f, ir::Node* x) {
  const std::string& name = f.name;
  if (name == "Sigmoid") return context.call("sigmoid", {x});
  if (name == "Tanh") return context.call("tanh", {x});
  if (name == "Relu") return context.call("relu", {x});
  if (name == "Softsign") return context.call("div", {x, context.call("add", {context.call("abs", {x}), 1.0})});
  if (name == "Softplus") return context.call("softplus", {x});
  if (name == "Elu") return context.call("elu", {x, f.alpha});
  if (name == "LeakyRelu") return context.call("leaky_relu", {x, f.alpha});
  if (name == "ThresholdedRelu") return context.call("where", {context.call("gt", {x, f.alpha}), x, 0.0});
  if (name == "HardSigmoid") return context.call("clamp", {context.call("add", {context.call("mul", {x, f.alpha}), f.beta}), 0.0, 1.0});
  if (name == "Affine") return context.call("add", {context.call("mul", {x, f.alpha}), f.beta});
  if (name == "ScaledTanh") return context.call("mul", {context.call("tanh", {context.call("mul", {x, f.beta})}), f.alpha});
  context.fail("activation '", name, "' is not supported");
}

// The activations per direction (each direction's list, in order), with ONNX's defaults and
// the alpha/beta that each one that takes them consumes from activation_alpha/beta.
std::vector<std::vector<Activation>> activations(const OnnxNodeContext& context, Cell cell, int64_t directions) {
  std::vector<std::string> defaults = cell == Cell::rnn   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (const auto* attribute = context.attribute("activations")) {
    for (const std::string& name : attribute->strings()) names.push_back(name);
  } else {
    for (int64_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * size_t(directions))
    context.fail("activations lists ", names.size(), " functions; ", defaults.size() * size_t(directions), " are needed");
  std::vector<float> alphas, betas;
  if (const auto* attribute = context.attribute("activation_alpha")) alphas.assign(attribute->floats().begin(), attribute->floats().end());
  if (const auto* attribute = context.attribute("activation_beta")) betas.assign(attribute->floats().begin(), attribute->floats().end());
  static const std::map<std::string, std::pair<double, double>> kDefaults = {
      {"LeakyRelu", {0.01, 0}}, {"ThresholdedRelu", {1.0, 0}}, {"HardSigmoid", {0.2, 0.5}},
      {"Elu", {1.0, 0}},        {"Affine", {1.0, 0}},          {"ScaledTanh", {1.0, 1.0}}};
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::vector<Activation>> result(static_cast<size_t>(directions));
  for (size_t i = 0; i < names.size(); ++i) {
    Activation f{names[i]};
    auto found = kDefaults.find(f.name);
    if (found != kDefaults.end()) {
      f.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : found->second.first;
      bool takes_beta = f.name == "HardSigmoid" || f.name == "Affine" || f.name == "ScaledTanh";
      if (takes_beta) f.beta = next_beta < betas.size() ? betas[next_beta++] : found->second.second;
    }
    result[i / defaults.size()].push_back(f);
  }
  return result;
}

struct Layer {
  Cell cell;
  int64_t gates = 1, hidden = 0, steps = 0, directions = 1;
  std::optional<double> clip;
  bool linear_before_reset = false, input_forget = false;
  std::vector<std::vector<Activation>> functions;
  ir::Node* x = nullptr;  // [steps, batch, input]
  SymInt batch;
  ir::Node* step_mask = nullptr;  // [steps, batch, 1] of 1/0 when sequence_lens is given
};

ir::Node* gate(OnnxNodeContext& context, ir::Node* all, int64_t index, int64_t hidden) {
  return context.call("slice", {all, int64_t(-1), index * hidden, (index + 1) * hidden});
}

ir::Node* clipped(OnnxNodeContext& context, const Layer& layer, ir::Node* x) {
  return layer.clip ? context.call("clamp", {x, -*layer.clip, *layer.clip}) : x;
}

// One direction: the hidden states of every step (in time order), the last hidden and cell state.
struct DirectionResult {
  std::vector<ir::Node*> outputs;
  ir::Node* hidden = nullptr;
  ir::Node* cell = nullptr;
};

DirectionResult run_direction(OnnxNodeContext& context, const Layer& layer, int64_t d) {
  const std::vector<Activation>& f = layer.functions[size_t(d)];
  int64_t h = layer.hidden, g = layer.gates;
  ir::Node* w = context.call("select", {context.tensor(1), int64_t(0), d});  // [g*h, input]
  ir::Node* r = context.call("select", {context.tensor(2), int64_t(0), d});  // [g*h, h]
  ir::Node* projected = context.call("matmul", {layer.x, context.call("transpose", {w, int64_t(0), int64_t(1)})});
  ir::Node* r_t = context.call("transpose", {r, int64_t(0), int64_t(1)});
  ir::Node* recurrent_bias = nullptr;
  if (context.has_input(3)) {
    ir::Node* b = context.call("select", {context.tensor(3), int64_t(0), d});  // [2*g*h]: Wb then Rb
    ir::Node* wb = context.call("slice", {b, int64_t(0), int64_t(0), g * h});
    ir::Node* rb = context.call("slice", {b, int64_t(0), g * h, 2 * g * h});
    if (layer.cell == Cell::gru && layer.linear_before_reset) {
      projected = context.call("add", {projected, wb});
      recurrent_bias = rb;  // added to H R^T (the reset gate then multiplies H R_h^T + Rb_h)
    } else {
      projected = context.call("add", {projected, context.call("add", {wb, rb})});
    }
  }
  DType dtype = layer.x->value().dtype;
  auto state = [&](size_t index) -> ir::Node* {
    if (context.has_input(index)) return context.call("select", {context.tensor(index), int64_t(0), d});
    return context.call("full", {ir::Argument::sym_ints({layer.batch, SymInt(h)}), scalar_argument(0, dtype)}, {{"dtype", dtype}});
  };
  ir::Node* hidden = state(5);
  ir::Node* cell = layer.cell == Cell::lstm ? state(6) : nullptr;
  ir::Node* peephole = layer.cell == Cell::lstm && context.has_input(7) ? context.call("select", {context.tensor(7), int64_t(0), d}) : nullptr;
  bool reverse = (layer.directions == 2 && d == 1) || context.string_attribute("direction", "forward") == "reverse";
  DirectionResult result;
  result.outputs.resize(size_t(layer.steps));
  for (int64_t i = 0; i < layer.steps; ++i) {
    int64_t t = reverse ? layer.steps - 1 - i : i;
    ir::Node* x_part = context.call("select", {projected, int64_t(0), t});  // [batch, g*h]
    ir::Node* h_part = context.call("matmul", {hidden, r_t});
    if (recurrent_bias) h_part = context.call("add", {h_part, recurrent_bias});
    ir::Node* new_hidden = nullptr;
    ir::Node* new_cell = nullptr;
    if (layer.cell == Cell::rnn) {
      new_hidden = activate(context, f[0], clipped(context, layer, context.call("add", {x_part, h_part})));
    } else if (layer.cell == Cell::gru) {
      ir::Node* z = activate(context, f[0], clipped(context, layer, context.call("add", {gate(context, x_part, 0, h), gate(context, h_part, 0, h)})));
      ir::Node* reset = activate(context, f[0], clipped(context, layer, context.call("add", {gate(context, x_part, 1, h), gate(context, h_part, 1, h)})));
      ir::Node* candidate_input = nullptr;
      if (layer.linear_before_reset) {
        ir::Node* linear = gate(context, h_part, 2, h);  // H R_h^T + Rb_h
        candidate_input = context.call("add", {gate(context, x_part, 2, h), context.call("mul", {reset, linear})});
      } else {
        ir::Node* r_h = context.call("slice", {r_t, int64_t(1), 2 * h, 3 * h});
        ir::Node* reset_hidden = context.call("matmul", {context.call("mul", {reset, hidden}), r_h});
        candidate_input = context.call("add", {gate(context, x_part, 2, h), reset_hidden});
      }
      ir::Node* candidate = activate(context, f[1], clipped(context, layer, candidate_input));
      // H = (1 - z) * candidate + z * H_prev
      new_hidden = context.call("add", {context.call("mul", {context.call("sub", {1.0, z}), candidate}), context.call("mul", {z, hidden})});
    } else {
      auto pre = [&](int64_t index) { return context.call("add", {gate(context, x_part, index, h), gate(context, h_part, index, h)}); };
      auto peep = [&](ir::Node* value, int64_t index, ir::Node* c) {
        if (!peephole) return value;
        return context.call("add", {value, context.call("mul", {context.call("slice", {peephole, int64_t(0), index * h, (index + 1) * h}), c})});
      };
      ir::Node* input_gate = activate(context, f[0], clipped(context, layer, peep(pre(0), 0, cell)));
      ir::Node* forget_gate = layer.input_forget ? context.call("sub", {1.0, input_gate})
                                                 : activate(context, f[0], clipped(context, layer, peep(pre(2), 2, cell)));
      ir::Node* candidate = activate(context, f[1], clipped(context, layer, pre(3)));
      new_cell = context.call("add", {context.call("mul", {forget_gate, cell}), context.call("mul", {input_gate, candidate})});
      ir::Node* output_gate = activate(context, f[0], clipped(context, layer, peep(pre(1), 1, new_cell)));
      new_hidden = context.call("mul", {output_gate, activate(context, f[2], new_cell)});
    }
    if (layer.step_mask) {
      ir::Node* mask = context.call("select", {layer.step_mask, int64_t(0), t});  // [batch, 1]
      auto blend = [&](ir::Node* fresh, ir::Node* old) {
        return context.call("add", {context.call("mul", {mask, fresh}), context.call("mul", {context.call("sub", {1.0, mask}), old})});
      };
      result.outputs[size_t(t)] = context.call("mul", {mask, new_hidden});
      hidden = blend(new_hidden, hidden);
      if (new_cell) cell = blend(new_cell, cell);
    } else {
      result.outputs[size_t(t)] = new_hidden;
      hidden = new_hidden;
      if (new_cell) cell = new_cell;
    }
  }
  result.hidden = hidden;
  result.cell = cell;
  return result;
}

void convert_recurrent(OnnxNodeContext& context, Cell cell) {
  Layer layer;
  layer.cell = cell;
  layer.gates = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
  std::string direction = context.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    context.fail("direction '", direction, "' is not forward, reverse or bidirectional");
  layer.directions = direction == "bidirectional" ? 2 : 1;
  layer.linear_before_reset = context.int_attribute("linear_before_reset", 0) != 0;
  layer.input_forget = context.int_attribute("input_forget", 0) != 0;
  if (context.attribute("clip")) layer.clip = context.float_attribute("clip", 0);
  layer.functions = activations(context, cell, layer.directions);
  bool batch_first = context.int_attribute("layout", 0) != 0;
  ir::Node* x = context.tensor(0);
  if (x->value().rank() != 3) context.fail("X must be [seq_length, batch_size, input_size]");
  if (batch_first) x = context.call("transpose", {x, int64_t(0), int64_t(1)});
  layer.x = x;
  SymInt steps = x->value().shape[0];
  if (!steps.is_constant()) context.fail("the sequence length must be static (the layer is unrolled over it)");
  layer.steps = steps.constant();
  if (layer.steps > kMaxUnrolledSteps) context.fail("a sequence of ", layer.steps, " steps is longer than Kiln unrolls");
  layer.batch = x->value().shape[1];
  SymInt gate_rows = context.shape(1)[1];
  if (!gate_rows.is_constant() || gate_rows.constant() % layer.gates != 0) context.fail("W must be [directions, gates * hidden, input]");
  layer.hidden = context.int_attribute("hidden_size", gate_rows.constant() / layer.gates);
  if (context.has_input(4)) {
    const Tensor& lengths = context.constant_input(4, "sequence_lens");
    if (!layer.batch.is_constant() || lengths.numel() != layer.batch.constant())
      context.fail("sequence_lens needs one length per batch entry");
    std::vector<double> mask;
    for (int64_t t = 0; t < layer.steps; ++t)
      for (int64_t b = 0; b < lengths.numel(); ++b) mask.push_back(t < lengths.flat_int(b) ? 1.0 : 0.0);
    layer.step_mask = context.constant_node(Tensor::from_doubles({layer.steps, lengths.numel(), 1}, mask, x->value().dtype));
  }
  std::vector<DirectionResult> results;
  for (int64_t d = 0; d < layer.directions; ++d) results.push_back(run_direction(context, layer, d));
  // Y: [steps, directions, batch, hidden]; Y_h, Y_c: [directions, batch, hidden].
  auto directions_of = [&](auto pick, int64_t axis) {
    std::vector<ir::Argument> parts;
    for (DirectionResult& result : results) parts.emplace_back(context.call("unsqueeze", {pick(result), axis}));
    return context.call("cat", {ir::Argument(parts), axis});
  };
  if (context.output_used(0)) {
    std::vector<ir::Argument> steps_list;
    for (int64_t t = 0; t < layer.steps; ++t)
      steps_list.emplace_back(directions_of([t](DirectionResult& result) { return result.outputs[size_t(t)]; }, 0));
    ir::Node* y = context.call("stack", {ir::Argument(steps_list), int64_t(0)});
    if (batch_first) y = context.call("permute", {y, ir::Argument::ints({2, 0, 1, 3})});
    context.set_output(0, y);
  }
  auto final_state = [&](auto pick) {
    ir::Node* state = directions_of(pick, 0);
    return batch_first ? context.call("transpose", {state, int64_t(0), int64_t(1)}) : state;
  };
  if (context.output_used(1)) context.set_output(1, final_state([](DirectionResult& result) { return result.hidden; }));
  if (cell == Cell::lstm && context.output_used(2)) context.set_output(2, final_state([](DirectionResult& result) { return result.cell; }));
}

}  // namespace

void register_onnx_recurrent_ops(OnnxOpTable& table) {
  table.add("RNN", [](OnnxNodeContext& c) { convert_recurrent(c, Cell::rnn); });
  table.add("GRU", [](OnnxNodeContext& c) { convert_recurrent(c, Cell::gru); });
  table.add("LSTM", [](OnnxNodeContext& c) { convert_recurrent(c, Cell::lstm); });
}

}  // namespace kiln::frontends
