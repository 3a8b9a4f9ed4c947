//===- CudaStage.cpp - what `kiln compile --target=cuda` adds --------------===//
//
// The options of the CUDA pipeline (the chip, the toolkit for libdevice),
// and, once it has run, the checks and machine code of the PTX it left on
// the module.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"

using namespace mlir;

namespace kiln {

bool isGpuArch(llvm::StringRef arch) {
  if (!arch.consume_front("sm_"))
    return false;
  arch.consume_back("a");
  unsigned v;
  return !arch.getAsInteger(10, v) && v >= 70 && v < 1000;
}

/// Where libdevice (math in kernels) and ptxas come from: $KILN_CUDA_TOOLKIT
/// ("none": no toolkit), else $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT or
/// /usr/local/cuda; "" when none exists.
static std::string cudaToolkitPath() {
  if (const char *v = std::getenv("KILN_CUDA_TOOLKIT"))
    return llvm::StringRef(v) == "none" ? "" : v;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *v = std::getenv(var); v && *v && llvm::sys::fs::is_directory(v))
      return v;
  return llvm::sys::fs::is_directory("/usr/local/cuda") ? "/usr/local/cuda" : "";
}

CudaOptions cudaOptions(const std::string &chip, const GpuTuning &tuning) {
  CudaOptions options;
  options.chip = chip;
  options.tuning = tuning;
  options.toolkit = cudaToolkitPath();
  return options;
}

LogicalResult finishDeviceCode(ModuleOp module, const std::string &input, const std::string &chip,
                               bool assemble, std::string &error) {
  auto ptx = module->getAttrOfType<StringAttr>(KilnDialect::getPtxAttrName());
  if (!ptx)
    return success();
  // Math the GPU has no instruction for (erf, exp, tanh...) comes from
  // CUDA's libdevice; without a toolkit the PTX would call functions no
  // driver can resolve at load time.
  llvm::StringRef text = ptx.getValue();
  if (size_t at = text.find(" __nv_"); at != llvm::StringRef::npos) {
    error = input + ": the kernels need CUDA's libdevice for math (" +
            text.substr(at + 1).split('(').first.trim().str() +
            "), but no CUDA toolkit was found: install it at /usr/local/cuda or set "
            "CUDA_HOME or KILN_CUDA_TOOLKIT";
    return failure();
  }
  // With the toolkit here, the artifact also carries machine code for its
  // arch and Hopper (no JIT at load); the PTX stays for other GPUs.
  std::string toolkit = cudaToolkitPath();
  std::string ptxas = !assemble || toolkit.empty() ? "" : findPtxas(toolkit);
  if (ptxas.empty())
    return success();
  std::string cubin;
  if (!assembleDeviceCode(ptxas, ptx.str(), chip, cubin, error)) {
    error = input + ": " + error;
    return failure();
  }
  module->setAttr(KilnDialect::getCubinAttrName(), StringAttr::get(module.getContext(), cubin));
  return success();
}

} // namespace kiln
