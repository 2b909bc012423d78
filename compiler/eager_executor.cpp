// Eager mode (see eager_executor.h): building one VM instruction list for a graph, the
// kernel-call instructions' work, reading the outputs back, and reporting errors as the
// interpreter does.
#include "compiler/eager_executor.h"

#include <cstring>
#include <deque>
#include <exception>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/reference_kernels.h"
#include "kiln/error.h"
#include "runtime/strides.h"
#include "runtime/vm/errors.h"

namespace kiln::compiler {

namespace {

using Bindings = std::map<std::string, int64_t>;

// One block of memory the run touches, as a VM buffer.
struct Block {
  vm::BufferPtr buffer;
  // Stands in for the buffer's memory while the list is built: the same size, no data. Layouts
  // are tensors over it, so view kernels run on them unchanged and aliasing is storage identity.
  std::shared_ptr<Storage> shadow;
  // An input's or a parameter's storage; null for memory the VM allocates.
  std::shared_ptr<Storage> external;
  size_t live_values = 0;  // values of live nodes that lie in this block
  // Set for an output block the VM allocated: where a host callback copies it.
  std::shared_ptr<std::shared_ptr<Storage>> host_copy;
};

// The value(s) of a node while the list is built: blocks and layouts (null block and
// undefined layout for a None).
struct NodeValues {
  std::vector<Block*> blocks;
  std::vector<Tensor> layouts;
};

// Where a kernel finds one tensor: an operand of its call viewed with a layout.
struct Slot {
  bool defined = false;
  bool is_output = false;  // an output operand, else an input operand
  uint32_t index = 0;
  Sizes sizes;
  Sizes strides;
  int64_t offset = 0;
  DType dtype = DType::f32;

  static Slot of(bool is_output, size_t index, const Tensor& layout) {
    return Slot{true, is_output, uint32_t(index), layout.sizes(), layout.strides(), layout.storage_offset(),
                layout.dtype()};
  }
  Tensor view(const vm::CallContext& call) const {
    if (!defined) return Tensor();
    return Tensor(is_output ? call.output_storage(index) : call.input_storage(index), sizes, strides, offset, dtype);
  }
};

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype();
}

// Copies a kernel's fresh result into the instruction's output buffer (same dtype and sizes,
// which run_reference_kernel checked against the node's meta).
void copy_result(const Tensor& result, const Tensor& target) {
  if (result.nbytes() == 0) return;
  if (result.is_contiguous()) {
    std::memcpy(target.data_ptr(), result.data_ptr(), result.nbytes());
  } else {
    target.copy_from(result);
  }
}

// The work of one kernel-call instruction: the node's reference kernel on tensors that view the
// call's buffers; fresh results are copied into the output buffers, and the result of an op
// that mutates is checked to be the tensor it mutated.
class KernelStep {
 public:
  KernelStep(ir::OpCall call, std::shared_ptr<const Bindings> bindings)
      : call_(std::move(call)), bindings_(std::move(bindings)) {}

  // The slots of the values of `node`, one of the call's inputs.
  void add_input(const ir::Node* node, std::vector<Slot> slots) { inputs_.emplace_back(node, std::move(slots)); }
  // Where result `i` goes: a fresh output buffer, or the input it aliases.
  void add_result(Slot slot) { results_.push_back(std::move(slot)); }

  void operator()(vm::CallContext& context) const {
    std::vector<std::vector<Tensor>> values(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i)
      for (const Slot& slot : inputs_[i].second) values[i].push_back(slot.view(context));
    auto value_of = [&](const ir::Node* node) -> const std::vector<Tensor>& {
      for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputs_[i].first == node) return values[i];
      KILN_CHECK(false, call_.prefix(), "reads ", ir::describe(*node), ", which is not among its inputs");
    };
    std::vector<Tensor> results =
        ir::run_reference_kernel(call_, ir::tensor_arguments(call_, value_of), *bindings_, /*check_meta=*/true);
    KILN_CHECK(results.size() == results_.size(), call_.prefix(), "the kernel produced ", results.size(),
               " values; ", results_.size(), " were planned");
    for (size_t i = 0; i < results.size(); ++i) {
      const Slot& slot = results_[i];
      Tensor target = slot.view(context);
      if (slot.is_output) {
        copy_result(results[i], target);
      } else {
        KILN_CHECK(same_view(results[i], target), call_.prefix(),
                   "the kernel of an op that mutates its input returned another tensor than that input");
      }
    }
  }

