//===- TileFunctions.cpp - a block's tile of C, element by element --------===//
//
// What the tensor-core kernels (mma.sync and wgmma) share once a block's
// tile of C is computed: the loop of its threads over the tile's elements
// (bounds-checked when the tiles overhang C), the device function that
// loop runs in, and the epilogue chain applied at each element.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {
namespace {

/// Threads of a block stride over its tile of C calling `body` with each
/// element's indices in C and its row and column in the tile; `ids` =
/// thread, block x (N), block y (M), block z (batch). With `run` (M and N
/// known at run time) C is [batch, M, N] (or [M, N]) and the tile's part
/// inside it is checked against them.
void emitTileLoop(OpBuilder &b, Location loc, const Plan &p, ArrayRef<int64_t> cShape,
                  ValueRange ids,
                  llvm::function_ref<void(ArrayRef<Value> ivs, Value row, Value col)> body,
                  ValueRange run = {}) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto apply = [&](AffineExpr e, ValueRange operands) -> Value {
    return affine::AffineApplyOp::create(b, loc, AffineMap::get(operands.size(), 0, e, ctx),
                                         operands);
  };
  Value tid = ids[0], bn = ids[1], bm = ids[2], bb = ids[3];
  auto loop = scf::ForOp::create(b, loc, tid,
                                 arith::ConstantIndexOp::create(b, loc, p.tileM * p.tileN),
                                 arith::ConstantIndexOp::create(b, loc, p.tileThreads()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value e = loop.getInductionVar();
  Value localRow = apply(d0.floorDiv(p.tileN), {e}), localCol = apply(d0 % p.tileN, {e});
  Value row = apply(d0 * p.tileM + d1.floorDiv(p.tileN), {bm, e});
  Value col = apply(d0 * p.tileN + d1 % p.tileN, {bn, e});
  // The element's indices in C's own shape (folded dimensions unfolded).
  auto unfold = [&](Value flat, ArrayRef<int64_t> sizes, SmallVectorImpl<Value> &out) {
    int64_t stride = 1;
    SmallVector<Value> rev;
    for (int64_t d = sizes.size() - 1; d >= 0; --d) {
      AffineExpr x = d0.floorDiv(stride);
      rev.push_back(apply(d == 0 ? x : x % sizes[d], {flat}));
      stride *= sizes[d];
    }
    out.append(rev.rbegin(), rev.rend());
  };
  SmallVector<Value> ivs;
  if (!run.empty()) { // [batch, M, N] as the kernel folded it
    if (p.form == Plan::Batched)
      ivs.push_back(bb);
    ivs.push_back(row);
  } else if (p.form == Plan::Conv) { // Y [n, F, OH, OW]: the column is a pixel
    ivs = {bb, row, apply(d0.floorDiv(p.ow), {col}), apply(d0 % p.ow, {col})};
  } else if (p.form == Plan::Batched) {
    unfold(bb, cShape.drop_back(2), ivs);
    ivs.push_back(row);
  } else if (p.form == Plan::SharedB) {
    unfold(row, cShape.drop_back(), ivs);
  } else {
    ivs.push_back(row);
  }
  if (p.form != Plan::Conv)
    ivs.push_back(col);
  if (p.raggedM() || p.raggedN()) { // only the tile's part inside C
    Value inside = arith::ConstantIntOp::create(b, loc, 1, 1);
    auto below = [&](Value i, Value n) {
      inside = arith::AndIOp::create(
          b, loc, inside, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, n));
    };
    auto size = [&](unsigned d, int64_t n) {
      return run.empty() ? arith::ConstantIndexOp::create(b, loc, n).getResult() : run[d];
    };
    if (p.raggedM())
      below(row, size(0, p.M));
    if (p.raggedN())
      below(col, size(1, p.N));
    auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
  }
  body(ivs, localRow, localCol);
}

/// A buffer with run-time sizes that the captures cast to its largest
/// shape (a product at its largest rows) goes in as the cast: a device
/// function's memrefs are bare pointers, which carry no sizes.
void passCastsToLargest(ArrayRef<Operation *> fused, SetVector<Value> &args,
                        SetVector<Operation *> &clones) {
  auto dynamic = [](Value v) {
    auto t = dyn_cast<MemRefType>(v.getType());
    return t && !t.hasStaticShape();
  };
  auto toLargest = [&](Operation *c) {
    auto cast = dyn_cast<memref::CastOp>(c);
    return cast && cast.getType().hasStaticShape() && dynamic(cast.getSource()) &&
           args.contains(cast.getSource());
  };
  SetVector<Value> passed;
  SetVector<Operation *> recomputed;
  for (Operation *c : clones)
    if (toLargest(c))
      passed.insert(c->getResult(0));
    else
      recomputed.insert(c);
  if (passed.empty())
    return;
  for (Value v : args) {
    bool onlyCast = dynamic(v) && llvm::all_of(v.getUsers(), [&](Operation *u) {
                      return toLargest(u) ||
                             !(clones.contains(u) || llvm::any_of(fused, [&](Operation *f) {
                                 return f->isAncestor(u);
                               }));
                    });
    bool castHere = llvm::any_of(passed, [&](Value c) {
      return c.getDefiningOp<memref::CastOp>().getSource() == v;
    });
    if (!(onlyCast && castHere))
      passed.insert(v);
  }
  args = std::move(passed);
  clones = std::move(recomputed);
}

} // namespace

