//===- DecomposeDropout.cpp - kiln-decompose-dropout ----------------------===//
//
//   %y, %m = kiln.dropout %x {ratio = 0.25, seed = 7}
// =>
//   %u = kiln.random_uniform %rng_counter {seed = 7} : tensor<i64> -> tensor<..xf32>
//   %m = kiln.greater_equal %u, 0.25
//   %y = kiln.where %m, %x * (1 / 0.75), 0
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "MainFunction.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDECOMPOSEDROPOUT
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnDecomposeDropoutPass final
    : impl::KilnDecomposeDropoutBase<KilnDecomposeDropoutPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    SmallVector<DropoutOp> drops(main.getOps<DropoutOp>());
    if (drops.empty())
      return;
    MLIRContext *ctx = &getContext();
    auto counterType = RankedTensorType::get({}, IntegerType::get(ctx, 64));
    Value counter;
    if (stepCounter) {
      NamedAttrList attrs;
      attrs.set(KilnDialect::getNameAttrName(), StringAttr::get(ctx, "rng_counter"));
      attrs.set(KilnDialect::getStateAttrName(), UnitAttr::get(ctx));
      unsigned index = main.getNumArguments();
      if (failed(main.insertArgument(index, counterType, attrs.getDictionary(ctx), main.getLoc())))
        return signalPassFailure();
      counter = main.getArgument(index);
    } else {
      OpBuilder b(&main.front(), main.front().begin());
      counter = ConstantOp::create(b, main.getLoc(),
                                   DenseElementsAttr::get(counterType, b.getI64IntegerAttr(0)));
    }
    for (DropoutOp d : drops) {
      OpBuilder b(d);
      GradBuilder g(b, d.getLoc());
      Value x = d.getInput();
      double ratio = d.getRatio().convertToDouble();
      // Distinct streams per dropout (its seed) and per run of training
      // (--seed): the golden-ratio multiple keeps small seeds far apart.
      int64_t mixed = (int64_t)((uint64_t)d.getSeed() ^ ((uint64_t)(int64_t)seed *
                                                          0x9e3779b97f4a7c15ull));
      Value u = RandomUniformOp::create(b, d.getLoc(), cast<RankedTensorType>(x.getType()),
                                        counter, mixed);
      Value keep = g.op<GreaterEqualOp>({u, g.scalar(ratio, x)});
      Value y = ratio >= 1 ? g.zerosLike(x)
                           : g.where(keep, g.mul(x, 1.0 / (1.0 - ratio)), g.scalar(0, x));
      if (g.failed())
        return signalPassFailure();
      d.getOutput().replaceAllUsesWith(y);
      d.getMask().replaceAllUsesWith(keep);
      d.erase();
    }
    if (!stepCounter)
      return;
    // The next step's counter.
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    OpBuilder b(ret);
    GradBuilder g(b, ret.getLoc());
    Value next = g.add(counter, g.splat(1, counterType));
    unsigned index = appendResults(main, next, {namedResult(ctx, "rng_counter")});
    main.setArgAttr(cast<BlockArgument>(counter).getArgNumber(), KilnDialect::getUpdateAttrName(),
                    b.getI64IntegerAttr(index));
  }
};

} // namespace
} // namespace kiln