 private:
  ir::OpCall call_;
  std::shared_ptr<const Bindings> bindings_;
  std::vector<std::pair<const ir::Node*, std::vector<Slot>>> inputs_;
  std::vector<Slot> results_;
};

// Whether `call` (a view or getitem) can be computed while the list is built, on layouts only:
// every view op can, except a reshape whose input's strides forbid a view (Tensor::reshape then
// copies; this is the test it makes).
bool resolves_on_host(const ir::OpCall& call, const std::vector<std::vector<Tensor>>& layouts,
                      const Bindings& bindings) {
  const ir::OpInfo& op = call.op();
  if (op.name() == "getitem") return true;
  if (!op.is_view) return false;
  if (op.name() != "reshape") return true;
  try {
    const Tensor& self = layouts.at(0).at(0);
    (void)self.view(ir::KernelCall(call, layouts, bindings).sym_ints(1));
    return true;
  } catch (const Error&) {
    return false;  // a copy (or an error the kernel will report when it runs)
  }
}

// Builds the instruction list of one run and turns what it read back into the outputs.
class RunBuilder {
 public:
  RunBuilder(vm::VirtualMachine& vm, const std::vector<vm::Stream*>& streams, const ir::Graph& graph,
             const std::map<std::string, Tensor>& inputs, std::shared_ptr<const Bindings> bindings)
      : vm_(vm), streams_(streams), graph_(graph), inputs_(inputs), bindings_(std::move(bindings)) {}

  // Appends the whole graph to `builder`. Throws at the first node it cannot build; what was
  // appended before stays a valid list.
  void build(vm::InstructionsBuilder& builder) {
    std::vector<ir::Node*> nodes = graph_.node_list();
    std::unordered_map<const ir::Node*, size_t> last_use;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const ir::Node* input : nodes[i]->input_nodes()) last_use[input] = i;

