//===- OnnxImporter.h - ONNX protobuf to the kiln dialect -------*- C++ -*-===//
//
// Imports one ONNX model file into a module holding `func.func @main`, with
// initializers as dense_resource constants and static shapes inferred.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_ONNXTOKILN_ONNXIMPORTER_H
#define KILN_LOWERING_ONNXTOKILN_ONNXIMPORTER_H

#include "kiln/Support/DimRange.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

/// A graph input given a fixed value at compile time (`--const-input`).
struct ConstInput {
  int32_t onnxType = 0;        // onnx::TensorProto::DataType
  std::vector<int64_t> dims;
  std::string bytes;           // little-endian, row-major
};

struct ImportOptions {
  /// Shapes of graph inputs (`--shape NAME=1x3x224x224`, or with ranges
  /// `NAME=1..32x128`): a pinned dimension is static, a range stays dynamic.
  std::map<std::string, std::vector<DimRange>> shapes;
  /// Ranges of dynamic dimensions by symbol (`--dim batch=1..64`): the
  /// ONNX dim_param, or INPUT.AXIS for a dimension without one.
  std::map<std::string, DimRange> dims;
  /// Graph inputs compiled in as constants: they become initializers, so
  /// shape arithmetic over them folds and they leave the signature.
  std::map<std::string, ConstInput> constInputs;
  /// Initializers given new values (`kiln compile --params DIR`: parameters
  /// saved by `kiln train`); dtype and shape must match the model's.
  std::map<std::string, ConstInput> initializerValues;
  /// For training: floating-point initializers always import as constants
  /// marked `kiln.initializer = "name"` (never folded into the graph as
  /// known values), so kiln-lift-parameters can make them parameters.
  bool trainable = false;
  /// Quantized matrix products (uint8 activations, constant int8 weights)
  /// as kiln.matmul_integer, exact in i32, for a target that has a tile for
  /// it (a CPU with AVX512-VNNI or AVX2); else as f32 products, exact by
  /// chunks.
  bool integerProducts = false;
  /// Quantized convolutions too (channels last, their windows as
  /// kiln.matmul_integer rows), exact in i32 where the f32 path's Winograd
  /// transforms round: with either tile; without integerDepthwise, only in
  /// a graph with no grouped convolution.
  bool integerConvs = false;
  /// Quantized depthwise convolutions as i32 multiply-adds per tap too:
  /// with AVX512-VNNI. AVX2's vpmulld takes two of an FMA's issue slots at
  /// 8 lanes; the f32 depthwise tile there is faster.
  bool integerDepthwise = false;
};

/// Imports `path`. On failure, every problem has been reported through the
/// context's diagnostic handler (located at the offending node) and null is
/// returned.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &context,
                                                  const std::string &path,
                                                  const ImportOptions &options);

/// Imports a model held in memory; `path` names it in messages, says where
/// external data files are (its folder) and whether it is ONNX text syntax
/// (.onnxtxt). For fuzzing and embedding.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModelFromBytes(mlir::MLIRContext &context,
                                                           const std::string &bytes,
                                                           const std::string &path,
                                                           const ImportOptions &options);

/// A short description of a model for `kiln inspect`: inputs, outputs and an
/// op histogram. Returns false (with `error` set) when it can't be read.
bool describeOnnxModel(const std::string &path, std::string &text, std::string &error);

/// Names of the graph inputs that are not initializers, in order (empty
/// when the model cannot be read).
std::vector<std::string> onnxGraphInputNames(const std::string &path);

/// One node of a model's graph, for drawing it.
struct OnnxNodeInfo {
  std::string label; // as in diagnostics and kernel tables: "node 'fc1' (Gemm)"
  std::string name, opType;
  std::vector<std::string> inputs, outputs;
};

/// The graph's nodes in order, and its graph inputs (not initializers) and
/// outputs; false with `error` when the model cannot be read.
bool onnxGraphNodes(const std::string &path, std::vector<OnnxNodeInfo> &nodes,
                    std::vector<std::string> &inputs, std::vector<std::string> &outputs,
                    std::string &error);

/// ONNX op types (default domain) the importer handles, sorted.
std::vector<std::string> supportedOnnxOps();

/// Known limits of an op's import ("" when none are known).
std::string onnxOpLimits(const std::string &opType);

/// The support report (`kiln inspect MODEL --support`): one line per node,
/// supported or unsupported with the reason, found by importing the model
/// without compiling it. Returns false when any node is unsupported or the
/// model cannot be read (`text` then says why).
bool reportOnnxSupport(const std::string &path, const ImportOptions &options,
                       std::string &text);

} // namespace kiln

#endif // KILN_LOWERING_ONNXTOKILN_ONNXIMPORTER_H
