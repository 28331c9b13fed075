//===- Machines.cpp - target machines, the -O2 pipeline, libdevice, PTX output (Machines.h) ===//
#include "Targets/LLVM/Machines.h"

#include "IR/Error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Operator.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace uopc::llvmbackend {

// The machines are cached per thread: a target machine is not shared between threads that compile at once
// (LLVMEmitter.cpp's emitKernels optimizes one module per thread).
llvm::TargetMachine *hostMachine(const std::string &cpu) {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::thread::id>, std::unique_ptr<llvm::TargetMachine>> machines;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(cpu, std::this_thread::get_id());
  if (auto it = machines.find(key); it != machines.end()) return it->second.get();
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  std::string error, triple = llvm::sys::getProcessTriple();
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) fail("LLVM target: " + error);
  std::string name = cpu, fs;
  if (cpu == "native") {
    name = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> feats = llvm::sys::getHostCPUFeatures();
    for (auto &f : feats) fs += (fs.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
  }
  // No gathers or scatters from the vectorizers: a kernel's lanes are chosen by the optimizer along
  // consecutive elements, and a gather is LLVM vectorizing an axis it was not given (on an AVX-512 CPU, whose
  // cost model takes gathers as cheap: the key axis of the GPT block's attention scores, read 64 floats
  // apart, made that kernel 4x slower than C's).
  if (llvm::Triple(triple).isX86()) fs += std::string(fs.empty() ? "" : ",") + "+prefer-no-gather,+prefer-no-scatter";
  // 64-byte vectors where the CPU has AVX-512 (LLVM's tuning of Intel's AVX-512 server CPUs prefers 32-byte
  // ones; the C target's kernels get -mprefer-vector-width=512 for the same reason). On the Sapphire Rapids
  // machine: sp_ew_chain64_4m 4.5 -> 3.9 ms, sp_softmax_2048 3.0 -> 2.4 ms, sp_mm_1024 18.0 -> 16.4 ms, the GPT
  // block 26 -> 24 ms (best of 5, alternating). Without AVX-512 the widest vector is 32 bytes either way.
  if (llvm::Triple(triple).isX86()) fs += ",-prefer-256-bit";
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
  if (cpu != "native" && (!sti || !sti->isCPUStringValid(name)))
    fail("--cpu " + cpu + ": LLVM does not know this CPU for " + triple + " (try native, x86-64-v2, x86-64-v3)");
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, name, fs, llvm::TargetOptions(), llvm::Reloc::PIC_));
  if (!tm) fail("LLVM target: cannot create a target machine for " + triple);
  return machines.emplace(key, std::move(tm)).first->second.get();
}

llvm::TargetMachine *nvptxMachine(const std::string &arch) {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::thread::id>, std::unique_ptr<llvm::TargetMachine>> machines;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(arch, std::this_thread::get_id());
  if (auto it = machines.find(key); it != machines.end()) return it->second.get();
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) fail("PTX target: LLVM has no NVPTX backend: " + error);
  // Checked before LLVM sees the name: given "help" (or an unknown name) as the CPU, LLVM prints its
  // processor list (or a warning per use) to stderr instead of failing.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
  bool plain = !arch.empty() && arch.size() <= 32 &&
               std::all_of(arch.begin(), arch.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
  if (!plain || !sti || arch == "help" || !sti->isCPUStringValid(arch))
    fail("PTX target: unknown GPU architecture '" + arch + "' (LLVM 19's NVPTX knows sm_30 ... sm_90a)");
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, arch, "", llvm::TargetOptions(), std::nullopt));
  if (!tm) fail("PTX target: cannot create an NVPTX target machine for " + arch);
  return machines.emplace(key, std::move(tm)).first->second.get();
}

/// CUDA's libdevice: $UOPC_LIBDEVICE, else the toolkit's copy ("" when there is none).
namespace {

std::string libdevicePath() {
  if (const char *e = std::getenv("UOPC_LIBDEVICE"); e && *e) return e;
  for (const char *p : {"/usr/local/cuda/nvvm/libdevice/libdevice.10.bc", "/usr/lib/cuda/nvvm/libdevice/libdevice.10.bc",
                        "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

} // namespace

void linkLibdevice(llvm::Module &m, const llvm::Function *kernel, const std::vector<std::string> &users) {
  std::string path = libdevicePath();
  if (path.empty())
    fail("PTX target: " + users.front() + " needs CUDA's libdevice (exp2/log2/sin/pow on the GPU), which is not "
         "installed: set UOPC_LIBDEVICE to libdevice.10.bc");
  // Read once per process; parsed lazily per kernel, so linking materializes only the functions it needs.
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files;
  llvm::MemoryBufferRef bytes;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto &file = files[path];
    if (!file) {
      auto buf = llvm::MemoryBuffer::getFile(path);
      if (!buf) fail("PTX target: cannot read libdevice '" + path + "': " + buf.getError().message());
      file = std::move(*buf);
    }
    bytes = file->getMemBufferRef();
  }
  auto lib = llvm::getOwningLazyBitcodeModule(llvm::MemoryBuffer::getMemBuffer(bytes, false), m.getContext());
  if (!lib) fail("PTX target: '" + path + "' is not LLVM bitcode: " + llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded))
    fail("PTX target: linking libdevice '" + path + "' failed");
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && &f != kernel) f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &v : m.globals())
    if (!v.isDeclaration()) v.setLinkage(llvm::GlobalValue::InternalLinkage);
}

