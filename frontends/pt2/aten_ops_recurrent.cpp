// ATen's recurrent layers and cells: lstm / gru / rnn_tanh / rnn_relu (.input: whole layers,
// several and bidirectional, batch first or not, LSTM's projections) and lstm_cell / gru_cell /
// rnn_tanh_cell / rnn_relu_cell, unrolled over the sequence (its length known at compile time)
// into Kiln ops, with PyTorch's gate order and formulas:
//   LSTM  i, f, g, o = split(x W_ih^T + b_ih + h W_hh^T + b_hh)
//         c' = sigmoid(f) c + sigmoid(i) tanh(g); h' = sigmoid(o) tanh(c') (then h' W_hr^T)
//   GRU   r, z, n from gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh:
//         r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r gh_n)
//         h' = (1 - z) n + z h
//   RNN   h' = tanh or relu(x W_ih^T + b_ih + h W_hh^T + b_hh)
// Each layer projects every step's input with one linear; the steps then multiply the state.
// Packed sequences (the .data overloads) and dropout between layers in training are refused.
#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

enum class Cell { lstm, gru, rnn_tanh, rnn_relu };

constexpr int64_t kMaxUnrolledSteps = 4096;

int64_t gate_count(Cell cell) { return cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1; }

const char* cell_name(Cell cell) {
  switch (cell) {
    case Cell::lstm: return "lstm";
    case Cell::gru: return "gru";
    case Cell::rnn_tanh: return "rnn_tanh";
    case Cell::rnn_relu: return "rnn_relu";
  }
  return "rnn";
}

// One direction of one layer (or one cell): its weights as PyTorch stores them.
struct Weights {
  ir::Node* w_ih = nullptr;  // [gates * hidden, input]
  ir::Node* w_hh = nullptr;  // [gates * hidden, state]
  ir::Node* b_ih = nullptr;  // [gates * hidden] or null
  ir::Node* b_hh = nullptr;
  ir::Node* w_hr = nullptr;  // LSTM's projection [proj, hidden] or null
};

struct State {
  ir::Node* h = nullptr;  // [batch, state]
  ir::Node* c = nullptr;  // LSTM's cell state [batch, hidden]
};

ir::Node* gate(AtenNodeContext& c, ir::Node* all, int64_t index, int64_t hidden) {
  return c.call("slice", {all, int64_t(-1), index * hidden, (index + 1) * hidden});
}

// The rows of `w` (the gates' hidden size), known at compile time.
int64_t hidden_size(AtenNodeContext& c, Cell cell, ir::Node* w_ih) {
  std::optional<int64_t> rows = rank_of(w_ih) == 2 ? shape_of(w_ih)[0].maybe_constant() : std::nullopt;
  int64_t gates = gate_count(cell);
  if (!rows || *rows % gates != 0)
    c.fail(cell_name(cell), ": w_ih must be [", gates, " * hidden_size, input_size] with static sizes, got ",
           w_ih->value().type_string());
  return *rows / gates;
}

// PyTorch's check of a layer's input against its weights.
void expect_input_size(AtenNodeContext& c, Cell cell, ir::Node* input, ir::Node* w_ih) {
  std::optional<int64_t> features = shape_of(input).back().maybe_constant();
  std::optional<int64_t> expected = shape_of(w_ih).back().maybe_constant();
  if (features && expected && *features != *expected)
    c.fail(cell_name(cell), ": input.size(-1) must be equal to input_size. Expected ", *expected, ", got ", *features);
}

