// Eager mode: runs a Graph node by node with the reference kernels (ir/reference_kernels.h),
// each computing node as one kernel-call instruction on a CPU stream of the instruction VM
// (runtime/vm/virtual_machine.h), so that the VM orders the kernels by the memory they read
// and write. It gives the same results and the same errors as ir::Interpreter::run. Kernels
// go to one stream, or are dealt in turn to several, whose workers then run independent
// kernels at once (the VM's dependences alone keep the results right: tests rely on this).
//
// How a run maps onto the VM:
//  - inputs and parameters: their storages are wrapped in VM buffers (one buffer per storage,
//    so tensors that share memory share a buffer), and in-place ops write the caller's tensors
//    as the interpreter does;
//  - a call_function node: one kernel call that reads the buffers of every tensor it takes,
//    writes the buffers of the tensors it mutates (Tensor(a!): in-place and mutation ops) and
//    writes one fresh buffer per value it creates. Fresh buffers are sized from the node's
//    meta under the symbol bindings and allocated by the VM in prepare, from the stream's
//    caching allocator; the reference kernel allocates its result as always, and the
//    instruction copies it into the buffer;
//  - views (reshape that can be a view, permute, slice, ...) and getitem make no instruction:
//    their layout depends on nothing but the input's layout, so the view kernel runs on the
//    host while the list is built, over a storage-less stand-in of the buffer, and the view
//    shares its input's buffer (OneFlow's eager views do the same); a reshape that must copy
//    is an ordinary kernel call;
//  - each fresh buffer is released after the last node that reads it (as the interpreter
//    frees values), by a release instruction that runs once every earlier access is done;
//  - outputs: host callbacks at the end of the list read each output buffer, each waiting
//    only for that buffer's accesses, and copy it into memory the caller owns; an output that
//    lives in an input's or a parameter's storage is returned over that storage. Then run()
//    waits for the rest of the list, so every in-place write is done when it returns.
// The whole graph is submitted as one list (one physical_run).
//
// Errors are the interpreter's, for the node it would stop at: first bind_symbols' input
// checks; then the first failing node, whether a kernel fails while running (a kiln::Error
// prefixed with its node, "node %ratio (remainder): ZeroDivisionError: ...", rethrown once
// everything submitted has finished) or the list cannot be built past it (a bad view, a
// missing parameter: the nodes before it still run, and their error comes first). On one
// stream kernels run in node order, so the first failing node is the one reported. Unlike
// the interpreter, which stops there, later nodes that do not depend on the failed one still
// run (the VM skips only its dependents).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"
#include "runtime/vm/virtual_machine.h"

namespace kiln::compiler {

struct EagerOptions {
  // The VM an executor makes for itself (the other constructor borrows one).
  vm::VmOptions vm;
  // The streams kernel calls are dealt to, in turn in node order; empty: the VM's first.
  std::vector<std::string> streams;
};

// What the last run submitted, for tests and benchmarks.
struct EagerRunStats {
  size_t kernel_calls = 0;  // one per computing node
  size_t host_views = 0;    // view and getitem nodes resolved while building the list
  size_t releases = 0;      // buffers released after their last reader
  size_t output_reads = 0;  // host callbacks reading outputs back
};

class EagerExecutor {
 public:
  // Owns a VM made from options.vm.
  explicit EagerExecutor(const EagerOptions& options = {});
  // Runs on `vm`, which must outlive the executor, dealing kernel calls to `streams` (by
  // name; empty: the VM's first stream).
  explicit EagerExecutor(vm::VirtualMachine& vm, const std::vector<std::string>& streams = {});
  ~EagerExecutor();
  EagerExecutor(const EagerExecutor&) = delete;
  EagerExecutor& operator=(const EagerExecutor&) = delete;

  // Runs the graph; inputs by placeholder name; returns the outputs in the output node's
  // order, as Interpreter::run does. One run at a time per VM: a run ends with a sync of the
  // whole VM, which rethrows the VM's first error, whoever caused it.
  std::vector<Tensor> run(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs);

  vm::VirtualMachine& vm() const { return *vm_; }
  const std::vector<vm::Stream*>& streams() const { return streams_; }
  // The counts of the last run's instruction list.
  const EagerRunStats& last_run() const { return last_run_; }

 private:
  std::unique_ptr<vm::VirtualMachine> owned_vm_;
  vm::VirtualMachine* vm_;
  std::vector<vm::Stream*> streams_;
  EagerRunStats last_run_;
};

// Runs `graph` once on a fresh VM made from `options`.
std::vector<Tensor> run_eager(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                              const EagerOptions& options = {});

}  // namespace kiln::compiler
