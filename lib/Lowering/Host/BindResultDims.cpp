//===- BindResultDims.cpp - kiln-bind-result-dims pass --------------------===//
//
// func.func @main(%x: tensor<?x64xf32> {kiln.dims = ["batch", 64]})
//     -> tensor<?x10xf32>
//   %e = tensor.empty(tensor.dim %x, 0); %r = linalg.generic ... outs(%e)
//   return %r
// => the result gets {kiln.dims = ["batch", 10]}.
// A result whose size is computed, say concat(past, new) of sizes
// "past" + "seq", gets a derived symbol "past+seq", and the module
// kiln.dim_exprs = {"past+seq" = [0, [1, "past"], [1, "seq"]]}.
// A size no sum or product of the inputs' sizes gives (read from an
// input's data: a Reshape to a shape given as an input) is a value symbol
// "<output>[<axis>]", computed by @__kiln_output_dims (OutputDims.h).
//
//===----------------------------------------------------------------------===//

#include "DimTrace.h"
#include "OutputDimsFunction.h"
#include "kiln/Lowering/OutputDims.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace kiln {
#define GEN_PASS_DEF_KILNBINDRESULTDIMS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A size over symbols: each sorted product of symbol names (none: the
/// constant term) with its coefficient.
using SymbolSum = std::map<std::vector<std::string>, int64_t>;

/// `sum` over argument dimensions as one over their symbols (a static
/// argument dimension folds into the coefficient); nothing when a factor
/// has no symbol or a coefficient overflows.
std::optional<SymbolSum> symbolSum(func::FuncOp main, const DimSum &sum) {
  SymbolSum out;
  for (const auto &[factors, coef] : sum) {
    std::vector<std::string> names;
    int64_t c = coef;
    for (auto [arg, d] : factors) {
      auto type = cast<RankedTensorType>(main.getArgument(arg).getType());
      if (!type.isDynamicDim(d)) {
        if (__builtin_mul_overflow(c, type.getDimSize(d), &c))
          return std::nullopt;
        continue;
      }
      auto bound = main.getArgAttrOfType<ArrayAttr>(arg, KilnDialect::getDimsAttrName());
      auto symbol = bound && d < (int64_t)bound.size() ? dyn_cast<StringAttr>(bound[d])
                                                        : StringAttr();
      if (!symbol)
        return std::nullopt;
      names.push_back(symbol.str());
    }
    llvm::sort(names);
    int64_t &slot = out[names];
    if (__builtin_add_overflow(slot, c, &slot))
      return std::nullopt;
    if (slot == 0)
      out.erase(names);
  }
  return out;
}

/// The derived symbol's name: its expression, say "past+seq" or
/// "2*batch*heads".
std::string nameOf(const SymbolSum &sum) {
  std::string text;
  auto constant = sum.find({});
  for (const auto &[names, coef] : sum) {
    if (names.empty())
      continue;
    text += coef < 0 ? "-" : text.empty() ? "" : "+";
    if (coef != 1 && coef != -1)
      text += std::to_string(coef < 0 ? -coef : coef) + "*";
    for (size_t i = 0; i < names.size(); ++i)
      text += (i ? "*" : "") + names[i];
  }
  if (constant != sum.end())
    text += (constant->second < 0 ? "" : "+") + std::to_string(constant->second);
  return text;
}

struct KilnBindResultDimsPass final : impl::KilnBindResultDimsBase<KilnBindResultDimsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    Builder b(&getContext());
    std::map<std::string, Attribute> derived;
    SmallVector<Attribute> valueSymbols;
    SmallVector<Value> valueSizes;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || type.hasStaticShape())
        continue;
      auto name = main.getResultAttrOfType<StringAttr>(i, KilnDialect::getNameAttrName());
      SmallVector<Attribute> dims;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d)) {
          dims.push_back(b.getI64IntegerAttr(type.getDimSize(d)));
          continue;
        }
        auto traced = traceDimSum(v, d, &main.front());
        auto sum = traced ? symbolSum(main, *traced) : std::nullopt;
        // Nothing that could be a size (no symbol, or a constant): computed
        // by the model from its inputs' values.
        if (!sum || sum->empty() || (sum->size() == 1 && sum->count({}))) {
          std::string symbol = (name ? name.str() : "output" + std::to_string(i)) + "[" +
                               std::to_string(d) + "]";
          valueSymbols.push_back(b.getStringAttr(symbol));
          valueSizes.push_back(outputDimValue(main, v, d));
          dims.push_back(b.getStringAttr(symbol));
          continue;
        }
        if (sum->size() == 1 && sum->begin()->first.size() == 1 && sum->begin()->second == 1) {
          dims.push_back(b.getStringAttr(sum->begin()->first[0]));
          continue;
        }
        std::string symbol = nameOf(*sum);
        SmallVector<Attribute> terms{b.getI64IntegerAttr(sum->count({}) ? sum->at({}) : 0)};
        for (const auto &[names, coef] : *sum) {
          if (names.empty())
            continue;
          SmallVector<Attribute> term{b.getI64IntegerAttr(coef)};
          for (const std::string &n : names)
            term.push_back(b.getStringAttr(n));
          terms.push_back(b.getArrayAttr(term));
        }
        derived[symbol] = b.getArrayAttr(terms);
        dims.push_back(b.getStringAttr(symbol));
      }
      main.setResultAttr(i, KilnDialect::getDimsAttrName(), b.getArrayAttr(dims));
    }
    if (!valueSizes.empty()) {
      module->setAttr(kDimValuesAttrName, b.getArrayAttr(valueSymbols));
      if (failed(appendOutputDimsResults(main, valueSizes)))
        return signalPassFailure();
    }
    if (derived.empty())
      return;
    SmallVector<NamedAttribute> exprs;
    for (const auto &[symbol, expr] : derived)
      exprs.push_back(b.getNamedAttr(symbol, expr));
    module->setAttr(KilnDialect::getDimExprsAttrName(), b.getDictionaryAttr(exprs));
  }
};

} // namespace
} // namespace kiln
