//===- KilnToLinalg.cpp - the kiln-to-linalg pass -------------------------===//
//
// A thin pass over the populate*Patterns groups; any kiln op left over is
// reported at its location by the conversion driver.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"
#include "kiln/Lowering/Passes.h"

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_KILNTOLINALG
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct KilnToLinalgPass final : impl::KilnToLinalgBase<KilnToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<KilnDialect>();
    // Collectives stay ops of their own through bufferization
    // (CollectiveBufferization.cpp) and become calls of the runtime's.
    target.addLegalOp<AllReduceOp>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect, scf::SCFDialect>();
    RewritePatternSet patterns(ctx);
    populateKilnElementwiseToLinalgPatterns(patterns);
    populateKilnContractionToLinalgPatterns(patterns);
    populateKilnReductionToLinalgPatterns(patterns);
    populateKilnDataMovementToLinalgPatterns(patterns);
    populateKilnIndexingToLinalgPatterns(patterns);
    populateKilnRandomToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns)))) {
      signalPassFailure();
      return;
    }
    // A size read (tensor.dim) of a kiln value lowered before its producer
    // now reads the linalg result: the size it was made with instead, so
    // the result has no second use (which keeps elementwise fusion from
    // taking it: attention's softmax, IsNaN and Where).
    getOperation()->walk([](tensor::DimOp dim) {
      std::optional<int64_t> d = dim.getConstantIndex();
      if (Value size = d ? producedSize(dim.getSource(), *d) : Value()) {
        dim.replaceAllUsesWith(size);
        dim.erase();
      }
    });
  }
};
} // namespace
} // namespace kiln
