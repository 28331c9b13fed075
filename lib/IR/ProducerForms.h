//===- ProducerForms.h - read what tinygrad 0.14.0 writes as format v1 ----===//
// Two producers write graph documents: the development commit d1c3ae0f91 (format v1 as the spec describes
// it) and the released tinygrad 0.14.0 (../shared/corpus-0.14/README.md lists the differences). The readers
// call normalizeProducerForms() on every graph they return, so every pass, the interpreter and every
// target see one form. The rewrite is driven by content, so it is a no-op on a d1c3ae0f91 graph (except
// for weak constants inside typed ops, which both producers may write and which commit the same way):
//
//  - UNSHARD(x, r) with arg [axis] and r = RANGE(CONST ndev) of AxisType DEVICE  ->  MULTI(x) with arg axis
//  - every other use of that device RANGE (shard offsets: MUL(RANGE, 4))  ->  `_device_num` (PARAM weakint,
//    slot -1, vmin_vmax [0, ndev-1], addrspace ALU), which is what multi-lower binds per device
//  - AFTER(var, STORE(var, CONST v)) with var a scalar ALU variable (PARAM, or 0.14.0's BUFFER form) ->
//    BIND(var, CONST v); a BUFFER variable becomes the PARAM it is in a function body
//  - weak constants commit to their concrete operand's dtype (tinygrad 0.14.0's uop/weak.py): in an ALU
//    op, the weak operands take the dtype of the strong ones (WHERE: of its values; a comparison of two
//    weakfloats: float32); CAST(dt, weak CONST) is CONST dt; STORE(dst, weak) commits at dst's dtype. A
//    weakfloat expression (RECIPROCAL(3.0), WHERE(c, 0.0, -inf)) is computed at float32 (float64 for a
//    float64 use) and cast, as tinygrad does; a non-constant weakint (a RANGE, a variable, index math) is
//    CAST to the int dtype. A constant commits across kinds (weakint 3 among float32s is 3.0f); a non-constant
//    weak value among the other kind is left for the verifier to refuse. Weak values that only feed shapes
//    and indices stay weakint.
// Nodes referenced from args (UOpRef) are left as they are. Idempotent: a normalized graph is unchanged.
#pragma once

#include "IR/Graph.h"

#include <string>

namespace uopc {

/// Rewrites g (root and inputIds) to the one form; throws Error naming the node for a 0.14.0 form uopc
/// cannot express (an UNSHARD over several axes, a DEVICE range of non-constant size).
/// `where` (the file's name, when not empty) prefixes the message as the readers' own do.
void normalizeProducerForms(Graph &g, const std::string &where = "");

/// The `_device_num` PARAM of an ndev-device graph (multi-lower's and the normalizer's one node).
const UOp *deviceNumParam(Context &ctx, int64_t ndev);

} // namespace uopc
