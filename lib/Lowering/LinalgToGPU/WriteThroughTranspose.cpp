//===- WriteThroughTranspose.cpp - a row group writing heads in place -----===//
//
// linalg.fill outs(%o); P V into %o        (the row group's last ops)
// linalg.transpose ins(%o) outs(%y) permutation = [0, 2, 1, 3]
//   =>
// %v = memref.transpose %y (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// linalg.fill outs(%v); P V into %v
// Attention's output goes back to [batch, tokens, heads, dim] as the group
// writes it (each row's elements still contiguous), and the transpose
// launches nothing.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace kiln {
namespace {

/// The buffer `v` views (through reshapes and other views), and whether
/// only reshapes lie between.
std::pair<Value, bool> rootOf(Value v) {
  bool reshapes = true;
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    reshapes &= isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(def);
    v = view.getViewSource();
  }
  return {v, reshapes};
}

/// The top-level op (in `block`) of each use of `root` or of a view of it.
void usersOf(Value root, Block *block, SmallVectorImpl<Operation *> &out) {
  for (Operation *user : root.getUsers()) {
    Operation *top = block->findAncestorOpInBlock(*user);
    if (!top)
      continue;
    if (auto view = dyn_cast<ViewLikeOpInterface>(user); view && view.getViewSource() == root) {
      usersOf(view->getResult(0), block, out);
      continue;
    }
    out.push_back(top);
  }
}

} // namespace

/// The group's writes of `oRoot` (the operands in `rewrite`, `oRoot` or a
/// collapse of it; the transpose reads it through `fromO`'s expansion,
/// if any) redirected into y through a transposed view, y's definitions
/// (`chain`, innermost view first) moved up to `from`. False, changing
/// nothing, when a view cannot be formed.
static bool redirectWrites(linalg::TransposeOp transpose, Value oRoot,
                           ArrayRef<ReassociationIndices> fromO, ArrayRef<OpOperand *> rewrite,
                           ArrayRef<Operation *> chain, Operation *from) {
  // v[i] = y[inverse(perm)(i)]: o's shape over y's bytes, then the
  // buffer's shape and each collapse of it. Made at the transpose (where y
  // is defined) and checked first; only then do they and y's definitions
  // move up to the group's first write, so a refusal changes nothing.
  OpBuilder b(transpose);
  Value y = transpose.getInit();
  Location loc = transpose.getLoc();
  ArrayRef<int64_t> perm = transpose.getPermutation();
  SmallVector<unsigned> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  SmallVector<Operation *> made;
  auto fail = [&]() {
    for (Operation *op : llvm::reverse(made))
      op->erase();
    return false;
  };
  auto view = memref::TransposeOp::create(
      b, loc, y, AffineMapAttr::get(AffineMap::getPermutationMap(inverse, b.getContext())));
  made.push_back(view);
  Value buffer = view;
  auto collapseTo = [&](Value src, ArrayRef<ReassociationIndices> groups) -> Value {
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(cast<MemRefType>(src.getType()), groups))
      return nullptr;
    auto c = memref::CollapseShapeOp::create(b, loc, src, groups);
    made.push_back(c);
    return c;
  };
  if (!fromO.empty() && !(buffer = collapseTo(buffer, fromO)))
    return fail();
  SmallVector<Value> values;
  for (OpOperand *operand : rewrite) {
    Value w = operand->get();
    if (w == oRoot) {
      values.push_back(buffer);
      continue;
    }
    Value c =
        collapseTo(buffer, w.getDefiningOp<memref::CollapseShapeOp>().getReassociationIndices());
    if (!c)
      return fail();
    values.push_back(c);
  }
  for (Operation *def : llvm::reverse(chain))
    def->moveBefore(from);
  for (Operation *op : made)
    op->moveBefore(from);
  for (auto [operand, value] : llvm::zip(rewrite, values))
    operand->set(value);
  return true;
}

