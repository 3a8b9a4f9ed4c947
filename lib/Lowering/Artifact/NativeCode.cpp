//===- NativeCode.cpp - LLVM dialect => object code => shared library -----===//

#include "Artifact.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "kiln/ArtifactFormat.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

using namespace mlir;

namespace kiln {
namespace {

/// The x86 features the runtime checks before running code that needs them
/// (names as LLVM and __builtin_cpu_supports both spell them).
const char *const kCheckedCpuFeatures[] = {"sse4.2", "avx", "avx2", "fma", "f16c", "bmi2",
                                           "avx512f", "avx512bw", "avx512dq", "avx512vl",
                                           "avx512vnni", "avx512bf16"};

void addArtifactGlobals(llvm::Module &m, const std::string &signature,
                        const std::string &kernels, const std::string &ptx,
                        llvm::StringRef cubin, const std::string &prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *kernelsInit = llvm::ConstantDataArray::getString(ctx, kernels, /*AddNull=*/true);
  new llvm::GlobalVariable(m, kernelsInit->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, kernelsInit,
                           prefix + "kiln_artifact_kernels");
  auto *sigInit = llvm::ConstantDataArray::getString(ctx, signature, /*AddNull=*/true);
  new llvm::GlobalVariable(m, sigInit->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, sigInit,
                           prefix + "kiln_artifact_signature");
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  new llvm::GlobalVariable(m, i32, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantInt::get(i32, KILN_ARTIFACT_ABI_VERSION),
                           prefix + "kiln_artifact_abi_version");
  if (!ptx.empty()) { // a CUDA artifact's kernels, for the driver's JIT
    auto *ptxInit = llvm::ConstantDataArray::getString(ctx, ptx, /*AddNull=*/true);
    new llvm::GlobalVariable(m, ptxInit->getType(), /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage, ptxInit,
                             prefix + "kiln_artifact_ptx");
  }
  if (!cubin.empty()) { // machine code for the arch it was compiled for
    auto *bytes = llvm::ConstantDataArray::getRaw(cubin, cubin.size(), llvm::Type::getInt8Ty(ctx));
    auto *g = new llvm::GlobalVariable(m, bytes->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::ExternalLinkage, bytes,
                                       prefix + "kiln_artifact_cubin");
    g->setAlignment(llvm::Align(16));
    auto *i64 = llvm::Type::getInt64Ty(ctx);
    new llvm::GlobalVariable(m, i64, true, llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantInt::get(i64, cubin.size()),
                             prefix + "kiln_artifact_cubin_size");
  }
  for (const char *entry : {"kiln_model_run", "kiln_model_output_dims"})
    if (llvm::Function *fn = m.getFunction(entry))
      fn->setName(prefix + entry);
}

/// compiler-rt's f32 -> bf16 helper (round to nearest even, NaNs kept
/// quiet), defined in the artifact itself: LLVM's x86 backend calls it
/// where it widens bf16 vector code (a masked bf16 load or store), and
/// neither Debian's libgcc nor the loader provides it. Hidden and
/// link-once, so artifacts linked together share one and export none.
void addBf16Helper(llvm::Module &m) {
  if (m.getFunction("__truncsfbf2"))
    return;
  llvm::LLVMContext &ctx = m.getContext();
  auto *f32 = llvm::Type::getFloatTy(ctx);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getBFloatTy(ctx), {f32}, false),
      llvm::GlobalValue::LinkOnceODRLinkage, "__truncsfbf2", m);
  fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Value *x = fn->getArg(0);
  llvm::Value *bits = b.CreateBitCast(x, i32);
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  llvm::Value *rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7fff))), 16);
  llvm::Value *quietNaN = b.CreateOr(b.CreateLShr(bits, 16), 0x40);
  llvm::Value *r = b.CreateSelect(b.CreateFCmpUNO(x, x), quietNaN, rounded);
  b.CreateRet(b.CreateBitCast(b.CreateTrunc(r, b.getInt16Ty()), llvm::Type::getBFloatTy(ctx)));
}

} // namespace

