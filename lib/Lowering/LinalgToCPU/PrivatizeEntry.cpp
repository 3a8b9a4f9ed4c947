//===- PrivatizeEntry.cpp - kiln-privatize-entry pass ---------------------===//
//
// func.func @main(%x {kiln.name = "x"}) => func.func private @main(%x)
// so that buffer-results-to-out-params turns its results into out-params.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPRIVATIZEENTRY
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct KilnPrivatizeEntryPass final
    : impl::KilnPrivatizeEntryBase<KilnPrivatizeEntryPass> {
  void runOnOperation() override {
    auto f = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!f)
      return;
    f.setPrivate();
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      f.removeArgAttr(i, "kiln.name");
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      f.removeResultAttr(i, StringAttr::get(&getContext(), "kiln.name"));
  }
};

} // namespace
} // namespace kiln
