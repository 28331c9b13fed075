//===- Tune.h - uopc --tune: a timed search over kernel opts, and the tuning database ===//
// Before the compile the user asked for, tuneKernels compiles the graph once with the optimize pass's own
// choice (the heuristic, level 2) to learn its kernels, their opts as optimize applied them (not as the
// kernels end: blocked-layout adds a pool's channel lanes, which given by hand optimize would apply itself)
// and their structural hashes (the text of each kernel before optimize, names and range numbers left out: the
// same layer of a network is one kernel). Those lists by hand write the default's kernels byte for byte.
// Per distinct kernel it then takes the opts from, in order: --kernel-opts (hand); the tuning database's
// entry of this kernel, target and machine (Driver/TuneDb.h; no timing); with --tune, a search. The driver
// gives the result to the optimize pass as its opts= option, so a compile with the database and no search
// writes the same bytes as the compile whose search filled it.
//
// The search (--tune): hill climbing from the heuristic's list (from no opts where that was refused or wrong), each round over the
// neighbours of the best list so far (tuneNeighbours: an upcast amount changed to another divisor of its loop,
// with a block of that loop and amount, an opt dropped, an upcast, unroll, partial or pack added), kept when
// at least 3% faster, until no neighbour is or the kernel's share of --tune-budget is spent (the budget split
// across kernels by their estimated work, the largest first; the kernels left when it is spent are not searched and stay out of the database, so that a
// later --tune searches them: DenseNet-121's 189 kernels took 146 s of a 60 s budget before).
// Each candidate is the graph compiled from optimize on (from the graph as the first compile had it before
// optimize, every other kernel with its heuristic list by hand) with that kernel's opts by hand, for the target
// asked for; the kernel
// and the packs and re-layouts it adds are rendered and built as uopc-run builds them (LLVM IR: JIT-compiled
// in-process, Targets/LLVMJit.h; C: the C compiler with uopc-run's flags, Runtime/KernelCache.h, in a private
// directory under TMPDIR, loaded with dlopen), run on buffers filled with seeded random values, its split loop
// in uopc-run's chunks on uopc-run's pool (Runtime/ThreadPool.h) with as many threads as this machine has
// cores, best of several runs. (Timing C lists through the JIT misled: SqueezeNet's last layer, 32 lanes by
// 13 pixels, ran 0.62-0.68 ms built by gcc and 1.7-2.3 ms through LLVM, and the search kept 16 lanes, slower
// in uopc-run.) Buffers the blocked-layout pass stores in blocks of channels (KernelInfo.blocked,
// "SLOT:L:P") are given to a candidate in its blocks and read back into planes before the comparison.
// The lists kept are then checked in the whole network (the graph compiled with the heuristic's lists for the
// kernels the search changed and with the search's, every kernel step built, the two timed in turns, step by
// step): a changed kernel keeps its list where its own steps run 3% faster in the network, and the lists left
// are kept where the whole network runs 1% faster (timed again), else the heuristic's are restored (in the
// database too). A kernel timed alone reads its inputs from where its last run left them; in a network one
// kernel's opts also change how its neighbours read the buffers between them.
// A candidate the optimize pass refuses is skipped; one whose outputs differ from the --opt-level 0
// kernel's on the same inputs beyond the dtype's tolerance (float32: 1e-4 of the element plus 1e-4 of the
// buffer's largest; 16-bit floats 1e-2; integers and bools exact) is discarded. Kernels with variables, on GPU targets, or that no opt
// applies to are not searched. Progress goes to `log` (stderr): kernel i/n, the heuristic's time, each
// better list found.
#pragma once

#include "Driver/Compile.h"

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace uopc {

struct TuneRequest {
  std::string input;       ///< the graph file (read again for every compile)
  CompileOptions base;     ///< the user's target, renderer options and pipeline (optimize's options in it)
  bool search = false;     ///< --tune: search the kernels the database lacks (else only apply it)
  double budgetSeconds = 60; ///< --tune-budget: the whole search's wall time
  std::string dbPath;      ///< --tune-db, or defaultTuneDbPath()
  /// For tests only (hidden options), so that the choices after the search can be pinned where timings vary:
  /// --tune-test-found NAME/OPT/...: kernel NAME is not searched, this list is taken as what its search found;
  /// --tune-test-network-factor X (> 0): the check in the network sees the searched lists' times X times theirs.
  std::map<std::string, std::vector<std::string>> testFound;
  double testNetworkFactor = 0;
};

struct TuneResult {
  /// optimize's opts= text: the user's --kernel-opts, then NAME/OPT/... of every kernel whose opts the
  /// database or the search gave.
  std::string kernelOpts;
  /// kernel name -> heuristic, hand, search or database (Module::optsFrom).
  std::map<std::string, std::string> optsFrom;
  bool fromDatabase = false; ///< some opts came from the database (named in errors of the compile after)
};

/// The structural hash of a kernel CALL's body before optimize: SHA-256 of the text form of its
/// canonicalKernelBody (64 hex digits).
std::string kernelHash(Context &c, const UOp *call);

/// What the search's moves need of a kernel: its output loops' sizes, its reduction loops' (0: not constant)
/// and the arguments it reads.
struct TuneKernelShape {
  std::vector<int64_t> axes, reduces;
  std::vector<int64_t> readSlots;
};

/// The neighbours of opt list `l` (the search's moves from it), in the order they are tried: each upcast's
/// amount changed to a power of two or a divisor of its loop within a factor of two of it (a block of the
/// same loop and amount changed with it), an unroll's, partial's or block's amount changed, an opt dropped,
/// an upcast, unroll, partial or pack added. Throws Error on an opt that does not parse.
std::vector<std::vector<std::string>> tuneNeighbours(const std::vector<std::string> &l, const TuneKernelShape &f);

/// See the file comment. Reads the database (a missing file is an empty one with --tune, an error
/// without), and writes it back when the search added entries. Throws Error.
TuneResult tuneKernels(const TuneRequest &r, std::ostream &log);

} // namespace uopc