LogicalResult emitNative(ModuleOp module, const std::string &signature,
                         const std::string &cpu, const std::string &symbolPrefix, bool emitIR,
                         llvm::raw_pwrite_stream &os, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  // Code generation's errors (the register allocator out of AMX tile
  // registers, say) come back as this call's error instead of ending the
  // process: the compiler then retries without the tiles.
  std::string codegenError;
  llvmContext.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *d, void *context) {
        auto &message = *static_cast<std::string *>(context);
        if (d->getSeverity() == llvm::DS_Warning) { // as LLVM's own handler would
          llvm::DiagnosticPrinterRawOStream printer(llvm::errs());
          llvm::errs() << "warning: ";
          d->print(printer);
          llvm::errs() << "\n";
        }
        if (d->getSeverity() != llvm::DS_Error || !message.empty())
          return;
        llvm::raw_string_ostream os(message);
        llvm::DiagnosticPrinterRawOStream printer(os);
        d->print(printer);
      },
      &codegenError);
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "kiln_model");
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no LLVM target for " + triple.str() + ": " + lookupError;
    return failure();
  }
  // This machine's CPU and exactly its features by default (a VM may hide
  // some its model has); --cpu=x86-64-v2/-v3 for artifacts that must run
  // elsewhere. The signature records what the code needs, and the runtime
  // refuses to run it on a CPU without it (instead of dying of SIGILL).
  std::string cpuName = cpu.empty() ? "native" : cpu, features;
  if (cpuName == "native") {
    cpuName = llvm::sys::getHostCPUName().str();
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features += std::string(features.empty() ? "" : ",") + (f.second ? "+" : "-") +
                  f.first().str();
  }
  // Kiln's kernels vectorize their contiguous loops; LLVM's vectorizer
  // would otherwise pick an outer loop of an unrolled nest (a fill or copy
  // across channels) and emit gathers and scatters, ten times slower.
  // The loops left to it (long rows of elementwise ops) in whole AVX-512
  // vectors: LLVM's Intel tunings ask for 256 bits (for clocks that
  // Sapphire Rapids no longer drops). Quantized BERT layer's GELU chain
  // (quantize, dequantize, erf over 128 x 3072) on 2 SPR-class cores:
  // the layer 2.73 -> 2.04 ms; f32 ResNet-50 and BERT within noise.
  if (triple.isX86())
    features += std::string(features.empty() ? "" : ",") +
                "+prefer-no-gather,+prefer-no-scatter,-prefer-256-bit";
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpuName, features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm) {
    error = "cannot create a target machine for cpu '" + cpuName + "'";
    return failure();
  }
  std::string cpuLine = "cpu " + cpuName;
  for (const char *f : kCheckedCpuFeatures)
    if (tm->getMCSubtargetInfo()->checkFeatures(std::string("+") + f))
      cpuLine += std::string(" ") + f;
  // AMX only where the kernels use its tiles: the runtime then also asks
  // the OS for the tile state before the first call.
  if (llvm::any_of(llvmModule->functions(), [](const llvm::Function &f) {
        return f.getName().starts_with("llvm.x86.tdpb");
      }))
    cpuLine += " amx-int8";
  auto kernels = module->getAttrOfType<StringAttr>(KilnDialect::getKernelTableAttrName());
  auto ptx = module->getAttrOfType<StringAttr>(KilnDialect::getPtxAttrName());
  auto cubin = module->getAttrOfType<StringAttr>(KilnDialect::getCubinAttrName());
  addArtifactGlobals(*llvmModule, signature + cpuLine + "\n", kernels ? kernels.str() : "",
                     ptx ? ptx.str() : "", cubin ? cubin.getValue() : "", symbolPrefix);

  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());
  // A transformer's layers, a ResNet's repeated blocks: the same kernels
  // over other weights (which kernels take as arguments), compiled once.
  // Call sites keep their own profile hooks and kernel-table lines. BERT-base
  // at one sequence: 286 functions -> 121, LLVM 33 -> 6 s.
  llvm::MergeFunctionsPass::runOnModule(*llvmModule);
  auto optimize = makeOptimizingTransformer(3, 0, tm.get());
  if (auto err = optimize(llvmModule.get())) {
    error = "LLVM optimization failed: " + llvm::toString(std::move(err));
    return failure();
  }

  // The weights go in after optimization, as raw bytes: LLVM has nothing to
  // fold in them, and big constant arrays are slow to translate and optimize.
  if (auto blobAttr =
          module->getAttrOfType<DenseResourceElementsAttr>(KilnDialect::getWeightsBlobAttrName())) {
    ArrayRef<char> data = blobAttr.getRawHandle().getBlob()->getData();
    llvm::LLVMContext &ctx = llvmModule->getContext();
    auto *init = llvm::ConstantDataArray::getRaw(llvm::StringRef(data.data(), data.size()),
                                                 data.size(), llvm::Type::getInt8Ty(ctx));
    auto *g = new llvm::GlobalVariable(*llvmModule, init->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::ExternalLinkage, init,
                                       symbolPrefix + "kiln_artifact_weights");
    g->setAlignment(llvm::Align(64));
    // LLVM holds its own copy now; the blob goes before the object code is
    // emitted (its bytes a third copy there). Each module is emitted once.
    blobAttr.getRawHandle().getResource()->setBlob(AsmResourceBlob());
  }
  addBf16Helper(*llvmModule);
  if (emitIR) {
    llvmModule->print(os, nullptr);
    return success();
  }
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return failure();
  }
  pm.run(*llvmModule);
  if (!codegenError.empty()) {
    error = "LLVM code generation: " + codegenError;
    return failure();
  }
  return success();
}

namespace {
/// The first of `names` found on PATH, or "" with `error` saying what for.
std::string findTool(std::initializer_list<const char *> names, const char *what,
                     std::string &error) {
  for (const char *name : names)
    if (auto p = llvm::sys::findProgramByName(name))
      return *p;
  error = std::string("no ") + what + " found on PATH";
  return "";
}
} // namespace

