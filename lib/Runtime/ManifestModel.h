//===- ManifestModel.h - manifest.json as data: the one model its writer and uopc-run share ===//
// The manifest says how to run a compiled graph (schemas/manifest.schema.json, docs/schedule.md). `uopc`
// fills a Manifest from its schedule and writes it with toJson; `uopc-run` (and its safetensors binding)
// read it back with fromJson, which refuses, with one clear message (uopc::Error), anything that would let
// a run go wrong: unknown references (slots, buffer ids, devices, variables), sizes that disagree with
// their dtype or overflow, intermediates outside their arena, copies larger than their buffers, allreduce
// steps whose shards are not one per device of their dtype and size (or that overlap their results), empty
// variable ranges, duplicate names, paths leaving the output directory, bad launch geometry. A field only
// the writer needs (a device's dir, a buffer's lifetimes, a step's estimates) is optional when reading
// and checked when given, so hand-written manifests stay short. checkSignatures then checks the manifest
// against the kernel files it names.
#pragma once

#include "IR/Types.h"
#include "Targets/Targets.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace uopc::manifest {

inline constexpr int kVersion = 1;

struct Device {
  std::string name;       ///< tinygrad's device name, e.g. CPU:1
  std::string dir;        ///< the folder of its kernels under kernels/ (optional when reading)
  int64_t arenaBytes = 0; ///< bytes of the arena of its intermediates
};

enum class Role { Input, Output, Inout };
std::string_view roleName(Role r);

/// Elements of one device's buffer of a parameter that a run leaves as they were: the union of runs
/// [start + k*stride, start + k*stride + length) for k < count, in increasing order, disjoint.
struct KeptRun {
  int64_t start = 0, length = 0, stride = 0, count = 0;
};
/// Per device of a partly written parameter: the elements that keep their prior contents (`runs`, exact),
/// or `known` false when uopc could not compute them (a symbolic or very large loop, a data-dependent gate).
struct Kept {
  bool known = false;
  int64_t elements = 0; ///< how many elements the runs hold
  std::vector<KeptRun> runs;
};

struct Param {
  int64_t slot = 0;
  DType dtype = DType::Void;
  int64_t numel = 0, bytes = 0; ///< per device
  std::vector<std::string> devices;
  Role role = Role::Input;
  std::optional<std::string> name; ///< the PARAM's name (uopc-run --inputs/--outputs bind by it)
  /// the exporter's shape of the tensor (ParamArg.shape), numel elements: uopc-run --outputs writes it
  std::optional<std::vector<int64_t>> shape;
  /// the exporter's word that it is a weight, the same in every run (ParamArg.weight): --emit library bakes in
  /// only weights where the graph marks any
  bool weight = false;
  std::vector<Kept> kept;          ///< empty, or one per device: a written parameter not surely written in full
  std::vector<size_t> deviceIndex; ///< read: per device of the slot, its index in Manifest::devices
};

struct Buffer {
  int64_t slot = -1; ///< the slot kernel-split gave it (>= 1000)
  DType dtype = DType::Void;
  int64_t numel = 0, bytes = 0; ///< per device (upper bounds when symbolicSize)
  bool symbolicSize = false;
  std::vector<std::string> devices;
  std::vector<int64_t> offsets;                       ///< per device: byte offset in its arena
  std::vector<std::pair<int64_t, int64_t>> lifetimes; ///< per device: first and last step using it
  std::vector<size_t> deviceIndex;                    ///< read: per device, its index in Manifest::devices
};

/// One device of a parameter ({"param": slot}) or an intermediate ({"buffer": id}).
struct Ref {
  bool isParam = false;
  int64_t id = 0;   ///< the parameter's slot, or the intermediate's position in Manifest::buffers
  size_t dev = 0;   ///< index into that buffer's devices
  size_t index = 0; ///< read: its index in Manifest::params or Manifest::buffers
};

/// A work-model figure: a count, or a polynomial in the graph's symbolic sizes ("512*n + 4096").
using Estimate = std::variant<int64_t, std::string>;
struct Estimates {
  Estimate ops, loads, loadBytes, stores, storeBytes;
};

/// The reduction of an allreduce step ("op").
enum class ReduceOp { Add, Max, Mul };
std::string_view reduceOpName(ReduceOp op);
/// The dtypes an allreduce step may have: those the runner reduces and MPI has a type for.
bool isAllreduceDType(DType dt);

