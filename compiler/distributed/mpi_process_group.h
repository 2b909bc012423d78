// The MPI backend of kiln::distributed::ProcessGroup (Open MPI, from Debian's libopenmpi-dev):
// CPU tensors, processes started by mpirun (or `kiln launch`, which runs mpirun).
//
// How it never hangs. Every collective is MPI's non-blocking form (MPI_Ibcast, MPI_Iallreduce,
// ...) on a communicator of its own, polled until it completes. While polling it also polls a
// receive posted at start on a second communicator, on which a failing rank sends every other
// rank one line saying why (ProcessGroup::abort, or the group's destructor while an exception
// unwinds); and it gives up after ProcessGroupOptions::timeout_seconds. Either way it throws
// kiln::Error naming the collective, this rank, and the failed rank's reason or the timeout.
// Polling spins briefly, then sleeps between tests (at most 1 ms), so a rank that waits long
// for a slower one (compiling, say) does not take a core from it.
//
// After such an error the group is broken: every later call throws, and its destructor neither
// frees the communicators nor calls MPI_Finalize (a collective is still pending, and MPI_Finalize
// would wait for ranks that will never come); the process is expected to end with a non-zero
// status, which mpirun reports and answers by ending the job. Such a process waits half a second
// at exit, so that the other ranks have printed their own errors before mpirun ends them. A group destroyed normally
// finalizes MPI when it initialized it, so MPI cannot be started again in that process.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kiln/distributed.h"

namespace kiln::compiler {

// The process group over MPI_COMM_WORLD: the one alive in this process, else a new one (MPI
// initialized here unless the program did it). Throws kiln::Error when no MPI launcher started
// the program, when MPI was already finalized in this process, or when this build has no MPI.
std::shared_ptr<distributed::ProcessGroup> mpi_process_group(const distributed::ProcessGroupOptions& options);

// The line another rank sent when it failed (its ProcessGroup::abort), once it has reached this
// rank, polled without waiting; std::nullopt until then. `group` must be mpi_process_group's; it is
// broken once a notice has arrived. The nccl backend polls it while it waits on the GPU, so that a
// failed rank ends the others' NCCL collectives too.
std::optional<std::string> mpi_failure_notice(distributed::ProcessGroup& group);

}  // namespace kiln::compiler