std::string emitPTX(llvm::Module &m, llvm::TargetMachine *tm) {
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    fail("PTX target: the NVPTX backend cannot emit assembly");
  pm.run(m);
  return std::string(text.str());
}

namespace {
/// A loop transformation LLVM could not follow (a hint its own passes left) is not worth a warning on the
/// user's terminal: the loop stays as it was.
struct QuietMissedTransformations : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo &d) override { return d.getKind() == llvm::DK_OptimizationFailure; }
};
} // namespace

namespace {
/// glibc's libmvec (x86-64): the vector forms of the libm functions the kernels call (OpSpelling.def's Libm
/// ops: exp2, log2, sin, pow), so that LLVM's loop vectorizer can vectorize a loop calling them, as gcc does
/// for the C target through `omp declare simd`. Only the widths the target CPU has (b: SSE2, d: AVX2,
/// e: AVX-512F); LLVM 19's own LIBMVEC_X86 list has no exp2 or log2 and no AVX-512 forms. The JIT resolves
/// them from libmvec.so.1 (Jit.cpp). Without this, each element of sp_softmax_2048's exp2 kernel was a
/// scalar call: LLVM 7.9 ms against C's 1.8 ms.
void addLibmvec(llvm::TargetLibraryInfoImpl &tlii, const llvm::Module &m, llvm::TargetMachine *tm) {
  llvm::Triple t(m.getTargetTriple());
  if (!t.isX86() || !t.isArch64Bit() || !t.isOSLinux() || !t.isGNUEnvironment()) return;
  // Every form glibc has, named once (VecDesc holds StringRefs into these strings), with the CPU feature
  // it needs
  struct Form {
    const char *feature; // nullptr: SSE2, every x86-64
    std::string scalar, vector, abi;
    unsigned vf;
  };
  static const std::vector<Form> forms = [] {
    struct Width {
      char isa;
      unsigned f32, f64;
      const char *feature;
    };
    struct Fn {
      const char *name;
      int args;
    };
    std::vector<Form> out;
    for (Width w : {Width{'b', 4, 2, nullptr}, Width{'d', 8, 4, "+avx2"}, Width{'e', 16, 8, "+avx512f"}})
      for (Fn f : {Fn{"exp2", 1}, Fn{"log2", 1}, Fn{"sin", 1}, Fn{"pow", 2}})
        for (bool single : {true, false}) {
          unsigned vf = single ? w.f32 : w.f64;
          std::string params(static_cast<size_t>(f.args), 'v');
          out.push_back({w.feature, std::string("llvm.") + f.name + (single ? ".f32" : ".f64"),
                         std::string("_ZGV") + w.isa + "N" + std::to_string(vf) + params + "_" + f.name + (single ? "f" : ""),
                         "_ZGV_LLVM_N" + std::to_string(vf) + params, vf});
        }
    return out;
  }();
  const llvm::MCSubtargetInfo *sti = tm->getMCSubtargetInfo();
  std::vector<llvm::VecDesc> descs;
  for (const Form &f : forms)
    if (!f.feature || (sti && sti->checkFeatures(f.feature)))
      descs.emplace_back(f.scalar, f.vector, llvm::ElementCount::getFixed(f.vf), false, f.abi);
  tlii.addVectorizableFunctions(descs);
}
} // namespace

