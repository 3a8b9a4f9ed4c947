//===- MarkRowGroups.cpp - kiln-gpu-mark-row-groups pass ------------------===//
//
// linalg.fill S; Q K^T into S; mask; softmax; P V   (a row group the CUDA
//                                                    outliner will fuse)
//   => the same ops, each with kiln.fused_span = 0
// so the memory plan keeps K^T live to P V instead of giving its bytes to
// the exponentials midway (which would split the group, as rows of other
// blocks still read K^T). Every row group is marked: a LayerNorm's mean
// would otherwise give its bytes to the centered values, splitting it in
// two kernels. Transposes just before that only the group reads
// are marked too: the outliner reads through them, so their inputs must
// outlive the group. A transpose just after that puts the heads back is
// taken into the group's writes (WriteThroughTranspose.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUMARKROWGROUPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnGpuMarkRowGroupsPass final
    : impl::KilnGpuMarkRowGroupsBase<KilnGpuMarkRowGroupsPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!fn.getBody().hasOneBlock())
      return;
    SmallVector<Operation *> ops;
    for (Operation &op : fn.getBody().front())
      ops.push_back(&op);
    Builder b(&getContext());
    int64_t id = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      // Transposes just before a group are read through by it (the
      // outliner tries the group from the op after them), not its start.
      if (!isa<linalg::LinalgOp>(ops[i]) || isa<linalg::TransposeOp>(ops[i]))
        continue;
      RowGroup group = formRowGroup(ops, i, staysOnHost);
      if (group.ops.empty())
        continue;
      for (linalg::LinalgOp op : group.ops)
        op->setAttr(KilnDialect::getFusedSpanAttrName(), b.getI64IntegerAttr(id));
      // The transposes just before whose results only the group reads: the
      // outliner folds them in, so their inputs must stay live too.
      for (size_t k = i; k-- > 0;) {
        if (staysOnHost(*ops[k]))
          continue;
        auto transpose = dyn_cast<linalg::TransposeOp>(ops[k]);
        if (!transpose)
          break;
        IntegerAttr mark = b.getI64IntegerAttr(id);
        if (llvm::any_of(transpose.getInit().getUsers(), [&](Operation *user) {
              return user->getAttr(KilnDialect::getFusedSpanAttrName()) ==
                     mark; // not an earlier layer's
            }))
          transpose->setAttr(KilnDialect::getFusedSpanAttrName(), mark);
      }
      // The transpose just after that puts the heads back: the group
      // writes its result through a permuted view instead.
      if (linalg::TransposeOp out = writeThroughTransposeOut(group.ops, staysOnHost)) {
        ops.erase(llvm::find(ops, out.getOperation()));
        out.erase();
      }
      ++id;
      i = llvm::find(ops, group.ops.back().getOperation()) - ops.begin();
    }
  }
};

} // namespace
} // namespace kiln
