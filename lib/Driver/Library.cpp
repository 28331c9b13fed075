//===- Library.cpp - a compiled graph as one C library: NAME.h, NAME.c (and its weights) from the Module ===//
#include "Driver/Library.h"

#include "Driver/Params.h"
#include "IR/Collective.h"
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "Runtime/Safetensors.h"
#include "Targets/CTarget.h"
#include "Targets/C/Prelude.h"
#include "Targets/CNames.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <climits>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace uopc {
namespace fs = std::filesystem;

namespace {

using manifest::Manifest;
using manifest::Param;
using manifest::Ref;
using manifest::Role;
using manifest::Step;

/// The devices a library can run on: tinygrad's CPU devices (CPU, CPU:1, ...; the older CLANG and LLVM) and
/// PYTHON (its emulator, whose buffers are host memory: a graph's constants, rand's seeds, live there).
bool isCpuDevice(const std::string &name) {
  std::string base = name.substr(0, name.find(':'));
  return base == "CPU" || base == "CLANG" || base == "LLVM" || base == "PYTHON";
}

/// The C type of a buffer's elements, as the C kernels store them.
std::string elementType(DType dt) { return cStorageType(dt); }

/// `s` as a C identifier (Targets/CNames.h): `prefix` first when it does not start with a letter.
std::string identifier(std::string_view s, std::string_view prefix) { return cIdentifier(s, prefix); }

/// Text for a C comment (Targets/CNames.h).
std::string commentSafe(std::string_view s) { return cComment(s); }

std::string paramName(const Param &p) { return p.name ? *p.name : "slot" + std::to_string(p.slot); }

/// The C of allreduce step `s` (number `i`): element by element, the shards reduced in the step's order (as
/// uopc-run reduces them in one process: Runtime/Runner.cpp) and the result stored to every device. Each
/// element's shards are read before any destination is written, so a destination that is its own shard
/// (in place) is safe.
template <class Pointer>
void allreduceLines(std::ostream &c, const Step &s, size_t i, const std::string &indent, const Pointer &pointer) {
  std::string t = elementType(s.dtype);
  size_t n = s.srcs.size();
  c << indent << "{ /* step " << i << ": " << commentSafe(s.label()) << " of " << s.numel << " " << dtypeName(s.dtype)
    << (s.ring ? ", ring order" : "") << " */\n";
  for (size_t d = 0; d < n; ++d)
    c << indent << "  const " << t << " *s" << d << " = (const " << t << " *)" << pointer(s.srcs[d]) << ";\n";
  for (size_t d = 0; d < n; ++d) c << indent << "  " << t << " *d" << d << " = (" << t << " *)" << pointer(s.dsts[d]) << ";\n";
  auto combine = [&](const std::string &x) {
    switch (s.op) {
    case manifest::ReduceOp::Add: return "a = a + " + x + ";";
    case manifest::ReduceOp::Mul: return "a = a * " + x + ";";
    case manifest::ReduceOp::Max: return "a = (a < " + x + " ? " + x + " : a);";
    }
    return std::string();
  };
  auto loop = [&](int64_t lo, int64_t hi, size_t first) {
    c << indent << "  for (int64_t e = " << lo << "; e < " << hi << "; ++e) {\n" << indent << "    " << t << " a = s" << first << "[e];";
    for (size_t k = 1; k < n; ++k) c << " " << combine("s" + std::to_string((first + k) % n) + "[e]");
    c << "\n" << indent << "   ";
    for (size_t d = 0; d < n; ++d) c << " d" << d << "[e] = a;";
    c << "\n" << indent << "  }\n";
  };
  if (!s.ring) {
    loop(0, s.numel, 0);
  } else {
    std::vector<int64_t> starts = ringChunkStarts(s.numel, static_cast<int64_t>(n));
    for (size_t k = 0; k < n; ++k)
      if (starts[k + 1] > starts[k]) loop(starts[k], starts[k + 1], k);
  }
  c << indent << "}\n";
}

/// Field names of one struct: each parameter's (or variable's) name as a C identifier, made distinct.
class FieldNames {
public:
  std::string add(std::string_view name) {
    std::string base = identifier(name, "p_"), n = base;
    for (int k = 2; !taken_.insert(n).second; ++k) n = base + "_" + std::to_string(k);
    return n;
  }

private:
  std::set<std::string> taken_;
};

int64_t roundUp64(int64_t n) { return (n + 63) / 64 * 64; }

/// An int64_t constant in C (INT64_MIN has no literal of its own).
std::string int64Literal(int64_t v) {
  return v == INT64_MIN ? std::string("(-INT64_C(9223372036854775807) - 1)") : "INT64_C(" + std::to_string(v) + ")";
}

} // namespace

std::string defaultLibraryName(const std::string &graphPath) {
  fs::path p(graphPath);
  std::string stem = p.stem().string();
  if (stem == "graph") {
    std::error_code ec;
    fs::path abs = fs::absolute(p, ec).lexically_normal();
    std::string dir = ec ? "" : abs.parent_path().filename().string();
    stem = dir.empty() ? "model" : dir;
  }
  std::string name = identifier(stem, "m_");
  if (name == "m_") return "model";
  return isSystemHeaderName(name) ? name + "_model" : name;
}

