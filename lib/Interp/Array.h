//===- Array.h - dense row-major arrays and the kernels the interpreter runs on them ===//
// One device's value of a node: a dense row-major array of Words with an optional Invalid mask. The
// functions here know nothing about the graph: shapes come in as plain integer vectors, and every
// index is checked against the array it reads.
#pragma once

#include "IR/ScalarOps.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace uopc::interp {

using Dims = std::vector<int64_t>;

/// Dense row-major data of one device. `invalid` is empty when every element is valid, else it has
/// one byte per element (1 = Invalid: "no data here").
struct Array {
  std::vector<Word> words;
  std::vector<uint8_t> invalid;

  bool hasInvalid() const { return !invalid.empty(); }
  bool isInvalid(size_t i) const { return !invalid.empty() && invalid[i]; }
};
using ArrayPtr = std::shared_ptr<const Array>;

/// Most elements one array may hold (2 GiB of words); bigger shapes are an Error, not an allocation.
inline constexpr int64_t kMaxElements = int64_t(1) << 28;

/// Product of the dims; throws Error for a negative dim or a product above kMaxElements.
int64_t numelOf(const Dims &shape);
/// "(2, 3)" for messages.
std::string dimsStr(const Dims &shape);

/// An array of `n` copies of one word (valid, or Invalid when `invalid`).
ArrayPtr filled(int64_t n, Word w, bool invalid = false);

/// A strided view of a dense array: element i (row-major in `shape`) reads
/// src[offset + sum(idx_k * strides[k])]. Strides may be 0 (broadcast) or negative (flip).
struct View {
  Dims shape, strides;
  int64_t offset = 0;
};
/// The contiguous view of an array of this shape.
View contiguous(const Dims &shape);
/// Materializes a view; throws Error if it reads outside `src`.
ArrayPtr gather(const Array &src, const View &v);

/// PAD: `src` of `shape` placed at `begin` inside an array of `newShape`; other elements are `fill`.
ArrayPtr pad(const Array &src, const Dims &shape, const Dims &begin, const Dims &newShape, Word fill,
             bool fillInvalid);
/// Concatenation of equally shaped pieces along `axis`.
ArrayPtr concat(std::span<const ArrayPtr> pieces, const Dims &pieceShape, size_t axis);

/// Right-aligned broadcast (tinygrad's _broadcast_shape): throws Error when sizes disagree.
Dims broadcastShape(std::span<const Dims> shapes);
/// The view that reads an array of `shape` broadcast to `out` (right-aligned, size-1 axes repeat).
View broadcastView(const Dims &shape, const Dims &out);

/// One operand of an elementwise kernel: its array and the view that broadcasts it to the output.
struct Operand {
  const Array *array;
  View view;
};
/// Elementwise op over `out` elements. WHERE takes (cond, a, b); CAST and BITCAST one operand of dtype
/// `in`; ALU ops operands of dtype `in`. Invalid operands poison the result (WHERE: an Invalid
/// condition, or the chosen branch being Invalid).
ArrayPtr elementwise(Op op, DType out, DType in, std::span<const Operand> operands, const Dims &outShape);

/// REDUCE of the first `k` axes of an array of `shape` with a reduce op. An Invalid element poisons its
/// lane (the output element is Invalid), as tinygrad's accumulator does: the reduce-identity pass is what
/// turns Invalid along a reduced axis into the identity. Floats accumulate in double and round once.
ArrayPtr reduceFront(const Array &src, const Dims &shape, size_t k, Op op, DType dt);
/// Elementwise reduction across several equally sized arrays (ALLREDUCE), Invalid = identity.
ArrayPtr reduceAcross(std::span<const ArrayPtr> arrays, Op op, DType dt);
/// Elementwise merge across devices: each element from the first array where it is valid, Invalid where
/// no array has it (a COPY of a `_device_num`-gated value to one device).
ArrayPtr mergeValid(std::span<const ArrayPtr> arrays);

/// BITCAST between dtypes of different item sizes: the last axis is reinterpreted as bytes.
ArrayPtr bitcastResize(const Array &src, const Dims &shape, DType from, DType to, Dims &outShape);

} // namespace uopc::interp
