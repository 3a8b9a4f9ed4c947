//===- GraphImporter.h - one ONNX graph into the kiln dialect ---*- C++ -*-===//
//
// The importer's state over a model: values by name, opsets, the model's
// folder (external data). OnnxImporter.cpp imports a graph node by node;
// ControlFlow.cpp resolves If, Loop and Scan known at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_GRAPHIMPORTER_H
#define KILN_LIB_LOWERING_ONNXTOKILN_GRAPHIMPORTER_H

#include "ModelFile.h"
#include "NodeContext.h"
#include "SymbolicShape.h"

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <map>
#include <string>

namespace kiln {

class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext &ctx, const std::string &path, const ImportOptions &opts)
      : ctx(ctx), opts(opts), fileLoc(mlir::FileLineColLoc::get(&ctx, path, 0, 0)) {
    modelDir = llvm::sys::path::parent_path(path).str();
    if (modelDir.empty())
      modelDir = ".";
  }

  mlir::OwningOpRef<mlir::ModuleOp> run(const onnx::ModelProto &model);

private:
  mlir::Location nodeLoc(const onnx::NodeProto &node) {
    return mlir::NameLoc::get(
        mlir::StringAttr::get(&ctx, "node '" + nodeName(node) + "' (" + node.op_type() + ")"),
        fileLoc);
  }
  mlir::LogicalResult fileError(const llvm::Twine &msg) { return mlir::emitError(fileLoc) << msg; }
  mlir::LogicalResult checkSupported(const onnx::GraphProto &graph);
  mlir::FailureOr<mlir::RankedTensorType> inputType(const onnx::ValueInfoProto &info,
                                                    mlir::ArrayAttr &dimsAttr);
  mlir::LogicalResult checkDimSymbols(mlir::ModuleOp module);
  static std::string symbolFor(const std::string &input, int axis,
                               const onnx::TensorShapeProto_Dimension *dim);
  mlir::LogicalResult collectSymbols(const onnx::GraphProto &graph,
                                     const llvm::StringSet<> &initializers);
  mlir::LogicalResult checkDynamicSupport(NodeContext &nc, const onnx::NodeProto &node);
  mlir::FailureOr<int64_t> defaultOpset(const onnx::ModelProto &model);
  mlir::FailureOr<mlir::func::FuncOp> declareFunction(const onnx::GraphProto &graph,
                                                      mlir::OpBuilder &b);
  mlir::LogicalResult importInitializers(const onnx::GraphProto &graph, mlir::OpBuilder &b);
  mlir::LogicalResult importNodes(const onnx::GraphProto &graph, mlir::OpBuilder &b, int64_t opset);
  mlir::LogicalResult importIf(NodeContext &nc, mlir::OpBuilder &b, int64_t opset);
  mlir::LogicalResult importLoop(NodeContext &nc, mlir::OpBuilder &b, int64_t opset);
  mlir::LogicalResult importScan(NodeContext &nc, mlir::OpBuilder &b, int64_t opset);
  /// Scan of opset 8: a batch dimension first; one scan per batch element.
  mlir::LogicalResult importBatchedScan(NodeContext &nc, mlir::OpBuilder &b, int64_t opset);
  /// If and Loop decided at run time: scf.if, scf.while (ControlFlowRuntime.cpp).
  /// `body` imported at `b` with `inputs`, its outputs as tensors (`what`
  /// names it in errors).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  bodyTensors(NodeContext &nc, const onnx::GraphProto &body, llvm::ArrayRef<GraphValue> inputs,
              mlir::OpBuilder &b, int64_t opset, llvm::StringRef what);
  mlir::LogicalResult importIfRuntime(NodeContext &nc, mlir::OpBuilder &b, int64_t opset);
  mlir::LogicalResult importLoopRuntime(NodeContext &nc, mlir::OpBuilder &b, int64_t opset);
  struct LoopSpec {
    const onnx::GraphProto *body = nullptr;
    mlir::Value trips, cond; // i64 (null: no bound) and i1
    llvm::SmallVector<mlir::Value> carried;
  };
  mlir::FailureOr<llvm::SmallVector<mlir::Type>>
  buildLoop(NodeContext &nc, mlir::OpBuilder &b, int64_t opset, const LoopSpec &spec,
            llvm::ArrayRef<mlir::Type> carriedTypes, llvm::ArrayRef<mlir::Type> scanTypes,
            mlir::scf::WhileOp &out);
  /// A Scan as one scf.for over its steps (ControlFlowRuntime.cpp).
  struct ScanSpec {
    const onnx::GraphProto *body = nullptr;
    mlir::Value steps; // index
    llvm::SmallVector<mlir::Value> states, scanned;
    std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
  };
  mlir::LogicalResult importScanLoop(NodeContext &nc, mlir::OpBuilder &b, int64_t opset,
                                     ScanSpec &spec);
  struct ScanAxes {
    std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
  };
  mlir::LogicalResult scanAsLoop(NodeContext &nc, mlir::OpBuilder &b, int64_t opset,
                                 const onnx::GraphProto &body,
                                 llvm::ArrayRef<GraphValue> states,
                                 llvm::ArrayRef<mlir::Value> scanned, int64_t steps,
                                 ScanAxes axes);
  mlir::FailureOr<llvm::SmallVector<mlir::Type>>
  buildScan(NodeContext &nc, mlir::OpBuilder &b, int64_t opset, const ScanSpec &spec,
            llvm::ArrayRef<mlir::Type> stateTypes, llvm::ArrayRef<mlir::Type> outTypes,
            mlir::scf::ForOp &out);
  mlir::FailureOr<llvm::SmallVector<GraphValue>> runBody(NodeContext &nc,
                                                         const onnx::GraphProto &body,
                                                         llvm::ArrayRef<GraphValue> inputs,
                                                         mlir::OpBuilder &b, int64_t opset);
  mlir::LogicalResult finish(const onnx::GraphProto &graph, mlir::func::FuncOp func,
                             mlir::OpBuilder &b, int64_t opset);
  mlir::LogicalResult checkDeclaredType(const onnx::ValueInfoProto &out,
                                        mlir::RankedTensorType inferred);

  mlir::MLIRContext &ctx;
  const ImportOptions &opts;
  mlir::Location fileLoc;
  std::string modelDir;
  std::map<std::string, int64_t> opsets;
  llvm::StringMap<GraphValue> values;
  /// Dynamic dimensions' symbols and their ranges (DynamicDims.cpp).
  std::map<std::string, DimRange> symbolRanges;
  /// Shape arithmetic over them (SymbolicShape.h).
  ShapeSymbols shapes;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_GRAPHIMPORTER_H