    for (size_t i = 0; i < nodes.size(); ++i) {
      const ir::Node& node = *nodes[i];
      switch (node.op()) {
        case ir::OpKind::placeholder: set_values(node, external_values(inputs_.at(node.target()))); break;
        case ir::OpKind::get_attr:
          set_values(node, external_values(ir::parameter_value(graph_, node, *bindings_)));
          break;
        case ir::OpKind::call_function: set_values(node, call(node, builder)); break;
        case ir::OpKind::output: read_outputs(node, builder); break;
      }
      for (const ir::Node* input : node.input_nodes())
        if (last_use[input] == i) drop_values(input, builder);
      if (node.op() != ir::OpKind::output && !last_use.count(&node)) drop_values(&node, builder);  // unread
    }
    if (!returned_) fail("the graph has no output node");
  }

  // After the list ran: the output node's values.
  std::vector<Tensor> outputs() const {
    std::vector<Tensor> tensors;
    for (const auto& [block, layout] : outputs_) {
      if (block == nullptr) {
        tensors.emplace_back();
        continue;
      }
      const std::shared_ptr<Storage>& storage = block->external ? block->external : *block->host_copy;
      KILN_CHECK(storage != nullptr, "the output read of ", block->buffer->describe(), " did not run");
      tensors.emplace_back(storage, layout.sizes(), layout.strides(), layout.storage_offset(), layout.dtype());
    }
    return tensors;
  }

  const EagerRunStats& stats() const { return stats_; }

 private:
  Block& new_block(size_t nbytes) {
    Block& block = blocks_.emplace_back();
    block.shadow = std::make_shared<Storage>(nullptr, nbytes, Device::cpu(), nullptr);
    by_shadow_[block.shadow.get()] = &block;
    return block;
  }

  // An input or a parameter: a buffer over its storage, one per storage.
  NodeValues external_values(const Tensor& tensor) {
    Block*& found = by_external_[tensor.storage().get()];
    if (found == nullptr) {
      found = &new_block(tensor.storage()->nbytes());
      found->external = tensor.storage();
      found->buffer = vm_.wrap_storage(tensor.storage(), *streams_.front());
    }
    Tensor layout(found->shadow, tensor.sizes(), tensor.strides(), tensor.storage_offset(), tensor.dtype());
    return NodeValues{{found}, {layout}};
  }

  void set_values(const ir::Node& node, NodeValues values) {
    for (Block* block : values.blocks)
      if (block != nullptr) ++block->live_values;
    values_[&node] = std::move(values);
  }

  // A node's values die after its last reader: a VM-allocated block no live value lies in is
  // released (the release waits for every earlier access of it).
  void drop_values(const ir::Node* node, vm::InstructionsBuilder& builder) {
    auto found = values_.find(node);
    if (found == values_.end()) return;
    for (Block* block : found->second.blocks) {
      if (block == nullptr || --block->live_values > 0 || block->external) continue;
      builder.release(block->buffer);
      ++stats_.releases;
    }
    values_.erase(found);
  }

  const NodeValues& values_of(const ir::Node* node) const {
    auto found = values_.find(node);
    KILN_CHECK(found != values_.end(), "the value of ", ir::describe(*node), " is not available (freed or never computed)");
    return found->second;
  }

  NodeValues call(const ir::Node& node, vm::InstructionsBuilder& builder) {
    ir::OpCall call = ir::OpCall::of(node);
    if (call.op().is_view || call.op().name() == "getitem") {
      std::vector<std::vector<Tensor>> layouts = ir::tensor_arguments(
          call, [this](const ir::Node* input) -> const std::vector<Tensor>& { return values_of(input).layouts; });
      if (resolves_on_host(call, layouts, *bindings_)) return host_view(call, layouts);
    }
    return kernel_call(node, std::move(call), builder);
  }

  // A view computed on layouts: its values lie in the blocks of its input.
  NodeValues host_view(const ir::OpCall& call, const std::vector<std::vector<Tensor>>& layouts) {
    NodeValues values;
    for (Tensor& layout : ir::run_reference_kernel(call, layouts, *bindings_)) {
      Block* block = nullptr;
      if (layout.defined()) {
        auto found = by_shadow_.find(layout.storage().get());
        KILN_CHECK(found != by_shadow_.end(), call.prefix(), "its view kernel made new memory");
        block = found->second;
      }
      values.blocks.push_back(block);
      values.layouts.push_back(std::move(layout));
    }
    ++stats_.host_views;
    return values;
  }

  // One kernel call: reads every block its inputs lie in, writes the blocks of the tensors it
  // mutates and one fresh block per value it creates.
  NodeValues kernel_call(const ir::Node& node, ir::OpCall call, vm::InstructionsBuilder& builder) {
    vm::Stream& stream = *streams_[stats_.kernel_calls % streams_.size()];
    std::vector<vm::BufferPtr> reads;
    std::vector<vm::BufferPtr> writes;
    std::unordered_map<const Block*, size_t> read_index;
    auto input_operand = [&](const Block* block) {
      auto [slot, added] = read_index.try_emplace(block, reads.size());
      if (added) reads.push_back(block->buffer);
      return slot->second;
    };

    auto step = std::make_shared<KernelStep>(call, bindings_);
    for (const ir::Node* input : node.input_nodes()) {
      const NodeValues& values = values_of(input);
      std::vector<Slot> slots;
      for (size_t i = 0; i < values.blocks.size(); ++i)
        slots.push_back(values.blocks[i] ? Slot::of(false, input_operand(values.blocks[i]), values.layouts[i]) : Slot{});
      step->add_input(input, std::move(slots));
    }

    // What it mutates (Tensor(a!)): written in place; an op that mutates returns that tensor.
    std::optional<NodeValues> mutated;
    const std::vector<ir::Param>& params = call.op().schema.params;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!params[i].mutated || !call.arg(i).is_node()) continue;
      const NodeValues& target = values_of(call.arg(i).node());
      for (const Block* block : target.blocks) {
        if (block == nullptr) continue;
        input_operand(block);
        writes.push_back(block->buffer);
      }
      if (!mutated) mutated = target;
    }

    NodeValues values;
    if (mutated) {
      KILN_CHECK(node.has_single_value() && mutated->blocks.size() == 1 && mutated->blocks[0] != nullptr,
                 call.prefix(), "an op that mutates its input must return that one tensor");
      Block* block = mutated->blocks[0];
      step->add_result(Slot::of(false, read_index.at(block), mutated->layouts[0]));
      values.blocks.push_back(block);
      values.layouts.push_back(mutated->layouts[0]);
    } else {
      for (const ir::TensorMeta& meta : node.meta.values) {
        Sizes shape;
        try {
          shape = meta.evaluate_shape(*bindings_);
        } catch (const Error& error) {
          throw InternalError(call.prefix() + "cannot evaluate the meta " + meta.type_string() + ": " + error.what());
        }
        std::optional<size_t> nbytes = checked_nbytes(shape, meta.dtype);
        if (!nbytes)
          fail(call.prefix(), "out of memory: its ", dtype_name(meta.dtype), " result of shape ", sizes_to_string(shape),
               " would take more than 2^63 elements or 2^64 bytes");
        Block& block = new_block(*nbytes);
        block.buffer = vm_.new_buffer(block.shadow->nbytes(), stream);
        Tensor layout(block.shadow, shape, contiguous_strides(shape), 0, meta.dtype);
        step->add_result(Slot::of(true, writes.size(), layout));
        writes.push_back(block.buffer);
        values.blocks.push_back(&block);
        values.layouts.push_back(std::move(layout));
      }
    }

    builder.kernel(stream, "%" + node.name() + " (" + node.target() + ")", reads, writes,
                   [step](vm::CallContext& context) { (*step)(context); });
    ++stats_.kernel_calls;
    return values;
  }

  // The output node: its values, and a host read of every VM-allocated block they lie in.
  void read_outputs(const ir::Node& node, vm::InstructionsBuilder& builder) {
    for (const ir::Argument& value : node.args()) collect(value);
    for (const auto& [block, layout] : outputs_) {
      if (block == nullptr || block->external || block->host_copy) continue;
      block->host_copy = std::make_shared<std::shared_ptr<Storage>>();
      builder.host_callback(block->buffer, vm::AccessKind::read, [copy = block->host_copy](Storage& storage) {
        *copy = Storage::allocate_cpu(storage.nbytes());
        if (storage.nbytes() > 0) std::memcpy((*copy)->data(), storage.data(), storage.nbytes());
      });
      ++stats_.output_reads;
    }
    returned_ = true;
  }

  void collect(const ir::Argument& value) {
    if (value.is_node()) {
      const NodeValues& values = values_of(value.node());
      for (size_t i = 0; i < values.blocks.size(); ++i) outputs_.emplace_back(values.blocks[i], values.layouts[i]);
    } else if (value.is_list()) {
      for (const ir::Argument& item : value.list()) collect(item);
    } else {
      KILN_CHECK(value.is_none(), "output value ", value.to_string(), " is not a node");
      outputs_.emplace_back(nullptr, Tensor());
    }
  }

  vm::VirtualMachine& vm_;
  const std::vector<vm::Stream*>& streams_;
  const ir::Graph& graph_;
  const std::map<std::string, Tensor>& inputs_;
  std::shared_ptr<const Bindings> bindings_;

  std::deque<Block> blocks_;  // stable addresses
  std::unordered_map<const Storage*, Block*> by_external_;
  std::unordered_map<const Storage*, Block*> by_shadow_;
  std::unordered_map<const ir::Node*, NodeValues> values_;
  std::vector<std::pair<Block*, Tensor>> outputs_;
  bool returned_ = false;
  EagerRunStats stats_;
};

