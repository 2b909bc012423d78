// The NCCL backend of kiln::distributed::ProcessGroup: CUDA tensors, one GPU per rank, processes
// started by mpirun (or `kiln launch`). NCCL is dlopen'ed (runtime/cuda/nccl.h); nothing of it
// is linked.
//
// Set-up (init_process_group with backend "nccl", a collective): NCCL is loaded (else "NCCL was
// not found: ..."), the CUDA driver must see a device (else "the nccl backend needs a CUDA GPU:
// ..."), then the MPI group of the job is made or taken (its launcher check: rank and world size
// come from mpirun). This rank's device is ProcessGroupOptions::device, else the launcher's local
// rank modulo the device count. Rank 0 makes NCCL's unique id and broadcasts its 128 bytes over the
// MPI group; every rank then makes its communicator (ncclCommInitRank, on a thread of its own,
// waited for against the timeout and against other ranks' failure notices).
//
// Collectives: enqueued on the group's CUDA stream (a CudaStream of the device's primary context),
// then waited for by polling an event recorded after them, ncclCommGetAsyncError, and the MPI
// group's failure notices, until the timeout. A NCCL error, another rank's notice or the timeout
// aborts the communicator (ncclCommAbort, which ends the collective's kernels, so no rank hangs
// in one) and throws kiln::Error naming the collective and the cause; the group is unusable after.
// barrier() is an all-reduce of one float; average is ncclAvg. abort() aborts the communicator and
// sends the MPI group's failure notice to the other ranks; so does the destructor while an
// exception unwinds the stack.
#pragma once

#include <memory>

#include "kiln/distributed.h"

namespace kiln::compiler {

// The nccl process group of this job: the one alive in this process, else a new one. Throws
// kiln::Error as described above.
std::shared_ptr<distributed::ProcessGroup> nccl_process_group(const distributed::ProcessGroupOptions& options);

// Throws the kiln::Error a nccl group gives `collective` for `tensor` when it cannot move it: not
// a CUDA tensor, a CUDA tensor on another device than `device`, not contiguous, or of a dtype NCCL
// does not reduce or move (i16, u16, bool). Needs neither NCCL nor a GPU.
void check_nccl_tensor(const Tensor& tensor, const char* collective, int device);

}  // namespace kiln::compiler