namespace {
/// Marks `or X, Y` whose operands share no set bit as disjoint (what an add of them is), before the loop
/// vectorizer. InstCombine turns an index's `outer * 128 + inner` into `or disjoint`, and LLVM 19's Reassociate
/// rewrites it as a plain `or`, which ScalarEvolution cannot read as an add: the vectorizer then took the
/// loop's consecutive loads and stores for gathers and scatters, 16 extracts and scalar accesses a vector
/// (the encoder's softmax exp kernel, LLVM, 844 us against C's 345). Disjoint where the bits each operand may
/// set do not meet: a value's possible bits are those its known bits leave open, below its largest value
/// (ScalarEvolution's unsigned range: a loop counter's), and for an `or` or a shift by a constant those of its
/// operands (an `or` of a counter's lanes and a concatenation's offset into the weights, `(r << 4 | c) | 4096`,
/// where neither the known bits nor the range of the whole say it: the SLP vectorizer then took a channel
/// tile's 16 weights for 16 scalar loads, SqueezeNet's classifier cut at its input's seam).
struct MarkDisjointOrs : llvm::PassInfoMixin<MarkDisjointOrs> {
  llvm::PreservedAnalyses run(llvm::Function &f, llvm::FunctionAnalysisManager &fam) {
    const llvm::DataLayout &dl = f.getParent()->getDataLayout();
    llvm::ScalarEvolution &se = fam.getResult<llvm::ScalarEvolutionAnalysis>(f);
    // (a recursion of at most 4 levels into `or`s and shifts: an index's terms)
    auto possible = [&](auto &self, llvm::Value *v, const llvm::Instruction *at, int depth) -> llvm::APInt {
      llvm::APInt bits = ~llvm::computeKnownBits(v, dl, 0, nullptr, at).Zero;
      if (se.isSCEVable(v->getType())) {
        llvm::ConstantRange r = se.getUnsignedRange(se.getSCEV(v));
        bits &= llvm::APInt::getLowBitsSet(bits.getBitWidth(), r.getUnsignedMax().getActiveBits());
      }
      auto *i = llvm::dyn_cast<llvm::Instruction>(v);
      if (!i || depth >= 4) return bits;
      const llvm::APInt *amount = nullptr;
      if (i->getOpcode() == llvm::Instruction::Or)
        bits &= self(self, i->getOperand(0), at, depth + 1) | self(self, i->getOperand(1), at, depth + 1);
      else if (i->getOpcode() == llvm::Instruction::Shl && llvm::PatternMatch::match(i->getOperand(1), llvm::PatternMatch::m_APInt(amount)) &&
               amount->ult(bits.getBitWidth()))
        bits &= self(self, i->getOperand(0), at, depth + 1).shl(*amount);
      return bits;
    };
    bool changed = false;
    for (llvm::Instruction &i : llvm::instructions(f)) {
      auto *o = llvm::dyn_cast<llvm::PossiblyDisjointInst>(&i);
      if (!o || o->isDisjoint() || !i.getType()->isIntegerTy()) continue;
      llvm::Value *a = i.getOperand(0), *b = i.getOperand(1);
      if (llvm::haveNoCommonBitsSet(a, b, llvm::SimplifyQuery(dl, &i)) ||
          !possible(possible, a, &i, 0).intersects(possible(possible, b, &i, 0))) {
        o->setIsDisjoint(true);
        se.forgetValue(&i);
        changed = true;
      }
    }
    return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};
} // namespace

void optimizeO2(llvm::Module &m, llvm::TargetMachine *tm, bool targetPasses, bool o3) {
  if (!targetPasses) m.getContext().setDiagnosticHandler(std::make_unique<QuietMissedTransformations>());
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm, pto);
  if (targetPasses) tm->registerPassBuilderCallbacks(pb); // NVPTX: NVVMReflect for libdevice, address spaces
  pb.registerVectorizerStartEPCallback(
      [](llvm::FunctionPassManager &fpm, llvm::OptimizationLevel) { fpm.addPass(MarkDisjointOrs()); });
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  if (!targetPasses) addLibmvec(tlii, m, tm);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); }); // (before the default one)
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // -O3 for a register tile of two or more upcast output loops (its lanes are then unrolled and its accumulators
  // promoted to registers: ResNet-50's 3x3 convolution, one thread, 9.3 ms at -O2, 2.5 at -O3); -O2
  // elsewhere, where -O3 was slower (perf-run's argmax, two partial sums, 3.0 -> 8.4 ms; cumsum 36 -> 79 ms)
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(o3 ? llvm::OptimizationLevel::O3 : llvm::OptimizationLevel::O2);
  // (a second round of SLP after the pipeline, once there for a register tile's unrolled lanes, changed 5 of
  // ResNet-50's 42 kernels by a few instructions, none measurably, and none of perf-run's, at 45% of uopc's
  // LLVM time: ResNet-50 2.04 -> 1.10 s)
  mpm.run(m, mam);
  if (!targetPasses) {
    // Loop hints have done their work: one left on a loop would otherwise be reported as a missed
    // transformation when the JIT compiles it.
    for (llvm::Function &f : m)
      for (llvm::BasicBlock &bb : f)
        if (llvm::Instruction *term = bb.getTerminator()) term->setMetadata(llvm::LLVMContext::MD_loop, nullptr);
  }
}


} // namespace uopc::llvmbackend
