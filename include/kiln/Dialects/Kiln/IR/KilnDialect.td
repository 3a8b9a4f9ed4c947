//===- KilnDialect.td - the kiln tensor dialect ------------*- tablegen -*-===//
//
// Kiln's graph-level dialect: value-semantics ops on builtin ranked tensors,
// close to ONNX and core ATen, so importers map 1:1 and fusion sees whole ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let summary = "Kiln's tensor-level graph dialect";
  let description = [{
    Ops of an imported neural network graph. Every op takes and returns
    builtin ranked tensors (static shapes, or dynamic dimensions whose sizes
    are `tensor.dim`s and index arithmetic), infers its result types, and
    follows numpy broadcasting where ONNX does.
  }];
  let cppNamespace = "::kiln";
  // Dynamic sizes: `tensor.dim` and index arithmetic.
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect"];
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1; // ScalarReads.cpp
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 0;
  let extraClassDeclaration = [{
    // The discardable attributes Kiln's stages leave for later ones (on
    // the module, functions, arguments and ops), named once here.
    static constexpr ::llvm::StringLiteral getArenaBytesAttrName() {
      return ::llvm::StringLiteral("kiln.arena_bytes");
    }
    static constexpr ::llvm::StringLiteral getBackwardAttrName() {
      return ::llvm::StringLiteral("kiln.backward");
    }
    static constexpr ::llvm::StringLiteral getBlockAttrName() {
      return ::llvm::StringLiteral("kiln.block");
    }
    static constexpr ::llvm::StringLiteral getBufferAttrName() {
      return ::llvm::StringLiteral("kiln.buffer");
    }
    static constexpr ::llvm::StringLiteral getClassesAttrName() {
      return ::llvm::StringLiteral("kiln.classes");
    }
    // kiln-lower-collectives' declarations: the reduction ("sum", "mean"),
    // the element count and the runtime's dtype code.
    static constexpr ::llvm::StringLiteral getCollectiveAttrName() {
      return ::llvm::StringLiteral("kiln.collective");
    }
    static constexpr ::llvm::StringLiteral getCollectiveElementsAttrName() {
      return ::llvm::StringLiteral("kiln.elements");
    }
    static constexpr ::llvm::StringLiteral getCollectiveDtypeAttrName() {
      return ::llvm::StringLiteral("kiln.dtype");
    }
    // "start" or "wait" for a reduction split by kiln-schedule-collectives.
    static constexpr ::llvm::StringLiteral getCollectivePhaseAttrName() {
      return ::llvm::StringLiteral("kiln.phase");
    }
    static constexpr ::llvm::StringLiteral getCostAttrName() {
      return ::llvm::StringLiteral("kiln.cost");
    }
    static constexpr ::llvm::StringLiteral getCubinAttrName() {
      return ::llvm::StringLiteral("kiln.cubin");
    }
    /// Module: every dynamic dimension's symbol => [min, max] (max -1: none).
    static constexpr ::llvm::StringLiteral getDimRangesAttrName() {
      return ::llvm::StringLiteral("kiln.dim_ranges");
    }
    /// Module: each symbol only outputs have, computed from the inputs'
    /// ones (kiln-bind-result-dims) => [constant, [coef, symbol...]...].
    static constexpr ::llvm::StringLiteral getDimExprsAttrName() {
      return ::llvm::StringLiteral("kiln.dim_exprs");
    }
    /// An argument or result of @main: per dimension, its size or the name
    /// of the symbol it is bound to.
    static constexpr ::llvm::StringLiteral getDimsAttrName() {
      return ::llvm::StringLiteral("kiln.dims");
    }
    /// Module, for a model with dynamic inputs: per input of @main, per
    /// dimension, the largest size it may take (-1: unbounded), written
    /// when @main's kiln.dims go (kiln-privatize-entry) for the plans that
    /// size buffers at their maximum (the CUDA arena).
    static constexpr ::llvm::StringLiteral getInputDimMaxAttrName() {
      return ::llvm::StringLiteral("kiln.input_dim_max");
    }
    /// A function whose dynamic memref arguments were split into a pointer
    /// and sizes: per added `index` argument, [buffer argument, dimension].
    static constexpr ::llvm::StringLiteral getDynamicSizesAttrName() {
      return ::llvm::StringLiteral("kiln.dynamic_sizes");
    }
    static constexpr ::llvm::StringLiteral getExternalWeightsAttrName() {
      return ::llvm::StringLiteral("kiln.external_weights");
    }
    static constexpr ::llvm::StringLiteral getFusedSpanAttrName() {
      return ::llvm::StringLiteral("kiln.fused_span");
    }
    static constexpr ::llvm::StringLiteral getGradOfAttrName() {
      return ::llvm::StringLiteral("kiln.grad_of");
    }
    static constexpr ::llvm::StringLiteral getGridAttrName() {
      return ::llvm::StringLiteral("kiln.grid");
    }
    static constexpr ::llvm::StringLiteral getHyperAttrName() {
      return ::llvm::StringLiteral("kiln.hyper");
    }
    static constexpr ::llvm::StringLiteral getInitialAttrName() {
      return ::llvm::StringLiteral("kiln.initial");
    }
    static constexpr ::llvm::StringLiteral getInitialStateAttrName() {
      return ::llvm::StringLiteral("kiln.initial_state");
    }
    static constexpr ::llvm::StringLiteral getInitialStateOffsetsAttrName() {
      return ::llvm::StringLiteral("kiln.initial_state_offsets");
    }
    static constexpr ::llvm::StringLiteral getInitializerAttrName() {
      return ::llvm::StringLiteral("kiln.initializer");
    }
    static constexpr ::llvm::StringLiteral getKernelAttrName() {
      return ::llvm::StringLiteral("kiln.kernel");
    }
    static constexpr ::llvm::StringLiteral getKernelNameAttrName() {
      return ::llvm::StringLiteral("kiln.kernel_name");
    }
    static constexpr ::llvm::StringLiteral getKernelTableAttrName() {
      return ::llvm::StringLiteral("kiln.kernel_table");
    }
    static constexpr ::llvm::StringLiteral getLabelAttrName() {
      return ::llvm::StringLiteral("kiln.label");
    }
    static constexpr ::llvm::StringLiteral getLaunchAttrName() {
      return ::llvm::StringLiteral("kiln.launch");
    }
    static constexpr ::llvm::StringLiteral getMmaAttrName() {
      return ::llvm::StringLiteral("kiln.mma");
    }
    static constexpr ::llvm::StringLiteral getMmaBf16AttrName() {
      return ::llvm::StringLiteral("kiln.mma_bf16");
    }
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("kiln.name");
    }
    static constexpr ::llvm::StringLiteral getOpsAttrName() {
      return ::llvm::StringLiteral("kiln.ops");
    }
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("kiln.param");
    }
    static constexpr ::llvm::StringLiteral getPartitionAttrName() {
      return ::llvm::StringLiteral("kiln.partition");
    }
    static constexpr ::llvm::StringLiteral getPtxAttrName() {
      return ::llvm::StringLiteral("kiln.ptx");
    }
    static constexpr ::llvm::StringLiteral getRecomputeAttrName() {
      return ::llvm::StringLiteral("kiln.recompute");
    }
    static constexpr ::llvm::StringLiteral getSharedAttrName() {
      return ::llvm::StringLiteral("kiln.shared");
    }
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("kiln.state");
    }
    static constexpr ::llvm::StringLiteral getTaskAttrName() {
      return ::llvm::StringLiteral("kiln.task");
    }
    static constexpr ::llvm::StringLiteral getTensorMapsAttrName() {
      return ::llvm::StringLiteral("kiln.tensor_maps");
    }
    static constexpr ::llvm::StringLiteral getUnsignedAttrName() {
      return ::llvm::StringLiteral("kiln.unsigned");
    }
    static constexpr ::llvm::StringLiteral getUnsignedInAttrName() {
      return ::llvm::StringLiteral("kiln.unsigned_in");
    }
    static constexpr ::llvm::StringLiteral getUnsignedOutAttrName() {
      return ::llvm::StringLiteral("kiln.unsigned_out");
    }
    static constexpr ::llvm::StringLiteral getUpdateAttrName() {
      return ::llvm::StringLiteral("kiln.update");
    }
    static constexpr ::llvm::StringLiteral getWeightBytesAttrName() {
      return ::llvm::StringLiteral("kiln.weight_bytes");
    }
    static constexpr ::llvm::StringLiteral getWeightsBlobAttrName() {
      return ::llvm::StringLiteral("kiln.weights_blob");
    }
  }];
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_DIALECT_TD
