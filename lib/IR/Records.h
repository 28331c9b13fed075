//===- Records.h - tinygrad dataclasses used as args ----------------------===//
// ParamArg, CallInfo, KernelInfo and BufferizeOpts with their defaults. A record arg stores only the
// fields that differ from their default, in declaration order, so equal records are one interned Arg.
#pragma once

#include "IR/UOp.h"

#include <optional>
#include <string>
#include <vector>

namespace uopc {

/// The declared fields of a known dataclass, or null for a class uopc does not know.
struct RecordField {
  std::string_view name;
  bool required; ///< no default: must be present
};
const std::vector<RecordField> *knownRecordFields(std::string_view className);
/// True when `value` equals the default of `className.field` (null stands for None).
bool isRecordDefault(std::string_view className, std::string_view field, const Arg *value);

/// Builds a record arg: drops defaults, orders known fields canonically (unknown classes: by name).
/// Throws Error for an unknown field of a known class or a missing required field.
const Arg *makeRecord(Context &ctx, std::string_view className,
                      std::vector<std::pair<std::string_view, const Arg *>> fields);

/// tinygrad's ParamArg, decoded.
struct ParamArg {
  int64_t slot = -1;
  DType dtype = DType::Void;
  std::optional<std::pair<int64_t, int64_t>> vminVmax;
  std::optional<int64_t> multipleOf;
  std::optional<std::string> name;
  AddrSpace addrspace = AddrSpace::GLOBAL;
  std::optional<int64_t> axis;
  std::vector<std::string> devices; ///< empty: no device; one entry: a string; more: a tuple
  bool deviceIsTuple = false;
  bool isVolatile = false;
  /// uopc's own field (no tinygrad one): the shape of the tensor the exporter bound to the parameter, its
  /// elements in order in the buffer (the manifest's and uopc-run's `shape`); none: a flat buffer.
  std::optional<std::vector<int64_t>> shape;
  static constexpr size_t kMaxParamDims = 32;
  /// uopc's own field: the exporter's word that the parameter is a weight (a model's state-dict tensor, an
  /// ONNX initializer), the same in every run, not the caller's data: a pack of it runs once (pass `pack`).
  bool weight = false;

  /// Decodes a ParamArg record; throws Error naming the bad field.
  static ParamArg decode(const Arg *arg);
  /// Only the slot of a ParamArg record (decode() copies the device list, which may be 20,000 long).
  static int64_t slotOf(const Arg *arg);
  const Arg *encode(Context &ctx) const;
};

/// The elements of a shape (ParamArg.shape, the manifest's `shape`): the product of its sizes; nullopt for a
/// negative size or a product past int64.
std::optional<int64_t> shapeElements(const std::vector<int64_t> &dims);
/// A shape as messages write it: [2, 3, 4].
std::string dimsText(const std::vector<int64_t> &dims);

/// tinygrad's BufferizeOpts, decoded.
struct BufferizeOpts {
  std::vector<std::string> devices;
  bool deviceIsTuple = false;
  AddrSpace addrspace = AddrSpace::GLOBAL;
  bool removable = true;
  static BufferizeOpts decode(const Arg *arg);
  const Arg *encode(Context &ctx) const;
};

/// A device arg (string or tuple of strings) as a list; throws Error for anything else.
std::vector<std::string> decodeDevices(const Arg *arg);
const Arg *encodeDevices(Context &ctx, const std::vector<std::string> &devices, bool asTuple);

} // namespace uopc
