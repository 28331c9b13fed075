//===- Params.h - the weights of a library: what is baked in, the packed blob, its writers ===//
// `--emit library` with `--embed-params FILE` or `--params-file FILE` (docs/library.md) takes the parameters a
// safetensors file holds out of the caller's hands. They are laid out once, in one packed blob (ParamsPlan):
// a 64-byte header, then each tensor at a 64-byte multiple, including the results of the once steps uopc runs
// itself (weight re-layouts, Driver/OnceCopy.h) in place of the weights they read. The blob is written as it is
// (NAME_params.bin: incbin'd by NAME_params.S, or read by the caller with --params-file) or as C initializer
// text (--params-format=c); either way one tensor at a time, so uopc holds at most the largest tensor.
//
// The blob (all integers little-endian):
//   [0, 8)   "UOPCPAR1"
//   [8, 16)  its size in bytes, header included
//   [16, 24) XXH64 (seed 0) of the bytes after the header
//   [24, 32) the number of tensors
//   [32, 64) zeros
//   then each tensor at its offset (a multiple of 64), zeros between them.
#pragma once

#include "Driver/OnceCopy.h"
#include "IR/Types.h"
#include "Runtime/ManifestModel.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace uopc {

namespace safetensors {
class Reader;
}

/// XXH64 (xxHash's 64-bit hash, seed 0), fed in pieces: the blob's checksum, which the library checks too.
class Xxh64 {
public:
  void update(std::string_view bytes);
  uint64_t digest() const;

private:
  uint64_t v_[4] = {0x60ea27eeadc0b5d6ULL, 0xc2b2ae3d27d4eb4fULL, 0, 0x61c8864e7a143579ULL};
  uint64_t total_ = 0;
  unsigned char buf_[32] = {};
  size_t used_ = 0;
};

inline constexpr int64_t kBlobHeaderBytes = 64;
inline constexpr char kBlobMagic[9] = "UOPCPAR1";

/// One tensor of the blob: a baked parameter's buffer on one device, or what a once step uopc ran writes.
struct BakedTensor {
  std::string tensor;          ///< the safetensors tensor its bytes come from
  size_t param = 0, device = 0; ///< the parameter (index into Manifest::params) and device it comes from
  std::optional<size_t> step;  ///< a once step's result: the step (its AffineCopy applied to the parameter)
  DType dtype = DType::Void;
  int64_t numel = 0, bytes = 0;
  int64_t offset = 0;          ///< in the blob (a multiple of 64)
  std::string symbol;          ///< its C name in the library (NAME_w<param>_<device>, NAME_once<step>)
  std::string label;           ///< what it is, for comments ("l1.weight", "c2.weight re-laid out by k1_relayout2")
};

/// What a weights file takes out of the caller's hands, and how the blob holds it.
struct ParamsPlan {
  std::set<size_t> baked;           ///< parameters (indices into Manifest::params) the caller no longer passes
  std::vector<BakedTensor> tensors; ///< the blob's tensors, in order
  std::set<size_t> folded;          ///< once steps uopc ran (their results are tensors): the library skips them
  int64_t blobBytes = kBlobHeaderBytes;
  uint64_t hash = 0;                ///< XXH64 of the blob after its header (set by writeParams)
};

/// input<N>: the exporter's name of the function's N-th Tensor argument: the caller's data, never a weight.
bool isFunctionArgument(const std::string &name);
/// The caller's data, never baked in: a function argument (input<N>), or, where the graph marks weights
/// (ParamArg.weight: the exporter marks every input but fn's arguments and state), any input not marked (an
/// ONNX model's graph inputs, whose names are the model's: `data_0` was baked in as a weight before).
/// `marked`: marksWeights(m), once for all of its parameters.
bool isCallersData(const manifest::Param &p, bool marked);
bool marksWeights(const manifest::Manifest &m);

/// The plan for the weights of `reader` (the file of --embed-params or --params-file; `flag` names it in
/// messages). A tensor names a parameter as uopc-run --inputs binds them (NAME, NAME@d, slot<N>); the
/// exporter's function arguments (input0, input1, ...) and inout parameters stay the caller's. A once step
/// whose copy is known (`copies`, per step) and reads only baked parameters is folded: its result becomes a
/// tensor. A baked parameter that only folded steps read is not stored. Throws Error (one line) for a tensor
/// that names no parameter or an output, of another dtype or size, some devices of a parameter and not all,
/// a file that holds no tensor or bakes nothing in.
ParamsPlan planParams(const manifest::Manifest &m, const safetensors::Reader &reader,
                      const std::vector<std::optional<AffineCopy>> &copies, const std::string &flag,
                      const std::string &libName);

/// Hands each tensor's bytes of the plan, in order, to `emit(tensor index, piece)` (a tensor's pieces in
/// order; every tensor gets at least one call, maybe empty): read from `reader` one tensor at a time, a folded
/// step's result computed by its copy.
void forEachTensorBytes(const ParamsPlan &plan, const manifest::Manifest &m, const safetensors::Reader &reader,
                        const std::vector<std::optional<AffineCopy>> &copies,
                        const std::function<void(size_t, std::string_view)> &emit);

/// Writes the blob to `path` (a new file, streamed) and sets plan.hash. Throws Error naming the path.
void writeParamsBlob(const std::string &path, ParamsPlan &plan, const manifest::Manifest &m,
                     const safetensors::Reader &reader, const std::vector<std::optional<AffineCopy>> &copies);

/// NAME_params.S: each tensor of the blob as a 64-byte aligned, hidden, read-only symbol taken from `binName`
/// with .incbin (GNU as and clang's integrated assembler, ELF).
std::string paramsAssembler(const ParamsPlan &plan, const std::string &libName, const std::string &binName);

/// The tensors as C definitions (`static const union { _Alignas(64) unsigned char bytes[N]; T elems[M]; }
/// SYMBOL = {{...}};`), appended to `out`, one tensor at a time. Throws Error when `out` cannot be written.
void writeParamsC(std::FILE *out, const std::string &path, const ParamsPlan &plan, const manifest::Manifest &m,
                  const safetensors::Reader &reader, const std::vector<std::optional<AffineCopy>> &copies);

/// The C text of `static uint64_t NAME_xxh64_(const unsigned char *p, size_t n)` (the library's check of a
/// params file).
std::string xxh64CSource(const std::string &libName);

} // namespace uopc