struct Step {
  enum class Kind { Kernel, Copy, Allreduce } kind = Kind::Kernel;
  std::string device;     ///< where it runs (a copy: the destination; an allreduce: its first device)
  size_t deviceIndex = 0; ///< read: its index in Manifest::devices
  // kernels
  std::string kernel, file, symbol;
  int64_t deviceNum = 0;
  std::vector<Ref> args;
  std::vector<std::string> vars;
  std::vector<size_t> varIndex; ///< read: per entry of vars, its index in Manifest::vars
  std::optional<std::array<int64_t, 3>> global, local; ///< GPU launch: blocks per grid, threads per block
  /// CPU: the trip count of the kernel's loop that threads split (0: none); the kernel then takes its
  /// iterations [lo, hi) as two int64 arguments after the variables.
  int64_t parallel = 0;
  /// CPU, a kernel whose split loop is the pieces of a split kernel laid end to end: per piece in order,
  /// {iterations, work of one iteration}, so that each thread gets a like share of the work (splitPoint);
  /// empty: every iteration alike. Written as "parallel_work"; the iterations add up to `parallel`.
  std::vector<std::pair<int64_t, int64_t>> parallelWork;
  /// CPU, a split kernel: each thread takes its own share of the chunks first (runChunks), rather than the
  /// next chunk in turns. Written as "split": "shares" (absent: "turns").
  bool splitShares = false;
  std::vector<std::string> opts; ///< the optimize pass's applied_opts for this kernel ("upcast:1:16")
  /// Where they came from (uopc --tune, --tune-db; "" when not said): "heuristic" (optimize's level-2
  /// choice), "hand" (--kernel-opts), "search" (a tuning database entry a timed search wrote), "database" (an
  /// entry written without a search). Written as "opts_from".
  std::string optsFrom;
  std::vector<std::string> blocked; ///< the blocked-layout pass's arguments in blocks of channels ("SLOT:L:P"; "SLOT:L" from
                                    ///< manifests written before P was recorded)
  /// Runs in the first run after the inputs are loaded only (a re-layout or a transform of weights; Schedule's SchedStep::once).
  bool once = false;
  std::optional<Estimates> estimates;
  /// Arguments (indices into args) that live on another device than the step's (a MSTACK operand: the kernel
  /// selects its own device's one, but loads every operand). Written as "remote_args"; a multi-process run
  /// (Runtime/Mpi.h) ships them to the step's rank before it runs. Read: derived (checked when given).
  std::vector<size_t> remoteArgs;
  // copies
  Ref src, dst;
  int64_t bytes = 0;    ///< (an allreduce: of each shard)
  std::string from;     ///< the source's device (written as "from"; a copy crosses devices when from != device)
  size_t fromIndex = 0; ///< read: its index in Manifest::devices
  // allreduces (multi-lower's collective, kept whole: docs/schedule.md): on every device i of `devices`,
  // dsts[i] becomes the reduction by `op` of srcs[0..n) (each `numel` elements of `dtype`). A dsts[i] may be
  // srcs[i] itself (in place), or memory apart from it. One process reduces in `ring` order (IR/Collective.h)
  // or device order (srcs[0] op srcs[1] op ...: what tinygrad's copies and sum kernel compute); several
  // processes call MPI_Allreduce (Runtime/Mpi.h).
  ReduceOp op = ReduceOp::Add;
  DType dtype = DType::Void;
  int64_t numel = 0;
  bool ring = false;                 ///< written as "order": "ring" (else "devices")
  std::vector<std::string> devices;  ///< the participating devices, one per shard, distinct
  std::vector<size_t> devicesIndex;  ///< read: their indices in Manifest::devices
  std::vector<Ref> srcs, dsts;       ///< written as "src" and "dst": per device of `devices`, a buffer there

  bool isCopy() const { return kind == Kind::Copy; }
  bool isKernel() const { return kind == Kind::Kernel; }
  bool isAllreduce() const { return kind == Kind::Allreduce; }
  /// "k0 @ CPU" / "copy -> CPU:1" / "allreduce add @ CPU,CPU:1": for --bench and messages.
  std::string label() const;
};