void checkLibraryName(const std::string &name) {
  bool ok = !name.empty() && name.size() <= 64 && std::isalpha(static_cast<unsigned char>(name[0]));
  for (char ch : name) ok &= std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  if (name.empty()) fail("--name is empty: give the library a name (a C identifier), or leave --name out for the default");
  if (!ok) fail("--name " + quote(name) + " is not a C identifier of at most 64 characters starting with a letter");
  if (isSystemHeaderName(name))
    fail("--name '" + name + "' would write " + name + ".h, the name of a system header (a program built with -I DIR would include it instead)");
}

namespace {

/// The workspace once the steps uopc folded are gone: an optional state record first, then each device's
/// arena, without the space of the intermediates whose contents are baked in.
struct Layout {
  int64_t stateBytes = 0;       ///< the state record NAME_init and the runs keep (0: the library keeps none)
  std::vector<int64_t> arenaAt; ///< per device: its arena's offset in the workspace
  int64_t workspace = 0;
  /// per device: (offset, bytes) of the intermediates baked in; their space, rounded down to 64 bytes, is given back
  std::vector<std::vector<std::pair<int64_t, int64_t>>> holes;
  /// An intermediate's offset in device d's arena with the holes below it gone. (A baked intermediate lives
  /// through every step, so no other one overlaps it: each lies wholly below or above; moved down by a
  /// multiple of 64, none reaches the one below it.)
  int64_t offsetIn(size_t d, int64_t off) const {
    int64_t gone = 0;
    for (const auto &[at, bytes] : holes[d])
      if (bytes > 0 && at + bytes <= off) gone += bytes / 64 * 64;
    return off - gone;
  }
};

/// The parts of [lo, hi) outside the ranges `keep` ([begin, end) each).
std::vector<std::pair<int64_t, int64_t>> outside(std::vector<std::pair<int64_t, int64_t>> keep, int64_t lo, int64_t hi) {
  std::sort(keep.begin(), keep.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto &[b, e] : keep) {
    if (b > lo) out.push_back({lo, std::min(b, hi)});
    lo = std::max(lo, e);
  }
  if (lo < hi) out.push_back({lo, hi});
  return out;
}

std::string hex64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "UINT64_C(0x%016llx)", static_cast<unsigned long long>(v));
  return buf;
}

enum class Form { None, Incbin, CText, File };

} // namespace