// What the VM rethrows names the failed instruction; the caller gets the kernel's own error
// (prefixed with its node, as the interpreter reports it) and keeps its kind.
[[noreturn]] void rethrow_cause(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const vm::InstructionFailed& failed) {
    if (failed.cause() != nullptr) std::rethrow_exception(failed.cause());
    throw;
  }
}

}  // namespace

namespace {

std::vector<vm::Stream*> find_streams(const vm::VirtualMachine& vm, const std::vector<std::string>& names) {
  std::vector<vm::Stream*> streams;
  for (const std::string& name : names) streams.push_back(&vm.stream(name));
  if (streams.empty()) streams.push_back(&vm.stream(0));
  return streams;
}

}  // namespace

EagerExecutor::EagerExecutor(const EagerOptions& options)
    : owned_vm_(std::make_unique<vm::VirtualMachine>(options.vm)),
      vm_(owned_vm_.get()),
      streams_(find_streams(*vm_, options.streams)) {}

EagerExecutor::EagerExecutor(vm::VirtualMachine& vm, const std::vector<std::string>& streams)
    : vm_(&vm), streams_(find_streams(vm, streams)) {}

EagerExecutor::~EagerExecutor() = default;

std::vector<Tensor> EagerExecutor::run(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  auto bindings = std::make_shared<const Bindings>(ir::bind_symbols(graph, inputs));
  RunBuilder run(*vm_, streams_, graph, inputs, bindings);
  std::exception_ptr build_error;
  vm_->physical_run([&](vm::InstructionsBuilder& builder) {
    try {
      run.build(builder);
    } catch (...) {
      build_error = std::current_exception();  // what was built before still runs
    }
  });
  last_run_ = run.stats();
  try {
    vm_->sync();  // every kernel done, every in-place write visible, the first error rethrown
  } catch (...) {
    rethrow_cause(std::current_exception());
  }
  if (build_error != nullptr) std::rethrow_exception(build_error);
  return run.outputs();
}

std::vector<Tensor> run_eager(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                              const EagerOptions& options) {
  return EagerExecutor(options).run(graph, inputs);
}

}  // namespace kiln::compiler