LogicalResult archiveStaticLibrary(const std::string &object, const std::string &member,
                                   const std::string &output, std::string &error) {
  std::string ar = findTool({"llvm-ar-22", "llvm-ar", "ar"},
                            "archiver (llvm-ar or ar) to write the static library", error);
  if (ar.empty())
    return failure();
  // The member keeps its file name: give it a stable one, in a private
  // folder, so the archive is the same from build to build.
  llvm::SmallString<256> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("kiln-archive", dir)) {
    error = "cannot create a temporary folder: " + ec.message();
    return failure();
  }
  llvm::SmallString<256> memberPath(dir);
  llvm::sys::path::append(memberPath, member);
  std::string message;
  int rc = -1;
  if (!llvm::sys::fs::copy_file(object, memberPath)) {
    // `D`: deterministic (zero timestamps and ids). The reserved temporary
    // is empty, which ar would not take for an archive.
    llvm::sys::fs::remove(output);
    llvm::SmallVector<llvm::StringRef> args{ar, "rcsD", output, memberPath};
    rc = llvm::sys::ExecuteAndWait(ar, args, std::nullopt, {}, 0, 0, &message);
  }
  llvm::sys::fs::remove(memberPath);
  llvm::sys::fs::remove(dir);
  if (rc != 0) {
    error = "archiving with '" + ar + "' failed" + (message.empty() ? "" : ": " + message);
    return failure();
  }
  return success();
}

LogicalResult linkSharedLibrary(llvm::ArrayRef<std::string> objects, const std::string &output,
                                std::string &error) {
  // LLVM's lld where the setup installed it: it writes a library of large
  // embedded weights in half BFD ld's time (BERT-base's 436 MB 3.0 -> 1.3 s).
  std::string cc, lld;
  auto clang = llvm::sys::findProgramByName("clang-22");
  auto lldPath = llvm::sys::findProgramByName("ld.lld-22");
  if (clang && lldPath) {
    cc = *clang;
    lld = "--ld-path=" + *lldPath; // that linker, not whichever ld.lld clang finds
  } else {
    cc = findTool({"cc", "clang", "gcc"},
                  "C compiler (cc, clang or gcc) to link the shared library", error);
    if (cc.empty())
      return failure();
  }
  llvm::SmallVector<llvm::StringRef> args{cc, "-shared", "-o", output};
  if (!lld.empty())
    args.push_back(lld);
  for (const std::string &object : objects)
    args.push_back(object);
  args.append({"-Wl,-z,noexecstack", "-lm"});
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(cc, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    error = "linking with '" + cc + "' failed" + (message.empty() ? "" : ": " + message);
    return failure();
  }
  return success();
}

AtomicOutput::AtomicOutput(std::string target) : target(std::move(target)) {
  llvm::SmallString<256> model(this->target);
  model += ".%%%%%%.tmp";
  // The name is registered with RemoveFileOnSignal before the file exists and
  // dropped only after it is gone: a compile killed at any instant (Ctrl-C, a
  // SIGTERM, a crash; on whichever thread it lands) leaves no temporary.
  std::error_code ec;
  for (int attempt = 0; attempt < 128; ++attempt) {
    llvm::SmallString<256> name;
    llvm::sys::fs::createUniquePath(model, name, /*MakeAbsolute=*/false);
    llvm::sys::RemoveFileOnSignal(name);
    int fd;
    ec = llvm::sys::fs::openFileForWrite(name, fd, llvm::sys::fs::CD_CreateNew,
                                         llvm::sys::fs::OF_None, 0600);
    if (!ec) {
      llvm::sys::Process::SafelyCloseFileDescriptor(fd);
      tmp = name.str().str();
      return;
    }
    llvm::sys::DontRemoveFileOnSignal(name);
    if (ec != std::errc::file_exists)
      break;
  }
  llvm::StringRef dir = llvm::sys::path::parent_path(this->target);
  createError = "cannot create a file in '" + (dir.empty() ? std::string(".") : dir.str()) +
                "': " + ec.message();
}

AtomicOutput::~AtomicOutput() {
  if (tmp.empty())
    return;
  if (!committed)
    llvm::sys::fs::remove(tmp);
  llvm::sys::DontRemoveFileOnSignal(tmp);
}

LogicalResult AtomicOutput::commit(std::string &error) {
  // Unique temporaries are created 0600; artifacts are ordinary files.
  using llvm::sys::fs::perms;
  (void)llvm::sys::fs::setPermissions(
      tmp, perms::owner_read | perms::owner_write | perms::group_read | perms::others_read);
  if (auto ec = llvm::sys::fs::rename(tmp, target)) {
    error = "cannot move the output into place at '" + target + "': " + ec.message();
    return failure();
  }
  committed = true;
  return success();
}

} // namespace kiln