// One step: `projected` is x W_ih^T + b_ih for this step.
State step(AtenNodeContext& c, Cell cell, const Weights& w, int64_t hidden, ir::Node* projected, const State& state) {
  ir::Node* recurrent = c.call("linear", {state.h, w.w_hh, w.b_hh ? ir::Argument(w.b_hh) : ir::Argument()});
  if (cell == Cell::gru) {
    ir::Node* r = c.call("sigmoid", {c.call("add", {gate(c, projected, 0, hidden), gate(c, recurrent, 0, hidden)})});
    ir::Node* z = c.call("sigmoid", {c.call("add", {gate(c, projected, 1, hidden), gate(c, recurrent, 1, hidden)})});
    ir::Node* n = c.call("tanh", {c.call("add", {gate(c, projected, 2, hidden), c.call("mul", {r, gate(c, recurrent, 2, hidden)})})});
    // (1 - z) n + z h = n + z (h - n)
    return {c.call("add", {n, c.call("mul", {z, c.call("sub", {state.h, n})})}), nullptr};
  }
  ir::Node* gates = c.call("add", {projected, recurrent});
  if (cell == Cell::rnn_tanh) return {c.call("tanh", {gates}), nullptr};
  if (cell == Cell::rnn_relu) return {c.call("relu", {gates}), nullptr};
  ir::Node* i = c.call("sigmoid", {gate(c, gates, 0, hidden)});
  ir::Node* f = c.call("sigmoid", {gate(c, gates, 1, hidden)});
  ir::Node* g = c.call("tanh", {gate(c, gates, 2, hidden)});
  ir::Node* o = c.call("sigmoid", {gate(c, gates, 3, hidden)});
  ir::Node* cell_state = c.call("add", {c.call("mul", {f, state.c}), c.call("mul", {i, g})});
  ir::Node* h = c.call("mul", {o, c.call("tanh", {cell_state})});
  if (w.w_hr) h = c.call("linear", {h, w.w_hr});
  return {h, cell_state};
}

ir::Node* project(AtenNodeContext& c, ir::Node* x, const Weights& w) {
  return c.call("linear", {x, w.w_ih, w.b_ih ? ir::Argument(w.b_ih) : ir::Argument()});
}

// A whole layer: lstm / gru / rnn_tanh / rnn_relu .input.
AtenConverter layer(Cell cell) {
  return [cell](AtenNodeContext& c) {
    ir::Node* input = c.tensor("input");
    std::vector<ir::Node*> params = c.tensors("params");
    bool has_biases = c.bool_arg("has_biases");
    int64_t layers = c.int_arg("num_layers");
    bool bidirectional = c.bool_arg("bidirectional");
    bool batch_first = c.bool_arg("batch_first");
    if (c.bool_arg("train") && c.float_arg("dropout") > 0 && layers > 1)
      c.fail(cell_name(cell), ": dropout between layers in training mode is not supported (export the model in eval mode)");
    if (rank_of(input) != 3)
      c.fail(cell_name(cell), ": expects a 3-d input ([seq, batch, feature], or batch first), got ", input->value().type_string());
    int64_t directions = bidirectional ? 2 : 1;
    if (layers < 1) c.fail(cell_name(cell), ": num_layers must be positive, got ", layers);
    size_t per_direction = params.size() / size_t(layers * directions);
    size_t plain = has_biases ? 4 : 2;
    bool projected = cell == Cell::lstm && per_direction == plain + 1;
    if (per_direction * size_t(layers * directions) != params.size() || (per_direction != plain && !projected))
      c.fail(cell_name(cell), ": ", params.size(), " parameters do not fit ", layers, " layers of ", directions,
             " directions", has_biases ? " with biases" : "");

    ir::Node* x = batch_first ? c.call("transpose", {input, int64_t(0), int64_t(1)}) : input;  // [seq, batch, feature]
    std::optional<int64_t> known_steps = shape_of(x)[0].maybe_constant();
    if (!known_steps)
      c.fail(cell_name(cell), ": the sequence length of ", input->value().type_string(),
             " is symbolic; Kiln unrolls the steps and needs it at compile time (export with that dim static)");
    int64_t steps = *known_steps;
    if (steps > kMaxUnrolledSteps) c.fail(cell_name(cell), ": ", steps, " steps are more than the ", kMaxUnrolledSteps, " Kiln unrolls");
    if (steps == 0) c.fail(cell_name(cell), ": the sequence is empty");

    std::vector<ir::Node*> h0, c0;
    if (cell == Cell::lstm) {
      std::vector<ir::Node*> hx = c.tensors("hx");
      if (hx.size() != 2) c.fail("lstm: hx must hold (h0, c0), got ", hx.size(), " tensors");
      h0.push_back(hx[0]);
      c0.push_back(hx[1]);
    } else {
      h0.push_back(c.tensor("hx"));
    }
    std::vector<ir::Node*> last_h, last_c;
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<std::vector<ir::Node*>> outputs(static_cast<size_t>(directions));
      for (int64_t d = 0; d < directions; ++d) {
        size_t base = size_t(l * directions + d) * per_direction;
        Weights w;
        w.w_ih = params[base];
        w.w_hh = params[base + 1];
        if (has_biases) w.b_ih = params[base + 2], w.b_hh = params[base + 3];
        if (projected) w.w_hr = params[base + plain];
        int64_t hidden = hidden_size(c, cell, w.w_ih);
        if (l == 0) expect_input_size(c, cell, input, w.w_ih);
        int64_t index = l * directions + d;
        State state{c.call("select", {h0[0], int64_t(0), index}),
                    cell == Cell::lstm ? c.call("select", {c0[0], int64_t(0), index}) : nullptr};
        ir::Node* all_projected = project(c, x, w);  // [seq, batch, gates * hidden]
        std::vector<ir::Node*>& out = outputs[size_t(d)];
        out.assign(size_t(steps), nullptr);
        for (int64_t s = 0; s < steps; ++s) {
          int64_t t = d == 0 ? s : steps - 1 - s;
          state = step(c, cell, w, hidden, c.call("select", {all_projected, int64_t(0), t}), state);
          out[size_t(t)] = c.call("unsqueeze", {state.h, int64_t(0)});
        }
        last_h.push_back(state.h);
        if (state.c) last_c.push_back(state.c);
      }
      std::vector<ir::Argument> per_direction_outputs;
      for (const std::vector<ir::Node*>& out : outputs)
        per_direction_outputs.emplace_back(c.call("cat", {ir::Argument(std::vector<ir::Argument>(out.begin(), out.end())), int64_t(0)}));
      x = directions == 1 ? per_direction_outputs[0].node() : c.call("cat", {ir::Argument(per_direction_outputs), int64_t(-1)});
    }
    c.set_output(0, batch_first ? c.call("transpose", {x, int64_t(0), int64_t(1)}) : x);
    auto stacked = [&](const std::vector<ir::Node*>& states) {
      std::vector<ir::Argument> parts;
      for (ir::Node* state : states) parts.emplace_back(c.call("unsqueeze", {state, int64_t(0)}));
      return c.call("cat", {ir::Argument(parts), int64_t(0)});
    };
    if (c.output_used(1)) c.set_output(1, stacked(last_h));
    if (cell == Cell::lstm && c.output_used(2)) c.set_output(2, stacked(last_c));
  };
}

