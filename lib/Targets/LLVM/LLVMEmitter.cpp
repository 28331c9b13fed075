//===- LLVMEmitter.cpp - renders one linearized kernel CALL as an LLVM IR module (IRBuilder) ===//
// One loop over the kernel's LINEAR items (lib/Passes/Linearize.cpp), as the C target's: RANGE opens a
// loop (a condition block, a body, an exit), END closes it, IF/ENDIF branch around a guarded thread,
// REDUCE allocates an accumulator and STORE(REDUCE, x) updates it, every other value is built at the
// current insertion point. Nothing is placed or proven here: order, loops and bounds checks are the IR's.
// Loop counters and accumulators live in allocas that -O2's mem2reg turns into phis. Every value carries a
// validity flag (nullptr = always valid).
// Emitter is a ValueBuilder (ValueBuilder.cpp), which builds the values: the dtypes' types and constants,
// CAST and BITCAST (by the pair of dtypes), and the ALU ops from Targets/OpSpelling.def's LLVM columns
// (alu(); their table is here, after Emitter, whose functions the Call form names). Code here builds what is
// not one form per op: WHERE (it selects a validity too), loads and stores, and the accumulators' updates
// (the reduce op in the accumulator's own type: not rounded to float16 each step, integers not widened to
// 64 bits).
//
// The GPU mappings (LLVMTarget.h) read the thread coordinates linearize put in the IR (SPECIAL gidx0 and
// lidx0, whose sizes are the launch): from the special registers (PTX), or, on the host, from a loop over
// every thread of the launch (GridOnHost: the mapping checked on a machine without a GPU).
//
// Target machines, the -O2 pipeline, libdevice and PTX output are in Machines.cpp.
#include "Targets/LLVM/Backend.h"
#include "Targets/LLVM/Machines.h"
#include "Targets/LLVM/ValueBuilder.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/ScalarOps.h"
#include "Targets/CTarget.h"
#include "Targets/KernelABI.h"
#include "Targets/OpSpelling.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

using namespace llvmbackend::detail;

/// One open loop.
struct Loop {
  const UOp *range = nullptr;
  llvm::BasicBlock *header = nullptr; ///< the loop's condition block
  llvm::BasicBlock *exit = nullptr;   ///< where the code goes on once the loop closes
  llvm::AllocaInst *counter = nullptr;
  bool enclosesLanes = false; ///< a loop of vector lanes (KernelABI.h) opens directly inside it
};

struct Emitter : ValueBuilder {
  Context &ctx;
  int64_t deviceNum;
  llvm::Function *fn = nullptr;
  llvm::BasicBlock *entry = nullptr;
  std::vector<std::unique_ptr<Loop>> loops; ///< every loop opened (open ones are on `open`)
  std::vector<Loop *> open;
  std::vector<bool> laneLoops; ///< per RANGE item: a loop of independent lanes (KernelABI.h)
  /// per RANGE item: the padded read whose products are all its lanes add (paddedLaneGates, KernelABI.h)
  std::vector<const UOp *> paddedLaneGates;
  size_t loopCount = 0;        ///< the RANGE items opened so far
  std::vector<llvm::BasicBlock *> ifs; ///< the block after each open IF
  std::unordered_map<const UOp *, Val> memo; ///< each value's latest definition
  std::unordered_map<const UOp *, Value *> sharedPtrs; ///< a block's shared BUFFERs
  struct Acc {
    llvm::AllocaInst *value = nullptr, *ok = nullptr; ///< [count x T] and [count x i1] with lanes
    Loop *outer = nullptr; ///< the loop the accumulator is defined in (nullptr: the function)
    bool poisoned = false; ///< an Invalid lane was accumulated: `ok` exists (ensureOk)
    llvm::Instruction *initEnd = nullptr; ///< the last instruction setting `value` to the identity
    std::vector<const UOp *> lanes; ///< an array accumulator's lanes (IR/Kernel.h), empty for a scalar
    int64_t count = 1;
  };
  /// The accumulator's element (and validity flag) for its lanes' current loop counters.
  std::pair<Value *, Value *> accSlot(const Acc &a, llvm::Type *T) {
    if (a.lanes.empty()) return {a.value, a.ok};
    Value *k = b.getInt64(0);
    int64_t stride = a.count;
    for (const UOp *r : a.lanes) {
      stride /= static_cast<int64_t>(*constBound(r->src(0)));
      k = b.CreateAdd(k, b.CreateMul(ext64(val(r).v, r->dtype), b.getInt64(stride)));
    }
    return {b.CreateInBoundsGEP(llvm::ArrayType::get(T, static_cast<uint64_t>(a.count)), a.value, {b.getInt64(0), k}),
            a.ok ? b.CreateInBoundsGEP(llvm::ArrayType::get(b.getInt1Ty(), static_cast<uint64_t>(a.count)), a.ok, {b.getInt64(0), k})
                 : nullptr};
  }
  std::unordered_map<const UOp *, Acc> accs;
  KernelABI abi; ///< the function's arguments
  std::map<std::string, Value *> varValues;
  std::map<int64_t, Value *> bufArgs;

