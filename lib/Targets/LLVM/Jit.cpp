//===- Jit.cpp - LLVM-target kernels run in-process through ORC's LLJIT ---===//
// Part of the LLVM plugin (Targets/LLVMPlugin.h): KernelJit (LLVMPlugin.cpp) drives one JitEngine.
#include "Targets/LLVM/Backend.h"

#include "IR/Error.h"
#include "Targets/LLVM/Machines.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

namespace uopc::llvmbackend {

namespace {
std::string message(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::logAllUnhandledErrors(std::move(e), os);
  return os.str();
}
} // namespace

struct JitEngine::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::optional<llvm::orc::JITTargetMachineBuilder> machine; ///< what each compiling thread builds its own machine from
  size_t entries = 0;
  /// modules added since the last entries(): their text and name, parsed there
  std::vector<std::pair<std::string, std::string>> pending;
};

/// The threads that parse and compile a batch of modules: one per core, at most 16.
unsigned jitThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return std::max(1u, std::min(n ? n : 1u, 16u));
}

JitEngine::JitEngine(const std::string &cpu) : impl(std::make_unique<Impl>()) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // No list scheduling after register allocation (llc -post-RA-scheduler=false): LLVM's Zen models
    // enable it, and it took about 13% of the code generation of VGG-19's 25 modules (llc, znver5) and
    // 15-20% of uopc-run's JIT CPU time; the networks ran within noise without it (6 networks, 3
    // alternating rounds). An out-of-order core reorders those instructions itself.
    llvm::StringMap<llvm::cl::Option *> &options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("post-RA-scheduler"); it != options.end())
      it->second->addOccurrence(1, "post-RA-scheduler", "false");
  });
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) fail("LLVM JIT: cannot target this machine: " + message(jtmb.takeError()));
  if (cpu != "native") {
    hostMachine(cpu); // refuses a CPU LLVM does not know
    jtmb->setCPU(cpu);
    jtmb->getFeatures() = llvm::SubtargetFeatures(); // that CPU's own features, not this machine's
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  impl->machine = *jtmb;
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) fail("LLVM JIT: cannot start: " + message(jit.takeError()));
  impl->jit = std::move(*jit);
  // libm (exp2, log2, sin, pow, ...) and the rest of the process resolve from the running process
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl->jit->getDataLayout().getGlobalPrefix());
  if (!gen) fail("LLVM JIT: cannot search the process's symbols: " + message(gen.takeError()));
  impl->jit->getMainJITDylib().addGenerator(std::move(*gen));
  // glibc's vector math (the _ZGV*_exp2f ... a vectorized kernel calls: Machines.cpp's addLibmvec); where
  // it is missing, a kernel that calls it fails to link, naming the symbol
  auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", impl->jit->getDataLayout().getGlobalPrefix());
  if (mvec) impl->jit->getMainJITDylib().addGenerator(std::move(*mvec));
  else llvm::consumeError(mvec.takeError());
}

JitEngine::~JitEngine() = default;

void JitEngine::addModule(const std::string &irText, const std::string &what) { impl->pending.emplace_back(irText, what); }

namespace {
/// A module of textual IR parsed, verified and compiled to an object in a context and with a target machine
/// of its own (nothing shared: many at once, one per thread).
struct Parsed {
  std::unique_ptr<llvm::MemoryBuffer> object;
  std::string error;
};
Parsed compileModule(const std::string &irText, const std::string &what, llvm::orc::JITTargetMachineBuilder machine,
                     const llvm::DataLayout &layout) {
  Parsed p;
  auto ctx = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssembly(llvm::MemoryBufferRef(irText, what), diag, *ctx);
  if (!m) {
    std::string s;
    llvm::raw_string_ostream os(s);
    diag.print(nullptr, os, false, false); // FILE:LINE:COL: error: MESSAGE
    s = os.str();
    p.error = "LLVM JIT: cannot parse " + s.substr(0, s.find('\n'));
    return p;
  }
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*m, &es)) {
    p.error = "LLVM JIT: '" + what + "' does not verify: " + es.str();
    return p;
  }
  m->setDataLayout(layout);
  auto tm = machine.createTargetMachine();
  if (!tm) {
    p.error = "LLVM JIT: cannot target this machine: " + message(tm.takeError());
    return p;
  }
  llvm::orc::SimpleCompiler compile(**tm);
  auto object = compile(*m);
  if (!object) p.error = "LLVM JIT: cannot compile '" + what + "': " + message(object.takeError());
  else p.object = std::move(*object);
  return p;
}
} // namespace

