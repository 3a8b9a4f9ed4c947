//===- UnifyDims.cpp - kiln-unify-dims pass -------------------------------===//
//
// %r = linalg.generic ins(%a, %b) maps (d0, d1) -> (d0, d1), both
//   with %a : tensor<?x4xf32> {kiln.dims = ["batch", 4]}
//        %b : tensor<?x4xf32> {kiln.dims = ["n", 4]}
// => %b {kiln.dims = ["batch", 4]}, kiln.dim_ranges = {batch = range(batch) & range(n)}
//
//===----------------------------------------------------------------------===//

#include "DimTrace.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringMap.h"

namespace kiln {
#define GEN_PASS_DEF_KILNUNIFYDIMS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A symbol's range: [min, max], max -1 for none.
struct Range {
  int64_t min = 0, max = -1; // met with every range given
  void meet(int64_t lo, int64_t hi) {
    min = std::max(min, lo);
    max = max < 0 ? hi : hi < 0 ? max : std::min(max, hi);
  }
};

struct KilnUnifyDimsPass final : impl::KilnUnifyDimsBase<KilnUnifyDimsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto ranges = module->getAttrOfType<DictionaryAttr>(KilnDialect::getDimRangesAttrName());
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!ranges || !main || main.isExternal())
      return;
    // The symbol an argument's dimension is bound to, or "".
    auto symbolOf = [&](BlockArgument arg, int64_t d) -> StringRef {
      auto dims = main.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), KilnDialect::getDimsAttrName());
      auto s = dims && d < (int64_t)dims.size() ? dyn_cast<StringAttr>(dims[d]) : StringAttr();
      return s ? s.getValue() : StringRef();
    };
    llvm::EquivalenceClasses<StringRef> same;
    llvm::StringMap<int64_t> pinned; // a symbol a loop also reads as this size
    main.walk([&](linalg::LinalgOp op) {
      SmallVector<StringRef> symbols(op.getNumLoops());
      SmallVector<int64_t> sizes(op.getNumLoops(), ShapedType::kDynamic);
      for (OpOperand &operand : op->getOpOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        if (!type)
          continue;
        AffineMap map = op.getMatchingIndexingMap(&operand);
        for (int64_t d = 0; d < type.getRank(); ++d) {
          auto loop = dyn_cast<AffineDimExpr>(map.getResult(d));
          if (!loop)
            continue;
          unsigned l = loop.getPosition();
          if (!type.isDynamicDim(d)) {
            sizes[l] = type.getDimSize(d);
            continue;
          }
          auto source = traceDim(operand.get(), d);
          StringRef symbol = source ? symbolOf(source->first, source->second) : StringRef();
          if (symbol.empty())
            continue;
          same.insert(symbol);
          if (!symbols[l].empty())
            same.unionSets(symbols[l], symbol);
          symbols[l] = symbol;
        }
      }
      for (unsigned l = 0; l < op.getNumLoops(); ++l)
        if (!symbols[l].empty() && !ShapedType::isDynamic(sizes[l]))
          pinned[symbols[l]] = sizes[l];
    });
    if (failed(rewrite(module, main, ranges, same, pinned)))
      signalPassFailure();
  }

  /// Each class's first symbol in the arguments' order names it; ranges met.
  LogicalResult rewrite(ModuleOp module, func::FuncOp main, DictionaryAttr ranges,
                        llvm::EquivalenceClasses<StringRef> &same,
                        const llvm::StringMap<int64_t> &pinned) {
    Builder b(module.getContext());
    llvm::StringMap<std::string> leader;
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (auto dims = main.getArgAttrOfType<ArrayAttr>(i, KilnDialect::getDimsAttrName()))
        for (Attribute a : dims)
          if (auto s = dyn_cast<StringAttr>(a); s && same.contains(s.getValue())) {
            StringRef rep = same.getLeaderValue(s.getValue());
            leader.try_emplace(rep, s.getValue().str());
          }
    auto nameOf = [&](StringRef symbol) -> std::string {
      if (!same.contains(symbol))
        return symbol.str();
      return leader.lookup(same.getLeaderValue(symbol));
    };
    llvm::StringMap<Range> merged;
    std::map<std::string, std::string> members; // for messages
    for (NamedAttribute r : ranges) {
      auto mm = cast<DenseI64ArrayAttr>(r.getValue()).asArrayRef();
      std::string name = nameOf(r.getName());
      merged[name].meet(mm[0], mm[1]);
      members[name] += (members[name].empty() ? "" : ", ") + r.getName().str();
    }
    for (const auto &[symbol, size] : pinned)
      merged[nameOf(symbol)].meet(size, size);
    SmallVector<NamedAttribute> out;
    for (auto &[name, range] : merged) {
      if (range.max >= 0 && range.max < range.min)
        return main.emitError() << "the model requires dimensions " << members[name.str()]
                                << " to be equal, and their ranges have no size in common";
      out.push_back(b.getNamedAttr(name, b.getDenseI64ArrayAttr({range.min, range.max})));
    }
    module->setAttr(KilnDialect::getDimRangesAttrName(), b.getDictionaryAttr(out));
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto dims = main.getArgAttrOfType<ArrayAttr>(i, KilnDialect::getDimsAttrName());
      if (!dims)
        continue;
      SmallVector<Attribute> renamed;
      for (Attribute a : dims) {
        auto s = dyn_cast<StringAttr>(a);
        renamed.push_back(s ? b.getStringAttr(nameOf(s.getValue())) : a);
      }
      main.setArgAttr(i, KilnDialect::getDimsAttrName(), b.getArrayAttr(renamed));
    }
    return success();
  }
};

} // namespace
} // namespace kiln