linalg::TransposeOp writeThroughTransposeOut(ArrayRef<linalg::LinalgOp> group,
                                             function_ref<bool(Operation &)> isHostOnly) {
  if (group.empty())
    return nullptr;
  linalg::LinalgOp last = group.back();
  Block *block = last->getBlock();
  // The transpose right after the group (views between).
  linalg::TransposeOp transpose;
  for (Operation *op = last->getNextNode(); op; op = op->getNextNode()) {
    if (isHostOnly(*op) && !isa<memref::DeallocOp>(op))
      continue;
    transpose = dyn_cast<linalg::TransposeOp>(op);
    break;
  }
  if (!transpose || last.getNumDpsInits() != 1)
    return nullptr;
  Value o = transpose.getInput(), y = transpose.getInit();
  auto [oRoot, oReshapes] = rootOf(o);
  auto [lastOut, lastReshapes] = rootOf(last.getDpsInits()[0]);
  if (!oReshapes || !lastReshapes || oRoot != lastOut ||
      !isa_and_nonnull<memref::AllocOp>(oRoot.getDefiningOp()))
    return nullptr;
  // The transpose reads the buffer as it is or expanded.
  SmallVector<ReassociationIndices> fromO;
  if (o != oRoot) {
    auto expand = o.getDefiningOp<memref::ExpandShapeOp>();
    if (!expand || expand.getSrc() != oRoot)
      return nullptr;
    fromO = expand.getReassociationIndices();
  }
  // From the group's last op that writes the buffer whole without reading
  // it (the fill before P V) to the end, the buffer holds this result;
  // before, it may hold another (the scores, sharing an empty).
  auto writesWhole = [&](linalg::LinalgOp op) {
    if (op.getNumDpsInits() != 1 || rootOf(op.getDpsInits()[0]).first != oRoot ||
        !op.getMatchingBlockArgument(op.getDpsInitOperand(0)).use_empty() ||
        !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isProjectedPermutation() ||
        op.getNumParallelLoops() != op.getNumLoops())
      return false;
    return llvm::none_of(op.getDpsInputs(), [&](Value in) { return rootOf(in).first == oRoot; });
  };
  size_t first = group.size() - 1;
  while (first > 0 && !writesWhole(group[first]))
    --first;
  if (!writesWhole(group[first]))
    return nullptr;
  Operation *from = group[first];
  // Those ops reach the buffer as it is or collapsed.
  SmallVector<OpOperand *> rewrite;
  for (size_t i = first; i < group.size(); ++i)
    for (OpOperand &operand : group[i]->getOpOperands()) {
      Value w = operand.get();
      if (rootOf(w).first != oRoot)
        continue;
      auto collapse = w.getDefiningOp<memref::CollapseShapeOp>();
      if (w != oRoot && (!collapse || collapse.getSrc() != oRoot))
        return nullptr;
      rewrite.push_back(&operand);
    }
  // Nothing outside the group touches the buffer from there to the
  // transpose; after it, the first op to use it writes it whole (another
  // layer's result).
  llvm::SmallPtrSet<Operation *, 16> members;
  for (linalg::LinalgOp op : group)
    members.insert(op);
  SmallVector<Operation *> users;
  usersOf(oRoot, block, users);
  Operation *next = nullptr;
  for (Operation *user : users) {
    if (user == transpose.getOperation() || isa<memref::DeallocOp>(user) ||
        members.contains(user) || user->isBeforeInBlock(from))
      continue;
    if (!transpose->isBeforeInBlock(user))
      return nullptr;
    if (!next || user->isBeforeInBlock(next))
      next = user;
  }
  if (next) {
    auto writer = dyn_cast<linalg::LinalgOp>(next);
    if (!writer || !writesWhole(writer))
      return nullptr;
  }
  // y's buffer: untouched from the group's first write to the transpose;
  // its allocation and views move up to that write.
  Value yRoot = rootOf(y).first;
  SmallVector<Operation *> yUsers;
  usersOf(yRoot, block, yUsers);
  for (Operation *user : yUsers)
    if (user != transpose.getOperation() && !user->isBeforeInBlock(from) &&
        user->isBeforeInBlock(transpose))
      return nullptr;
  SmallVector<Operation *> chain; // innermost view first
  for (Value v = y; Operation *def = v.getDefiningOp();) {
    if (def->getBlock() != block)
      return nullptr;
    if (!def->isBeforeInBlock(from)) {
      if (!isa<ViewLikeOpInterface, memref::AllocOp>(def) || def->getNumRegions())
        return nullptr;
      chain.push_back(def);
    }
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  for (Operation *def : chain)
    for (Value operand : def->getOperands())
      if (Operation *d = operand.getDefiningOp();
          d && !llvm::is_contained(chain, d) && !d->isBeforeInBlock(from))
        return nullptr;
  if (!redirectWrites(transpose, oRoot, fromO, rewrite, chain, from))
    return nullptr;
  // The kernel computes the transpose too (kiln inspect lists it).
  for (size_t i = first; i < group.size(); ++i)
    group[i]->setLoc(
        FusedLoc::get(transpose.getContext(), {group[i]->getLoc(), transpose.getLoc()}));
  return transpose;
}

} // namespace kiln
