//===- Safetensors.h - uopc-run --inputs/--outputs FILE.safetensors -------===//
// The safetensors format (huggingface): an 8-byte little-endian header size N, N bytes of JSON
// {"NAME": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ..., "__metadata__": {...}},
// then the tensors' bytes (offsets relative to the end of the header).
//
// Binding to a manifest: a parameter is named by its PARAM's name (manifest `name`, which
// uopc_tinygrad.export fills in; `slot<N>` for a parameter without one). A parameter on one device is the tensor NAME; on several devices each
// device's shard (or copy) is its own tensor, NAME@0, NAME@1, ... in the order of the parameter's devices.
// Written tensors have shape [numel] (elements per device); the reader checks the dtype and the byte count,
// not the shape.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace uopc::safetensors {

struct Tensor {
  std::string dtype;          ///< safetensors code: F32, F16, BF16, F64, I8..I64, U8..U64, BOOL
  std::vector<int64_t> shape;
  std::string data;
};

/// The tensors of a file by name; throws Error with a message naming the file for a malformed one.
std::map<std::string, Tensor> readFile(const std::string &path);
/// Writes the tensors (sorted by name, deterministic bytes); throws Error when the file cannot be written.
void writeFile(const std::string &path, const std::map<std::string, Tensor> &tensors);
/// uopc's dtype name (float32) to the safetensors code (F32); throws Error for a dtype safetensors lacks.
std::string codeOf(const std::string &dtype);

/// What uopc-run needs from a manifest to bind safetensors: per parameter slot, its name, dtype, bytes per
/// device, device count and role.
struct ParamBinding {
  int64_t slot = 0;
  std::string name, dtype, role;
  int64_t numel = 0, bytes = 0; ///< per device
  size_t devices = 0;
  /// the tensor name of device d's buffer (NAME, or NAME@d for a multi-device parameter)
  std::string tensorName(size_t d) const { return devices == 1 ? name : name + "@" + std::to_string(d); }
};
std::vector<ParamBinding> manifestParams(const std::string &manifestPath);

/// --inputs FILE: writes each input (and inout) parameter's tensors to raw files under `dir` and adds them
/// to inputFiles (a slot already given by --input is left alone). A missing tensor, or one of another dtype
/// or size, is an Error naming it.
void bindInputs(const std::string &manifestPath, const std::string &file, const std::string &dir,
                std::map<int64_t, std::vector<std::string>> &inputFiles);
/// --outputs FILE: adds a raw output file under `dir` for every written (output, inout) parameter not
/// already in outputFiles; returns the slots to pack.
std::vector<ParamBinding> bindOutputs(const std::string &manifestPath, const std::string &dir,
                                      std::map<int64_t, std::vector<std::string>> &outputFiles);
/// After the run: packs those parameters' raw files into FILE.
void packOutputs(const std::vector<ParamBinding> &params, const std::map<int64_t, std::vector<std::string>> &outputFiles,
                 const std::string &file);

} // namespace uopc::safetensors
