//===- VectorizeWinograd.cpp - kiln-vectorize-winograd ---------------------===//
//
//   linalg.generic {kiln.winograd = "input"} ins(x(n, c, m ty + a, m tx + b) x t^2)
//                                            outs(%v : [t^2, C, N, TY, TX])
// =>                                                          (t = m + 2, m = 2 or 4)
//   scf.parallel (c, n, ty):  for tiles tx0 in chunks of L:
//     (packed: (n, ty, c); a dynamic batch's rows shorter than half a
//     panel: (n, blocks of channels), the rows and channels inside)
//     for a < t, s0 in {0, m}:  v0..v(m-1) = x[n, c, m ty + a, m tx0 + s0 ..+mL]
//       d[a][s0 + s] = lanes s, s + m, .. of (v0..v(m-1))  (shuffles of pairs)
//     v[p, c, n, ty, tx0..] = B^T d B                          (t^2 vectors)
//
//   linalg.generic {kiln.winograd = "output"} ins(m(p, f, n, ty, tx) x t^2)  (or m(p, n, f, ..))
//                                             outs(%y : [N, F, TY, m, TX, m])
// =>
//   scf.parallel (n, f, ty):  for tiles tx0 in chunks of L:
//     y[i][j] = A^T m[.., tx0..] A;  y[n, f, ty, i, m tx0 ..+mL] (+)= interleave(y[i][0..m))
//
// The generics select one of t^2 (or m^2) values per element; as loops
// they would compute the whole tile for each. Here a vector of L tiles
// along a tile row is transformed at once: stride-m columns become m
// contiguous loads and deinterleaving shuffles, the output's m-wide
// blocks interleaving ones. Tile rows shorter than the register take
// narrower vectors (ResNet's 14-wide images are 7 tiles wide).
//
//===----------------------------------------------------------------------===//

#include "StridedRows.h"
#include "Winograd.h"

#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZEWINOGRAD
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

bool unitStride(Value memref) {
  return cast<MemRefType>(memref.getType()).isLastDimUnitStride();
}

bool isMarked(linalg::GenericOp op, StringRef kind) {
  auto attr = op->getAttrOfType<StringAttr>(winograd::kAttr);
  return attr && attr.getValue() == kind && op.hasPureBufferSemantics() &&
         op.getNumDpsInputs() >= 16 && op.getNumDpsInits() == 1;
}

/// The output tile side m of the transforms' [(m+2)^2, ...] buffer, or 0.
int64_t outputSide(MemRefType t) {
  return t.getRank() ? winograd::outputTileOf(t.getDimSize(0)) : 0;
}

/// Each [points, ...] plane of `t` is contiguous.
bool planesContiguous(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(t.getStridesAndOffset(strides, offset)))
    return false;
  for (int64_t d = t.getRank() - 2, inner = 1; d >= 1; --d) {
    inner *= t.getDimSize(d + 1);
    if (strides[d] != inner)
      return false;
  }
  return true;
}

/// The (M+2)^2 values of `valid` tiles from tile tx0 of tile row ty, a
/// vector each: tile element (a, s) at x[img, c, M ty + a, M tx + s].
/// Columns s < M come from the M vectors at M tx0, the last two from those
/// at M tx0 + M (each tile's first two of the next), read up to the last
/// tile's.
SmallVector<Value> loadTiles(StridedRows &e, Value x, Value img, Value c, Value ty, Value tx0,
                             int64_t valid, int64_t M) {
  int64_t side = M + 2;
  SmallVector<Value> d(side * side);
  for (int64_t a = 0; a < side; ++a) {
    Value row = e.add(e.times(ty, M), a);
    for (int64_t s0 : {int64_t(0), M}) {
      int64_t count = s0 ? M * (valid - 1) + side - M : M * valid;
      SmallVector<Value> run = e.loadRun(x, {img, c, row, e.add(e.times(tx0, M), s0)}, M, count);
      for (int64_t s = 0; s < std::min(M, side - s0); ++s)
        d[side * a + s0 + s] = e.gather(run, s);
    }
  }
  return d;
}

