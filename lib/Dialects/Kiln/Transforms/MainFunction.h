//===- MainFunction.h - editing @main's signature in kiln passes -*- C++ -*-===//
//
// The training passes each add arguments or results to @main (the label,
// the loss, gradients, new parameter values, state); these helpers keep the
// return, the function type and the per-result attributes in step.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECTS_KILN_TRANSFORMS_MAINFUNCTION_H
#define KILN_LIB_DIALECTS_KILN_TRANSFORMS_MAINFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// @main with a body, or null after an error naming `pass`.
inline mlir::func::FuncOp lookupMain(mlir::ModuleOp module, llvm::StringRef pass) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!main || main.isExternal()) {
    module.emitError() << pass << " expects a func.func @main with a body";
    return nullptr;
  }
  return main;
}

/// `{kiln.name = name}` plus `extra`.
inline mlir::DictionaryAttr namedResult(mlir::MLIRContext *ctx, llvm::StringRef name,
                                        llvm::ArrayRef<mlir::NamedAttribute> extra = {}) {
  mlir::Builder b(ctx);
  llvm::SmallVector<mlir::NamedAttribute> attrs(extra.begin(), extra.end());
  attrs.push_back(b.getNamedAttr(KilnDialect::getNameAttrName(), b.getStringAttr(name)));
  return b.getDictionaryAttr(attrs);
}

/// Makes @main return `values` (with `attrs`, one per value) instead of
/// what it returned.
inline void setResults(mlir::func::FuncOp main, mlir::ValueRange values,
                       llvm::ArrayRef<mlir::DictionaryAttr> attrs) {
  auto ret = mlir::cast<mlir::func::ReturnOp>(main.front().getTerminator());
  mlir::OpBuilder b(ret);
  mlir::func::ReturnOp::create(b, ret.getLoc(), values);
  ret.erase();
  main.setType(mlir::FunctionType::get(main.getContext(), main.getArgumentTypes(),
                                       values.getTypes()));
  main.setAllResultAttrs(attrs);
}

/// Adds `values` (with `attrs`) after @main's results; returns the index of
/// the first one.
inline unsigned appendResults(mlir::func::FuncOp main, mlir::ValueRange values,
                              llvm::ArrayRef<mlir::DictionaryAttr> attrs) {
  auto ret = mlir::cast<mlir::func::ReturnOp>(main.front().getTerminator());
  llvm::SmallVector<mlir::Value> all(ret.getOperands());
  llvm::SmallVector<mlir::DictionaryAttr> allAttrs;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i)
    allAttrs.push_back(main.getResultAttrDict(i) ? main.getResultAttrDict(i)
                                                 : mlir::DictionaryAttr::get(main.getContext()));
  unsigned first = all.size();
  all.append(values.begin(), values.end());
  allAttrs.append(attrs.begin(), attrs.end());
  setResults(main, all, allAttrs);
  return first;
}

} // namespace kiln

#endif // KILN_LIB_DIALECTS_KILN_TRANSFORMS_MAINFUNCTION_H