std::vector<KernelJit::Entry> JitEngine::entries(const std::vector<KernelJit::EntrySpec> &specs) {
  // the pending modules, parsed and compiled on jitThreads() threads (each takes the next module), then
  // linked in order (ORC's own concurrent compilation crashed in LLVM 19: each thread here has its own
  // context and target machine, as SimpleCompiler needs)
  std::vector<Parsed> parsed(impl->pending.size());
  {
    std::atomic<size_t> next{0};
    const llvm::DataLayout layout = impl->jit->getDataLayout();
    auto work = [&] {
      for (size_t i; (i = next++) < parsed.size();)
        parsed[i] = compileModule(impl->pending[i].first, impl->pending[i].second, *impl->machine, layout);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::min<size_t>(jitThreads(), parsed.size()); ++t) pool.emplace_back(work);
    work();
    for (std::thread &t : pool) t.join();
  }
  std::vector<std::pair<std::string, std::string>> pending = std::move(impl->pending);
  impl->pending.clear();
  for (size_t i = 0; i < parsed.size(); ++i) {
    if (!parsed[i].error.empty()) fail(parsed[i].error);
    if (auto e = impl->jit->addObjectFile(std::move(parsed[i].object)))
      fail("LLVM JIT: cannot add '" + pending[i].second + "': " + message(std::move(e)));
  }
  if (specs.empty()) return {};
  // one module of trampolines, each calling its kernel with its arguments spread out
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("uopc_entries", *ctx);
  m->setDataLayout(impl->jit->getDataLayout());
  llvm::IRBuilder<> b(*ctx);
  std::vector<std::string> names;
  for (const KernelJit::EntrySpec &spec : specs) {
    std::vector<llvm::Type *> params(spec.nbufs, b.getPtrTy());
    params.insert(params.end(), spec.nvars, b.getInt64Ty());
    auto *kty = llvm::FunctionType::get(b.getVoidTy(), params, false);
    llvm::FunctionCallee kernel = m->getOrInsertFunction(spec.symbol, kty);
    names.push_back("uopc_entry_" + std::to_string(impl->entries++) + "_" + spec.symbol);
    auto *ety = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false);
    auto *f = llvm::Function::Create(ety, llvm::Function::ExternalLinkage, names.back(), *m);
    b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", f));
    std::vector<llvm::Value *> args;
    for (size_t i = 0; i < spec.nbufs; ++i)
      args.push_back(b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), f->getArg(0), i)));
    for (size_t i = 0; i < spec.nvars; ++i)
      args.push_back(b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), f->getArg(1), i)));
    b.CreateCall(kernel, args);
    b.CreateRetVoid();
  }
  if (auto e = impl->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    fail("LLVM JIT: cannot add the kernels' entries: " + message(std::move(e)));
  // one lookup of every entry (the trampolines' module compiled here; the kernels' objects linked)
  llvm::orc::SymbolLookupSet wanted;
  std::vector<llvm::orc::SymbolStringPtr> interned;
  for (const std::string &n : names) {
    interned.push_back(impl->jit->mangleAndIntern(n));
    wanted.add(interned.back());
  }
  auto found = impl->jit->getExecutionSession().lookup(llvm::orc::makeJITDylibSearchOrder(&impl->jit->getMainJITDylib()), std::move(wanted));
  if (!found) fail("LLVM JIT: cannot compile the kernels: " + message(found.takeError()));
  std::vector<KernelJit::Entry> out;
  for (const llvm::orc::SymbolStringPtr &n : interned) out.push_back(found->at(n).getAddress().toPtr<KernelJit::Entry>());
  return out;
}

} // namespace uopc::llvmbackend