/// The input transform's parallel loop, `body` once per image, tile row
/// and channel.
void forTileRows(StridedRows &e, OpFoldResult n, int64_t C, int64_t TY, bool packed,
                 bool channelBlocks, llvm::function_ref<void(Value, Value, Value)> body) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  // Each image's panels (a dynamic batch) holding tiles of three tile
  // rows or more (7 tiles a row at 28x28 by F(4x4, 3x3)): split by tile
  // rows, the threads wrote the same lines where their rows met, a line
  // per channel and point. By blocks of channels instead (a channel's row
  // of a panel is one line), rows then channels within a block: that
  // 128-channel transform alone at 1 / 8 images, 2 SPR cores, 293 -> 77 /
  // 1182 -> 528 us; in ResNet-50 at one image 262-290 -> 86-110 us. With
  // longer rows (14 tiles at 56x56) the rows met in one panel of 13, and
  // by channels the transforms ran 36-68 us slower.
  if (channelBlocks) {
    int64_t block = std::gcd(C, int64_t(16));
    e.parallel({n, b.getIndexAttr(C / block)}, [&](ArrayRef<Value> iv) {
      auto rows = scf::ForOp::create(b, loc, e.index(0), e.index(TY), e.index(1));
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(rows.getBody());
      auto channels = scf::ForOp::create(b, loc, e.index(0), e.index(block), e.index(1));
      b.setInsertionPointToStart(channels.getBody());
      body(iv[0], rows.getInductionVar(),
           arith::AddIOp::create(b, loc, e.times(iv[1], block), channels.getInductionVar()));
    });
    return;
  }
  // Packed, a panel's row per channel follows the last one's: channels
  // innermost fill whole lines of each (stage 2 of ResNet-50 at batch 8:
  // 0.83 ms, 1.75 with the channels outermost).
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(C), n, b.getIndexAttr(TY)};
  if (packed)
    sizes = {n, b.getIndexAttr(TY), b.getIndexAttr(C)};
  e.parallel(sizes, [&](ArrayRef<Value> iv) {
    body(packed ? iv[0] : iv[1], packed ? iv[1] : iv[2], packed ? iv[2] : iv[0]);
  });
}

