//===- NodeContext.h - what an ONNX op handler sees -------------*- C++ -*-===//
//
// Handlers are small functions keyed by ONNX op type (as in torch-mlir's
// TorchOnnxToTorch). They read inputs and attributes through NodeContext,
// build kiln ops (whose types are inferred, with errors located at the
// node), and bind outputs. Small integer tensors are also tracked as known
// values, so exporters' shape arithmetic folds away at import.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_NODECONTEXT_H
#define KILN_LIB_LOWERING_ONNXTOKILN_NODECONTEXT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace kiln {

class ShapeSymbols;

/// A small tensor whose value is known at import time (shape arithmetic,
/// scalar attributes that became inputs).
/// A known value as an integer: saturated at the int64 range (INT64_MAX,
/// as a Slice's "to the end" is, reads back from its double as 2^63), NaN
/// as 0. A plain cast of a double outside the range is undefined behaviour,
/// which a crafted model would reach.
inline int64_t toInt64(double v) {
  if (v != v)
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

struct KnownTensor {
  llvm::SmallVector<int64_t> shape;
  mlir::Type elementType;
  llvm::SmallVector<double> values; // integers are exact up to 2^53
  /// Shape arithmetic over dynamic dimensions: per element, the index of
  /// its polynomial in ShapeSymbols (-1 where `values` holds it); empty
  /// when every element is a number. Such a tensor is not `known()`.
  llvm::SmallVector<int32_t> syms;
  bool symbolic() const { return !syms.empty(); }
  int64_t numElements() const { return values.size(); }
  std::vector<int64_t> ints() const {
    std::vector<int64_t> out;
    out.reserve(values.size());
    for (double v : values)
      out.push_back(toInt64(v));
    return out;
  }
};

/// One named value of the graph being imported.
/// What a DequantizeLinear's output is: (q - zero) * scale, the scale
/// and zero point per index of `axis` or one for the tensor. A QDQ
/// model's products read it to run on the integers instead.
struct Dequantized {
  mlir::Value q, scale, zero; // zero: null when absent
  int64_t axis = -1;
};

struct GraphValue {
  mlir::Value value;               // null until materialized, for known ones
  std::optional<KnownTensor> known;
  /// An ONNX sequence (SplitToSequence, SequenceConstruct...): its
  /// elements, tracked at import, so its length is known at compile time;
  /// no value of its own.
  std::shared_ptr<const std::vector<GraphValue>> sequence;
  std::shared_ptr<const Dequantized> dequantized;
};

/// Maps ONNX element types to MLIR; null for unsupported ones (string...).
mlir::Type onnxElementType(mlir::MLIRContext *ctx, int32_t dataType);
std::string onnxTypeName(int32_t dataType);

class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, int64_t opset, mlir::OpBuilder &builder,
              mlir::Location loc, llvm::StringMap<GraphValue> &values,
              const std::string &modelDir)
      : node(node), opset(opset), b(builder), loc(loc), values(values),
        modelDir(modelDir) {}

  const onnx::NodeProto &node;
  const int64_t opset;
  mlir::OpBuilder &b;
  /// Importing for `kiln compile --train`: Dropout is active (PyTorch's train()).
  bool training = false;
  /// Quantized products as kiln.matmul_integer (ImportOptions::integerProducts).
  bool integerProducts = false;
  /// Quantized convolutions as integer products (ImportOptions::integerConvs).
  bool integerConvs = false;
  /// Depthwise ones too (ImportOptions::integerDepthwise).
  bool integerDepthwise = false;
  /// The importer's symbolic sizes (SymbolicShape.h).
  ShapeSymbols *shapes = nullptr;
  const mlir::Location loc;

  mlir::MLIRContext *ctx() const { return b.getContext(); }

  // Inputs ------------------------------------------------------------------
  size_t numInputs() const { return node.input_size(); }
  /// True when input `i` is present (optional inputs may be empty names).
  bool has(size_t i) const { return i < (size_t)node.input_size() && !node.input(i).empty(); }
  /// Input `i` as an SSA value (materializing a known constant); errors when
  /// it is missing.
  mlir::FailureOr<mlir::Value> input(size_t i);
  /// The present inputs among the first `count` (all when -1), in order;
  /// optional ones left empty are skipped. The first `required` must be
  /// present: skipping one would shift the later inputs into its place.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> presentInputs(size_t count = size_t(-1),
                                                                size_t required = 0);
  /// The graph value named `name` (an earlier node's output, an initializer
  /// or a graph input); errors when there is none.
  mlir::FailureOr<mlir::Value> valueNamed(llvm::StringRef name);
  /// True when input `i` is an initializer imported for training (a
  /// parameter to be): never folded into other known values.
  bool isTrainable(size_t i) const;
  /// Input `i` when its value is known at import time, else null.
  const KnownTensor *known(size_t i) const;
  /// Input `i` when its value is known, or symbolic (sizes known at run
  /// time: KnownTensor::syms), else null.
  const KnownTensor *knownOrSymbolic(size_t i) const;
  /// Input `i` as known integers; errors (naming `what`) when not constant.
  mlir::FailureOr<std::vector<int64_t>> constInts(size_t i, llvm::StringRef what);
  /// Input `i` as one known float; errors when not a constant scalar.
  mlir::FailureOr<double> constScalar(size_t i, llvm::StringRef what);
  mlir::RankedTensorType inputType(size_t i);

  // Attributes --------------------------------------------------------------
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  bool hasAttr(llvm::StringRef name) const { return attr(name) != nullptr; }
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  double attrFloat(llvm::StringRef name, double dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::vector<int64_t> attrInts(llvm::StringRef name,
                                std::vector<int64_t> dflt = {}) const;

  // Outputs -----------------------------------------------------------------
  size_t numOutputs() const { return node.output_size(); }
  bool hasOutput(size_t i) const {
    return i < (size_t)node.output_size() && !node.output(i).empty();
  }
  mlir::LogicalResult setOutput(size_t i, mlir::Value v);
  /// Output `i`, set, is the dequantization `d` (DequantizeLinear).
  void noteDequantized(size_t i, Dequantized d);
  /// Input `i`'s dequantization when a DequantizeLinear made it, else null.
  const Dequantized *dequantizedInput(size_t i) const;
  mlir::LogicalResult setKnown(size_t i, KnownTensor t);

  // Sequences ---------------------------------------------------------------
  /// Input `i` as bound: a tensor, a known tensor or a sequence.
  mlir::FailureOr<GraphValue> graphValue(size_t i);
  /// Input `i`'s elements; errors when it is not a sequence.
  mlir::FailureOr<std::vector<GraphValue>> sequenceInput(size_t i);
  /// Binds output `i` to `v` as it is (a known tensor stays known).
  mlir::LogicalResult setGraphValue(size_t i, GraphValue v);
  mlir::LogicalResult setSequence(size_t i, std::vector<GraphValue> elements);
  /// `gv` as a tensor (a known one materialized); errors, naming it
  /// `what`, when it is a sequence.
  mlir::FailureOr<mlir::Value> tensorOf(GraphValue &gv, const llvm::Twine &what);

  // Building ----------------------------------------------------------------
  /// Creates a kiln op whose result types are inferred; a failed inference
  /// is reported at the node instead of crashing.
  template <typename OpTy>
  mlir::FailureOr<mlir::Operation *> build(mlir::ValueRange operands,
                                           llvm::ArrayRef<mlir::NamedAttribute> attrs = {},
                                           unsigned numResults = 1) {
    return buildInferred(OpTy::getOperationName(), operands, attrs, numResults,
                         [](mlir::MLIRContext *c, std::optional<mlir::Location> l,
                            mlir::ValueRange o, mlir::DictionaryAttr a,
                            mlir::OpaqueProperties p, mlir::RegionRange r,
                            llvm::SmallVectorImpl<mlir::Type> &t) {
                           return OpTy::inferReturnTypes(c, l, o, a, p, r, t);
                         });
  }
  /// build<OpTy> and bind its single result to output 0.
  template <typename OpTy>
  mlir::LogicalResult emit(mlir::ValueRange operands,
                           llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    auto op = build<OpTy>(operands, attrs);
    if (mlir::failed(op))
      return mlir::failure();
    return setOutput(0, (*op)->getResult(0));
  }

  /// Reports an error at this node; always returns failure.
  mlir::LogicalResult error(const llvm::Twine &msg) const;

  /// Set when a composition (Expr) built an invalid piece; the error has
  /// been reported and the importer treats the node as failed.
  void markFailed() { failedPiece = true; }
  bool hasFailed() const { return failedPiece; }

  /// A constant tensor value from raw host data.
  mlir::Value constant(const KnownTensor &t);

  /// `v` converted to `elementType` (itself when it already has it).
  mlir::Value castTo(mlir::Value v, mlir::Type elementType);

  const std::string &modelDirectory() const { return modelDir; }

private:
  using InferFn = std::function<mlir::LogicalResult(
      mlir::MLIRContext *, std::optional<mlir::Location>, mlir::ValueRange,
      mlir::DictionaryAttr, mlir::OpaqueProperties, mlir::RegionRange,
      llvm::SmallVectorImpl<mlir::Type> &)>;
  mlir::FailureOr<mlir::Operation *> buildInferred(llvm::StringRef name,
                                                   mlir::ValueRange operands,
                                                   llvm::ArrayRef<mlir::NamedAttribute> attrs,
                                                   unsigned numResults, InferFn infer);

  /// The graph value named `name`; errors when there is none.
  mlir::FailureOr<GraphValue *> lookup(llvm::StringRef name);

  llvm::StringMap<GraphValue> &values;
  const std::string &modelDir;
  bool failedPiece = false;
};

