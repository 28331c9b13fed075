//===- Types.cpp - name tables for ops, dtypes and enums ------------------===//
#include "IR/Types.h"

#include <array>

namespace uopc {
namespace {

constexpr std::array<std::string_view, kNumOps> kOpNames = {
#define UOPC_OP(Name, Group) #Name,
#include "IR/Ops.def"
};
constexpr std::array<OpGroup, kNumOps> kOpGroups = {
#define UOPC_OP(Name, Group) OpGroup::Group,
#include "IR/Ops.def"
};

struct DTypeRow {
  std::string_view name;
  unsigned size;
  DTypeKind kind;
};
constexpr DTypeRow kDTypes[] = {
#define UOPC_DTYPE(Enum, Name, Size, Kind) {Name, Size, DTypeKind::Kind},
#include "IR/DTypes.def"
};
constexpr unsigned kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

constexpr std::string_view kAxisTypes[] = {"GLOBAL", "WARP",   "LOCAL",  "LOOP",   "GROUP_REDUCE",
                                           "REDUCE", "UPCAST", "UNROLL", "THREAD", "PLACEHOLDER",
                                           "DEVICE", "WEAK"};
constexpr std::string_view kAddrSpaces[] = {"GLOBAL", "LOCAL", "REG", "ALU"};

template <typename E, size_t N> std::optional<E> lookup(const std::string_view (&names)[N], std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

} // namespace

std::string_view opName(Op op) { return kOpNames[static_cast<unsigned>(op)]; }
OpGroup opGroup(Op op) { return kOpGroups[static_cast<unsigned>(op)]; }
std::optional<Op> opFromName(std::string_view name) {
  if (name == "UNSHARD") return Op::MULTI;
  for (unsigned i = 0; i < kNumOps; ++i)
    if (kOpNames[i] == name) return static_cast<Op>(i);
  return std::nullopt;
}

std::string_view dtypeName(DType dt) { return kDTypes[static_cast<unsigned>(dt)].name; }
unsigned dtypeSize(DType dt) { return kDTypes[static_cast<unsigned>(dt)].size; }
DTypeKind dtypeKind(DType dt) { return kDTypes[static_cast<unsigned>(dt)].kind; }
std::optional<DType> dtypeFromName(std::string_view name) {
  for (unsigned i = 0; i < kNumDTypes; ++i)
    if (kDTypes[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::string_view axisTypeName(AxisType a) { return kAxisTypes[static_cast<unsigned>(a)]; }
std::optional<AxisType> axisTypeFromName(std::string_view s) { return lookup<AxisType>(kAxisTypes, s); }
std::string_view addrSpaceName(AddrSpace a) { return kAddrSpaces[static_cast<unsigned>(a)]; }
std::optional<AddrSpace> addrSpaceFromName(std::string_view s) { return lookup<AddrSpace>(kAddrSpaces, s); }

} // namespace uopc