void lowerInput(linalg::GenericOp op, unsigned vectorBits) {
  Value x = op.getDpsInputs()[0], v = op.getDpsInits()[0];
  auto vType = cast<MemRefType>(v.getType());
  // [points, C, N, TY, TX], or packed: [points, T/P, C, P], all images'
  // tiles in panels, or [points, N, TY*TX/P, C, P], each image's (the
  // empty [TY, TX] giving the loops their sizes).
  int64_t M = outputSide(vType), side = M + 2, points = side * side;
  if (!M)
    return;
  bool packed = !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
  bool perImage = packed && vType.getRank() == 5;
  // Packed, each plane's panels are addressed flat: they must be contiguous.
  if (!unitStride(x) || !unitStride(v) || (packed && !planesContiguous(vType)))
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto xType = cast<MemRefType>(x.getType());
  int64_t C = xType.getDimSize(1), TY = (xType.getDimSize(2) - 2) / M,
          TX = (xType.getDimSize(3) - 2) / M;
  StridedRows e{b, loc, StridedRows::lanesFor(TX, vectorBits)};
  OpFoldResult n = memref::getMixedSize(b, loc, x, 0);
  Value flat;
  int64_t P = 0;
  if (packed) {
    P = vType.getShape().back();
    ReassociationIndices rest = llvm::to_vector(llvm::seq<int64_t>(1, vType.getRank()));
    flat = memref::CollapseShapeOp::create(b, loc, v, ArrayRef<ReassociationIndices>{{0}, rest});
  }
  auto tileRow = [&](Value img, Value ty, Value c) {
    e.chunks(TX, [&](Value tx0, int64_t valid) {
      SmallVector<Value, 36> t =
          winograd::inputTile(b, loc, loadTiles(e, x, img, c, ty, tx0, valid, M), M);
      if (!packed) {
        for (int64_t p = 0; p < points; ++p)
          rows::store(b, loc, t[p], v, {e.index(p), c, img, ty, tx0}, valid);
        return;
      }
      // Tiles t0.. are lanes t0 mod P.. of panel t0 / P and the first of
      // the next: two masked stores, the second's lanes shifted by its
      // address (lane k lands at panel start + k - first).
      AffineExpr ei, ey, ex, ec;
      bindDims(b.getContext(), ei, ey, ex, ec);
      // The first tile's number among those panelled together, and its
      // panel's in the plane.
      AffineExpr t0 = perImage ? ey * TX + ex : (ei * TY + ey) * TX + ex;
      AffineExpr panel = perImage ? ei * ((TY * TX + P - 1) / P) + t0.floorDiv(P) : t0.floorDiv(P);
      auto apply = [&](AffineExpr expr) -> Value {
        return affine::AffineApplyOp::create(b, loc, AffineMap::get(4, 0, expr),
                                             ValueRange{img, ty, tx0, c});
      };
      AffineExpr base = (panel * C + ec) * P;
      Value at1 = apply(base + t0 % P);
      Value at2 = apply(base + C * P - (P - t0 % P));
      // The stores of tiles whose first lands at lane `r` of its panel,
      // known at compile time: the masks are constants, which
      // kiln-split-masked-stores turns into plain stores without AVX-512.
      auto stores = [&](int64_t r) {
        int64_t first = P - r;
        if (first >= valid) { // within the panel: one store
          for (int64_t p = 0; p < points; ++p)
            rows::store(b, loc, t[p], flat, {e.index(p), at1}, valid);
          return;
        }
        SmallVector<bool> one(e.lanes, false), two(e.lanes, false);
        for (int64_t k = 0; k < valid; ++k)
          (k < first ? one : two)[k] = true;
        auto maskType = VectorType::get({e.lanes}, b.getI1Type());
        Value inFirst = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(maskType, one));
        Value inSecond = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(maskType, two));
        for (int64_t p = 0; p < points; ++p) {
          rows::maskedStore(b, loc, t[p], flat, {e.index(p), at1}, inFirst);
          rows::maskedStore(b, loc, t[p], flat, {e.index(p), at2}, inSecond);
        }
      };
      // With AVX2's 8 lanes or fewer: one case per lane a row's tiles can
      // start at. t0 = (n TY + ty) TX + tx0 (or ty TX + tx0) with tx0 a multiple of the
      // lanes, so t0 mod P is a multiple of gcd(TX, lanes, P): every such
      // residue is a case and the default is never taken. A Zen 2 ran the
      // run-time masks' VMASKMOVPS as microcode: 64-channel input
      // transform at 56x56, 508 -> 379 us.
      if (P <= 8) {
        int64_t step = std::gcd(std::gcd(TX, e.lanes), P);
        SmallVector<int64_t> cases;
        for (int64_t r = 0; r < P; r += step)
          cases.push_back(r);
        Value residue = apply(t0 % P);
        auto which = scf::IndexSwitchOp::create(b, loc, TypeRange{}, residue, cases, cases.size());
        OpBuilder::InsertionGuard guard(b);
        for (auto [i, r] : llvm::enumerate(cases)) {
          b.setInsertionPointToStart(&which.getCaseRegions()[i].emplaceBlock());
          stores(r);
          scf::YieldOp::create(b, loc);
        }
        b.setInsertionPointToStart(&which.getDefaultRegion().emplaceBlock()); // unreachable
        scf::YieldOp::create(b, loc);
        return;
      }
      auto lanesType = VectorType::get({e.lanes}, b.getIndexType());
      Value iota = vector::StepOp::create(b, loc, lanesType);
      Value limit = vector::BroadcastOp::create(b, loc, lanesType, e.index(valid));
      Value inRow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, iota, limit);
      Value first = apply(P - t0 % P);
      Value firstLanes = vector::BroadcastOp::create(b, loc, lanesType, first);
      Value inFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, iota, firstLanes);
      Value inSecond = arith::AndIOp::create(
          b, loc, inRow,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, iota, firstLanes));
      inFirst = arith::AndIOp::create(b, loc, inFirst, inRow);
      auto split = [&] {
        for (int64_t p = 0; p < points; ++p) {
          rows::maskedStore(b, loc, t[p], flat, {e.index(p), at1}, inFirst);
          rows::maskedStore(b, loc, t[p], flat, {e.index(p), at2}, inSecond);
        }
      };
      // A row within its panel (always, when the lanes divide P and the
      // row): one store, plain for a whole vector. Two masked stores cost
      // even where the second's mask is empty (ResNet-18's 512-channel
      // input transform at batch 2: 425 -> 75 us with plain stores).
      Value within = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, first,
                                           e.index(valid));
      auto branch = scf::IfOp::create(b, loc, TypeRange{}, within, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      for (int64_t p = 0; p < points; ++p)
        rows::store(b, loc, t[p], flat, {e.index(p), at1}, valid);
      b.setInsertionPoint(branch.elseBlock()->getTerminator());
      split();
    });
  };
  forTileRows(e, n, C, TY, packed, perImage && 2 * TX <= P, tileRow);
  op.erase();
}