void writeLibrary(const Module &module, const LibraryOptions &o, OutputDir &out) {
  checkLibraryName(o.name);
  const Manifest m = module.manifestModel();
  const std::vector<std::optional<AffineCopy>> copies = onceCopies(*module.schedule());
  if (targetInfo(m.target).emitter != Emitter::C || targetInfo(m.target).gpu)
    fail("--emit library needs the C target (--target c), not '" + std::string(targetInfo(m.target).name) + "'");
  for (const manifest::Device &d : m.devices)
    if (!isCpuDevice(d.name))
      fail("--emit library runs on CPU devices only (CPU, CPU:N, CLANG, LLVM, PYTHON); the graph uses device " + quote(d.name));
  if (!o.embedParams.empty() && !o.paramsFile.empty())
    fail("--embed-params and --params-file are two ways to give the weights: choose one");
  const std::string &N = o.name;
  const Form form = !o.paramsFile.empty()          ? Form::File
                    : o.embedParams.empty()        ? Form::None
                    : o.format == ParamsFormat::C ? Form::CText
                                                   : Form::Incbin;
  const std::string weights = form == Form::File ? o.paramsFile : o.embedParams;
  const std::string flag = form == Form::File ? "--params-file" : "--embed-params";
  std::optional<safetensors::Reader> reader;
  ParamsPlan plan;
  if (form != Form::None) {
    std::error_code ec;
    if (!fs::is_regular_file(weights, ec)) fail(flag + ": '" + weights + "' is not a readable file");
    reader.emplace(weights);
    plan = planParams(m, *reader, copies, flag, N);
  }
  const std::string binName = N + "_params.bin";
  // the blob first: NAME.c holds its checksum
  if (form == Form::Incbin || form == Form::File) writeParamsBlob(out.path(binName), plan, m, *reader, copies);
  if (form == Form::Incbin) out.write(N + "_params.S", paramsAssembler(plan, N, binName));

  // what a reference points at: a baked tensor (a parameter's, or a folded once step's result), or memory
  std::map<std::pair<size_t, size_t>, size_t> bakedParam, bakedBuffer; // (param or buffer, device) -> tensor
  for (size_t k = 0; k < plan.tensors.size(); ++k) {
    const BakedTensor &t = plan.tensors[k];
    if (!t.step) {
      bakedParam[{t.param, t.device}] = k;
    } else {
      const Ref &d = m.steps[*t.step].args[copies[*t.step]->dstArg];
      bakedBuffer[{d.index, d.dev}] = k;
    }
  }
  auto isBaked = [&](size_t param) { return plan.baked.count(param) > 0; };

  // the caller's parameters: every one not baked in, with its first entry in params[]
  std::vector<size_t> callerParams;
  std::vector<int64_t> firstEntry(m.params.size(), -1);
  int64_t entries = 0;
  for (size_t i = 0; i < m.params.size(); ++i) {
    if (isBaked(i)) continue;
    callerParams.push_back(i);
    firstEntry[i] = entries;
    entries += static_cast<int64_t>(m.params[i].devices.size());
  }
  // the once steps the library runs itself (not folded): in the first run of a workspace, or after NAME_init,
  // or when a weight they read comes in another buffer (`seen`: those entries of params[]). A once step that
  // reads the caller's data runs in every run, as any step: a function argument (input<N>) or an input the
  // graph's weight marks leave out (isCallersData), or, when the
  // weights came by file, any parameter the caller still passes (the optimizer re-lays out whatever input
  // parameter a tile reads along its stride; only the caller knows which are weights).
  std::vector<size_t> onceSteps;
  std::vector<int64_t> seen;
  std::set<std::string> onceWeights; // the names of the caller's weights the once steps read
  bool marked = marksWeights(m);
  // (a once step may read what another wrote, a transform of the weights: where that one runs in every run,
  // so does this one)
  std::set<size_t> everyRun; // the intermediates once steps that run in every run write
  const Schedule &sched = *module.schedule();
  for (size_t i = 0; i < m.steps.size(); ++i) {
    if (!m.steps[i].once || plan.folded.count(i)) continue;
    bool data = false;
    for (const Ref &r : m.steps[i].args)
      data |= r.isParam ? !isBaked(r.index) && (form != Form::None || isCallersData(m.params[r.index], marked))
                        : everyRun.count(r.index) > 0;
    if (data) {
      if (i < sched.steps.size() && sched.steps[i].kind == SchedStep::Kind::Kernel)
        for (size_t slot : writtenSlots(sched.steps[i].call))
          if (slot < m.steps[i].args.size() && !m.steps[i].args[slot].isParam) everyRun.insert(m.steps[i].args[slot].index);
      continue;
    }
    onceSteps.push_back(i);
    for (const Ref &r : m.steps[i].args)
      if (r.isParam && !isBaked(r.index)) {
        int64_t e = firstEntry[r.index] + static_cast<int64_t>(r.dev);
        if (std::find(seen.begin(), seen.end(), e) == seen.end()) seen.push_back(e);
        onceWeights.insert(paramName(m.params[r.index]));
      }
  }
  auto runsOnce = [&](size_t i) { return std::find(onceSteps.begin(), onceSteps.end(), i) != onceSteps.end(); };
  const bool state = form == Form::File || !onceSteps.empty();
  // the workspace: the state record, then device d's arena at arenaAt[d]
  Layout L;
  L.stateBytes = state ? roundUp64(8 * (3 + std::max<int64_t>(static_cast<int64_t>(seen.size()), 1))) : 0;
  L.holes.resize(m.devices.size());
  for (const auto &[ref, k] : bakedBuffer) {
    const manifest::Buffer &b = m.buffers[ref.first];
    L.holes[b.deviceIndex[ref.second]].push_back({b.offsets[ref.second], b.bytes});
  }
  L.workspace = L.stateBytes;
  for (size_t d = 0; d < m.devices.size(); ++d) {
    int64_t bytes = m.devices[d].arenaBytes;
    for (const auto &hole : L.holes[d]) bytes -= hole.second / 64 * 64;
    L.arenaAt.push_back(L.workspace);
    L.workspace += roundUp64(bytes);
  }
  // every intermediate a step still uses lies inside its arena (a check of offsetIn: no step may write past
  // the workspace the caller was told to give)
  for (size_t i = 0; i < m.steps.size(); ++i) {
    if (plan.folded.count(i)) continue;
    const Step &s = m.steps[i];
    std::vector<Ref> refs = s.isCopy() ? std::vector<Ref>{s.src, s.dst} : s.args;
    if (s.isAllreduce()) {
      refs = s.srcs;
      refs.insert(refs.end(), s.dsts.begin(), s.dsts.end());
    }
    for (const Ref &r : refs) {
      if (r.isParam || bakedBuffer.count({r.index, r.dev})) continue;
      const manifest::Buffer &b = m.buffers[r.index];
      size_t dv = b.deviceIndex[r.dev];
      int64_t at = L.arenaAt[dv] + L.offsetIn(dv, b.offsets[r.dev]), end = dv + 1 < L.arenaAt.size() ? L.arenaAt[dv + 1] : L.workspace;
      if (at < L.arenaAt[dv] || at + b.bytes > end)
        fail("--emit library: internal error: step " + std::to_string(i) + " would use bytes [" + std::to_string(at) + ", " +
             std::to_string(at + b.bytes) + ") outside its arena [" + std::to_string(L.arenaAt[dv]) + ", " + std::to_string(end) + ")");
    }
  }
  // what the library's once steps write lives from one run to the next: a run zeroes the rest
  std::vector<std::pair<int64_t, int64_t>> persistent;
  for (size_t i : onceSteps)
    for (const Ref &r : m.steps[i].args)
      if (!r.isParam) {
        const manifest::Buffer &b = m.buffers[r.index];
        size_t dv = b.deviceIndex[r.dev];
        int64_t at = L.arenaAt[dv] + L.offsetIn(dv, b.offsets[r.dev]);
        if (b.bytes > 0) persistent.push_back({at, at + b.bytes});
      }
  // (one range each: a once step's result that a later once step reads is listed by both)
  std::sort(persistent.begin(), persistent.end());
  persistent.erase(std::unique(persistent.begin(), persistent.end()), persistent.end());
  // the state record's values: "bound to a params file" and "the once steps ran", distinct per library
  Xxh64 magicOf;
  magicOf.update("uopc library state " + N + " " + std::to_string(plan.hash));
  const uint64_t initMagic = magicOf.digest(), onceMagic = initMagic ^ 0x5bd1e9955bd1e995ULL;

  std::string guard = N; // UOPC_LIB_<NAME>_H: not a system header's guard even for a NAME such as `math`
  std::transform(guard.begin(), guard.end(), guard.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  guard = "UOPC_LIB_" + guard + "_H";
  std::string build;
  switch (form) {
  case Form::Incbin:
    build = "cc -O2 -c " + N + ".c " + N + "_params.S (in this folder, or with -I DIR from another: the .S takes\n * the weights from " +
            N + "_params.bin with .incbin; GNU as or clang, ELF); link both objects, and -lm.";
    break;
  case Form::File:
    build = "cc -O2 -c " + N + ".c (C11, no other file needed); link the program with -lm. The weights stay in\n * " + binName +
            " (" + std::to_string(plan.blobBytes) + " bytes): the program reads or maps it and gives it to " + N + "_init.";
    break;
  default:
    build = "cc -O2 -c " + N + ".c (C11, no other file needed); link the program with -lm.";
  }
  std::ostringstream h;
  h << "/* " << N << ".h: the compiled graph " << commentSafe(o.graphName) << " as a C library (uopc --emit library).\n"
    << " *\n"
    << " * Build: " << build << "\n"
    << " * Run: give " << N << "_workspace_bytes() bytes of scratch memory (16-byte aligned, as malloc's; the library\n"
    << " * allocates nothing), the parameters' buffers, the variables, then call " << N << "_run (typed fields) or\n"
    << " * " << N << "_run_params (by position). Every call runs the whole graph; calls sharing no workspace and no\n"
    << " * output buffer may run at once. An output element the graph does not write keeps its value.\n";
  if (form == Form::File)
    h << " * The weights: " << N << "_init(workspace, bytes, size) checks the bytes of " << binName << " (size, checksum)\n"
      << " * and binds them to the workspace, before its first run; keep them while it runs.\n";
  if (!onceSteps.empty()) {
    std::string names;
    for (const std::string &w : onceWeights) names += (names.empty() ? "" : ", ") + w;
    h << " * A workspace's first run (and the first after " << N << "_init, or with other weight buffers) also re-lays\n"
      << " * out weights into it for the runs after it: call " << N << "_init again after changing one of these in place:\n"
      << " * " << commentSafe(names) << ".\n";
  }
  h << " * Returns 0; " << N << "_ERR_NULL (-1) for a null pointer where a buffer is needed (nothing runs);\n"
    << " * 1 + i when variable i is outside its range [min, max] (nothing runs); " << N << "_strerror says what a code\n"
    << " * means. See docs/library.md. */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "#define " << N << "_ERR_NULL (-1)\n"
    << "#define " << N << "_ERR_PARAMS_SIZE (-2)  /* " << N << "_init: not the size of the params file (0: it takes none) */\n"
    << "#define " << N << "_ERR_PARAMS_HASH (-3)  /* " << N << "_init: not the params file the library was compiled with */\n"
    << "#define " << N << "_ERR_PARAMS_ALIGN (-4) /* " << N << "_init: the params file's bytes are not 8-byte aligned */\n"
    << "#define " << N << "_ERR_INIT (-5)         /* a run on a workspace " << N << "_init gave no params file */\n\n";
  // the typed structs
  auto deviceList = [](const Param &p) {
    std::string s;
    for (size_t d = 0; d < p.devices.size(); ++d) s += (d ? ", " : "") + p.devices[d];
    return s;
  };
  std::vector<std::string> fieldOf(m.params.size());
  FieldNames inNames, outNames;
  auto structOf = [&](const char *what, bool outputs) {
    h << "/* " << what << " */\ntypedef struct {\n";
    bool any = false;
    for (size_t i : callerParams) {
      const Param &p = m.params[i];
      if ((p.role != Role::Input) != outputs) continue;
      fieldOf[i] = (outputs ? outNames : inNames).add(paramName(p));
      h << "  " << (outputs ? "" : "const ") << elementType(p.dtype) << " *" << fieldOf[i];
      if (p.devices.size() > 1) h << "[" << p.devices.size() << "]";
      h << "; /* " << commentSafe(paramName(p)) << ": " << dtypeName(p.dtype) << "[" << p.numel << "]";
      if (p.shape) { // (the exporter's shape, its elements in order)
        h << ", shape (";
        for (size_t d = 0; d < p.shape->size(); ++d) h << (d ? ", " : "") << (*p.shape)[d];
        h << (p.shape->size() == 1 ? ",)" : ")");
      }
      h << (p.devices.size() > 1 ? " per device" : "") << " on " << commentSafe(deviceList(p))
        << (p.role == Role::Inout ? ", inout: read, then written" : "") << " */\n";
      any = true;
    }
    if (!any) h << "  int none_; /* (none) */\n";
    h << "} " << N << (outputs ? "_outputs" : "_inputs") << ";\n\n";
  };
  structOf("the inputs the caller passes (weights baked in with --embed-params or packed with --params-file are not among them)",
           false);
  structOf("the outputs (and inout parameters: read, then written)", true);
  h << "/* the variables, each within its range (the manifest's) */\ntypedef struct {\n";
  FieldNames varNames;
  for (const manifest::Var &v : m.vars)
    h << "  int64_t " << varNames.add(v.name) << "; /* " << commentSafe(v.name) << ": [" << v.min << ", " << v.max << "] */\n";
  if (m.vars.empty()) h << "  int none_; /* (none) */\n";
  h << "} " << N << "_vars;\n\n";
  h << "/* One parameter of " << N << "_run_params: role is \"input\", \"output\" or \"inout\"; numel and bytes are per\n"
    << " * device; a parameter on `devices` > 1 devices takes that many consecutive entries of params[]. */\n"
    << "typedef struct { const char *name; const char *dtype; int64_t numel; int64_t bytes; const char *role; int devices; } "
    << N << "_param;\n"
    << "/* A variable: its name and range. */\n"
    << "typedef struct { const char *name; int64_t min; int64_t max; } " << N << "_variable;\n\n"
    << "/* the parameters the caller passes, in the manifest's order (then one entry of name NULL) */\n"
    << "extern const " << N << "_param " << N << "_params[];\n"
    << "extern const int " << N << "_num_params;\n"
    << "/* per entry of " << N << "_params: the parameter's slot in the graph */\n"
    << "extern const int64_t " << N << "_param_slots[];\n"
    << "/* the variables of vars[], in order (then one entry of name NULL) */\n"
    << "extern const " << N << "_variable " << N << "_variables[];\n"
    << "extern const int " << N << "_num_vars;\n\n"
    << "/* The bytes of scratch memory a run needs (every device's arena); may be 0 (then workspace may be NULL). */\n"
    << "size_t " << N << "_workspace_bytes(void);\n"
    << "/* Runs the graph. vars may be NULL when there are none. */\n"
    << "int " << N << "_run(const " << N << "_inputs *in, " << N << "_outputs *out, const " << N << "_vars *vars, void *workspace);\n"
    << "/* Runs the graph: params[k] is entry k (see " << N << "_params), vars[i] variable i (NULL when none). */\n"
    << "int " << N << "_run_params(void *const params[], const int64_t vars[], void *workspace);\n"
    << "/* The size of the params file the library takes (" << binName << " of uopc --params-file); 0 when it takes\n"
    << " * none (its weights are inside, or the caller's). */\n"
    << "size_t " << N << "_params_file_bytes(void);\n"
    << "/* Prepares a workspace. With a params file: checks it (its size, 8-byte alignment, header and XXH64\n"
    << " * checksum) and binds it to the workspace; needed before the first run. Otherwise params_file is NULL and\n"
    << " * params_file_bytes 0, and the call only makes the next run re-lay out the weights (where the library does\n"
    << " * that; it is then optional). Returns 0, " << N << "_ERR_NULL or an " << N << "_ERR_PARAMS_* code. */\n"
    << "int " << N << "_init(void *workspace, const void *params_file, size_t params_file_bytes);\n"
    << "/* What a return code of " << N << "_init, " << N << "_run or " << N << "_run_params means, in English. */\n"
    << "const char *" << N << "_strerror(int rc);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";

  // ---- NAME.c: the part before the weights ----
  std::ostringstream c;
  c << "/* " << N << ".c: the compiled graph " << commentSafe(o.graphName) << " as a C library (uopc --emit library):\n"
    << " * " << m.steps.size() - plan.folded.size() << " steps on " << m.devices.size() << " device(s). Build: " << build << "\n"
    << " * -DUOPC_OMP_SIMD -fopenmp-simd lets float sums vectorize, as uopc-run builds the kernels. */\n"
    << "#include \"" << N << ".h\"\n\n#include <math.h>\n#include <string.h>\n\n";
  // every helper once (guarded as in the kernel files), then each kernel's function, made static
  c << "/* ---- helpers ---- */\n" << ctarget::preludeAllText() << "\n/* ---- kernels ---- */\n";
  std::map<std::string, const ModuleKernel *> kernelOf; // file -> its kernel
  for (const ModuleKernel &k : module.kernels) kernelOf.emplace(k.file, &k);
  std::set<std::string> done;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &s = m.steps[i];
    if (!s.isKernel() || plan.folded.count(i) || !done.insert(s.file).second) continue;
    if (s.symbol.rfind(N + "_", 0) == 0)
      fail("--emit library: kernel symbol " + quote(s.symbol) + " would clash with the library's names: choose another --name");
    auto it = kernelOf.find(s.file);
    if (it == kernelOf.end()) fail("--emit library: no source for kernel file '" + s.file + "'");
    if (!it->second->error.empty()) fail(it->second->error);
    const RenderedKernel &k = it->second->pieces;
    c << "/* " << k.summary << " */\n" << cFunction(k.declaration, k.body, true) << "/* " << k.signature << " */\n\n";
  }
  std::string source = fs::path(weights).filename().string();
  auto describe = [&](const BakedTensor &t) {
    return "/* " + commentSafe(t.label) + ": " + std::string(dtypeName(t.dtype)) + "[" + std::to_string(t.numel) + "]";
  };
  switch (form) {
  case Form::Incbin:
    c << "/* ---- parameters baked in (--embed-params " << commentSafe(source) << "): " << N << "_params.S defines them, each\n"
      << " * 64-byte aligned, from the bytes of " << binName << " ---- */\n";
    for (const BakedTensor &t : plan.tensors) c << describe(t) << " */\nextern const unsigned char " << t.symbol << "[];\n";
    break;
  case Form::CText:
    c << "/* ---- parameters baked in (--embed-params " << commentSafe(source) << ") ---- */\n";
    break;
  case Form::File:
    c << "/* ---- the params file (--params-file " << commentSafe(source) << "): " << binName << ", given to " << N
      << "_init ---- */\n";
    for (const BakedTensor &t : plan.tensors) c << describe(t) << " at byte " << t.offset << " */\n";
    c << xxh64CSource(N);
    break;
  case Form::None:
    break;
  }

  // ---- NAME.c: the part after the weights ----
  std::ostringstream c2;
  c2 << "\n/* ---- the parameter table ---- */\nconst " << N << "_param " << N << "_params[] = {\n";
  for (size_t i : callerParams) {
    const Param &p = m.params[i];
    c2 << "    {" << cStringLiteral(paramName(p)) << ", \"" << dtypeName(p.dtype) << "\", " << p.numel << ", " << p.bytes << ", \""
       << manifest::roleName(p.role) << "\", " << p.devices.size() << "},\n";
  }
  c2 << "    {0, 0, 0, 0, 0, 0}};\nconst int " << N << "_num_params = " << callerParams.size() << ";\n";
  c2 << "const int64_t " << N << "_param_slots[] = {";
  for (size_t i : callerParams) c2 << m.params[i].slot << ", ";
  c2 << "-1};\nconst " << N << "_variable " << N << "_variables[] = {\n";
  for (const manifest::Var &v : m.vars) c2 << "    {" << cStringLiteral(v.name) << ", " << v.min << ", " << v.max << "},\n";
  c2 << "    {0, 0, 0}};\nconst int " << N << "_num_vars = " << m.vars.size() << ";\n\n";
  c2 << "size_t " << N << "_workspace_bytes(void) { return " << L.workspace << "; }\n";
  c2 << "size_t " << N << "_params_file_bytes(void) { return " << (form == Form::File ? plan.blobBytes : 0) << "; }\n\n";
  c2 << "const char *" << N << "_strerror(int rc) {\n"
     << "  switch (rc) {\n"
     << "  case 0: return \"ok\";\n"
     << "  case " << N << "_ERR_NULL: return \"a null pointer where a buffer is needed\";\n"
     << "  case " << N << "_ERR_PARAMS_SIZE: return \"" << N << "_init: the params file is not the size the library takes ("
     << N << "_params_file_bytes(); 0: it takes none)\";\n"
     << "  case " << N << "_ERR_PARAMS_HASH: return \"" << N
     << "_init: not the params file the library was compiled with (its header or XXH64 checksum differs)\";\n"
     << "  case " << N << "_ERR_PARAMS_ALIGN: return \"" << N << "_init: the params file's bytes are not 8-byte aligned\";\n"
     << "  case " << N << "_ERR_INIT: return \"the workspace has no params file: call " << N << "_init first\";\n"
     << "  default: return "
     << (m.vars.empty() ? std::string()
                        : "rc > 0 && rc <= " + std::to_string(m.vars.size()) + " ? \"a variable is outside its range (" + N +
                              "_variables[rc - 1])\" : ")
     << "\"not a return code of the library\";\n"
     << "  }\n}\n\n";
  if (state)
    c2 << "/* the first " << L.stateBytes << " bytes of the workspace: what " << N << "_init and the runs keep */\n"
       << "typedef struct {\n  uint64_t magic;               /* bound to a params file */\n"
       << "  const unsigned char *params; /* its bytes */\n"
       << "  uint64_t once;                /* the once steps ran, on the weights of seen[] */\n"
       << "  const void *seen[" << std::max<size_t>(seen.size(), 1) << "];\n} " << N << "_state_;\n"
       << "_Static_assert(sizeof(" << N << "_state_) <= " << L.stateBytes << ", \"the state record outgrew its room\");\n\n";
  c2 << "int " << N << "_init(void *workspace, const void *params_file, size_t params_file_bytes) {\n";
  if (form == Form::File) {
    c2 << "  const unsigned char *p = (const unsigned char *)params_file;\n"
       << "  if (!workspace || !p) return " << N << "_ERR_NULL;\n"
       << "  if (params_file_bytes != " << plan.blobBytes << ") return " << N << "_ERR_PARAMS_SIZE;\n"
       << "  if ((uintptr_t)p % 8 != 0) return " << N << "_ERR_PARAMS_ALIGN;\n"
       << "  if (memcmp(p, \"" << kBlobMagic << "\", 8) != 0 || " << N << "_r64_(p + 8) != " << plan.blobBytes << "u || " << N
       << "_r64_(p + 16) != " << hex64(plan.hash) << " ||\n"
       << "      " << N << "_xxh64_(p + " << kBlobHeaderBytes << ", " << plan.blobBytes - kBlobHeaderBytes << "u) != " << hex64(plan.hash)
       << ")\n    return " << N << "_ERR_PARAMS_HASH;\n"
       << "  " << N << "_state_ *st = (" << N << "_state_ *)workspace;\n"
       << "  st->params = p;\n  st->once = 0;\n  st->magic = " << hex64(initMagic) << ";\n  return 0;\n}\n\n";
  } else if (state) {
    c2 << "  if (params_file || params_file_bytes) return " << N << "_ERR_PARAMS_SIZE;\n"
       << "  if (!workspace) return " << N << "_ERR_NULL;\n"
       << "  ((" << N << "_state_ *)workspace)->once = 0; /* the next run re-lays out the weights */\n  return 0;\n}\n\n";
  } else {
    c2 << "  (void)workspace;\n  return params_file || params_file_bytes ? " << N << "_ERR_PARAMS_SIZE : 0;\n}\n\n";
  }

  // the schedule: Runner.cpp's CpuBackend::run, unrolled
  auto bakedPointer = [&](size_t k) -> std::string {
    const BakedTensor &t = plan.tensors[k];
    if (form == Form::Incbin) return "(void *)" + t.symbol;
    if (form == Form::CText) return "(void *)" + t.symbol + ".bytes";
    return "(void *)(pf + " + std::to_string(t.offset) + ")";
  };
  auto pointer = [&](const Ref &r) -> std::string {
    if (r.isParam) {
      if (!isBaked(r.index)) return "params[" + std::to_string(firstEntry[r.index] + static_cast<int64_t>(r.dev)) + "]";
      auto it = bakedParam.find({r.index, r.dev});
      if (it == bakedParam.end()) fail("--emit library: a step reads " + quote(paramName(m.params[r.index])) + ", which is baked in but not stored");
      return bakedPointer(it->second);
    }
    if (auto it = bakedBuffer.find({r.index, r.dev}); it != bakedBuffer.end()) return bakedPointer(it->second);
    const manifest::Buffer &b = m.buffers[r.index];
    size_t dv = b.deviceIndex[r.dev];
    return "(void *)(ws + " + std::to_string(L.arenaAt[dv] + L.offsetIn(dv, b.offsets[r.dev])) + ")";
  };
  auto isBakedRef = [&](const Ref &r) { return r.isParam ? isBaked(r.index) : bakedBuffer.count({r.index, r.dev}) > 0; };
  auto stepLine = [&](size_t i, const std::string &indent) {
    const Step &s = m.steps[i];
    if (s.isCopy()) {
      if (isBakedRef(s.dst)) fail("--emit library: step " + std::to_string(i) + " copies into a baked-in parameter");
      c2 << indent << "memmove(" << pointer(s.dst) << ", " << pointer(s.src) << ", " << s.bytes << "); /* step " << i << ": copy "
         << commentSafe(m.describe(s.src)) << " -> " << commentSafe(m.describe(s.dst)) << " */\n";
      return;
    }
    if (s.isAllreduce()) {
      for (const Ref &r : s.dsts)
        if (isBakedRef(r)) fail("--emit library: step " + std::to_string(i) + " reduces into a baked-in parameter");
      allreduceLines(c2, s, i, indent, pointer);
      return;
    }
    std::string args;
    std::set<std::string> seen;
    bool shared = false; // two arguments at one address (concat-in-place: a layer's input, the start of its output)
    for (const Ref &r : s.args) {
      std::string p = pointer(r);
      shared |= !seen.insert(p).second;
      args += (args.empty() ? "" : ", ") + p;
    }
    for (size_t k : s.varIndex) args += (args.empty() ? "" : ", ") + std::string("vars[") + std::to_string(k) + "]";
    if (s.parallel) args += (args.empty() ? "" : ", ") + std::string("0, ") + std::to_string(s.parallel);
    // (the kernel reads and writes disjoint elements through them, which restrict allows; gcc's -Wrestrict,
    // in -Wall, sees only the one address)
    if (shared)
      c2 << "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Wrestrict\"\n#endif\n";
    c2 << indent << s.symbol << "(" << args << "); /* step " << i << ": " << commentSafe(s.label()) << " */\n";
    if (shared) c2 << "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC diagnostic pop\n#endif\n";
  };
  c2 << "int " << N << "_run_params(void *const params[], const int64_t vars[], void *workspace) {\n"
     << "  unsigned char *ws = (unsigned char *)workspace;\n  (void)ws;\n  (void)vars;\n";
  if (entries > 0) {
    c2 << "  if (!params) return " << N << "_ERR_NULL;\n"
       << "  for (int k = 0; k < " << entries << "; ++k)\n    if (!params[k]) return " << N << "_ERR_NULL;\n";
  }
  if (L.workspace > 0) c2 << "  if (!ws) return " << N << "_ERR_NULL;\n";
  if (!m.vars.empty()) c2 << "  if (!vars) return " << N << "_ERR_NULL;\n";
  for (size_t v = 0; v < m.vars.size(); ++v)
    c2 << "  if (vars[" << v << "] < " << int64Literal(m.vars[v].min) << " || vars[" << v << "] > " << int64Literal(m.vars[v].max)
       << ") return " << v + 1 << "; /* " << commentSafe(m.vars[v].name) << " */\n";
  if (state) c2 << "  " << N << "_state_ *st = (" << N << "_state_ *)ws;\n";
  if (form == Form::File)
    c2 << "  if (st->magic != " << hex64(initMagic) << ") return " << N << "_ERR_INIT;\n"
       << "  const unsigned char *pf = st->params;\n  (void)pf;\n";
  if (!onceSteps.empty()) {
    c2 << "  int once = st->once != " << hex64(onceMagic);
    for (size_t k = 0; k < seen.size(); ++k) c2 << " || st->seen[" << k << "] != params[" << seen[k] << "]";
    c2 << ";\n";
  }
  for (const auto &[b, e] : outside(persistent, L.stateBytes, L.workspace))
    c2 << "  memset(ws + " << b << ", 0, " << e - b << "); /* the arenas start zeroed, as uopc-run's */\n";
  if (!onceSteps.empty()) {
    c2 << "  if (once) { /* the once steps: weights re-laid out or transformed into the workspace, kept for the runs after this one */\n";
    for (const auto &[b, e] : persistent) c2 << "    memset(ws + " << b << ", 0, " << e - b << ");\n";
    for (size_t i : onceSteps) stepLine(i, "    ");
    for (size_t k = 0; k < seen.size(); ++k) c2 << "    st->seen[" << k << "] = params[" << seen[k] << "];\n";
    c2 << "    st->once = " << hex64(onceMagic) << ";\n  }\n";
  }
  for (size_t i = 0; i < m.steps.size(); ++i) {
    if (runsOnce(i)) continue; // (above)
    if (plan.folded.count(i)) {
      c2 << "  /* step " << i << ": " << commentSafe(m.steps[i].kernel) << ", a re-layout uopc ran: its result is baked in */\n";
      continue;
    }
    stepLine(i, "  ");
  }
  c2 << "  return 0;\n}\n\n";

  // the typed entry point: its fields in params[] order
  c2 << "int " << N << "_run(const " << N << "_inputs *in, " << N << "_outputs *out, const " << N << "_vars *vars, void *workspace) {\n"
     << "  (void)in;\n  (void)out;\n  (void)vars;\n";
  bool anyIn = false, anyOut = false;
  for (size_t i : callerParams) (m.params[i].role == Role::Input ? anyIn : anyOut) = true;
  if (anyIn) c2 << "  if (!in) return " << N << "_ERR_NULL;\n";
  if (anyOut) c2 << "  if (!out) return " << N << "_ERR_NULL;\n";
  c2 << "  void *p[" << entries + 1 << "] = {";
  for (size_t i : callerParams) {
    const Param &p = m.params[i];
    std::string base = p.role == Role::Input ? "in->" : "out->";
    for (size_t d = 0; d < p.devices.size(); ++d)
      c2 << "(void *)" << base << fieldOf[i] << (p.devices.size() > 1 ? "[" + std::to_string(d) + "]" : "") << ", ";
  }
  c2 << "0};\n";
  if (!m.vars.empty()) {
    c2 << "  if (!vars) return " << N << "_ERR_NULL;\n  int64_t v[" << m.vars.size() << "] = {";
    FieldNames again;
    for (size_t k = 0; k < m.vars.size(); ++k) c2 << (k ? ", " : "") << "vars->" << again.add(m.vars[k].name);
    c2 << "};\n  return " << N << "_run_params(p, v, workspace);\n";
  } else {
    c2 << "  return " << N << "_run_params(p, 0, workspace);\n";
  }
  c2 << "}\n";

  out.write(N + ".h", h.str());
  if (form != Form::CText) {
    out.write(N + ".c", c.str() + c2.str());
    return;
  }
  // the weights as C text, one tensor at a time between the two parts
  std::string path = out.path(N + ".c");
  std::FILE *f = std::fopen(path.c_str(), "wbx");
  if (!f) fail("cannot create '" + path + "': " + std::strerror(errno));
  try {
    std::string head = c.str(), tail = c2.str();
    if (std::fwrite(head.data(), 1, head.size(), f) != head.size()) fail("cannot write '" + path + "'");
    writeParamsC(f, path, plan, m, *reader, copies);
    if (std::fwrite(tail.data(), 1, tail.size(), f) != tail.size()) fail("cannot write '" + path + "'");
  } catch (...) {
    std::fclose(f);
    throw;
  }
  if (std::fclose(f) != 0) fail("cannot write '" + path + "': " + std::strerror(errno));
}


} // namespace uopc