/// Converts a TensorProto (inline or external data) to a constant attribute:
/// a dense_resource blob for weights, inline dense data for small tensors.
mlir::FailureOr<mlir::ElementsAttr>
tensorProtoToAttr(const onnx::TensorProto &tensor, mlir::MLIRContext *ctx,
                  const std::string &modelDir, std::string &error);

/// The known value of a small integer or float TensorProto, if it is small.
/// Bytes the tensor's dims and type declare (0 when they are invalid).
uint64_t declaredBytes(const onnx::TensorProto &tensor, mlir::MLIRContext *ctx);

std::optional<KnownTensor> tensorProtoToKnown(const onnx::TensorProto &tensor,
                                              mlir::MLIRContext *ctx,
                                              const std::string &modelDir);

using Handler = std::function<mlir::LogicalResult(NodeContext &)>;

/// Handler table: op type => handler (default ONNX domain).
using HandlerTable = llvm::StringMap<Handler>;

void registerMathHandlers(HandlerTable &table);
void registerNNHandlers(HandlerTable &table);
/// MaxPool (with indices), AveragePool, the global pools, MaxUnpool.
void registerPoolHandlers(HandlerTable &table);
/// ai.onnx.preview.training (keys "ai.onnx.preview.training::Adam"...).
void registerTrainingHandlers(HandlerTable &table);
void registerTensorHandlers(HandlerTable &table);
void registerReductionHandlers(HandlerTable &table);
void registerActivationHandlers(HandlerTable &table);
void registerLossHandlers(HandlerTable &table);
void registerResizeHandlers(HandlerTable &table);
void registerQuantizeHandlers(HandlerTable &table);
void registerRecurrentHandlers(HandlerTable &table);
void registerEinsumHandlers(HandlerTable &table);
void registerLocalNormHandlers(HandlerTable &table);
void registerWindowHandlers(HandlerTable &table);
void registerReverseSequenceHandlers(HandlerTable &table);
/// SequenceConstruct, SplitToSequence, SequenceAt... (lengths known at import).
void registerSequenceHandlers(HandlerTable &table);
void registerGridSampleHandlers(HandlerTable &table);
/// DFT, STFT, MelWeightMatrix.
void registerSpectralHandlers(HandlerTable &table);
/// onnxruntime's com.microsoft QLinearAdd, QLinearMul, QLinear*Pool...
void registerQLinearContribHandlers(HandlerTable &table);