  // ---- the GPU mappings --------------------------------------------------------------------------------
  GpuLaunch launch;
  // GridOnHost: a loop over the blocks, in it one loop over the block's threads per stretch between
  // barriers, each `for (i = n; i-- > 0;)` (last to first)
  struct Countdown {
    llvm::AllocaInst *addr = nullptr;
    llvm::BasicBlock *cond = nullptr, *exit = nullptr;
    Value *index = nullptr; ///< i64, in the body
  };
  Countdown blocks, lanes; ///< gidx0's loop and the current stretch's lidx0 loop
  /// Opens a countdown loop over n at the insertion point (reusing c's counter slot, if any).
  void beginCountdown(Countdown &c, int64_t n, const std::string &name) {
    if (!c.addr) c.addr = makeAlloca(b.getInt64Ty(), name + ".addr");
    b.CreateStore(i64(static_cast<uint64_t>(n)), c.addr);
    c.cond = llvm::BasicBlock::Create(lc, name + ".cond", fn);
    auto *body = llvm::BasicBlock::Create(lc, name + ".body", fn);
    c.exit = llvm::BasicBlock::Create(lc, name + ".end", fn);
    b.CreateBr(c.cond);
    b.SetInsertPoint(c.cond);
    b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), c.addr), i64(0)), body, c.exit);
    b.SetInsertPoint(body);
    c.index = b.CreateSub(b.CreateLoad(b.getInt64Ty(), c.addr), i64(1), name);
  }
  void endCountdown(Countdown &c) {
    b.CreateStore(c.index, c.addr);
    b.CreateBr(c.cond);
    b.SetInsertPoint(c.exit);
  }
  /// A stretch's loop over the block's threads; what linearize placed before a barrier is computed again
  /// after it, so nothing from the stretch before is used.
  void beginLanes() {
    beginCountdown(lanes, launch.local[0], "lidx");
    memo.clear();
  }
  Value *threadLo = nullptr, *threadHi = nullptr; ///< a kernel split across CPU threads: its [lo, hi)

  Emitter(Context &c, int64_t dev, llvm::Module &m) : ValueBuilder(m), ctx(c), deviceNum(dev) {}
  bool gpu() const { return mapping != Mapping::Loops; }

  // ---- analysis -----------------------------------------------------------------------------------------
  void analyze(const UOp *body) {
    for (const UOp *u : toposort(body)) {
      if (u->op == Op::SPECIAL) {
        if (!gpu()) failAt(u, "a GPU thread coordinate: the loops mapping renders none (linearize without grid)");
        auto n = u->nsrc ? constBound(u->src(0)) : std::nullopt;
        std::string_view which = u->arg && u->arg->kind == ArgKind::String ? u->arg->str() : "";
        if (!n || *n < 1 || *n > INT32_MAX || (which != "gidx0" && which != "lidx0"))
          failAt(u, "expected SPECIAL gidx0 or lidx0 of a constant size");
      }
      if (u->op == Op::CUSTOM || u->op == Op::CUSTOMI) failAt(u, "CUSTOM ops carry C source: only the C target renders them (with --allow-custom)");
      if (u->op == Op::THREEFRY) failAt(u, "THREEFRY: the LLVM targets lack it (PassTarget::lacks); the decompose pass writes it with 32-bit ops");
    }
  }

  // ---- loops ---------------------------------------------------------------------------------------------
  llvm::AllocaInst *makeAlloca(llvm::Type *T, const std::string &name) {
    llvm::IRBuilder<> a(entry, entry->begin());
    return a.CreateAlloca(T, nullptr, name);
  }
  std::string rangeName(const UOp *r) {
    return "r" + std::to_string(r->arg && r->arg->kind == ArgKind::Tuple && r->arg->count ? r->arg->elems()[0]->i()
                                                                                           : static_cast<int64_t>(r->index));
  }
  /// RANGE r: `for (r = 0; r < size; r++)` from the current insertion point.
  void loopBegin(const UOp *r) {
    Val n = val(r->src(0));
    llvm::Type *T = computeType(r->dtype);
    auto lp = std::make_unique<Loop>();
    Loop *L = lp.get();
    loops.push_back(std::move(lp));
    std::string name = rangeName(r);
    L->range = r;
    if (loopCount < laneLoops.size() && laneLoops[loopCount] && !open.empty()) open.back()->enclosesLanes = true;
    const UOp *padded = loopCount < paddedLaneGates.size() ? paddedLaneGates[loopCount] : nullptr;
    ++loopCount;
    L->counter = makeAlloca(T, name + ".addr");
    L->header = llvm::BasicBlock::Create(lc, name + ".cond", fn);
    auto *body = llvm::BasicBlock::Create(lc, name + ".body", fn);
    L->exit = llvm::BasicBlock::Create(lc, name + ".end", fn);
    // a THREAD loop runs the iterations [uopc_lo, uopc_hi) this call was given (KernelABI.h)
    bool split = isThreadRange(r);
    Value *from = split ? b.CreateSExtOrTrunc(threadLo, T) : llvm::ConstantInt::get(T, 0);
    Value *bound = split ? threadHi : n.v;
    Value *nv = bound->getType() == T ? bound : b.CreateSExtOrTrunc(bound, T);
    if (split && r->arg->count >= 3) { // one piece's loop: its share of [uopc_lo, uopc_hi)
      Value *off = llvm::ConstantInt::get(T, threadOffset(r)), *zero = llvm::ConstantInt::get(T, 0);
      Value *size = n.v->getType() == T ? n.v : b.CreateSExtOrTrunc(n.v, T);
      Value *lo = b.CreateSub(from, off), *hi = b.CreateSub(nv, off);
      from = b.CreateSelect(b.CreateICmpSGT(lo, zero), lo, zero);
      nv = b.CreateSelect(b.CreateICmpSLT(hi, size), hi, size);
    }
    b.CreateStore(from, L->counter);
    // lanes that only add a padded read's products: run where it is in bounds (the C target's loopBegin)
    if (Value *ok = padded ? access(padded, val(padded->src(1))) : nullptr) b.CreateCondBr(ok, L->header, L->exit);
    else b.CreateBr(L->header);
    b.SetInsertPoint(L->header);
    Value *iv = b.CreateLoad(T, L->counter, name + ".iv");
    b.CreateCondBr(b.CreateICmpSLT(iv, nv), body, L->exit);
    b.SetInsertPoint(body);
    memo[r] = {b.CreateLoad(T, L->counter, name), nullptr};
    open.push_back(L);
  }
  /// END: the latch, then on after the loop.
  void loopEnd(const UOp *e) {
    if (open.empty()) failAt(e, "END without an open loop");
    Loop *L = open.back();
    llvm::Type *T = L->counter->getAllocatedType();
    Value *iv = b.CreateLoad(T, L->counter);
    b.CreateStore(b.CreateAdd(iv, llvm::ConstantInt::get(T, 1)), L->counter);
    llvm::BranchInst *latch = b.CreateBr(L->header);
    // the loop's hint (!llvm.loop, distinct, itself first)
    auto hint = [&](llvm::ArrayRef<llvm::Metadata *> property) {
      llvm::Metadata *ops[] = {nullptr, llvm::MDNode::get(lc, property)};
      llvm::MDNode *self = llvm::MDNode::getDistinct(lc, ops);
      self->replaceOperandWith(0, self);
      latch->setMetadata(llvm::LLVMContext::MD_loop, self);
    };
    if (isUnrollRange(L->range)) { // an UNROLL range: the loop run as copies of its body
      hint({llvm::MDString::get(lc, "llvm.loop.unroll.full")});
    } else if (L->enclosesLanes && !gpu()) {
      // The loop vectorizer keeps to the lanes: once LLVM has unrolled a short loop of lanes in full, the loop
      // around it (a register tile's row of outputs, its lanes' elements a row apart) would otherwise be taken
      // as the vector axis, each vector gathered and scattered lane by lane; SLP makes vectors of the unrolled
      // lanes instead, as gcc vectorizes the lanes of the C target's `omp simd` loop.
      hint({llvm::MDString::get(lc, "llvm.loop.vectorize.width"), llvm::ConstantAsMetadata::get(b.getInt32(1))});
    }
    open.pop_back();
    b.SetInsertPoint(L->exit);
  }

  // ---- values ----------------------------------------------------------------------------------------------
  /// u's value: a constant or a variable where used, a REDUCE's accumulator as it is now, anything else
  /// its latest definition.
  Val val(const UOp *u) {
    if (u->op == Op::CONST) return constant(u);
    if (u->op == Op::PARAM) return param(u);
    if (u->op == Op::REDUCE) {
      auto it = accs.find(u);
      if (it == accs.end()) failAt(u, "used before its REDUCE item");
      llvm::Type *T = computeType(u->dtype);
      auto [slot, okSlot] = accSlot(it->second, T);
      Val r{b.CreateLoad(T, slot, "red"), it->second.poisoned ? b.CreateLoad(b.getInt1Ty(), okSlot) : nullptr};
      if (isHalf(u->dtype)) r.v = roundTo(u->dtype, r.v);
      return r;
    }
    auto it = memo.find(u);
    if (it == memo.end()) failAt(u, "used before the item that computes it (the LINEAR order is broken)");
    return it->second;
  }
  /// The validity of an access by INDEX u (index value i): the index's and every gate's.
  Value *access(const UOp *u, const Val &i) {
    Value *ok = i.ok;
    for (const UOp *g : u->src().subspan(2)) ok = andOk(ok, val(g).v);
    return ok;
  }
  /// The address of element iv64 of the buffer INDEX u reads or writes: a kernel argument, or a block's
  /// shared BUFFER (its item made it: sharedPtrs).
  Value *elemPtr(const UOp *u, DType dt, Value *iv64) {
    const UOp *p = u->src(0);
    Value *base = nullptr;
    if (const UOp *shared = blockBufferOf(p)) {
      auto it = sharedPtrs.find(shared);
      if (it == sharedPtrs.end()) failAt(u, "a block's shared BUFFER used before its item");
      base = it->second;
    } else {
      if (p->op != Op::PARAM || isScalarParamNode(p)) failAt(u, "INDEX into something other than a buffer PARAM or a block's shared BUFFER");
      base = bufArgs.at(ParamArg::slotOf(p->arg));
    }
    return b.CreateInBoundsGEP(storageType(dt), base, iv64);
  }
  /// A block's shared BUFFER item: L elements in the block's shared memory (PTX), or one array for the
  /// host's blocks, which run one after the other.
  Val sharedBuffer(const UOp *u) {
    uint64_t size = 0;
    if (u->nsrc)
      if (auto n = constBound(u->src(0)); n && *n >= 1 && *n <= 1024) size = static_cast<uint64_t>(*n);
    if (!gpu() || !size) failAt(u, "a block's shared BUFFER needs a GPU grid and a constant size of 1..1024");
    auto *T = llvm::ArrayType::get(storageType(u->dtype), size);
    std::string name = "shared" + std::to_string(ParamArg::slotOf(u->arg));
    if (mapping == Mapping::PTX) {
      auto *gv = new llvm::GlobalVariable(mod, T, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(T), name,
                                          nullptr, llvm::GlobalValue::NotThreadLocal, 3);
      gv->setAlignment(llvm::Align(16));
      return {sharedPtrs[u] = gv, nullptr};
    }
    return {sharedPtrs[u] = makeAlloca(T, name), nullptr};
  }
  /// BARRIER: every thread of the block has done what comes before it. On the host, where a block's
  /// threads run one after the other, the loop over them ends and a new one begins.
  void barrier(const UOp *u) {
    if (mapping == Mapping::PTX) {
      b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, llvm::Intrinsic::nvvm_barrier0));
      return;
    }
    if (!gpu() || !open.empty() || !ifs.empty()) failAt(u, "a BARRIER outside a GPU grid's top level (in a loop or an IF)");
    endCountdown(lanes);
    beginLanes();
  }
  /// PREFETCH(INDEX(buf, i)): llvm.prefetch (read, keep in every cache level) of buf[i], which may lie past the
  /// buffer's end (a GEP without inbounds; a prefetch never faults). The PTX target gets none (linearize adds
  /// them on CPU targets only).
  void prefetch(const UOp *u) {
    const UOp *ix = u->src(0);
    if (ix->op != Op::INDEX || ix->nsrc != 2 || ix->src(0)->op != Op::PARAM || isScalarParamNode(ix->src(0)))
      failAt(u, "expected PREFETCH(INDEX(PARAM, i))");
    if (mapping == Mapping::PTX) failAt(u, "a PREFETCH in a GPU kernel");
    Value *iv = ext64(val(ix->src(1)).v, ix->src(1)->dtype);
    Value *ptr = b.CreateGEP(storageType(ix->dtype), bufArgs.at(ParamArg::slotOf(ix->src(0)->arg)), iv);
    b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, llvm::Intrinsic::prefetch, {ptr->getType()}),
                 {ptr, b.getInt32(0), b.getInt32(3), b.getInt32(1)});
  }
  Value *loadElem(DType dt, Value *ptr) {
    Value *v = b.CreateLoad(storageType(dt), ptr);
    if (dt == DType::Bool) return b.CreateICmpNE(v, b.getInt8(0));
    if (dt == DType::Float16) return f16Value(v);
    if (dt == DType::BFloat16) return bf16Value(v);
    return v;
  }
  Val load(const UOp *u) {
    Val i = val(u->src(1));
    Value *ok = access(u, i);
    if (auto *c = llvm::dyn_cast_or_null<llvm::ConstantInt>(ok); c && c->isZero()) return {zeroOf(u->dtype), b.getFalse()};
    if (auto *c = llvm::dyn_cast_or_null<llvm::ConstantInt>(ok); c && c->isOne()) ok = nullptr;
    Value *iv = ext64(i.v, u->src(1)->dtype);
    if (!ok) return {loadElem(u->dtype, elemPtr(u, u->dtype, iv)), nullptr};
    // (a read that stays put along the innermost open loop, a tile's broadcast input, gets the select
    // below: branchless, where a branch per unrolled pixel split the tile's loop body into blocks: ResNet-50's
    // 3x3 convolutions at 56x56 and 28x28, their 32 x 14 tiles gated at the row borders, one thread, 6.1-6.8 -> 4.8-5.0 ms)
    bool alongLanes = false;
    if (mapping != Mapping::PTX && !open.empty())
      for (const UOp *x : toposort(u->src(1))) alongLanes = alongLanes || x == open.back()->range;
    if (alongLanes) {
      // gated, on a CPU: load only where the gate holds (a branch the loop vectorizer turns into a masked
      // load of consecutive elements; a select of the index would make it a gather)
      llvm::BasicBlock *pre = b.GetInsertBlock();
      auto *yes = llvm::BasicBlock::Create(lc, "ld", fn), *join = llvm::BasicBlock::Create(lc, "ld.join", fn);
      b.CreateCondBr(ok, yes, join);
      b.SetInsertPoint(yes);
      Value *v = loadElem(u->dtype, elemPtr(u, u->dtype, iv));
      llvm::BasicBlock *loaded = b.GetInsertBlock();
      b.CreateBr(join);
      b.SetInsertPoint(join);
      llvm::PHINode *phi = b.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, loaded);
      phi->addIncoming(zeroOf(u->dtype), pre);
      return {phi, ok};
    }
    // gated (PTX, and a CPU's read that stays put along the innermost loop): read element 0 (every buffer has
    // one) where the gate does not hold, then replace the value
    Value *safe = b.CreateSelect(ok, iv, i64(0));
    Value *v = loadElem(u->dtype, elemPtr(u, u->dtype, safe));
    return {b.CreateSelect(ok, v, zeroOf(u->dtype)), ok};
  }

  Val param(const UOp *u) {
    ParamArg pa = ParamArg::decode(u->arg);
    if (!isScalarParamNode(u)) failAt(u, "a buffer PARAM must be read through INDEX");
    if (*pa.name == "_device_num") return {literal(u->dtype, interp::intToWord(u->dtype, deviceNum)), nullptr};
    Value *a = varValues.at(*pa.name);
    if (isF(u->dtype)) return {b.CreateSIToFP(a, computeType(u->dtype)), nullptr};
    if (u->dtype == DType::Bool) return {b.CreateICmpNE(a, i64(0)), nullptr};
    return {b.CreateTrunc(a, computeType(u->dtype)), nullptr};
  }
  /// SPECIAL: a thread coordinate, from the special registers or the host's loop over the launch.
  Val special(const UOp *u) {
    bool block = u->arg->str() == "gidx0";
    if (mapping == Mapping::PTX) {
      auto id = block ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x : llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
      return {b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, id)), b.getInt64Ty()), nullptr};
    }
    return {block ? blocks.index : lanes.index, nullptr};
  }

  /// A value item: u computed from the values of its sources.
  Val node(const UOp *u) {
    switch (u->op) {
    case Op::SPECIAL: return special(u);
    case Op::BUFFER: return sharedBuffer(u);
    case Op::INDEX: return load(u);
    case Op::LOAD: {
      Val v = val(u->src(0));
      if (u->nsrc > 1 && v.ok) {
        Val alt = val(u->src(1));
        // valid where the read is, else as valid as the alternative
        return {b.CreateSelect(v.ok, v.v, alt.v), alt.ok ? b.CreateOr(v.ok, alt.ok) : nullptr};
      }
      return v;
    }
    default: break;
    }
    if (!isElementwise(u->op)) failAt(u, "the LLVM target cannot render this op");
    std::vector<Val> s;
    for (const UOp *x : u->src()) s.push_back(val(x));
    std::vector<Value *> a;
    for (const Val &v : s) a.push_back(v.v);
    // (a weak operand never meets a strong one here: commit-weak cast it, KernelABI checks)
    DType in = u->src(0)->dtype;
    std::vector<DType> dts;
    for (const UOp *x : u->src()) dts.push_back(x->dtype);
    if (u->op == Op::WHERE) {
      Value *ok = s[0].ok;
      if (s[1].ok || s[2].ok)
        ok = andOk(ok, b.CreateSelect(a[0], s[1].ok ? s[1].ok : b.getTrue(), s[2].ok ? s[2].ok : b.getTrue()));
      return {b.CreateSelect(a[0], a[1], a[2]), ok};
    }
    Value *ok = nullptr;
    for (const Val &v : s) ok = andOk(ok, v.ok);
    Value *e = nullptr;
    if (u->op == Op::CAST) e = cast(in, u->dtype, a[0]);
    else if (u->op == Op::BITCAST) {
      if (dtypeSize(in) != dtypeSize(u->dtype)) failAt(u, "BITCAST between dtypes of different sizes");
      e = fromBits(u->dtype, bitsOf(in, a[0]));
    } else e = alu(u, u->dtype, in, a, dts);
    if (!e) failAt(u, "op not defined on " + std::string(dtypeName(in)));
    return {e, ok};
  }

  /// REDUCE u: its accumulator (and validity flag) at the identity.
  void accumulator(const UOp *u) {
    Op op = u->arg->elems()[0]->op();
    DType dt = u->dtype;
    if (op != Op::ADD && op != Op::MUL && op != Op::MAX) failAt(u, "unsupported reduce op");
    Acc a;
    a.lanes = accumulatorLanes(u);
    a.count = laneCount(a.lanes);
    llvm::Type *T = computeType(dt);
    // one slot per lane, set one by one (SROA makes registers of them once the lanes are unrolled); an
    // identity of zero bytes (a sum's) with one memset: a 32 x 3 tile's 96 stores were half its IR and a
    // large part of LLVM's time on it
    a.value = makeAlloca(a.lanes.empty() ? T : llvm::ArrayType::get(T, static_cast<uint64_t>(a.count)), "acc");
    a.outer = open.empty() ? nullptr : open.back();
    Value *init = literal(dt, interp::reduceIdentity(op, dt));
    auto *constant = llvm::dyn_cast<llvm::Constant>(init);
    if (a.count > 1 && constant && constant->isNullValue()) {
      a.initEnd = b.CreateMemSet(a.value, b.getInt8(0), mod.getDataLayout().getTypeAllocSize(a.value->getAllocatedType()),
                                 a.value->getAlign());
    } else {
      for (int64_t k = 0; k < a.count; ++k) {
        Value *v = a.lanes.empty() ? a.value : b.CreateConstInBoundsGEP2_64(a.value->getAllocatedType(), a.value, 0, static_cast<uint64_t>(k));
        a.initEnd = b.CreateStore(init, v);
      }
    }
    accs[u] = a;
  }
  /// The validity flags of `a`, all true where its value was set to the identity, made at the first Invalid
  /// lane accumulated (an accumulator that never sees one has none: no stores for LLVM to remove).
  void ensureOk(Acc &a) {
    if (a.ok) return;
    a.ok = makeAlloca(a.lanes.empty() ? static_cast<llvm::Type *>(b.getInt1Ty())
                                      : llvm::ArrayType::get(b.getInt1Ty(), static_cast<uint64_t>(a.count)),
                      "acc.ok");
    llvm::IRBuilderBase::InsertPointGuard keep(b);
    b.SetInsertPoint(a.initEnd->getParent(), std::next(a.initEnd->getIterator()));
    for (int64_t k = 0; k < a.count; ++k) {
      Value *o = a.lanes.empty() ? a.ok : b.CreateConstInBoundsGEP2_64(a.ok->getAllocatedType(), a.ok, 0, static_cast<uint64_t>(k));
      b.CreateStore(b.getTrue(), o);
    }
  }
  /// STORE(REDUCE u, x): acc = acc <op> x.
  void accumulate(const UOp *u, const UOp *xu) {
    auto it = accs.find(u);
    if (it == accs.end()) failAt(u, "an accumulation before its REDUCE item");
    Acc &acc = it->second;
    Op op = u->arg->elems()[0]->op();
    DType dt = u->dtype;
    llvm::Type *T = computeType(dt);
    Val x = val(xu);
    if (x.ok) ensureOk(acc);
    auto [slot, okSlot] = accSlot(acc, T);
    Value *cur = b.CreateLoad(T, slot);
    Value *step;
    if (isF(dt)) {
      step = op == Op::ADD ? contract(b.CreateFAdd(cur, x.v))
             : op == Op::MUL ? contract(b.CreateFMul(cur, x.v))
                             : b.CreateSelect(b.CreateFCmpOLT(cur, x.v), x.v, cur);
    } else if (op == Op::MAX) {
      step = b.CreateSelect(isSignedInt(dt) ? b.CreateICmpSLT(cur, x.v) : b.CreateICmpULT(cur, x.v), x.v, cur);
    } else if (dt == DType::Bool) {
      step = op == Op::ADD ? b.CreateOr(cur, x.v) : b.CreateAnd(cur, x.v);
    } else {
      step = op == Op::ADD ? b.CreateAdd(cur, x.v) : b.CreateMul(cur, x.v);
    }
    if (x.ok) {
      acc.poisoned = true;
      b.CreateStore(b.CreateAnd(b.CreateLoad(b.getInt1Ty(), okSlot), x.ok), okSlot);
      step = b.CreateSelect(x.ok, step, cur);
    }
    b.CreateStore(step, slot);
  }

  /// STORE(INDEX(buf, i, gates...), v): the write, where it is valid.
  void store(const UOp *st) {
    const UOp *ix = st->src(0);
    if (ix->op != Op::INDEX) failAt(st, "expected STORE(INDEX(buffer, i), value)");
    Val i = val(ix->src(1));
    Val v = val(st->src(1));
    if (st->src(1)->dtype != ix->dtype) failAt(st, "stored value's dtype differs from the buffer's");
    Value *ok = andOk(access(ix, i), v.ok);
    Value *value = v.v;
    if (ix->dtype == DType::Float16) value = f16Bits(b.CreateFPExt(value, b.getDoubleTy()));
    else if (ix->dtype == DType::BFloat16) value = bf16Bits(value);
    else if (ix->dtype == DType::Bool) value = b.CreateZExt(value, b.getInt8Ty());
    Value *iv = ext64(i.v, ix->src(1)->dtype);
    auto *c = llvm::dyn_cast_or_null<llvm::ConstantInt>(ok);
    if (c && c->isZero()) return; // every lane is Invalid: nothing stored
    if (!ok || (c && c->isOne())) {
      b.CreateStore(value, elemPtr(ix, ix->dtype, iv));
      return;
    }
    auto *doStore = llvm::BasicBlock::Create(lc, "store", fn), *cont = llvm::BasicBlock::Create(lc, "store.end", fn);
    b.CreateCondBr(ok, doStore, cont);
    b.SetInsertPoint(doStore);
    b.CreateStore(value, elemPtr(ix, ix->dtype, iv));
    b.CreateBr(cont);
    b.SetInsertPoint(cont);
  }

  // ---- the items (renderItems calls these, and loopBegin/loopEnd above) ---------------------------------
  void ifBegin(const UOp *u) {
    auto *then = llvm::BasicBlock::Create(lc, "thread", fn), *after = llvm::BasicBlock::Create(lc, "thread.end", fn);
    b.CreateCondBr(val(u->src(0)).v, then, after);
    b.SetInsertPoint(then);
    ifs.push_back(after);
  }
  void ifEnd(const UOp *u) {
    if (ifs.empty()) failAt(u, "ENDIF without an IF");
    b.CreateBr(ifs.back());
    b.SetInsertPoint(ifs.back());
    ifs.pop_back();
  }
  void statement(const UOp *u) { failAt(u, "CUSTOM ops carry C source: only the C target renders them"); }
  void value(const UOp *u) { memo[u] = node(u); }
};


