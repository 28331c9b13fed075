//===- MpiPlugin.cpp - libuopc-mpi.so: the MPI calls uopc-run's ranks make (Runtime/Mpi.h) ===//
// A C interface (no exception crosses it): uopc-run dlopens this only under an MPI launcher. Messages over
// 1 GiB go in parts (MPI counts are int). MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL: any error ends the job.
#define OMPI_SKIP_MPICXX 1 // (the C interface only: MPI::MPI_C links no C++ bindings)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <cstdlib>

namespace {
constexpr uint64_t kPart = uint64_t(1) << 30;
}

extern "C" {

__attribute__((visibility("default"))) int uopc_mpi_version() { return 1; }

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

__attribute__((visibility("default"))) void uopc_mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // (MPI_Abort does not return; in case it does)
}

__attribute__((visibility("default"))) void uopc_mpi_finalize() { MPI_Finalize(); }

} // extern "C"
