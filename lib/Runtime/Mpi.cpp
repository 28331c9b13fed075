//===- Mpi.cpp - loads libuopc-mpi.so under an MPI launcher (Runtime/Mpi.h) ===//
#include "Runtime/Mpi.h"

#include "IR/Error.h"
#include "IR/Files.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace uopc {

namespace {

int envInt(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

class PluginComm final : public Comm {
public:
  explicit PluginComm(void *h) {
    auto get = [&](const char *name) {
      void *p = dlsym(h, name);
      if (!p) fail(std::string("the MPI plugin lacks ") + name + " (built by another uopc version?)");
      return p;
    };
    init_ = reinterpret_cast<void (*)(int *, char ***, int *, int *, int *)>(get("uopc_mpi_init"));
    send_ = reinterpret_cast<void (*)(const void *, uint64_t, int)>(get("uopc_mpi_send"));
    recv_ = reinterpret_cast<void (*)(void *, uint64_t, int)>(get("uopc_mpi_recv"));
    bcast_ = reinterpret_cast<void (*)(void *, uint64_t, int)>(get("uopc_mpi_bcast"));
    abort_ = reinterpret_cast<void (*)(int)>(get("uopc_mpi_abort"));
    group_ = reinterpret_cast<int (*)(const int *, int)>(get("uopc_mpi_group"));
    allreduce_ = reinterpret_cast<void (*)(void *, uint64_t, int, int, int)>(get("uopc_mpi_allreduce"));
    finalize_ = reinterpret_cast<void (*)()>(get("uopc_mpi_finalize"));
  }
  ~PluginComm() override { finish(); }
  void start(int *argc, char ***argv) { init_(argc, argv, &rank_, &size_, &local_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localSize() const override { return local_; }
  void send(const void *d, uint64_t n, int to) override { send_(d, n, to); }
  void recv(void *d, uint64_t n, int from) override { recv_(d, n, from); }
  void bcast(void *d, uint64_t n, int root) override { bcast_(d, n, root); }
  int group(const std::vector<int> &ranks) override {
    if (static_cast<int>(ranks.size()) == size_) return 0;
    return group_(ranks.data(), static_cast<int>(ranks.size()));
  }
  void allreduce(void *d, uint64_t count, MpiType type, MpiReduction op, int group) override {
    allreduce_(d, count, static_cast<int>(type), static_cast<int>(op), group);
  }
  [[noreturn]] void abort(int code) override {
    abort_(code);
    std::_Exit(code);
  }
  void finish() override {
    if (!done_) finalize_();
    done_ = true;
  }

private:
  void (*init_)(int *, char ***, int *, int *, int *);
  void (*send_)(const void *, uint64_t, int);
  void (*recv_)(void *, uint64_t, int);
  void (*bcast_)(void *, uint64_t, int);
  void (*abort_)(int);
  int (*group_)(const int *, int);
  void (*allreduce_)(void *, uint64_t, int, int, int);
  void (*finalize_)();
  int rank_ = 0, size_ = 1, local_ = 1;
  bool done_ = false;
};

} // namespace

int launcherSize() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (int n = envInt(v); n > 0) return n;
  return 0;
}

std::unique_ptr<Comm> startMpi(int *argc, char ***argv) {
  int n = launcherSize();
  if (n <= 1) return nullptr;
  std::string path = pluginPath("UOPC_MPI_PLUGIN", "libuopc-mpi.so");
  if (access(path.c_str(), F_OK) != 0)
    fail("launched as one of " + std::to_string(n) +
         " MPI processes, but this uopc-run was built without MPI (no libuopc-mpi.so beside it: CMake found no MPI; "
         "install libopenmpi-dev and rebuild), so each process would run every device alone; run it without mpirun, "
         "or set UOPC_MPI_PLUGIN");
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL); // (GLOBAL: Open MPI dlopens its own components)
  if (!h) {
    const char *why = dlerror();
    fail("the MPI plugin cannot be loaded from '" + path + "': " + (why ? why : "unknown error"));
  }
  auto comm = std::make_unique<PluginComm>(h);
  comm->start(argc, argv);
  return comm;
}

} // namespace uopc
