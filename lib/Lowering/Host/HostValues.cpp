//===- HostValues.cpp - kiln-host-values: scalars the host reads, computed before the run ===//
//
// A CUDA host program reads no device memory, yet a Reshape to a shape
// given as an input, a Range to a run-time limit, NonZero's count or an If
// on data needs a tensor's element on the host to size a buffer, bound a
// loop or choose a branch. Each such read at the top level of @main (or
// scalar result of a top-level loop that reads tensors),
//   %n = tensor.extract %shape[%c1] : tensor<2xi64>
// becomes a result of @__kiln_output_dims (its slice of @main cloned there,
// computed on the host from the inputs' data before the run, as i64 bits)
// and, in @main,
//   %b = func.call @__kiln_host_value(%c<k>) : (i64) -> i64   // k-th read
//   %n = <%b back to the element type>
// which kiln-emit-entry defines as host->dims[<the buffers' sizes> + k]:
// the runtime appends the values it computed to the sizes it passes.
//
//===----------------------------------------------------------------------===//

#include "OutputDimsFunction.h"
#include "kiln/Lowering/Host/ScalarBits.h"
#include "kiln/Lowering/OutputDims.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_KILNHOSTVALUES
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The scalars @main's host program computes from tensor data: each
/// top-level tensor.extract, and each scalar result of a top-level loop or
/// branch that reads tensors inside (NonZero's count).
SmallVector<Value> hostReads(func::FuncOp main) {
  SmallVector<Value> reads;
  for (Operation &op : main.front()) {
    bool readsData = isa<tensor::ExtractOp>(op);
    if (!readsData && op.getNumRegions() && !isa<linalg::LinalgOp>(op))
      readsData = op.walk([](tensor::ExtractOp) { return WalkResult::interrupt(); })
                       .wasInterrupted();
    if (!readsData)
      continue;
    for (Value r : op.getResults())
      if (r.getType().isIntOrIndexOrFloat())
        reads.push_back(r);
  }
  return reads;
}

struct KilnHostValuesPass final : impl::KilnHostValuesBase<KilnHostValuesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    SmallVector<Value> reads = hostReads(main);
    if (reads.empty())
      return;
    SmallVector<Value> bits;
    for (Value read : reads) {
      OpBuilder b(read.getContext());
      b.setInsertionPointAfter(read.getDefiningOp());
      Value v = toBits(b, read.getLoc(), read);
      if (!v) {
        read.getDefiningOp()->emitError("the host program reads a ")
            << read.getType() << " from a tensor, which it cannot take from the host";
        return signalPassFailure();
      }
      bits.push_back(v);
    }
    int64_t first = 0;
    if (auto f = module.lookupSymbol<func::FuncOp>(kOutputDimsFunctionName))
      first = f.getNumResults();
    if (failed(appendOutputDimsResults(main, bits)))
      return signalPassFailure();

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto i64 = b.getI64Type();
    auto callee = func::FuncOp::create(b, module.getLoc(), kHostValueFunctionName,
                                       b.getFunctionType({i64}, {i64}));
    callee.setPrivate();
    for (auto [k, read] : llvm::enumerate(reads)) {
      Location loc = read.getLoc();
      b.setInsertionPointAfter(read.getDefiningOp());
      Value index = arith::ConstantIntOp::create(b, loc, i64, k);
      Value value = func::CallOp::create(b, loc, callee, ValueRange{index}).getResult(0);
      Value replacement = fromBits(b, loc, value, read.getType());
      // The conversion to bits (only the cloned slice used it) goes first.
      Operation *op = bits[k].getDefiningOp();
      while (op != read.getDefiningOp() && op->use_empty()) {
        Operation *next = op->getOperand(0).getDefiningOp();
        op->erase();
        op = next;
      }
      read.replaceAllUsesWith(replacement);
    }
    // The reads themselves, now unused (a counting loop's too).
    for (Value read : reads)
      if (Operation *op = read.getDefiningOp(); op && op->use_empty() && isPure(op))
        op->erase();
    Builder attrs(module.getContext());
    module->setAttr(kHostValuesAttrName,
                    attrs.getDenseI64ArrayAttr({first, (int64_t)reads.size()}));
  }
};

} // namespace
} // namespace kiln
