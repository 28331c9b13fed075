//===- CTarget.h - the C backend: one kernel CALL rendered as self-contained C11 ===//
// A kernel (kernel-split's CALL(SINK[KernelInfo](END(STORE(INDEX(PARAM 0, i), v), RANGE...)), states...),
// before or after the `codegen` pass) becomes one C11 translation unit with one exported function:
//
//   void <symbol>(T0 *restrict out0, const T1 *restrict in1, ..., int64_t var_<name>, ...)
//
// - one pointer per CALL argument, in argument order (argument i binds kernel PARAM slot i); `const`
//   when the kernel never stores to it. Element types: bool, int8_t..uint64_t, float, double; float16
//   and bfloat16 buffers are uint16_t (their bits), computed in float and rounded after every op;
// - then one int64_t per symbolic variable, sorted by name (kernelVariables());
// - `_device_num` is not an argument: it is bound to deviceNum and the body is simplified again, so
//   per-device selections fold away.
//
// Semantics are those of the reference interpreter (lib/Interp/Kernels.cpp, ScalarOps.h): integer ops
// wrap (computed in uint64_t, then narrowed), integer x//0 = 0 and x%0 = x, float-to-int casts give the
// x86-64 "integer indefinite" out of range, THREEFRY is tinygrad's threefry2x32, Invalid lanes poison
// ALU ops and reductions and are never stored, a read at an Invalid or out-of-bounds index is not
// performed (gated load; the lane is Invalid). Reductions accumulate in the dtype's compute type (float
// for float32, as tinygrad's C does; the interpreter uses double, within the corpus tolerances).
// EXP2/LOG2/SIN/POW of float32 call the double libm functions and round: kernels using them need libm
// (`-lm`, or a host process that already links it).
//
// The output compiles with `cc -std=c11 -Wall -Werror` under gcc and clang.
#pragma once

#include "IR/UOp.h"
#include "Targets/CNames.h" // (sanitizeCName)

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uopc {

/// A kernel in the pieces its outputs join (no output parses the C back): a kernel file is prelude, a blank
/// line, then cFunction(declaration, body); `uopc --emit library` puts every helper once and each kernel's
/// function made static (cFunction(..., true)) after its summary comment.
/// The prelude line of a kernel that uopc-run builds at plain -O2 (KernelCache.h: kTileOptFlags): a register
/// tile, whose lanes `omp simd` vectorizes and whose unrolled outer lanes -O3 only made gcc slower to compile
/// (SqueezeNet's kernels: gcc's time halved, the tiles' speed the same within 6%); a kernel without one gets
/// the vectorizer's dynamic cost model and loop unswitching as well (kKernelOptFlags).
inline constexpr const char *kBuildAtO2Line = "/* uopc-run: -O2 */";

struct EmittedKernel {
  std::string prelude;     ///< the summary comment, the includes and the helpers it calls (each under #ifndef UOPC_HELPER_*)
  std::string declaration; ///< "void SYMBOL(T0 *restrict out0, ...)": the function's head, without linkage
  std::string body;        ///< "{\n...}\n": the function's body
  std::string symbol;      ///< the exported function's name (sanitizeCName(name))
  std::string summary;     ///< one line saying what the kernel computes (also the prelude's first comment)

  /// The whole translation unit.
  std::string source() const;
};

/// The kernel's function: its prototype (so that a build with -Wmissing-prototypes takes it), then its definition;
/// `isStatic`: both static (a library's kernels, local to its translation unit).
std::string cFunction(std::string_view declaration, std::string_view body, bool isStatic = false);

/// What the caller allows the C emitter to do beyond the defaults.
struct CEmitOptions {
  /// Render CUSTOM/CUSTOMI ops: their argument is a C format string ("{0} + {1}") pasted into the kernel
  /// with its sources substituted. Off by default: a graph must not inject code unless the user says so
  /// (`uopc --allow-custom`).
  bool allowCustom = false;
};

/// Renders one kernel CALL (its SINK body) as self-contained C11 with one exported function (see the file
/// comment), `_device_num` bound to deviceNum. Works on a kernel before or after the `codegen` pass: it
/// binds `_device_num` and runs the same index simplification itself, so an unlowered kernel is fine.
/// New nodes are made in ctx (the graph's Context). Throws uopc::Error naming the node for what it cannot
/// render: a COPY call (copies are the runner's memcpy), CUSTOM ops (unless options.allowCustom), dtypes
/// other than bool, the sized integers, float16, bfloat16, float32 and float64.
EmittedKernel emitCKernel(Context &ctx, const UOp *kernelCall, int64_t deviceNum, std::string_view name,
                          const CEmitOptions &options = {});

/// The symbolic variables (names, sorted, `_device_num` excluded) a kernel takes as int64_t arguments.
std::vector<std::string> kernelVariables(const UOp *kernelCall);

/// What a kernel needs of each argument, for the runner to check a manifest against the kernel it runs:
/// "uopc-signature: <dtype>:<elements> ... vars <n> <name>:<min>:<max> ...", one entry per CALL argument in
/// order, the elements being the most the kernel may index (its PARAM's size; when that depends on a
/// variable, its upper bound over the variables' ranges; `?` when unbounded), then the number of variable
/// arguments and, per variable in argument order, the range the kernel was compiled for (`<name>:?` without
/// one). Written as a comment line at the end of every kernel file.
std::string kernelSignature(const UOp *kernelCall);

/// The C type a buffer of dt holds in a C kernel (float16/bfloat16: their bits); throws Error for a
/// dtype the C target does not support.
std::string cStorageType(DType dt);

} // namespace uopc
