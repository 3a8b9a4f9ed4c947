//===- CollectiveBufferization.cpp - kiln.all_reduce on buffers -----------===//
//
//   %r = kiln.all_reduce "mean" %x : tensor<16x8xf32>
// =>
//   kiln.all_reduce_in_place "mean" %xbuf : memref<16x8xf32>   (%r is %xbuf)
//
// The result is the operand's buffer, written in place; one-shot
// bufferization's analysis copies the operand first when it is read after
// the reduction. A buffer with a layout (a strided view) is copied into a
// dense one: the runtime reduces dense elements.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Host/Collectives.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln {
namespace {

struct AllReduceBufferization
    : BufferizableOpInterface::ExternalModel<AllReduceBufferization, AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &, const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent, /*isDefinite=*/true}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto reduce = cast<AllReduceOp>(op);
    FailureOr<Value> buffer = getBuffer(rewriter, reduce.getInput(), options, state);
    if (failed(buffer))
      return failure();
    Value dense = *buffer;
    auto type = cast<MemRefType>(dense.getType());
    if (!type.getLayout().isIdentity()) {
      auto denseType = MemRefType::get(type.getShape(), type.getElementType());
      dense = memref::AllocOp::create(rewriter, op->getLoc(), denseType);
      memref::CopyOp::create(rewriter, op->getLoc(), *buffer, dense);
    }
    AllReduceInPlaceOp::create(rewriter, op->getLoc(), dense, reduce.getReductionAttr());
    replaceOpWithBufferizedValues(rewriter, op, dense);
    return success();
  }
};

} // namespace

void registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, KilnDialect *) {
    AllReduceOp::attachInterface<AllReduceBufferization>(*ctx);
  });
}

} // namespace kiln