#define UOPC_NONE LSpell{}
#define UOPC_SAME LSpell{Form::None, 0, nullptr, nullptr, true}
#define UOPC_LLVM(form, ...) LSpell{Form::form, __VA_ARGS__}
#define UOPC_ALU(Op_, CF, CS, CU, LF, LS, LU) OpSpelling<LSpell>{Op::Op_, LF, LS, LU},
const OpSpelling<LSpell> kSpellings[] = {
#include "Targets/OpSpelling.def"
};

} // namespace

const OpSpelling<LSpell> *llvmbackend::detail::spelling(Op op) { return findSpelling(kSpellings, op); }

namespace llvmbackend {

void checkGpuArch(const std::string &arch) { nvptxMachine(arch); }
void checkHostCpu(const std::string &cpu) { hostMachine(cpu); }

namespace {

/// A kernel's module as the emitter built it from the graph (phase one: reads the graph's Context, so one
/// kernel at a time), before the -O2 pipeline and printing (phase two: LLVM alone, one module per thread).
struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> mod;
  EmittedLLVMKernel k; ///< symbol, summary, launch
  bool ptx = false, o3 = false, optimize = false;
  std::string machine; ///< options.gpuArch (ptx) or options.cpu
};

BuiltModule buildModule(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name,
                        const LLVMEmitOptions &options) {
  KernelABI abi = KernelABI::of(call, "LLVM target"); // (refuses what is not a linearized kernel)
  const UOp *linear = call->src(0);
  const bool ptx = options.mapping == Mapping::PTX;
  llvm::TargetMachine *tm = ptx ? nvptxMachine(options.gpuArch) : hostMachine(options.cpu);
  BuiltModule built;
  built.context = std::make_unique<llvm::LLVMContext>();
  llvm::LLVMContext &lc = *built.context;
  EmittedLLVMKernel &k = built.k;
  k.symbol = sanitizeCName(name);
  auto mod = std::make_unique<llvm::Module>(k.symbol, lc);
  mod->setTargetTriple(tm->getTargetTriple().str());
  mod->setDataLayout(tm->createDataLayout());

  Emitter em(ctx, deviceNum, *mod);
  em.mapping = options.mapping;
  em.abi = std::move(abi);
  em.analyze(linear);
  if (em.abi.written.empty()) failAt(call, "the kernel stores nothing");
  if (em.gpu()) {
    auto launch = linearLaunch(linear); // (the sizes analyze() checked)
    if (!launch) failAt(call, "the kernel was linearized into loops, not for a GPU grid (linearize{grid=1})");
    em.launch.global[0] = launch->first, em.launch.local[0] = launch->second;
    k.launch = em.launch;
  }

  // signature: one pointer per CALL argument, then the variables (KernelABI.h)
  std::vector<llvm::Type *> params;
  std::vector<std::string> names;
  for (const KernelABI::Buffer &buf : em.abi.buffers) {
    params.push_back(em.b.getPtrTy());
    names.push_back(buf.name);
  }
  const std::vector<std::string> &vars = em.abi.vars;
  for (const std::string &v : vars) {
    params.push_back(em.b.getInt64Ty());
    names.push_back(em.abi.varArg.at(v));
  }
  if (em.abi.parallel)
    for (const char *n : {"uopc_lo", "uopc_hi"}) {
      params.push_back(em.b.getInt64Ty());
      names.push_back(n);
    }
  auto *fty = llvm::FunctionType::get(em.b.getVoidTy(), params, false);
  em.fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, k.symbol, *mod);
  em.fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < params.size(); ++i) {
    llvm::Argument *a = em.fn->getArg(static_cast<unsigned>(i));
    a->setName(names[i]);
    if (i + 1 < call->nsrc) {
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::NoCapture);
      if (!em.abi.written.count(static_cast<int64_t>(i))) a->addAttr(llvm::Attribute::ReadOnly);
      em.bufArgs[static_cast<int64_t>(i)] = a;
    } else if (i + 1 - call->nsrc < vars.size()) {
      em.varValues[vars[i + 1 - call->nsrc]] = a;
    } else {
      (i + 1 - call->nsrc == vars.size() ? em.threadLo : em.threadHi) = a; // uopc_lo, uopc_hi
    }
  }
  em.entry = llvm::BasicBlock::Create(lc, "entry", em.fn);
  em.b.SetInsertPoint(em.entry);
  // GridOnHost: the kernel body inside a loop over every thread of the launch
  if (ptx) {
    llvm::NamedMDNode *md = mod->getOrInsertNamedMetadata("nvvm.annotations");
    auto annotate = [&](const char *key, int v) {
      md->addOperand(llvm::MDNode::get(lc, {llvm::ValueAsMetadata::get(em.fn), llvm::MDString::get(lc, key),
                                            llvm::ValueAsMetadata::get(em.b.getInt32(v))}));
    };
    annotate("kernel", 1);
    annotate("maxntidx", static_cast<int>(em.launch.local[0]));
  } else if (em.gpu()) {
    // The blocks, and the threads in each, run last to first, the opposite of the CPU loops: a kernel in
    // which a thread reads what a later-numbered thread writes gives a different result here (on a GPU it
    // would be a race). Races the other way round need linearize's static check; a run on the host cannot
    // show them. Each stretch of items between barriers is a loop over the block's threads of its own.
    em.beginCountdown(em.blocks, em.launch.global[0], "gidx");
    em.beginLanes();
  }
  em.laneLoops = independentLaneLoops(linearItems(linear));
  if (!em.gpu()) {
    // (the loops LLVM unrolls in full around a tile's lanes: UNROLL ranges, its outer lanes (constant UPCAST
    // ranges), and a short window loop with only those inside: the innermost of a window's loops)
    std::span<const UOp *const> items = linearItems(linear);
    std::unordered_set<const UOp *> unrolled;
    auto constant = [](const UOp *r) { return r->src(0)->op == Op::CONST ? constBound(r->src(0)) : std::nullopt; };
    for (const UOp *u : items)
      if (u->op == Op::RANGE && (isUnrollRange(u) || (isUpcastRange(u) && constant(u)))) unrolled.insert(u);
    for (size_t i = 0; i < items.size(); ++i) {
      const UOp *u = items[i];
      auto n = u->op == Op::RANGE ? constant(u) : std::nullopt;
      if (!n || *n < 2 || *n > 5 || !u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count < 2 ||
          u->arg->elems()[1]->kind != ArgKind::AxisType || u->arg->elems()[1]->axisType() != AxisType::REDUCE)
        continue;
      bool innermost = true;
      for (size_t j = i + 1, depth = 0; j < items.size(); ++j) {
        if (items[j]->op == Op::END && depth-- == 0) break;
        if (items[j]->op == Op::RANGE) ++depth, innermost = innermost && unrolled.count(items[j]);
      }
      if (innermost) unrolled.insert(u);
    }
    // (rows tiled whole only: the column border pieces of perf-run's 3x3 convolution at 56x56, 8 pixels x 32
    // lanes, ran 2x slower gated, the whole kernel 0.80 -> 1.40-1.60 ms, 2 threads)
    em.paddedLaneGates = paddedLaneGates(items, em.laneLoops, unrolled, /*withRows=*/true);
  }
  renderItems(linearItems(linear), em);
  if (!em.open.empty() || !em.ifs.empty()) fail("LLVM target: the LINEAR items leave a loop or an IF open");
  if (em.blocks.addr) {
    em.endCountdown(em.lanes);
    em.endCountdown(em.blocks);
  }
  em.b.CreateRetVoid();

  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*mod, &es)) fail("LLVM target: kernel " + k.symbol + " does not verify: " + es.str());
  if (ptx && !em.libdeviceUsers.empty()) linkLibdevice(*mod, em.fn, em.libdeviceUsers);
  // a register tile: two output loops or more upcast into lanes (the optimizer's applied_opts)
  int upcasts = 0;
  for (const std::string &o : appliedOpts(kernelSink(call))) upcasts += o.rfind("upcast:", 0) == 0;
  built.ptx = ptx;
  built.optimize = options.optimize || ptx;
  built.o3 = !ptx && upcasts >= 2;
  built.machine = ptx ? options.gpuArch : options.cpu;
  k.summary = em.abi.summary(call, k.symbol, deviceNum);
  if (k.launch)
    k.summary += "; grid " + std::to_string(k.launch->global[0]) + " x " + std::to_string(k.launch->local[0]) +
                 " threads";
  built.mod = std::move(mod);
  return built;
}

