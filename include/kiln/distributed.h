// Data-parallel training across processes: a process group (the ranks of one job) and its
// collectives on tensors, after torch.distributed. Two backends: "mpi" (Open MPI) moves CPU
// tensors, "nccl" (NCCL, loaded at run time) moves CUDA tensors; each refuses the other's.
//
//   // started as: mpirun -np 2 ./train   (or: kiln launch -n 2 ./train)
//   std::shared_ptr<kiln::distributed::ProcessGroup> group = kiln::distributed::init_process_group();
//   group->all_reduce(gradient, kiln::distributed::ReduceOp::average);
//   kiln::TrainingOptions options;
//   options.data_parallel = group;   // kiln::compile_training: parameters broadcast from rank 0,
//                                    // gradients averaged across ranks at every apply()
//
// Every rank must call the same collectives in the same order with tensors of the same dtype and
// sizes. A collective never waits for ever: one that has not completed within
// ProcessGroupOptions::timeout_seconds throws kiln::Error (a rank died, hangs, or skipped the
// call), and a rank that stops with an exception (or calls abort()) makes the collectives the
// other ranks are waiting in, or call next, throw kiln::Error naming it. After such an error the
// group is unusable, and the process should end with an error (the others do too).
#pragma once

#include <memory>
#include <string>

#include "kiln/tensor.h"

namespace kiln::distributed {

enum class ReduceOp { sum, average };

struct ProcessGroupOptions {
  // "mpi": CPU tensors, processes started by mpirun or `kiln launch`.
  // "nccl": CUDA tensors (a Tensor whose Storage is device memory on Device::cuda(i), contiguous),
  //   one GPU per rank, processes started the same way: the ranks agree on NCCL's unique id over
  //   MPI, then talk through one NCCL communicator. NCCL (libnccl.so.2, 2.10 or later) is loaded at
  //   run time, found as $KILN_NCCL_LIBRARY names it, else on the library path, else in the CUDA
  //   toolkit's lib64. Each collective runs on the group's own CUDA stream and returns once it has
  //   completed on the device, so the caller's writes to the tensor must have completed before the
  //   call (synchronize the stream that made them). f16 and bf16 are summed by NCCL in their own
  //   dtype (not in f32 as the mpi backend does); i16, u16 and bool are refused.
  std::string backend = "mpi";
  // nccl: the CUDA device of this rank; -1 picks the launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK,
  // MPI_LOCALRANKID) modulo the number of devices.
  int device = -1;
  // Seconds a collective may wait for the other ranks before it throws kiln::Error.
  double timeout_seconds = 300;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  virtual std::string backend() const = 0;
  virtual int rank() const = 0;        // 0 .. world_size() - 1
  virtual int world_size() const = 0;  // the number of processes of the job

  // Returns once every rank has called it.
  void barrier();
  // Every rank's `tensor` receives root's values (in place; same dtype and sizes on every rank).
  void broadcast(const Tensor& tensor, int root = 0);
  // Every rank's `tensor` becomes the element-wise sum (or mean: floating dtypes) over the ranks,
  // in place. f16 and bf16 are summed in f32, as PyTorch's CPU collectives do.
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::sum);
  // Every rank's `tensor`, stacked in rank order along a new leading dim: [world_size, ...sizes].
  Tensor all_gather(const Tensor& tensor);
  // Whether the collectives may be called from another thread than the one that made the group
  // (one call at a time): what lets CompiledTraining::step() average gradient buckets on a
  // communication thread while the backward runs (else it averages them after the backward).
  // MPI: whether MPI was started with MPI_THREAD_SERIALIZED or more.
  virtual bool collectives_on_any_thread() const { return true; }
  // Tells the other ranks that this one failed: collectives they wait in, or call later, throw
  // kiln::Error naming this rank and `reason`. The group is unusable afterwards. A group destroyed
  // while an exception unwinds the stack does this itself.
  virtual void abort(const std::string& reason) = 0;

 protected:
  ProcessGroup() = default;
  // The backend's collectives, called once the arguments are checked (defined tensors, root in
  // range, average on a floating dtype).
  virtual void run_barrier() = 0;
  virtual void run_broadcast(const Tensor& tensor, int root) = 0;
  virtual void run_all_reduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual void run_all_gather(const Tensor& tensor, const Tensor& gathered) = 0;
  // Throws kiln::Error naming `collective` when the backend cannot move `tensor` (a CUDA tensor on
  // the mpi backend, a CPU tensor on the nccl one); called before any communication.
  virtual void check_tensor(const Tensor& tensor, const char* collective) const;
  // all_gather's result, uninitialized (Tensor::empty on the CPU; device memory on the nccl backend).
  virtual Tensor empty_tensor(const Sizes& sizes, DType dtype, Device device) const;
};

// The process group of this job for options.backend (the same object while one is alive). Throws
// kiln::Error when the program was not started by a launcher (mpirun, `kiln launch`), when the
// backend is unknown or missing from this build, when the options are invalid, and for "nccl"
// when NCCL is not found ("NCCL was not found: ... set $KILN_NCCL_LIBRARY") or there is no GPU.
std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options = {});

}  // namespace kiln::distributed
