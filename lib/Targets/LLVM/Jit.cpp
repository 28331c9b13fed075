//===- Jit.cpp - LLVM-target kernels run in-process through ORC's LLJIT ---===//
// Part of the LLVM plugin (Targets/LLVMPlugin.h): KernelJit (LLVMPlugin.cpp) drives one JitEngine.
#include "Targets/LLVM/Backend.h"

#include "IR/Error.h"
#include "Targets/LLVM/Machines.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <mutex>

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
  size_t entries = 0;
};

JitEngine::JitEngine(const std::string &cpu) : impl(std::make_unique<Impl>()) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) fail("LLVM JIT: cannot target this machine: " + message(jtmb.takeError()));
  if (cpu != "native") {
    hostMachine(cpu); // refuses a CPU LLVM does not know
    jtmb->setCPU(cpu);
    jtmb->getFeatures() = llvm::SubtargetFeatures(); // that CPU's own features, not this machine's
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
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

void JitEngine::addModule(const std::string &irText, const std::string &what) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssembly(llvm::MemoryBufferRef(irText, what), diag, *ctx);
  if (!m) {
    std::string s;
    llvm::raw_string_ostream os(s);
    diag.print(nullptr, os, false, false); // FILE:LINE:COL: error: MESSAGE
    s = os.str();
    fail("LLVM JIT: cannot parse " + s.substr(0, s.find('\n')));
  }
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*m, &es)) fail("LLVM JIT: '" + what + "' does not verify: " + es.str());
  m->setDataLayout(impl->jit->getDataLayout());
  if (auto e = impl->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    fail("LLVM JIT: cannot add '" + what + "': " + message(std::move(e)));
}

KernelJit::Entry JitEngine::entry(const std::string &symbol, size_t nbufs, size_t nvars) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("uopc_entry", *ctx);
  m->setDataLayout(impl->jit->getDataLayout());
  llvm::IRBuilder<> b(*ctx);
  std::vector<llvm::Type *> params(nbufs, b.getPtrTy());
  params.insert(params.end(), nvars, b.getInt64Ty());
  auto *kty = llvm::FunctionType::get(b.getVoidTy(), params, false);
  llvm::FunctionCallee kernel = m->getOrInsertFunction(symbol, kty);
  std::string name = "uopc_entry_" + std::to_string(impl->entries++) + "_" + symbol;
  auto *ety = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false);
  auto *f = llvm::Function::Create(ety, llvm::Function::ExternalLinkage, name, *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", f));
  std::vector<llvm::Value *> args;
  for (size_t i = 0; i < nbufs; ++i)
    args.push_back(b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), f->getArg(0), i)));
  for (size_t i = 0; i < nvars; ++i)
    args.push_back(b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), f->getArg(1), i)));
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
  if (auto e = impl->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    fail("LLVM JIT: cannot add the entry of '" + symbol + "': " + message(std::move(e)));
  auto addr = impl->jit->lookup(name);
  if (!addr) fail("LLVM JIT: cannot compile the kernel '" + symbol + "': " + message(addr.takeError()));
  return addr->toPtr<KernelJit::Entry>();
}

} // namespace uopc::llvmbackend
