// kiln::distributed::ProcessGroup's checked entry points and init_process_group (kiln/distributed.h):
// the argument checks every backend shares, then the backend's collective.
//
// Distributed training lives in compiler/distributed/ (DESIGN.md puts it under compiler/): its
// MPI backend links Open MPI, which runtime/ may not (the runtime's dependencies are the standard
// library, OpenMP and dlopen'd CUDA). The NCCL backend (nccl_process_group.h) dlopens NCCL
// (runtime/cuda/nccl.h) and agrees on its unique id over the MPI group.
#include <cmath>

#include "compiler/distributed/mpi_process_group.h"
#include "compiler/distributed/nccl_process_group.h"
#include "kiln/distributed.h"
#include "kiln/error.h"

namespace kiln::distributed {

namespace {

void check_collective_tensor(const Tensor& tensor, const char* collective) {
  if (!tensor.defined()) fail(collective, ": the tensor is undefined");
}

}  // namespace

void ProcessGroup::check_tensor(const Tensor&, const char*) const {}

Tensor ProcessGroup::empty_tensor(const Sizes& sizes, DType dtype, Device device) const {
  return Tensor::empty(sizes, dtype, device);
}

void ProcessGroup::barrier() { run_barrier(); }

void ProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_collective_tensor(tensor, "broadcast");
  check_tensor(tensor, "broadcast");
  if (root < 0 || root >= world_size())
    fail("broadcast: root rank ", root, " is out of range (the group has ranks 0 to ", world_size() - 1, ")");
  run_broadcast(tensor, root);
}

void ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) {
  check_collective_tensor(tensor, "all_reduce");
  if (op == ReduceOp::average && !is_floating(tensor.dtype()))
    fail("all_reduce: average needs a floating dtype; the tensor is ", dtype_name(tensor.dtype()),
         " (use sum for integers)");
  if (tensor.dtype() == DType::boolean) fail("all_reduce: a bool tensor has no sum; cast it to an integer dtype");
  check_tensor(tensor, "all_reduce");
  run_all_reduce(tensor, op);
}

Tensor ProcessGroup::all_gather(const Tensor& tensor) {
  check_collective_tensor(tensor, "all_gather");
  check_tensor(tensor, "all_gather");
  Sizes sizes = tensor.sizes();
  sizes.insert(sizes.begin(), world_size());
  Tensor gathered = empty_tensor(sizes, tensor.dtype(), tensor.device());
  run_all_gather(tensor, gathered);
  return gathered;
}

std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options) {
  if (!(options.timeout_seconds > 0) || !std::isfinite(options.timeout_seconds))
    fail("init_process_group: timeout_seconds is ", options.timeout_seconds,
         "; it must be a positive number of seconds");
  if (options.backend == "mpi") return compiler::mpi_process_group(options);
  if (options.backend == "nccl") return compiler::nccl_process_group(options);
  fail("init_process_group: unknown backend '", options.backend, "' (known: mpi, nccl)");
}

}  // namespace kiln::distributed
