//===- HostToLLVM.cpp - host code to the LLVM dialect ---------------------===//
//
// The conversions the host program takes after bufferization and the
// memory plan (both targets), and @__kiln_output_dims on CUDA, lowered on
// its own (kiln-lower-output-dims).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Host/HostToLLVM.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void addHostToLLVM(OpPassManager &pm, bool deviceAllocations, bool amx) {
  // Memrefs with dynamic sizes as pointers and sizes, for bare pointers.
  pm.addPass(createKilnSplitDynamicArgs());
  // Arithmetic and math on bf16 (an Add, a Sqrt of a bf16 model) in f32,
  // rounded back per op: x86 has no bf16 arithmetic, and LLVM would
  // promote it through compiler-rt helpers the artifact cannot link (math
  // on f16 likewise, for one path for both). Then bf16 conversions become
  // integer arithmetic (no compiler-rt helpers).
  pm.addPass(math::createMathExtendToSupportedTypes());
  arith::ArithEmulateUnsupportedFloatsOptions bf16;
  bf16.sourceTypeStrs = {"bf16"};
  pm.addPass(arith::createArithEmulateUnsupportedFloats(bf16));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addNestedPass<func::FuncOp>(createKilnExpandDynamicGroups());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Math on vectors LLVM has no intrinsic for is unrolled into libm calls
  // on extracted lanes: before the vector ops are lowered.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass()); // register-tiled and row kernels
  pm.addPass(createUBToLLVMConversionPass());  // poison from vector shape casts
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = deviceAllocations;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  // AMX tiles carried by loops: their branches' operands, converted with
  // the tile type (which the control-flow conversion alone doesn't know).
  if (amx) {
    ConvertToLLVMPassOptions tiles;
    tiles.filterDialects = {"amx", "cf"};
    pm.addPass(createConvertToLLVMPass(tiles));
  }
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

} // namespace kiln
