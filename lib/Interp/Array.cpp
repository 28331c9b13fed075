//===- Array.cpp - dense arrays, strided gathers, elementwise and reduce kernels ===//
#include "Interp/Array.h"

#include "IR/Error.h"

#include <algorithm>
#include <cstring>

namespace uopc::interp {
namespace {

/// Walks the row-major indices of `shape`, keeping one flat offset per view up to date.
class Odometer {
public:
  Odometer(const Dims &shape, std::vector<const View *> views) : shape_(shape), views_(std::move(views)) {
    idx_.assign(shape.size(), 0);
    for (const View *v : views_) off_.push_back(v->offset);
  }
  int64_t offset(size_t view) const { return off_[view]; }
  void next() {
    for (size_t k = shape_.size(); k-- > 0;) {
      ++idx_[k];
      for (size_t v = 0; v < views_.size(); ++v) off_[v] += views_[v]->strides[k];
      if (idx_[k] < shape_[k]) return;
      for (size_t v = 0; v < views_.size(); ++v) off_[v] -= views_[v]->strides[k] * shape_[k];
      idx_[k] = 0;
    }
  }

private:
  const Dims &shape_;
  std::vector<const View *> views_;
  Dims idx_;
  std::vector<int64_t> off_;
};

/// Throws unless every offset the view can produce lies in [0, size).
void checkBounds(const View &v, size_t size) {
  if (v.shape.size() != v.strides.size()) fail("internal error: view rank mismatch");
  int64_t lo = v.offset, hi = v.offset;
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] == 0) return; // no element is read
    int64_t span = v.strides[k] * (v.shape[k] - 1);
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0 || hi >= static_cast<int64_t>(size))
    fail("internal error: a view reads outside its array (offsets " + std::to_string(lo) + ".." +
         std::to_string(hi) + ", size " + std::to_string(size) + ")");
}

Dims rowMajorStrides(const Dims &shape) {
  Dims s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

} // namespace

int64_t numelOf(const Dims &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("negative dimension in shape " + dimsStr(shape));
    if (d != 0 && n > kMaxElements / d) fail("shape " + dimsStr(shape) + " is too large for the interpreter");
    n *= d;
  }
  return n;
}

