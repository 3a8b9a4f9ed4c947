//===- OutputDimsFunction.cpp - @__kiln_output_dims ----------------------===//
//
// For kiln-bind-result-dims: an output dimension that is no function of
// the inputs' dimensions is found as an SSA size in @main (tensor.dim of
// the result, folded back through destination operands, tensor.empty,
// reshapes and slices), then the slice of @main that computes it is
// cloned into
//   func.func @__kiln_output_dims(<@main's arguments>) -> (index, ...)
// which the runtime calls on the inputs' data before sizing the outputs
// (kiln/Lowering/OutputDims.h). On CUDA, kiln-host-values appends the
// scalars the host program reads from tensors the same way.
//
//===----------------------------------------------------------------------===//

#include "OutputDimsFunction.h"
#include "kiln/Lowering/OutputDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln {

Value outputDimValue(func::FuncOp main, Value result, int64_t d) {
  Operation *ret = main.front().getTerminator();
  OpBuilder b(ret);
  Location loc = ret->getLoc();
  auto dim = tensor::DimOp::create(b, loc, result, d);
  // Keeps hold of the folded size while the patterns replace `dim`.
  auto hold = UnrealizedConversionCastOp::create(b, loc, b.getIndexType(), dim.getResult());
  MLIRContext *ctx = main.getContext();
  RewritePatternSet patterns(ctx);
  tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
  memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
  memref::populateResolveShapedTypeResultDimsPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily({dim.getOperation()}, std::move(patterns), config);
  Value size = hold.getOperand(0);
  hold.erase();
  return size;
}

LogicalResult appendOutputDimsResults(func::FuncOp main, ArrayRef<Value> values) {
  // The ops of @main's body that the values need, nested uses included.
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> work(values.begin(), values.end());
  Block *body = &main.front();
  auto visit = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return;
    Operation *top = body->findAncestorOpInBlock(*def);
    if (top && needed.insert(top))
      top->walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          work.push_back(operand);
      });
  };
  while (!work.empty())
    visit(work.pop_back_val());
  SmallVector<Operation *> ordered(needed.begin(), needed.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

  auto module = main->getParentOfType<ModuleOp>();
  auto fn = module.lookupSymbol<func::FuncOp>(kOutputDimsFunctionName);
  OpBuilder b(main.getContext());
  if (!fn) {
    b.setInsertionPointToEnd(module.getBody());
    fn = func::FuncOp::create(b, main.getLoc(), kOutputDimsFunctionName,
                              b.getFunctionType(main.getFunctionType().getInputs(), {}));
    b.setInsertionPointToStart(fn.addEntryBlock());
    func::ReturnOp::create(b, main.getLoc(), ValueRange{});
  }
  auto ret = cast<func::ReturnOp>(fn.front().getTerminator());
  IRMapping map;
  map.map(body->getArguments(), fn.front().getArguments());
  b.setInsertionPoint(ret);
  for (Operation *op : ordered) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      return op->emitError("an output's size depends on the function's return");
    b.clone(*op, map);
  }
  SmallVector<Value> results(ret.getOperands());
  for (Value v : values)
    results.push_back(map.lookupOrDefault(v));
  ret->setOperands(results);
  fn.setFunctionType(b.getFunctionType(fn.getArgumentTypes(), ValueRange(results).getTypes()));
  return success();
}

} // namespace kiln