/// An operand of the output transform's epilogue: read along the output
/// rows (its last index M tx + j) or one value per row.
struct EpilogueOperand {
  Value memref;
  AffineMap map; // over (n, f, ty, i, tx, j)
  bool row;
};

void lowerOutput(linalg::GenericOp op, unsigned vectorBits) {
  Block &body = op.getRegion().front();
  auto marked = llvm::find_if(body, [](Operation &o) { return o.hasAttr(winograd::kValueAttr); });
  if (marked == body.end())
    return;
  Value m = op.getDpsInputs()[0], y6 = op.getDpsInits()[0];
  auto mType = cast<MemRefType>(m.getType());
  int64_t M = outputSide(mType), points = (M + 2) * (M + 2);
  if (!M)
    return;
  SmallVector<EpilogueOperand> extra;
  SmallVector<OpOperand *> inputs = op.getDpsInputOperands();
  for (OpOperand *in : ArrayRef<OpOperand *>(inputs).drop_front(points)) {
    AffineMap map = op.getMatchingIndexingMap(in);
    // As kiln-winograd-conv fuses them: only the last index moves along
    // the row, as M tx + j.
    AffineExpr last = map.getResults().back();
    auto alongRow = [](AffineExpr e) { return e.isFunctionOfDim(4) || e.isFunctionOfDim(5); };
    bool row = alongRow(last);
    if (llvm::any_of(map.getResults().drop_back(), alongRow) ||
        (row && (last != M * getAffineDimExpr(4, op.getContext()) +
                              getAffineDimExpr(5, op.getContext()) ||
                 !cast<MemRefType>(in->get().getType()).isLastDimUnitStride())))
      return;
    extra.push_back({in->get(), map, row});
  }
  // The blocks' columns (tx, j) must be one output row to read as one.
  SmallVector<int64_t> yStrides;
  int64_t yOffset;
  if (!unitStride(m) ||
      failed(cast<MemRefType>(y6.getType()).getStridesAndOffset(yStrides, yOffset)) ||
      yStrides[5] != 1 || yStrides[4] != M)
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  BlockArgument outArg = body.getArguments().back();
  // m is [points, F, N, TY, TX], or [points, N, F, TY, TX] (each image's tiles
  // packed apart, a dynamic batch).
  AffineMap mMap = op.getMatchingIndexingMap(inputs[0]);
  bool imageFirst = mMap.getResult(1) == getAffineDimExpr(0, op.getContext());
  int64_t F = mType.getDimSize(imageFirst ? 2 : 1), TY = mType.getDimSize(3),
          TX = mType.getDimSize(4);
  StridedRows e{b, loc, StridedRows::lanesFor(TX, vectorBits)};
  // The blocks' columns as the output's rows: [N, F, TY, M, M TX].
  Value y = memref::CollapseShapeOp::create(
      b, loc, y6, ArrayRef<ReassociationIndices>{{0}, {1}, {2}, {3}, {4, 5}});
  OpFoldResult n = memref::getMixedSize(b, loc, m, imageFirst ? 1 : 2);
  auto epilogueOps = llvm::make_range(std::next(marked), body.getTerminator()->getIterator());
  e.parallel({n, b.getIndexAttr(F), b.getIndexAttr(TY)}, [&](ArrayRef<Value> iv) {
    Value img = iv[0], f = iv[1], ty = iv[2];
    e.chunks(TX, [&](Value tx0, int64_t valid) {
      SmallVector<Value> products;
      for (int64_t p = 0; p < points; ++p) {
        SmallVector<Value> at{e.index(p), f, img, ty, tx0};
        if (imageFirst)
          std::swap(at[1], at[2]);
        products.push_back(rows::load(b, loc, m, at, e.lanes, valid));
      }
      SmallVector<Value, 16> t = winograd::outputTile(b, loc, products, M);
      for (int64_t i = 0; i < M; ++i) {
        ArrayRef<Value> row = ArrayRef<Value>(t).slice(M * i, M);
        for (int64_t half = 0; half < M; ++half) {
          int64_t count = std::min(e.lanes, M * valid - half * e.lanes);
          if (count <= 0)
            continue;
          // Lanes: outputs M tx0 + half * lanes.. of row M ty + i.
          Value column = e.add(e.times(tx0, M), half * e.lanes);
          IRMapping map;
          map.map(marked->getResult(0), e.spread(row, half));
          if (!outArg.use_empty())
            map.map(outArg, rows::load(b, loc, y, {img, f, ty, e.index(i), column}, e.lanes, count));
          SmallVector<Value> at{img, f, ty, e.index(i), tx0, e.index(0)};
          for (auto [k, operand] : llvm::enumerate(extra)) {
            SmallVector<Value> idx;
            for (AffineExpr r : operand.map.getResults().drop_back(operand.row ? 1 : 0))
              idx.push_back(affine::AffineApplyOp::create(
                  b, loc, AffineMap::get(6, 0, r), at));
            Value v;
            if (operand.row) {
              idx.push_back(column);
              v = rows::load(b, loc, operand.memref, idx, e.lanes, count);
            } else {
              Value scalar = memref::LoadOp::create(b, loc, operand.memref, idx);
              v = vector::BroadcastOp::create(
                  b, loc, VectorType::get({e.lanes}, scalar.getType()), scalar);
            }
            map.map(body.getArgument(points + k), v);
          }
          rows::applyOps(b, loc, epilogueOps, map, e.lanes);
          Value result =
              rows::lookupLanes(b, loc, map, body.getTerminator()->getOperand(0), e.lanes);
          rows::store(b, loc, result, y, {img, f, ty, e.index(i), column}, count);
        }
      }
    });
  });
  op.erase();
}

struct KilnVectorizeWinogradPass final
    : impl::KilnVectorizeWinogradBase<KilnVectorizeWinogradPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> inputs, outputs;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isMarked(op, "input"))
        inputs.push_back(op);
      else if (isMarked(op, "output"))
        outputs.push_back(op);
    });
    for (linalg::GenericOp op : inputs)
      lowerInput(op, vectorBits);
    for (linalg::GenericOp op : outputs)
      lowerOutput(op, vectorBits);
  }
};

} // namespace
} // namespace kiln