/// Phase two: the -O2 pipeline, the IR text and the PTX, with this thread's own target machine.
EmittedLLVMKernel finishModule(BuiltModule &built) {
  EmittedLLVMKernel &k = built.k;
  llvm::Module &mod = *built.mod;
  llvm::TargetMachine *tm = built.ptx ? nvptxMachine(built.machine) : hostMachine(built.machine);
  if (built.optimize) {
    optimizeO2(mod, tm, built.ptx, built.o3);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(mod, &es)) fail("LLVM target: kernel " + k.symbol + " does not verify after -O2: " + es.str());
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  mod.print(os, nullptr);
  k.ir = "; " + k.summary + "\n; generated by uopc\n" + os.str();
  if (built.ptx) k.ptx = "// " + k.summary + "\n// generated by uopc\n" + emitPTX(mod, tm);
  return std::move(k);
}

} // namespace

EmittedLLVMKernel emitKernel(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name,
                             const LLVMEmitOptions &options) {
  BuiltModule built = buildModule(ctx, call, deviceNum, name, options);
  return finishModule(built);
}

std::vector<EmittedLLVMKernel> emitKernels(Context &ctx, const std::vector<LLVMKernelRequest> &requests) {
  std::vector<BuiltModule> built;
  built.reserve(requests.size());
  for (const LLVMKernelRequest &r : requests) built.push_back(buildModule(ctx, r.call, r.deviceNum, r.name, r.options));
  // phase two on one thread per core (at most 16), each taking the next module; the first failure (in
  // kernel order) is the one reported
  std::vector<EmittedLLVMKernel> out(built.size());
  std::vector<std::string> errors(built.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < built.size();) {
      try {
        out[i] = finishModule(built[i]);
      } catch (const std::exception &e) {
        errors[i] = e.what();
      }
      built[i].mod.reset(); // (freed on the thread that used it)
      built[i].context.reset();
    }
  };
  unsigned cores = std::thread::hardware_concurrency();
  size_t threads = std::min<size_t>(std::max(1u, std::min(cores ? cores : 1u, 16u)), built.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();
  for (const std::string &e : errors)
    if (!e.empty()) fail(e);
  return out;
}

} // namespace llvmbackend
} // namespace uopc
