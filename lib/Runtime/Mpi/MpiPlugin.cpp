//===- MpiPlugin.cpp - libuopc-mpi.so: the MPI calls uopc-run's ranks make (Runtime/Mpi.h) ===//
// A C interface (no exception crosses it): uopc-run dlopens this only under an MPI launcher. Messages over
// 1 GiB (allreduces over 2^30 elements) go in parts (MPI counts are int). An allreduce step's ranks get a
// communicator of their own (MPI_Comm_split, made by every rank in step order) unless they are all ranks. MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL: any error ends the job.
#define OMPI_SKIP_MPICXX 1 // (the C interface only: MPI::MPI_C links no C++ bindings)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {
constexpr uint64_t kPart = uint64_t(1) << 30;
/// The communicators uopc_mpi_group made (MPI_COMM_NULL on the ranks outside one); handle h is groups[h - 1].
std::vector<MPI_Comm> groups;
/// Runtime/Mpi.h's MpiType and MpiReduction, in their order.
const MPI_Datatype kTypes[] = {MPI_INT8_T,  MPI_UINT8_T,  MPI_INT16_T, MPI_UINT16_T, MPI_INT32_T,
                               MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T, MPI_FLOAT,    MPI_DOUBLE};
const MPI_Op kOps[] = {MPI_SUM, MPI_MAX, MPI_PROD};
} // namespace

extern "C" {

__attribute__((visibility("default"))) int uopc_mpi_version() { return 2; }

__attribute__((visibility("default"))) void uopc_mpi_init(int *argc, char ***argv, int *rank, int *size, int *localSize) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, localSize);
  MPI_Comm_free(&local);
}

__attribute__((visibility("default"))) void uopc_mpi_send(const void *data, uint64_t bytes, int to) {
  const char *p = static_cast<const char *>(data);
  do {
    uint64_t n = bytes < kPart ? bytes : kPart;
    MPI_Send(p, static_cast<int>(n), MPI_BYTE, to, 0, MPI_COMM_WORLD);
    p += n, bytes -= n;
  } while (bytes > 0);
}

__attribute__((visibility("default"))) void uopc_mpi_recv(void *data, uint64_t bytes, int from) {
  char *p = static_cast<char *>(data);
  do {
    uint64_t n = bytes < kPart ? bytes : kPart;
    MPI_Recv(p, static_cast<int>(n), MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    p += n, bytes -= n;
  } while (bytes > 0);
}

__attribute__((visibility("default"))) void uopc_mpi_bcast(void *data, uint64_t bytes, int root) {
  char *p = static_cast<char *>(data);
  do {
    uint64_t n = bytes < kPart ? bytes : kPart;
    MPI_Bcast(p, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD);
    p += n, bytes -= n;
  } while (bytes > 0);
}

/// A communicator of `ranks` (n of them, increasing): MPI_Comm_split of MPI_COMM_WORLD, called by every rank.
__attribute__((visibility("default"))) int uopc_mpi_group(const int *ranks, int n) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  bool member = false;
  for (int i = 0; i < n; ++i) member = member || ranks[i] == me;
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, me, &c);
  groups.push_back(c);
  return static_cast<int>(groups.size());
}

/// MPI_Allreduce in place on `group` (0: MPI_COMM_WORLD), in parts of at most 2^30 elements.
__attribute__((visibility("default"))) void uopc_mpi_allreduce(void *data, uint64_t count, int type, int op, int group) {
  MPI_Comm comm = group == 0 ? MPI_COMM_WORLD : groups.at(static_cast<size_t>(group - 1));
  int size = 0;
  MPI_Type_size(kTypes[type], &size);
  char *p = static_cast<char *>(data);
  while (count > 0) {
    uint64_t n = count < kPart ? count : kPart;
    MPI_Allreduce(MPI_IN_PLACE, p, static_cast<int>(n), kTypes[type], kOps[op], comm);
    p += n * static_cast<uint64_t>(size), count -= n;
  }
}

__attribute__((visibility("default"))) void uopc_mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // (MPI_Abort does not return; in case it does)
}

__attribute__((visibility("default"))) void uopc_mpi_finalize() {
  for (MPI_Comm &c : groups)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  MPI_Finalize();
}

} // extern "C"
