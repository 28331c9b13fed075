//===- Mpi.h - one process per device: the ranks of an MPI launch, through libuopc-mpi.so ===//
// `mpirun -np N uopc-run MANIFEST ...` runs manifest device d on rank d % N (Runner.h, docs/distributed.md).
// MPI is loaded only when uopc-run was launched by an MPI launcher with more than one process: the plugin
// libuopc-mpi.so (lib/Runtime/Mpi/MpiPlugin.cpp, built when CMake finds MPI) links libmpi, so a plain run maps
// no MPI library. An allreduce step is one MPI_Allreduce among the ranks holding its devices (group()).
// Every call is blocking; an MPI error aborts the job (MPI_ERRORS_ARE_FATAL), and so does
// abort(): a failing rank never leaves the others waiting.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uopc {

/// The element types and reductions of Comm::allreduce (the plugin's codes: MpiPlugin.cpp maps them to MPI's).
enum class MpiType { Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float32, Float64 };
enum class MpiReduction { Sum, Max, Prod };

class Comm {
public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Processes of this launch on this host (to share its cores between them).
  virtual int localSize() const = 0;
  virtual void send(const void *data, uint64_t bytes, int to) = 0;
  virtual void recv(void *data, uint64_t bytes, int from) = 0;
  virtual void bcast(void *data, uint64_t bytes, int root) = 0;
  /// A communicator of `ranks` (increasing) for allreduce(): collective, so every rank calls it with the same
  /// list at the same point (non-members too); returns its handle, 0 for all ranks (MPI_COMM_WORLD).
  virtual int group(const std::vector<int> &ranks) = 0;
  /// MPI_Allreduce in place of `count` elements among the ranks of `group` (this rank one of them).
  virtual void allreduce(void *data, uint64_t count, MpiType type, MpiReduction op, int group) = 0;
  /// Ends every rank of the job (MPI_Abort); does not return.
  [[noreturn]] virtual void abort(int code) = 0;
  /// MPI_Finalize (the destructor does it too).
  virtual void finish() = 0;
};

/// The launch's size as an MPI launcher's environment says it (OpenMPI, MPICH/PMI, Slurm's srun), 0 when
/// not launched by one.
int launcherSize();

/// When launched by an MPI launcher with more than one process: MPI initialized through the plugin
/// ($UOPC_MPI_PLUGIN, else libuopc-mpi.so beside the executable or in ../lib/uopc/). Null for a plain run.
/// Throws Error when launched with several processes but uopc-run was built without MPI (no plugin).
std::unique_ptr<Comm> startMpi(int *argc, char ***argv);

} // namespace uopc
