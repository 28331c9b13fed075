//===- Records.cpp - known dataclasses, defaults and typed views ----------===//
#include "IR/Records.h"

#include "IR/Error.h"

#include <algorithm>

namespace uopc {
namespace {

enum class Default { Required, Null, False, True, Zero, EmptyTuple, StrTest, Global };
struct FieldRow {
  std::string_view cls, field;
  Default def;
};
// One row per declared field, in declaration order (the order a record stores them in).
constexpr FieldRow kFields[] = {
    {"ParamArg", "slot", Default::Required},       {"ParamArg", "dtype", Default::Required},
    {"ParamArg", "vmin_vmax", Default::Null},      {"ParamArg", "multiple_of", Default::Null},
    {"ParamArg", "name", Default::Null},           {"ParamArg", "addrspace", Default::Global},
    {"ParamArg", "axis", Default::Null},           {"ParamArg", "device", Default::Null},
    {"ParamArg", "volatile", Default::False},      {"ParamArg", "shape", Default::Null},
    {"ParamArg", "weight", Default::False},
    {"CallInfo", "grad_fxn", Default::Null},
    {"CallInfo", "name", Default::Null},           {"CallInfo", "precompile", Default::False},
    {"CallInfo", "precompile_backward", Default::False}, {"CallInfo", "aux", Default::Null},
    {"KernelInfo", "name", Default::StrTest},      {"KernelInfo", "axis_types", Default::EmptyTuple},
    {"KernelInfo", "dont_use_locals", Default::False}, {"KernelInfo", "applied_opts", Default::EmptyTuple},
    {"KernelInfo", "opts_to_apply", Default::Null}, {"KernelInfo", "estimates", Default::Null},
    {"KernelInfo", "beam", Default::Zero},         {"KernelInfo", "once", Default::False},
    {"KernelInfo", "blocked", Default::EmptyTuple}, {"BufferizeOpts", "device", Default::Null},
    {"BufferizeOpts", "addrspace", Default::Global}, {"BufferizeOpts", "removable", Default::True},
};

const FieldRow *findRow(std::string_view cls, std::string_view field) {
  for (const FieldRow &r : kFields)
    if (r.cls == cls && r.field == field) return &r;
  return nullptr;
}

bool matchesDefault(Default d, const Arg *v) {
  switch (d) {
  case Default::Required: return false;
  case Default::Null: return v == nullptr;
  case Default::False: return v && v->kind == ArgKind::Bool && !v->b();
  case Default::True: return v && v->kind == ArgKind::Bool && v->b();
  case Default::Zero: return v && v->kind == ArgKind::Int && v->i() == 0;
  case Default::EmptyTuple: return v && v->kind == ArgKind::Tuple && v->count == 0;
  case Default::StrTest: return v && v->kind == ArgKind::String && v->str() == "test";
  case Default::Global: return v && v->kind == ArgKind::AddrSpace && v->addrSpace() == AddrSpace::GLOBAL;
  }
  return false;
}

std::string where(std::string_view cls, std::string_view field) {
  return std::string(cls) + "." + std::string(field);
}

int64_t needInt(const Arg *a, std::string_view cls, std::string_view f) {
  if (!a || a->kind != ArgKind::Int) fail(where(cls, f) + " must be an integer");
  return a->i();
}

} // namespace

const std::vector<RecordField> *knownRecordFields(std::string_view cls) {
  static const std::vector<std::pair<std::string_view, std::vector<RecordField>>> table = [] {
    std::vector<std::pair<std::string_view, std::vector<RecordField>>> t;
    for (const FieldRow &r : kFields) {
      if (t.empty() || t.back().first != r.cls) t.push_back({r.cls, {}});
      t.back().second.push_back({r.field, r.def == Default::Required});
    }
    return t;
  }();
  for (auto &[name, fields] : table)
    if (name == cls) return &fields;
  return nullptr;
}

bool isRecordDefault(std::string_view cls, std::string_view field, const Arg *value) {
  const FieldRow *r = findRow(cls, field);
  return r && matchesDefault(r->def, value);
}

const Arg *makeRecord(Context &ctx, std::string_view cls, std::vector<std::pair<std::string_view, const Arg *>> fields) {
  for (size_t i = 0; i < fields.size(); ++i)
    for (size_t j = i + 1; j < fields.size(); ++j)
      if (fields[i].first == fields[j].first) fail(where(cls, fields[i].first) + " is given twice");
  const std::vector<RecordField> *known = knownRecordFields(cls);
  std::vector<std::pair<std::string_view, const Arg *>> kept;
  if (!known) {
    std::sort(fields.begin(), fields.end(), [](auto &a, auto &b) { return a.first < b.first; });
    return ctx.argRecord(cls, fields);
  }
  for (auto &[k, v] : fields)
    if (!findRow(cls, k)) fail(std::string(cls) + " has no field '" + std::string(k) + "'");
  for (const RecordField &rf : *known) {
    auto it = std::find_if(fields.begin(), fields.end(), [&](auto &p) { return p.first == rf.name; });
    if (it == fields.end()) {
      if (rf.required) fail(where(cls, rf.name) + " is required");
      continue;
    }
    if (isRecordDefault(cls, rf.name, it->second)) continue;
    kept.push_back({rf.name, it->second});
  }
  return ctx.argRecord(cls, kept);
}

std::vector<std::string> decodeDevices(const Arg *a) {
  std::vector<std::string> out;
  if (!a) return out;
  if (a->kind == ArgKind::String) {
    out.emplace_back(a->str());
    return out;
  }
  if (a->kind != ArgKind::Tuple) fail("a device must be a string or a list of strings");
  for (const Arg *e : a->elems()) {
    if (!e || e->kind != ArgKind::String) fail("a device must be a string or a list of strings");
    out.emplace_back(e->str());
  }
  return out;
}

const Arg *encodeDevices(Context &ctx, const std::vector<std::string> &devices, bool asTuple) {
  if (devices.empty()) return nullptr;
  if (!asTuple && devices.size() == 1) return ctx.argString(devices[0]);
  std::vector<const Arg *> e;
  for (const std::string &d : devices) e.push_back(ctx.argString(d));
  return ctx.argTuple(e);
}

std::optional<int64_t> shapeElements(const std::vector<int64_t> &dims) {
  int64_t total = 1;
  for (int64_t n : dims) {
    if (n < 0 || (n != 0 && total > INT64_MAX / n)) return std::nullopt;
    total *= n;
  }
  return total;
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string t = "[";
  for (size_t i = 0; i < dims.size(); ++i) t += (i ? ", " : "") + std::to_string(dims[i]);
  return t + "]";
}

int64_t ParamArg::slotOf(const Arg *a) {
  if (!a || a->kind != ArgKind::Record || a->str() != "ParamArg") fail("arg must be a ParamArg");
  return needInt(a->field("slot"), "ParamArg", "slot");
}

ParamArg ParamArg::decode(const Arg *a) {
  if (!a || a->kind != ArgKind::Record || a->str() != "ParamArg") fail("arg must be a ParamArg");
  ParamArg p;
  p.slot = needInt(a->field("slot"), "ParamArg", "slot");
  const Arg *dt = a->field("dtype");
  if (!dt || dt->kind != ArgKind::DType) fail("ParamArg.dtype must be a DType");
  p.dtype = dt->dtype();
  if (const Arg *vv = a->field("vmin_vmax")) {
    if (vv->kind != ArgKind::Tuple || vv->count != 2) fail("ParamArg.vmin_vmax must be [lo, hi]");
    p.vminVmax = {needInt(vv->elems()[0], "ParamArg", "vmin_vmax"), needInt(vv->elems()[1], "ParamArg", "vmin_vmax")};
  }
  if (const Arg *m = a->field("multiple_of")) p.multipleOf = needInt(m, "ParamArg", "multiple_of");
  if (const Arg *n = a->field("name")) {
    if (n->kind != ArgKind::String) fail("ParamArg.name must be a string");
    p.name = std::string(n->str());
  }
  if (const Arg *s = a->field("addrspace")) {
    if (s->kind != ArgKind::AddrSpace) fail("ParamArg.addrspace must be an AddrSpace");
    p.addrspace = s->addrSpace();
  }
  if (const Arg *x = a->field("axis")) p.axis = needInt(x, "ParamArg", "axis");
  if (const Arg *d = a->field("device")) {
    p.devices = decodeDevices(d);
    p.deviceIsTuple = d->kind == ArgKind::Tuple;
  }
  if (const Arg *v = a->field("volatile")) {
    if (v->kind != ArgKind::Bool) fail("ParamArg.volatile must be a bool");
    p.isVolatile = v->b();
  }
  if (const Arg *sh = a->field("shape")) {
    // (uopc's own field: the exporter's shape of the tensor, whose elements the buffer holds in order)
    if (sh->kind != ArgKind::Tuple || sh->count > kMaxParamDims)
      fail("ParamArg.shape must be a list of at most " + std::to_string(kMaxParamDims) + " sizes");
    std::vector<int64_t> dims;
    for (const Arg *d : sh->elems()) {
      int64_t n = needInt(d, "ParamArg", "shape");
      if (n < 0) fail("ParamArg.shape has a negative size (" + std::to_string(n) + ")");
      dims.push_back(n);
    }
    if (!shapeElements(dims)) fail("ParamArg.shape has more elements than a 64-bit count holds");
    p.shape = std::move(dims);
  }
  if (const Arg *w = a->field("weight")) {
    if (w->kind != ArgKind::Bool) fail("ParamArg.weight must be a bool");
    p.weight = w->b();
  }
  return p;
}

const Arg *ParamArg::encode(Context &ctx) const {
  std::vector<std::pair<std::string_view, const Arg *>> f;
  f.push_back({"slot", ctx.argInt(slot)});
  f.push_back({"dtype", ctx.argDType(dtype)});
  if (vminVmax) f.push_back({"vmin_vmax", ctx.argTuple({ctx.argInt(vminVmax->first), ctx.argInt(vminVmax->second)})});
  if (multipleOf) f.push_back({"multiple_of", ctx.argInt(*multipleOf)});
  if (name) f.push_back({"name", ctx.argString(*name)});
  f.push_back({"addrspace", ctx.argAddrSpace(addrspace)});
  if (axis) f.push_back({"axis", ctx.argInt(*axis)});
  f.push_back({"device", encodeDevices(ctx, devices, deviceIsTuple)});
  f.push_back({"volatile", ctx.argBool(isVolatile)});
  if (shape) {
    std::vector<const Arg *> dims;
    for (int64_t d : *shape) dims.push_back(ctx.argInt(d));
    f.push_back({"shape", ctx.argTuple(dims)});
  }
  f.push_back({"weight", ctx.argBool(weight)});
  return makeRecord(ctx, "ParamArg", std::move(f));
}

BufferizeOpts BufferizeOpts::decode(const Arg *a) {
  if (!a || a->kind != ArgKind::Record || a->str() != "BufferizeOpts") fail("arg must be a BufferizeOpts");
  BufferizeOpts o;
  if (const Arg *d = a->field("device")) {
    o.devices = decodeDevices(d);
    o.deviceIsTuple = d->kind == ArgKind::Tuple;
  }
  if (const Arg *s = a->field("addrspace")) {
    if (s->kind != ArgKind::AddrSpace) fail("BufferizeOpts.addrspace must be an AddrSpace");
    o.addrspace = s->addrSpace();
  }
  if (const Arg *r = a->field("removable")) {
    if (r->kind != ArgKind::Bool) fail("BufferizeOpts.removable must be a bool");
    o.removable = r->b();
  }
  return o;
}

const Arg *BufferizeOpts::encode(Context &ctx) const {
  std::vector<std::pair<std::string_view, const Arg *>> f;
  f.push_back({"device", encodeDevices(ctx, devices, deviceIsTuple)});
  f.push_back({"addrspace", ctx.argAddrSpace(addrspace)});
  f.push_back({"removable", ctx.argBool(removable)});
  return makeRecord(ctx, "BufferizeOpts", std::move(f));
}

} // namespace uopc
