//===- Stores.cpp - STORE through buffer views, and AFTER reading them back ===//
// A store target is a chain of movement ops (and MULTI, AFTER) over a buffer PARAM. Running that chain
// on the buffer's element indices instead of its values gives, for every element of the target, the
// buffer element it names (-1 where a PAD added it): the same code moves values and indices.
#include "IR/Error.h"
#include "IR/Records.h"
#include "Interp/Evaluator.h"

namespace uopc::interp {

std::optional<std::pair<Value, SlotState *>> Evaluator::indexMap(const UOp *u) {
  std::vector<const UOp *> chain;
  const UOp *cur = u;
  while (cur->op != Op::PARAM) {
    if (cur->nsrc == 0) return std::nullopt;
    if (isMovement(cur->op) || cur->op == Op::MULTI) chain.push_back(cur);
    else if (cur->op != Op::AFTER) return std::nullopt;
    cur = cur->src(0);
  }
  if (isScalarParam(cur)) return std::nullopt;
  ParamArg pa = ParamArg::decode(cur->arg);
  auto it = slots_.find(pa.slot);
  if (it == slots_.end()) return std::nullopt;
  const SlotState &st = it->second;
  Value idx;
  idx.dtype = DType::Int64;
  idx.shape = dims(cur, cur->src(0), 0);
  if (st.axis >= 0) idx.shape[static_cast<size_t>(st.axis)] /= static_cast<int64_t>(st.data.size());
  idx.axis = st.axis;
  idx.devices = st.info.devices;
  for (size_t d = 0; d < it->second.data.size(); ++d) {
    auto a = std::make_shared<Array>();
    a->words.resize(static_cast<size_t>(it->second.info.numel));
    for (size_t i = 0; i < a->words.size(); ++i) a->words[i] = i;
    idx.per.push_back(std::move(a));
  }
  for (auto c = chain.rbegin(); c != chain.rend(); ++c) idx = movement(*c, idx, true);
  return std::make_pair(std::move(idx), &it->second);
}

void Evaluator::evalStore(const UOp *u) {
  if (u->nsrc != 2) error(u, "the interpreter supports STORE(target, value) only");
  auto target = indexMap(u->src(0));
  if (!target) error(u, "the STORE target is not a view of a buffer PARAM");
  const Value &m = target->first;
  SlotState &slot = *target->second;
  const Value &v = val(u, u->src(1));
  if (v.dtype != slot.info.dtype)
    error(u, "storing " + std::string(dtypeName(v.dtype)) + " into a " + std::string(dtypeName(slot.info.dtype)) + " buffer");
  size_t nd = m.count();
  if (v.count() > 1 && v.count() != nd)
    error(u, "storing a value on " + std::to_string(v.count()) + " devices into a buffer on " + std::to_string(nd));
  ArrayPtr cache;
  for (size_t d = 0; d < nd; ++d) {
    ArrayPtr src;
    if (m.axis < 0 && v.axis >= 0 && v.shape == m.shape && v.count() == nd) {
      src = v.per[d]; // a shard into a per-device buffer of the shard's shape (tinygrad strips the MULTI)
    } else {
      auto [arr, shp] = localOperand(u, v, d, m.full(), m.axis, nd, cache);
      src = gather(*arr, broadcastView(shp, m.shape));
    }
    const Array &idx = *m.per[d];
    std::shared_ptr<Array> &buf = slot.data.at(d);
    if (buf.use_count() > 1) buf = std::make_shared<Array>(*buf); // a PARAM read still holds the old state
    int64_t size = static_cast<int64_t>(buf->words.size());
    for (size_t i = 0; i < idx.words.size(); ++i) {
      int64_t at = asInt(idx.words[i]);
      if (at == -1 || idx.isInvalid(i) || src->isInvalid(i)) continue;
      if (at < 0 || at >= size) error(u, "internal error: store index " + std::to_string(at) + " out of bounds");
      buf->words[static_cast<size_t>(at)] = src->words[i];
    }
  }
}

ValuePtr Evaluator::evalAfter(const UOp *u) {
  if (u->nsrc < 1) error(u, "AFTER needs a source");
  auto view = indexMap(u->src(0));
  if (!view) {
    val(u, u->src(0));
    return values_.get(u->src(0));
  }
  const Value &m = view->first;
  SlotState &slot = *view->second;
  auto r = std::make_shared<Value>();
  r->dtype = slot.info.dtype;
  r->shape = m.shape;
  r->axis = m.axis;
  r->devices = m.devices;
  bool padInvalid = g_.padFill == PadFill::Invalid && r->dtype != DType::Bool;
  for (size_t d = 0; d < m.count(); ++d) {
    const Array &idx = *m.per[d];
    const Array &buf = *slot.data.at(d);
    auto out = std::make_shared<Array>();
    out->words.resize(idx.words.size());
    for (size_t i = 0; i < idx.words.size(); ++i) {
      int64_t at = asInt(idx.words[i]);
      if (at == -1) {
        if (padInvalid) {
          if (out->invalid.empty()) out->invalid.assign(idx.words.size(), 0);
          out->invalid[i] = 1;
        }
        continue;
      }
      if (at < 0 || at >= static_cast<int64_t>(buf.words.size())) error(u, "internal error: read index out of bounds");
      out->words[i] = buf.words[static_cast<size_t>(at)];
    }
    r->per.push_back(std::move(out));
  }
  return r;
}

} // namespace uopc::interp