// One step of a cell: lstm_cell (hx = [h, c]; outputs h', c'), gru_cell / rnn_*_cell (hx; h').
AtenConverter single_step(Cell cell) {
  return [cell](AtenNodeContext& c) {
    Weights w{c.tensor("w_ih"), c.tensor("w_hh"), c.optional_tensor("b_ih"), c.optional_tensor("b_hh"), nullptr};
    int64_t hidden = hidden_size(c, cell, w.w_ih);
    State state;
    if (cell == Cell::lstm) {
      std::vector<ir::Node*> hx = c.tensors("hx");
      if (hx.size() != 2) c.fail("lstm_cell: hx must hold (h, c), got ", hx.size(), " tensors");
      state = {hx[0], hx[1]};
    } else {
      state.h = c.tensor("hx");
    }
    ir::Node* input = c.tensor("input");
    expect_input_size(c, cell, input, w.w_ih);
    State next = step(c, cell, w, hidden, project(c, input, w), state);
    c.set_output(0, next.h);
    if (next.c && c.output_used(1)) c.set_output(1, next.c);
  };
}

}  // namespace

void register_aten_recurrent_ops(AtenOpTable& table) {
  add_op(table, "lstm", "input", layer(Cell::lstm));
  add_op(table, "gru", "input", layer(Cell::gru));
  add_op(table, "rnn_tanh", "input", layer(Cell::rnn_tanh));
  add_op(table, "rnn_relu", "input", layer(Cell::rnn_relu));
  add_op(table, "lstm_cell", "default", single_step(Cell::lstm));
  add_op(table, "gru_cell", "default", single_step(Cell::gru));
  add_op(table, "rnn_tanh_cell", "default", single_step(Cell::rnn_tanh));
  add_op(table, "rnn_relu_cell", "default", single_step(Cell::rnn_relu));
}

}  // namespace kiln::frontends