Value foldLeading(OpBuilder &b, Location loc, Value v, unsigned keep) {
  unsigned rank = cast<MemRefType>(v.getType()).getRank();
  if (rank <= keep)
    return v;
  SmallVector<ReassociationIndices> groups(keep);
  for (unsigned d = 0; d <= rank - keep; ++d)
    groups[0].push_back(d);
  for (unsigned g = 1; g < keep; ++g)
    groups[g].push_back(rank - keep + g);
  return memref::CollapseShapeOp::create(b, loc, v, groups);
}

void emitEpilogueAt(OpBuilder &b, Location loc, ArrayRef<linalg::GenericOp> epilogue,
                    ArrayRef<int64_t> cShape, ArrayRef<Value> ivs, IRMapping &map) {
  for (linalg::GenericOp e : epilogue) {
    // At the element's indices in the op's own loops (C's, or C's without
    // its folded unit dimensions).
    SmallVector<Value> at;
    std::optional<SmallVector<unsigned>> dims = epilogueDims(e, cShape);
    for (unsigned d : *dims)
      at.push_back(ivs[d]);
    emitElementwiseAt(b, loc, e, at, map);
  }
}

void emitRunTileCopy(KernelFactory &kernels, OpBuilder &b, Location loc, StringRef name,
                     const Plan &p, ValueRange ids, Value tile, Value c, Value rows, Value cols,
                     bool load) {
  MLIRContext *ctx = b.getContext();
  // C as the flat buffer of its largest elements: a device function's
  // memrefs are bare pointers, which carry no sizes.
  auto cType = cast<MemRefType>(c.getType());
  auto flatType = MemRefType::get({p.batch * p.M * p.N}, cType.getElementType());
  Value flat = memref::ReinterpretCastOp::create(b, loc, flatType, c, 0,
                                                 ArrayRef<int64_t>{flatType.getDimSize(0)},
                                                 ArrayRef<int64_t>{1});
  Type index = b.getIndexType();
  SmallVector<Type> types(4, index);
  types.append({tile.getType(), flatType, index, index});
  OpBuilder fb = OpBuilder::atBlockEnd(kernels.gpuModule().getBody());
  auto device = func::FuncOp::create(fb, loc, name, FunctionType::get(ctx, types, {}));
  device.setPrivate();
  Block *entry = device.addEntryBlock();
  SmallVector<Value> callArgs(ids);
  callArgs.append({tile, flat, rows, cols});
  func::CallOp::create(b, loc, device, callArgs);

  OpBuilder eb = OpBuilder::atBlockBegin(entry);
  auto args = entry->getArguments();
  Value smem = args[4], out = args[5], m = args[6], n = args[7];
  emitTileLoop(
      eb, loc, p, {}, args.take_front(4),
      [&](ArrayRef<Value> ivs, Value r, Value col0) {
        // ((batch * M) + row) * N + col
        Value at = ivs.size() == 3 ? arith::AddIOp::create(
                                         eb, loc, arith::MulIOp::create(eb, loc, ivs[0], m), ivs[1])
                                         .getResult()
                                   : ivs[0];
        at = arith::AddIOp::create(eb, loc, arith::MulIOp::create(eb, loc, at, n), ivs.back());
        if (load) {
          Value v = memref::LoadOp::create(eb, loc, out, ValueRange{at});
          if (p.narrows())
            v = arith::ExtFOp::create(eb, loc, eb.getF32Type(), v);
          memref::StoreOp::create(eb, loc, v, smem, ValueRange{r, col0});
        } else {
          Value v = memref::LoadOp::create(eb, loc, smem, ValueRange{r, col0});
          if (p.narrows())
            v = arith::TruncFOp::create(eb, loc, p.cElt, v);
          memref::StoreOp::create(eb, loc, v, out, ValueRange{at});
        }
      },
      ValueRange{m, n});
  func::ReturnOp::create(eb, loc);
}

void emitTileFunction(KernelFactory &kernels, OpBuilder &b, Location loc, StringRef name,
                      const Plan &p, ArrayRef<int64_t> cShape, ValueRange ids, ValueRange extra,
                      ArrayRef<Operation *> fused, IRMapping &map,
                      llvm::function_ref<void(OpBuilder &, ArrayRef<Value> ivs, Value row,
                                              Value col, ValueRange extra, IRMapping &)>
                          body) {
  MLIRContext *ctx = b.getContext();
  SetVector<Value> args;
  SetVector<Operation *> clones;
  if (!fused.empty())
    (void)collectCaptures(fused, args, clones);
  passCastsToLargest(fused, args, clones);
  SmallVector<Type> types(4, b.getIndexType());
  for (Value v : extra)
    types.push_back(v.getType());
  for (Value v : args)
    types.push_back(v.getType());
  OpBuilder fb = OpBuilder::atBlockEnd(kernels.gpuModule().getBody());
  auto device = func::FuncOp::create(fb, loc, name, FunctionType::get(ctx, types, {}));
  device.setPrivate();
  Block *entry = device.addEntryBlock();
  SmallVector<Value> callArgs(ids);
  llvm::append_range(callArgs, extra);
  for (Value v : args)
    callArgs.push_back(map.lookup(v));
  func::CallOp::create(b, loc, device, callArgs);
  OpBuilder eb = OpBuilder::atBlockBegin(entry);
  IRMapping emap;
  materializeCaptures(eb, args.getArrayRef(), entry->getArguments().drop_front(4 + extra.size()),
                      clones.getArrayRef(), emap);
  ValueRange inner = entry->getArguments().slice(4, extra.size());
  emitTileLoop(eb, loc, p, cShape, entry->getArguments().take_front(4),
               [&](ArrayRef<Value> ivs, Value row, Value col) {
                 body(eb, ivs, row, col, inner, emap);
               });
  func::ReturnOp::create(eb, loc);
}

} // namespace kiln
