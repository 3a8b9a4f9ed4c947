//===- ExternalizeWeights.cpp - kiln-externalize-weights ------------------===//
//
//   memref.global "private" constant @w : memref<64x32xf32> = dense_resource<w>
//   %0 = memref.get_global @w                    (in @main)
// =>
//   func.func @main(..., %weights: memref<Nxi8>)
//   %0 = memref.view %weights[%c_offset][] : memref<Nxi8> to memref<64x32xf32>
//   module attributes {kiln.external_weights = [[offset, dense_resource<w>], ...]}
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXTERNALIZEWEIGHTS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnExternalizeWeightsPass final
    : impl::KilnExternalizeWeightsBase<KilnExternalizeWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      module.emitError("kiln-externalize-weights expects a func.func @main with a body");
      return signalPassFailure();
    }
    // Offsets in declaration order: deterministic, and the file reads in
    // the order the model declares its weights.
    constexpr int64_t kAlign = 64;
    llvm::DenseMap<StringAttr, int64_t> offsets;
    SmallVector<memref::GlobalOp> moved;
    SmallVector<Attribute> entries;
    int64_t total = 0;
    Builder b(&getContext());
    for (auto g : module.getOps<memref::GlobalOp>()) {
      auto value = dyn_cast_or_null<DenseResourceElementsAttr>(g.getInitialValueAttr());
      auto blob = value ? value.getRawHandle().getBlob() : nullptr;
      if (!g.getConstant() || !blob || (int64_t)blob->getData().size() < minBytes)
        continue;
      int64_t offset = (total + kAlign - 1) / kAlign * kAlign;
      total = offset + (int64_t)blob->getData().size();
      offsets[g.getSymNameAttr()] = offset;
      moved.push_back(g);
      entries.push_back(b.getArrayAttr({b.getI64IntegerAttr(offset), value}));
    }
    // Training: the parameters' initial values ride in the same blob; the
    // runtime copies them into each training session.
    if (auto initial = module->getAttrOfType<ArrayAttr>(KilnDialect::getInitialStateAttrName())) {
      SmallVector<int64_t> initialOffsets;
      for (Attribute a : initial) {
        auto value = cast<DenseResourceElementsAttr>(a);
        int64_t offset = (total + kAlign - 1) / kAlign * kAlign;
        total = offset + (int64_t)value.getRawHandle().getBlob()->getData().size();
        initialOffsets.push_back(offset);
        entries.push_back(b.getArrayAttr({b.getI64IntegerAttr(offset), value}));
      }
      module->setAttr(KilnDialect::getInitialStateOffsetsAttrName(),
                      b.getDenseI64ArrayAttr(initialOffsets));
      module->removeAttr(KilnDialect::getInitialStateAttrName());
    }
    auto weightsType = MemRefType::get({total}, b.getIntegerType(8));
    if (failed(main.insertArgument(main.getNumArguments(), weightsType, DictionaryAttr(),
                                   main.getLoc())))
      return signalPassFailure();
    Value weights = main.getArgument(main.getNumArguments() - 1);
    bool outside = false;
    module.walk([&](memref::GetGlobalOp get) {
      auto it = offsets.find(get.getNameAttr().getAttr());
      if (it == offsets.end())
        return;
      if (get->getParentOfType<func::FuncOp>() != main) {
        outside = true;
        get.emitError("weights used outside @main can't be external (run this pass before "
                      "kernels are outlined)");
        return;
      }
      OpBuilder ob(get);
      Value offset = arith::ConstantIndexOp::create(ob, get.getLoc(), it->second);
      Value view = memref::ViewOp::create(ob, get.getLoc(), get.getType(), weights, offset,
                                          ValueRange{});
      get.replaceAllUsesWith(view);
      get.erase();
    });
    if (outside)
      return signalPassFailure();
    for (auto g : moved)
      g.erase();
    module->setAttr(KilnDialect::getExternalWeightsAttrName(), b.getArrayAttr(entries));
    // kiln-plan-memory counted these as weights inside the artifact.
    if (auto inside = module->getAttrOfType<IntegerAttr>(KilnDialect::getWeightBytesAttrName())) {
      int64_t moved = 0;
      for (Attribute e : ArrayRef<Attribute>(entries).take_front(offsets.size()))
        moved += (int64_t)cast<DenseResourceElementsAttr>(cast<ArrayAttr>(e)[1])
                     .getRawHandle()
                     .getBlob()
                     ->getData()
                     .size();
      module->setAttr(KilnDialect::getWeightBytesAttrName(),
                      b.getI64IntegerAttr(inside.getInt() - moved));
    }
  }
};

} // namespace
} // namespace kiln
