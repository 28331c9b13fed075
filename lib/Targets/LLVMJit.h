//===- LLVMJit.h - running LLVM-target kernels in-process through LLVM's ORC JIT ===//
// uopc-run's loader for `--target llvm` outputs: each kernel's `.ll` module is parsed and added to one
// LLJIT for the host; libm and the process's other symbols resolve from the running process. No LLVM
// types here (the implementation is lib/Targets/LLVM/Jit.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uopc {

class KernelJit {
public:
  using Entry = void (*)(void **bufs, const int64_t *vars);

  /// Starts a JIT for this machine, generating code for `cpu` ("native": this machine's CPU and
  /// features; else a CPU name LLVM knows, e.g. from a manifest compiled with --cpu). Throws uopc::Error.
  explicit KernelJit(const std::string &cpu = "native");
  ~KernelJit();
  KernelJit(const KernelJit &) = delete;
  KernelJit &operator=(const KernelJit &) = delete;

  /// Adds one module of textual IR (`what` names it in messages), parsed by the next entries().
  void addModule(const std::string &irText, const std::string &what);

  /// A kernel to call: `void symbol(ptr x nbufs, i64 x nvars)`.
  struct EntrySpec {
    std::string symbol;
    size_t nbufs = 0, nvars = 0;
  };
  /// Per spec, a trampoline `void (void **bufs, const int64_t *vars)` calling its kernel with
  /// bufs[0..nbufs) and vars[0..nvars), compiled now, with every module added so far: the modules parsed
  /// and compiled on as many threads as the machine has cores (a network's kernels are independent).
  /// Throws uopc::Error when a module does not parse or a symbol is missing.
  std::vector<Entry> entries(const std::vector<EntrySpec> &specs);
  /// One entry (entries of one spec).
  Entry entry(const std::string &symbol, size_t nbufs, size_t nvars) { return entries({{symbol, nbufs, nvars}}).front(); }

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace uopc