std::string dimsStr(const Dims &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

ArrayPtr filled(int64_t n, Word w, bool invalid) {
  auto a = std::make_shared<Array>();
  a->words.assign(static_cast<size_t>(n), w);
  if (invalid) a->invalid.assign(static_cast<size_t>(n), 1);
  return a;
}

View contiguous(const Dims &shape) { return View{shape, rowMajorStrides(shape), 0}; }

ArrayPtr gather(const Array &src, const View &v) {
  int64_t n = numelOf(v.shape);
  auto out = std::make_shared<Array>();
  out->words.resize(static_cast<size_t>(n));
  if (n == 0) return out;
  checkBounds(v, src.words.size());
  if (src.hasInvalid()) out->invalid.resize(static_cast<size_t>(n));
  Odometer it(v.shape, {&v});
  for (int64_t i = 0; i < n; ++i, it.next()) {
    size_t o = static_cast<size_t>(it.offset(0));
    out->words[i] = src.words[o];
    if (src.hasInvalid()) out->invalid[i] = src.invalid[o];
  }
  return out;
}

ArrayPtr pad(const Array &src, const Dims &shape, const Dims &begin, const Dims &newShape, Word fill,
             bool fillInvalid) {
  if (shape.size() != begin.size() || shape.size() != newShape.size()) fail("internal error: pad rank mismatch");
  for (size_t k = 0; k < shape.size(); ++k)
    if (begin[k] < 0 || begin[k] + shape[k] > newShape[k])
      fail("pad of " + dimsStr(shape) + " at offset " + dimsStr(begin) + " does not fit in " + dimsStr(newShape));
  int64_t n = numelOf(newShape), m = numelOf(shape);
  auto out = std::make_shared<Array>();
  out->words.assign(static_cast<size_t>(n), fill);
  if (fillInvalid || src.hasInvalid()) out->invalid.assign(static_cast<size_t>(n), fillInvalid ? 1 : 0);
  if (m == 0) return out;
  View dst{shape, rowMajorStrides(newShape), 0};
  for (size_t k = 0; k < shape.size(); ++k) dst.offset += begin[k] * dst.strides[k];
  checkBounds(dst, out->words.size());
  if (static_cast<int64_t>(src.words.size()) != m) fail("internal error: pad source size mismatch");
  Odometer it(shape, {&dst});
  for (int64_t i = 0; i < m; ++i, it.next()) {
    size_t o = static_cast<size_t>(it.offset(0));
    out->words[o] = src.words[i];
    if (!out->invalid.empty()) out->invalid[o] = src.isInvalid(i);
  }
  return out;
}

ArrayPtr concat(std::span<const ArrayPtr> pieces, const Dims &pieceShape, size_t axis) {
  if (axis >= pieceShape.size()) fail("internal error: concat axis out of range");
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= pieceShape[k];
  for (size_t k = axis; k < pieceShape.size(); ++k) inner *= pieceShape[k];
  bool anyInvalid = false;
  for (const ArrayPtr &p : pieces) {
    if (static_cast<int64_t>(p->words.size()) != outer * inner) fail("internal error: concat piece size mismatch");
    anyInvalid |= p->hasInvalid();
  }
  auto out = std::make_shared<Array>();
  int64_t total = numelOf({outer, inner * static_cast<int64_t>(pieces.size())});
  out->words.reserve(static_cast<size_t>(total));
  if (anyInvalid) out->invalid.reserve(static_cast<size_t>(total));
  for (int64_t o = 0; o < outer; ++o)
    for (const ArrayPtr &p : pieces) {
      auto b = p->words.begin() + o * inner;
      out->words.insert(out->words.end(), b, b + inner);
      if (!anyInvalid) continue;
      if (p->hasInvalid()) {
        auto ib = p->invalid.begin() + o * inner;
        out->invalid.insert(out->invalid.end(), ib, ib + inner);
      } else {
        out->invalid.insert(out->invalid.end(), static_cast<size_t>(inner), 0);
      }
    }
  return out;
}

Dims broadcastShape(std::span<const Dims> shapes) {
  size_t rank = 0;
  for (const Dims &s : shapes) rank = std::max(rank, s.size());
  Dims out(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    int64_t size = 1;
    for (const Dims &s : shapes) {
      size_t pad = rank - s.size();
      if (k < pad) continue;
      int64_t d = s[k - pad];
      if (d == 1) continue;
      if (size != 1 && size != d) {
        std::string all;
        for (const Dims &t : shapes) all += (all.empty() ? "" : " and ") + dimsStr(t);
        fail("shapes " + all + " cannot be broadcast together");
      }
      size = d;
    }
    out[k] = size;
  }
  return out;
}

View broadcastView(const Dims &shape, const Dims &out) {
  if (shape.size() > out.size()) fail("cannot broadcast " + dimsStr(shape) + " to " + dimsStr(out));
  size_t nleft = out.size() - shape.size();
  Dims strides = rowMajorStrides(shape);
  View v{out, Dims(out.size(), 0), 0};
  for (size_t k = 0; k < shape.size(); ++k) {
    int64_t o = out[nleft + k];
    if (shape[k] == o) v.strides[nleft + k] = strides[k];
    else if (shape[k] != 1) fail("cannot broadcast " + dimsStr(shape) + " to " + dimsStr(out));
  }
  return v;
}

ArrayPtr elementwise(Op op, DType out, DType in, std::span<const Operand> operands, const Dims &outShape) {
  int64_t n = numelOf(outShape);
  size_t nops = operands.size();
  if (nops == 0 || nops > 3) fail("internal error: elementwise arity");
  std::vector<const View *> views;
  bool anyInvalid = false;
  for (const Operand &o : operands) {
    if (o.view.shape != outShape) fail("internal error: operand view shape mismatch");
    if (n > 0) checkBounds(o.view, o.array->words.size());
    views.push_back(&o.view);
    anyInvalid |= o.array->hasInvalid();
  }
  auto res = std::make_shared<Array>();
  res->words.resize(static_cast<size_t>(n));
  if (anyInvalid) res->invalid.assign(static_cast<size_t>(n), 0);
  Odometer it(outShape, views);
  Word w[3] = {0, 0, 0};
  bool inv[3] = {false, false, false};
  for (int64_t i = 0; i < n; ++i, it.next()) {
    for (size_t j = 0; j < nops; ++j) {
      size_t o = static_cast<size_t>(it.offset(j));
      w[j] = operands[j].array->words[o];
      inv[j] = operands[j].array->isInvalid(o);
    }
    Word r = 0;
    bool bad = false;
    if (op == Op::WHERE) {
      size_t pick = w[0] ? 1 : 2;
      bad = inv[0] || inv[pick];
      r = w[pick];
    } else {
      for (size_t j = 0; j < nops; ++j) bad |= inv[j];
      if (!bad) {
        if (op == Op::CAST) r = castWord(in, out, w[0]);
        else if (op == Op::BITCAST) r = bitcastWord(in, out, w[0]);
        else r = aluWord(op, out, in, w);
      }
    }
    res->words[i] = bad ? 0 : r;
    if (bad) res->invalid[i] = 1;
  }
  return res;
}

ArrayPtr reduceFront(const Array &src, const Dims &shape, size_t k, Op op, DType dt) {
  if (k > shape.size()) fail("internal error: reduce of more axes than the shape has");
  Dims kept(shape.begin() + static_cast<long>(k), shape.end());
  int64_t rows = numelOf(Dims(shape.begin(), shape.begin() + static_cast<long>(k))), m = numelOf(kept);
  if (static_cast<int64_t>(src.words.size()) != rows * m) fail("internal error: reduce source size mismatch");
  auto out = std::make_shared<Array>();
  out->words.assign(static_cast<size_t>(m), reduceIdentity(op, dt));
  if (src.hasInvalid()) out->invalid.assign(static_cast<size_t>(m), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < m; ++j) {
      size_t i = static_cast<size_t>(r * m + j);
      if (src.isInvalid(i)) out->invalid[static_cast<size_t>(j)] = 1; // one Invalid element poisons its lane
      else out->words[j] = reduceStep(op, dt, out->words[j], src.words[i]);
    }
  if (isFloatDType(dt))
    for (Word &w : out->words) w = fromDouble(roundFloat(dt, asDouble(w)));
  return out;
}

ArrayPtr reduceAcross(std::span<const ArrayPtr> arrays, Op op, DType dt) {
  if (arrays.empty()) fail("internal error: reduce across no arrays");
  size_t m = arrays[0]->words.size();
  auto out = std::make_shared<Array>();
  out->words.assign(m, reduceIdentity(op, dt));
  for (const ArrayPtr &a : arrays) {
    if (a->words.size() != m) fail("ALLREDUCE of arrays of different sizes");
    for (size_t j = 0; j < m; ++j)
      if (!a->isInvalid(j)) out->words[j] = reduceStep(op, dt, out->words[j], a->words[j]);
  }
  if (isFloatDType(dt))
    for (Word &w : out->words) w = fromDouble(roundFloat(dt, asDouble(w)));
  return out;
}

ArrayPtr bitcastResize(const Array &src, const Dims &shape, DType from, DType to, Dims &outShape) {
  size_t a = dtypeSize(from), b = dtypeSize(to);
  if (shape.empty() || a == 0 || b == 0) fail("BITCAST between item sizes needs a last axis");
  int64_t last = shape.back();
  if ((last * static_cast<int64_t>(a)) % static_cast<int64_t>(b) != 0)
    fail("BITCAST of last axis " + std::to_string(last) + " from " + std::string(dtypeName(from)) + " to " +
         std::string(dtypeName(to)) + " does not divide evenly");
  outShape = shape;
  outShape.back() = last * static_cast<int64_t>(a) / static_cast<int64_t>(b);
  int64_t rows = numelOf(shape) / std::max<int64_t>(last, 1), newLast = outShape.back();
  auto out = std::make_shared<Array>();
  out->words.resize(static_cast<size_t>(numelOf(outShape)));
  if (src.hasInvalid()) out->invalid.assign(out->words.size(), 0);
  std::vector<unsigned char> bytes(static_cast<size_t>(last) * a);
  for (int64_t r = 0; r < rows && last > 0; ++r) {
    bool rowInvalid = false;
    for (int64_t j = 0; j < last; ++j) {
      size_t i = static_cast<size_t>(r * last + j);
      storeWord(from, src.words[i], bytes.data() + j * a);
      rowInvalid |= src.isInvalid(i);
    }
    for (int64_t j = 0; j < newLast; ++j) {
      size_t i = static_cast<size_t>(r * newLast + j);
      out->words[i] = loadWord(to, bytes.data() + j * b);
      if (rowInvalid) out->invalid[i] = 1;
    }
  }
  return out;
}

ArrayPtr mergeValid(std::span<const ArrayPtr> arrays) {
  if (arrays.empty()) fail("internal error: merge of no arrays");
  if (!arrays[0]->hasInvalid()) return arrays[0];
  auto out = std::make_shared<Array>(*arrays[0]);
  for (size_t k = 1; k < arrays.size(); ++k) {
    const Array &a = *arrays[k];
    if (a.words.size() != out->words.size()) fail("internal error: merge of arrays of different sizes");
    for (size_t i = 0; i < out->words.size(); ++i)
      if (out->invalid[i] && !a.isInvalid(i)) {
        out->words[i] = a.words[i];
        out->invalid[i] = 0;
      }
  }
  if (std::find(out->invalid.begin(), out->invalid.end(), 1) == out->invalid.end()) out->invalid.clear();
  return out;
}

} // namespace uopc::interp