/// Where part t of a split loop of n iterations in `parts` parts starts (part `parts` starts at n): with
/// `work` (Step::parallelWork), where the work before it is t/parts of the whole, else at t/parts of the
/// iterations. Where every part gets at least 256 iterations, parts start at multiples of 256 (with `work`:
/// of the iterations of their piece, where it has 512 or more):
/// a loop the compiler vectorized (a one-dimensional kernel's only loop is its split loop) then runs each
/// iteration on the same path, vector body or remainder, whatever the thread count. The paths may round
/// differently: a vector exp2f from libmvec and the scalar exp2f of the remainder (an exp2 over 300,007
/// elements differed between 1 and 2 threads on C and on LLVM before). 256 is a multiple of every vector
/// width times the compilers' interleave (16 floats x 4 on AVX-512; 64 bytes x 4).
int64_t splitPoint(int64_t n, int64_t parts, int64_t t, const std::vector<std::pair<int64_t, int64_t>> &work = {});
/// The chunks a split loop of n iterations is run in by `parts` threads (uopc-run, in turns or by shares:
/// ThreadPool.h's runChunks): about perPart chunks per thread, each about as much work (as splitPoint cuts,
/// multiples of 256 iterations on the same condition): 0 = cuts[0] < cuts[1] < ... < cuts.back() = n.
/// uopc-run's chunks a thread (splitChunks' perPart; uopc --tune times kernels the same way). 1 and 4 were within
/// this shared machine's noise of each other on DenseNet-121, SqueezeNet and ShuffleNet (2 threads,
/// alternating); more than one lets a thread that finishes early take work from one that runs slow.
constexpr int64_t kChunksPerThread = 4;
std::vector<int64_t> splitChunks(int64_t n, int64_t parts, int64_t perPart,
                                 const std::vector<std::pair<int64_t, int64_t>> &work = {});

struct Var {
  std::string name;
  int64_t slot = -1;
  int64_t min = 0, max = 0;
  std::vector<std::string> names; ///< every name --var accepts: name first, then its aliases (p<slot>)
};

struct Manifest {
  Target target = Target::C;
  std::optional<std::string> cpu; ///< CPU targets: uopc --cpu (absent: native)
  std::vector<Device> devices;
  std::vector<Param> params;
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<Var> vars;
  std::map<int64_t, size_t> paramIndex; ///< read: param slot -> its index in params

  std::string cpuName() const { return cpu.value_or("native"); }
  /// The parameter of `slot`, or null (a read manifest: through paramIndex).
  const Param *paramOfSlot(int64_t slot) const;
  int64_t bytesOf(const Ref &r) const { return r.isParam ? params[r.index].bytes : buffers[r.index].bytes; }
  DType dtypeOf(const Ref &r) const { return r.isParam ? params[r.index].dtype : buffers[r.index].dtype; }
  /// The index (in `devices`) of the device whose memory holds `r`.
  size_t deviceOf(const Ref &r) const {
    return r.isParam ? params[r.index].deviceIndex[r.dev] : buffers[r.index].deviceIndex[r.dev];
  }
  /// "param 0 on CPU" / "buffer 3 on CPU:1", for messages.
  std::string describe(const Ref &r) const;
  /// The distinct kernel files, in order of first use.
  std::vector<std::string> kernelFiles() const;
};

/// The manifest text: keys in a fixed order, arrays in the model's order, no timestamps (a pure function of
/// `m`). The derived fields (deviceIndex, index, varIndex) are not written.
std::string toJson(const Manifest &m);

/// Parses and checks a manifest's text (see the file comment); `path` names it in messages. The derived
/// fields are filled in. Throws Error.
Manifest fromJson(const std::string &text, const std::string &path);
/// fromJson of the file at `path`, read with a size limit (devices such as /dev/zero refused).
Manifest readFile(const std::string &path);

/// Checks `m` against the `uopc-signature` line each of its kernel files ends with (files relative to
/// `dir`): every step running a file passes as many arguments as it takes, each of its dtype and at least
/// as large, and its variables by name, with ranges inside those it was compiled for. A file without the
/// line (not written by uopc) is run unchecked. Throws Error.
void checkSignatures(const Manifest &m, const std::filesystem::path &dir);

/// Reads a whole file of at most `maxBytes` (checked before reading a regular file; a pipe is read up to
/// the limit); directories and devices are refused. `what` names the file in messages ("input file").
std::string readBounded(const std::string &path, const std::string &what, uint64_t maxBytes = uint64_t(1) << 30);

} // namespace uopc::manifest