/// The convolution of an ONNX Conv-like node (its strides, pads or
/// auto_pad, dilations, group) of `x` by `w`, plus `bias` when set; 1-D
/// convolutions run as 2-D.
mlir::FailureOr<mlir::Value> buildConv(NodeContext &nc, mlir::Value x, mlir::Value w,
                                       mlir::Value bias);
/// Explicit pads from auto_pad (SAME_UPPER/SAME_LOWER/VALID) or `pads`, in
/// kiln's [begin..., end...] order (NN.cpp).
mlir::FailureOr<llvm::SmallVector<int64_t>> resolvePads(NodeContext &nc,
                                                        llvm::ArrayRef<int64_t> in,
                                                        llvm::ArrayRef<int64_t> kernel,
                                                        llvm::ArrayRef<int64_t> strides,
                                                        llvm::ArrayRef<int64_t> dilations);
/// A 1-D convolution's or pool's [N, C, W] as [N, C, 1, W], and back.
mlir::Value addUnitHeight(NodeContext &nc, mlir::Value v);
mlir::Value dropUnitHeight(NodeContext &nc, mlir::Value v);
/// The average pooling of an ONNX AveragePool-like node of `x`.
mlir::FailureOr<mlir::Value> buildAvgPool(NodeContext &nc, mlir::Value x);
/// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, com.microsoft::QGemm.
void registerQuantizedProductHandlers(HandlerTable &table);

