// Data-parallel training across processes: a process group (the ranks of one job) and its
// collectives on tensors, after torch.distributed. The backend today is MPI (Open MPI) for CPU
// tensors; a NCCL backend for CUDA tensors is not written yet (the interface leaves room for it).
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
  // "mpi": the only backend so far (CPU tensors, processes started by mpirun or `kiln launch`).
  std::string backend = "mpi";
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
};

// The process group of this job (the same object while one is alive). Throws kiln::Error when the
// program was not started by a launcher (mpirun, `kiln launch`), when the backend is unknown or
// missing from this build, or when the options are invalid.
std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options = {});

}  // namespace kiln::distributed