/// Parses a model in ONNX's textual syntax; false with `error` when bad.
bool parseOnnxText(const std::string &text, onnx::ModelProto &model, std::string &error);

/// Tries to evaluate the node on known inputs (shape arithmetic). Returns
/// true when it did and bound the outputs as known tensors.
bool foldKnownNode(NodeContext &ctx);
/// The folder of `ctx`'s op on known inputs `in` (null for an absent
/// optional one), without binding outputs; none when it does not fold.
std::optional<KnownTensor> foldKnown(NodeContext &ctx, llvm::ArrayRef<const KnownTensor *> in);
/// `fn` over the elements of `args` broadcast numpy-style (none past 64
/// elements or when the shapes do not broadcast).
std::optional<KnownTensor> broadcastMap(llvm::ArrayRef<const KnownTensor *> args,
                                        mlir::Type elementType,
                                        llvm::function_ref<double(llvm::ArrayRef<double>)> fn);
/// Shape arithmetic over dynamic dimensions (SymbolicFolding.cpp): Shape
/// and Size of dynamic tensors, and data movement and integer arithmetic
/// on their results, as symbolic known tensors. True when it folded.
bool foldSymbolicNode(NodeContext &ctx);
/// Reshape of a dynamic input, or to a symbolic target shape
/// (SymbolicFolding.cpp).
mlir::LogicalResult reshapeSymbolic(NodeContext &nc, mlir::Value x, bool allowZero);
/// Slice of a dynamic input or to sizes known at run time, Range to such
/// a size, Expand to such a shape (SymbolicOps.cpp).
mlir::LogicalResult sliceSymbolic(NodeContext &nc, mlir::Value x);
/// Slice's axes (input 3, default 0..count-1) and steps (input 4, default
/// 1s), which must be known (SymbolicOps.cpp).
mlir::LogicalResult sliceAxesAndSteps(NodeContext &nc, size_t count, std::vector<int64_t> &axes,
                                      std::vector<int64_t> &steps);
mlir::LogicalResult rangeSymbolic(NodeContext &nc);
/// The Range handler: rangeSymbolic, or a constant when the inputs are
/// known but the result is too long to track as a known value.
mlir::LogicalResult rangeOp(NodeContext &nc);
mlir::LogicalResult expandSymbolic(NodeContext &nc, mlir::Value x);

/// "2x?x8" ("?" for a dynamic dimension), "scalar" for rank 0.
std::string shapeText(llvm::ArrayRef<int64_t> shape);


} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_NODECONTEXT_H
