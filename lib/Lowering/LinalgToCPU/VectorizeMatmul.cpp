//===- VectorizeMatmul.cpp - kiln-vectorize-matmul: register-tiled matmuls =//
//
//   C(..m.., n) += A(..m.., k) * B(k, n)        (memrefs, B row-major)
// =>
//   for the batch and outer m loops, rows in blocks of MR, columns in
//   chunks of NV:
//     acc[MR][NV] = C[rows, cols...]
//     for k:                                (acc in registers: iter_args)
//       b[j] = B[k, cols j]                 (NV vector loads)
//       acc[i][j] = fma(broadcast(A[row i, k]), b[j], acc[i][j])
//     C[rows, cols...] = acc
//
// Lowered to loops (k above n, kiln-interchange-loops), a linear layer's
// row updated C in memory at every k: an FMA per load and store. Here MR
// rows of C stay in registers over the whole reduction and each loaded
// vector of B feeds MR FMAs: the GEMM microkernel of
// ../shared/reading/cpu-codegen.md, with B read in place (row-major [K, N],
// no packing) and the column end masked. Kernel formation tiles rows by
// the same block (kiln-form-kernels).
//
//===----------------------------------------------------------------------===//

#include "AmxMatmul.h"
#include "ConvEpilogue.h"
#include "Int8Reductions.h"
#include "NextPanel.h"
#include "VecmatAsRowMatmul.h"
#include "kiln/Lowering/MatmulTiles.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZEMATMUL
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

namespace {

class MatmulEmitter {
public:
  MatmulEmitter(PatternRewriter &b, linalg::LinalgOp op, RowMatmul mm, MatmulRegisterTile t,
                std::optional<Epilogue> epilogue, bool amx)
      : b(b), loc(op.getLoc()), op(op), mm(mm), t(t), epilogue(epilogue), amx(amx),
        vec(VectorType::get({t.width}, mm.int8 ? Type(b.getI32Type()) : Type(b.getF32Type()))),
        ranges(op.getStaticLoopRanges()),
        dimValues(op.getNumLoops()) {}

  /// C's batch and m loops and the row blocks in one parallel loop (they
  /// are independent), then the column chunks; a narrow last chunk may
  /// follow in taller blocks of its own.
  void emit() {
    if (ShapedType::isDynamic(ranges[mm.rows]) || ShapedType::isDynamic(ranges[mm.n]) ||
        ShapedType::isDynamic(ranges[mm.k]) ||
        llvm::any_of(mm.outer, [&](unsigned d) { return ShapedType::isDynamic(ranges[d]); }))
      return emitDynamic();
    kSize = index(ranges[mm.k]);
    int64_t rows = ranges[mm.rows], N = ranges[mm.n];
    int64_t chunk = t.width * t.vectors, chunks = (N + chunk - 1) / chunk;
    // One block of rows (a matrix-vector product: a classifier's last
    // layer at batch 1) splits its columns over the pool instead.
    int64_t rowBlocks = (rows + t.rows - 1) / t.rows;
    for (unsigned d : mm.outer)
      rowBlocks *= ranges[d];
    if (mm.outer.empty() && mm.packed && !mm.int8)
      next = findNextPanel(b, loc, op, rowBlocks * chunks, chunk, N);
    int64_t last = (chunks - 1) * chunk;
    // A last chunk narrower than the tile goes after the others, in taller
    // blocks (matmulTailRows), where the rows make two of them or more: a
    // quarter of a 32-column panel's products ran at half speed in 4-row
    // blocks (ResNet-50's 256 -> 64 1x1 convolution on 2 Zen 2 cores 0.84
    // -> 0.67 ms).
    int64_t tailRows = matmulTailRows(t, N);
    bool wideTail = tailRows > t.rows && rows >= 2 * tailRows;
    auto columns = [&](Value r0, int64_t blockRows) {
      auto full = [&](Value n0) { emitBlock(r0, blockRows, n0, chunk); };
      if (rowBlocks == 1)
        rows::forParallel(b, loc, {(chunks - 1) * chunk}, {chunk},
                          [&](ArrayRef<Value> iv) { full(iv[0]); });
      else
        forRange((chunks - 1) * chunk, chunk, full);
      if (!wideTail)
        emitBlock(r0, blockRows, index(last), N - last);
    };
    SmallVector<int64_t> extents, steps;
    for (unsigned d : mm.outer) {
      extents.push_back(ranges[d]);
      steps.push_back(1);
    }
    auto bindOuter = [&](ArrayRef<Value> iv) {
      for (auto [i, d] : llvm::enumerate(mm.outer))
        dimValues[d] = iv[i];
    };
    int64_t full = rows / t.rows * t.rows;
    extents.push_back(full);
    steps.push_back(t.rows);
    rows::forParallel(b, loc, extents, steps, [&](ArrayRef<Value> iv) {
      bindOuter(iv);
      columns(iv.back(), t.rows);
    });
    if (full < rows) { // the remaining rows, a smaller block
      extents.pop_back();
      steps.pop_back();
      rows::forParallel(b, loc, extents, steps, [&](ArrayRef<Value> iv) {
        bindOuter(iv);
        columns(index(full), rows - full);
      });
    }
    if (!wideTail)
      return;
    int64_t tailFull = rows / tailRows * tailRows;
    extents.resize(mm.outer.size());
    steps.resize(mm.outer.size());
    extents.push_back(tailFull);
    steps.push_back(tailRows);
    rows::forParallel(b, loc, extents, steps, [&](ArrayRef<Value> iv) {
      bindOuter(iv);
      emitBlock(iv.back(), tailRows, index(last), N - last);
    });
    if (tailFull < rows) {
      extents.pop_back();
      steps.pop_back();
      rows::forParallel(b, loc, extents, steps, [&](ArrayRef<Value> iv) {
        bindOuter(iv);
        emitBlock(index(tailFull), rows - tailFull, index(last), N - last);
      });
    }
  }

private:
  /// Rows (or C's outer loops) known at run time: the full blocks of
  /// t.rows rows in a parallel loop, then the rest (fewer than t.rows) as
  /// one block of exactly that many rows, a case of an scf.index_switch
  /// per possible count: B's panel is read once, as a static tail block
  /// reads it. (One row at a time, a 5-row tail read a 3072 x 32 panel
  /// five times: BERT's second linear layer at 13 rows 510 -> 380 us; one
  /// block per binary digit of the count, a 3-row product of a 768 x 3072
  /// layer read it twice: 0.28 ms against the static artifact's 0.16.)
  void emitDynamic() {
    int64_t N = ranges[mm.n];
    int64_t chunk = t.width * t.vectors, chunks = (N + chunk - 1) / chunk;
    SmallVector<Range> loops = op.createLoopRanges(b, loc);
    auto size = [&](unsigned d) { return getValueOrCreateConstantIndexOp(b, loc, loops[d].size); };
    kSize = size(mm.k);
    Value nSize = size(mm.n);
    auto columns = [&](Value r0, int64_t blockRows) {
      if (ShapedType::isDynamic(N))
        return dynamicColumns(r0, blockRows, nSize, chunk);
      forRange((chunks - 1) * chunk, chunk, [&](Value n0) { emitBlock(r0, blockRows, n0, chunk); });
      int64_t last = (chunks - 1) * chunk;
      emitBlock(r0, blockRows, index(last), N - last);
    };
    Value rows = size(mm.rows);
    Value R = index(t.rows);
    Value full = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, rows, R), R);
    // C's outer loops, then (for the full blocks) the rows: 0-based, which
    // the outliner can split over the pool.
    auto overOuter = [&](std::optional<Value> blocks, llvm::function_ref<void(Value)> body) {
      SmallVector<Value> l, u, st;
      for (unsigned d : mm.outer) {
        l.push_back(index(0));
        u.push_back(size(d));
        st.push_back(index(1));
      }
      if (blocks) {
        l.push_back(index(0));
        u.push_back(*blocks);
        st.push_back(R);
      }
      if (l.empty())
        return body(Value());
      auto loop = scf::ParallelOp::create(b, loc, l, u, st);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      auto iv = loop.getInductionVars();
      for (auto [i, d] : llvm::enumerate(mm.outer))
        dimValues[d] = iv[i];
      body(blocks ? iv.back() : Value());
    };
    Value rest = arith::SubIOp::create(b, loc, rows, full);
    // The rest (fewer than t.rows) as one block of exactly that many rows.
    auto restOf = [&](llvm::function_ref<void(int64_t)> body) {
      SmallVector<int64_t> cases;
      for (int64_t s = 1; s < t.rows; ++s)
        cases.push_back(s);
      auto which = scf::IndexSwitchOp::create(b, loc, TypeRange{}, rest, cases, cases.size());
      OpBuilder::InsertionGuard g(b);
      for (auto [i, s] : llvm::enumerate(cases)) {
        Block &block = which.getCaseRegions()[i].emplaceBlock();
        b.setInsertionPointToStart(&block);
        body(s);
        scf::YieldOp::create(b, loc);
      }
      b.setInsertionPointToStart(&which.getDefaultRegion().emplaceBlock()); // none left
      scf::YieldOp::create(b, loc);
    };
    auto byRows = [&] {
      overOuter(full, [&](Value r0) { columns(r0, t.rows); });
      if (t.rows > 1)
        overOuter(std::nullopt, [&](Value) { restOf([&](int64_t s) { columns(full, s); }); });
    };
    // A linear layer alone (no outer loops: a classifier after pooling,
    // which kiln-form-kernels leaves whole) with fewer rows than 8 blocks:
    // its column chunks split over the pool instead, each thread reading
    // its share of the weights once for all the rows. By rows, one image's
    // block ran on one thread, and each block read all of the weights
    // (ResNet-50's classifier with its pooling, 8 MB of weights, on 2 SPR
    // cores: 0.32 -> 0.17 ms at one image, static 0.19; 0.39 -> 0.20 at 4,
    // 1.20 -> 1.00 at 32; the same from 64).
    if (!mm.outer.empty() || ShapedType::isDynamic(N) || chunks < 4 || t.rows == 1)
      return byRows();
    Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rows, index(8 * t.rows));
    auto split = scf::IfOp::create(b, loc, TypeRange{}, few, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(split.thenYield());
    auto chunkRows = [&](Value n0, int64_t valid) {
      auto blocks = scf::ForOp::create(b, loc, index(0), full, R);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(blocks.getBody());
        emitBlock(blocks.getInductionVar(), t.rows, n0, valid);
      }
      restOf([&](int64_t s) { emitBlock(full, s, n0, valid); });
    };
    int64_t last = (chunks - 1) * chunk;
    rows::forParallel(b, loc, {last}, {chunk},
                      [&](ArrayRef<Value> iv) { chunkRows(iv[0], chunk); });
    chunkRows(index(last), N - last);
    b.setInsertionPoint(split.elseYield());
    byRows();
  }

  /// Columns known at run time: whole chunks in a loop, then the rest (if
  /// any) as one chunk whose vectors are masked to it.
  void dynamicColumns(Value r0, int64_t blockRows, Value n, int64_t chunk) {
    Value C = index(chunk);
    Value whole = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, n, C), C);
    auto loop = scf::ForOp::create(b, loc, index(0), whole, C);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      emitBlock(r0, blockRows, loop.getInductionVar(), chunk);
    }
    Value rest = arith::SubIOp::create(b, loc, n, whole);
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, rest, index(0));
    auto tail = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&tail.getThenRegion().front());
    restColumns = rest;
    emitBlock(r0, blockRows, whole, chunk);
    restColumns = Value();
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  void forRange(int64_t extent, int64_t step, llvm::function_ref<void(Value)> body) {
    rows::forRange(b, loc, extent, step, body);
  }

  SmallVector<Value> indicesOf(AffineMap map) {
    return llvm::map_to_vector(map.getResults(), [&](AffineExpr e) {
      return dimValues[cast<AffineDimExpr>(e).getPosition()];
    });
  }

  /// One block: `blockRows` rows from `r0`, `valid` columns from `n0`.
  void emitBlock(Value r0, int64_t blockRows, Value n0, int64_t valid) {
    int64_t VW = t.width;
    SmallVector<int64_t> validOf;
    for (int64_t j = 0; j < t.vectors && j * VW < valid; ++j)
      validOf.push_back(std::min(VW, valid - j * VW));
    int64_t NV = validOf.size();
    SmallVector<Value> row, column;
    for (int64_t i = 0; i < blockRows; ++i)
      row.push_back(i ? arith::AddIOp::create(b, loc, r0, index(i)).getResult() : r0);
    for (int64_t j = 0; j < NV; ++j)
      column.push_back(j ? arith::AddIOp::create(b, loc, n0, index(j * VW)).getResult() : n0);

    // The last chunk of columns known at run time: each vector masked to
    // the columns left (none, for vectors past them).
    SmallVector<Value> masks;
    if (restColumns)
      for (int64_t j = 0; j < NV; ++j)
        masks.push_back(vector::CreateMaskOp::create(
            b, loc, VectorType::get({VW}, b.getI1Type()),
            ValueRange{arith::SubIOp::create(b, loc, restColumns, index(j * VW)).getResult()}));
    auto load = [&](Value base, ValueRange idx, int64_t j) {
      return masks.empty() ? rows::load(b, loc, base, idx, VW, validOf[j])
                           : rows::maskedLoad(b, loc, base, idx, masks[j]);
    };
    auto store = [&](Value v, Value base, ValueRange idx, int64_t j) {
      if (masks.empty())
        rows::store(b, loc, v, base, idx, validOf[j]);
      else
        rows::maskedStore(b, loc, v, base, idx, masks[j]);
    };
    Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1], c = op.getDpsInits()[0];
    AffineMap aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    AffineMap bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
    AffineMap cMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    auto at = [&](AffineMap map, int64_t i, int64_t j, Value k) {
      dimValues[mm.rows] = row[i];
      dimValues[mm.n] = column[j];
      dimValues[mm.k] = k;
      return indicesOf(map);
    };

    SmallVector<Value> init;
    for (int64_t i = 0; i < blockRows; ++i)
      for (int64_t j = 0; j < NV; ++j)
        if (epilogue && epilogue->fill) // the fill the accumulators replace
          init.push_back(arith::ConstantOp::create(
              b, loc, vec,
              mm.int8 ? DenseElementsAttr::get(vec, b.getI32IntegerAttr((int32_t)*epilogue->fill))
                      : DenseElementsAttr::get(vec, b.getF32FloatAttr(*epilogue->fill))));
        else
          init.push_back(load(c, at(cMap, i, j, Value()), j));
    prefetchEpilogueInputs(blockRows, NV, at, cMap);
    auto finish = [&](int64_t i, int64_t j, Value v) { storeOne(i, j, validOf, v, at, cMap, store); };
    if (std::optional<AmxOperands> tiles = amxOperands(); tiles && !restColumns) {
      auto panelOf = [&](int64_t j) -> Value {
        return arith::DivUIOp::create(b, loc, column[j], index(t.width));
      };
      auto aAt = [&](int64_t i, Value k) { return at(aMap, i, 0, k); };
      // The accumulators start at 0 in the tiles: C's start added after.
      return emitAmxBlock(b, loc, *tiles, blockRows, NV, panelOf, aAt, [&](int64_t i, int64_t j, Value v) {
        finish(i, j, arith::AddIOp::create(b, loc, v, init[i * NV + j]));
      });
    }
    if (mm.int8)
      return storeBlock(blockRows, NV, validOf,
                        emitInt8Reduction(blockRows, column, init, at, aMap), at, cMap, store);
    // A packed by rows: row r at (r floordiv R, k, r mod R), whose first
    // and last index stay the same over k.
    SmallVector<Value> aBatch, aPanel, aLane;
    if (mm.packedRows) {
      for (AffineExpr e : aMap.getResults().drop_back(3))
        aBatch.push_back(dimValues[cast<AffineDimExpr>(e).getPosition()]);
      for (int64_t i = 0; i < blockRows; ++i) {
        aPanel.push_back(arith::DivUIOp::create(b, loc, row[i], index(mm.packedRows)));
        aLane.push_back(arith::RemUIOp::create(b, loc, row[i], index(mm.packedRows)));
      }
    }
    // The reduction over k; with `prefetch`, the lines of the next column
    // tile's panels this block requests (NextPanel.h).
    NextPanel::Share share;
    auto reduce = [&](bool prefetch) -> SmallVector<Value> {
      auto kLoop = scf::ForOp::create(b, loc, index(0), kSize, index(1), init);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(kLoop.getBody());
      Value k = kLoop.getInductionVar();
      if (prefetch)
        next->prefetch(b, loc, share, k);
      SmallVector<Value> acc(kLoop.getRegionIterArgs());
      SmallVector<Value> bv;
      for (int64_t j = 0; j < NV; ++j) {
        // Packed B (one vector wide panels): column n's vector is panel
        // n / VW, all of its row k.
        SmallVector<Value> bIndices;
        if (mm.packed) { // B's batch indices, then the panel's
          for (AffineExpr e : bMap.getResults().drop_back(3))
            bIndices.push_back(dimValues[cast<AffineDimExpr>(e).getPosition()]);
          bIndices.append({arith::DivUIOp::create(b, loc, column[j], index(VW)), k, index(0)});
        } else {
          bIndices = at(bMap, 0, j, k);
        }
        bv.push_back(load(bm, bIndices, j));
      }
      for (int64_t i = 0; i < blockRows; ++i) {
        SmallVector<Value> aAt(aBatch);
        if (mm.packedRows)
          aAt.append({aPanel[i], k, aLane[i]});
        Value ai = memref::LoadOp::create(b, loc, a, mm.packedRows ? aAt : at(aMap, i, 0, k));
        Value bcast = vector::BroadcastOp::create(b, loc, vec, ai);
        for (int64_t j = 0; j < NV; ++j)
          acc[i * NV + j] = vector::FMAOp::create(b, loc, bcast, bv[j], acc[i * NV + j]);
      }
      scf::YieldOp::create(b, loc, acc);
      return SmallVector<Value>(kLoop.getResults());
    };
    if (!next)
      return storeBlock(blockRows, NV, validOf, reduce(false), at, cMap, store);
    share = next->shareOf(b, loc, r0, t.rows, n0, kSize);
    auto choose = scf::IfOp::create(b, loc, TypeRange(ValueRange(init)), share.mine, true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&choose.getThenRegion().front());
      scf::YieldOp::create(b, loc, reduce(true));
      b.setInsertionPointToStart(&choose.getElseRegion().front());
      scf::YieldOp::create(b, loc, reduce(false));
    }
    storeBlock(blockRows, NV, validOf, choose.getResults(), at, cMap, store);
  }

  std::optional<NextPanel> next; // of weights sliced by a column tile

  using At = llvm::function_ref<SmallVector<Value>(AffineMap, int64_t, int64_t, Value)>;

  /// The accumulators through the epilogue (if any) into C or its output.
  using Store = llvm::function_ref<void(Value, Value, ValueRange, int64_t)>;
  void storeBlock(int64_t blockRows, int64_t NV, ArrayRef<int64_t> validOf, ValueRange acc, At at,
                  AffineMap cMap, Store store) {
    for (int64_t i = 0; i < blockRows; ++i)
      for (int64_t j = 0; j < NV; ++j)
        storeOne(i, j, validOf, acc[i * NV + j], at, cMap, store);
  }
  /// Row i's accumulator vector j through the epilogue into its place.
  void storeOne(int64_t i, int64_t j, ArrayRef<int64_t> validOf, Value v, At at, AffineMap cMap,
                Store store) {
    Value dest = epilogue ? epilogue->op.getDpsInits()[0] : op.getDpsInits()[0];
    SmallVector<Value> idx = at(cMap, i, j, Value());
    if (epilogue)
      v = applyEpilogue(b, loc, *epilogue, v, idx, validOf[j]);
    store(v, dest, idx, j);
  }

  /// An 8-bit product's operands as AMX tiles take them (`amx`, static K;
  /// A's rows a static stride apart, each row's k contiguous), else none.
  std::optional<AmxOperands> amxOperands() {
    if (!amx || !mm.int8 || t.rows < kAmxMinRows || ShapedType::isDynamic(ranges[mm.k]))
      return std::nullopt;
    Value a = op.getDpsInputs()[0];
    auto aType = cast<MemRefType>(a.getType());
    AffineMap aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    auto [strides, offset] = aType.getStridesAndOffset();
    std::optional<int64_t> rowStride;
    for (auto [d, e] : llvm::enumerate(aMap.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == mm.rows)
        rowStride = rowStride ? ShapedType::kDynamic : strides[d];
    auto last = dyn_cast<AffineDimExpr>(aMap.getResults().back());
    if (!rowStride || ShapedType::isDynamic(*rowStride) || !last || last.getPosition() != mm.k ||
        strides.back() != 1 || cast<MemRefType>(op.getDpsInputs()[1].getType()).getRank() != 4)
      return std::nullopt;
    return AmxOperands{a, *rowStride, vnniPanelRows(), ranges[mm.k]};
  }

  /// The 8-bit tiles' packed B, [N/P, K/G, P, G], as [N/P, K/G, P*G]: a panel's k
  /// group is one row.
  Value vnniPanelRows() {
    Value packedB = op.getDpsInputs()[1];
    auto bType = cast<MemRefType>(packedB.getType());
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 2 < bType.getRank(); ++d)
      groups.push_back({d});
    groups.push_back({bType.getRank() - 2, bType.getRank() - 1});
    return memref::CollapseShapeOp::create(b, loc, packedB, groups);
  }

  /// The 8-bit product's reduction over k (Int8Reductions.h): on B packed
  /// in fours, vpdpbusd's (AVX2: vpmaddubsw's); in pairs of k, vpmaddwd's.
  SmallVector<Value> emitInt8Reduction(int64_t blockRows, ArrayRef<Value> column, ValueRange init,
                                       At at, AffineMap aMap) {
    SmallVector<Value> panels;
    for (Value c : column)
      panels.push_back(arith::DivUIOp::create(b, loc, c, index(t.width)));
    auto aAt = [&](int64_t i, Value k) { return at(aMap, i, 0, k); }; // outlives r's ref
    Int8Reduction r{op.getDpsInputs()[0], vnniPanelRows(), kSize, vec, t.width, aAt};
    return mm.group == 2 ? emitPairReduction(b, loc, r, blockRows, panels, init)
                         : emitVnniReduction(b, loc, r, blockRows, panels, init);
  }

  /// The lines of the block that the epilogue reads from memory (a
  /// residual), requested before the reduction so that they arrive while
  /// it runs: read after it, each block waits for them. ResNet-50's 64 ->
  /// 256 channel 1x1 convolution with its residual at batch 8 on 2 Zen 4
  /// cores: 7.1 -> 6.6 ms (medians of 8 interleaved runs, a noisy machine).
  void prefetchEpilogueInputs(int64_t blockRows, int64_t NV,
                              llvm::function_ref<SmallVector<Value>(AffineMap, int64_t, int64_t, Value)> at,
                              AffineMap cMap) {
    if (!epilogue)
      return;
    linalg::GenericOp g = epilogue->op;
    for (OpOperand &operand : g->getOpOperands()) {
      if (operand.getOperandNumber() == epilogue->accInput ||
          (g.isDpsInit(&operand) && g.getMatchingBlockArgument(&operand).use_empty()) ||
          !g.getMatchingIndexingMap(&operand).isIdentity())
        continue;
      for (int64_t i = 0; i < blockRows; ++i)
        for (int64_t j = 0; j < NV; ++j)
          memref::PrefetchOp::create(b, loc, operand.get(), at(cMap, i, j, Value()),
                                     /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
    }
  }

  PatternRewriter &b;
  Location loc;
  linalg::LinalgOp op;
  RowMatmul mm;
  MatmulRegisterTile t;
  std::optional<Epilogue> epilogue;
  bool amx; // 8-bit products on AMX tiles
  VectorType vec;
  SmallVector<int64_t> ranges;
  SmallVector<Value> dimValues; // the current value of each loop
  Value kSize;                  // k's extent
  Value restColumns;            // set while emitting a masked last chunk
};

struct RegisterTileMatmul : OpInterfaceRewritePattern<linalg::LinalgOp> {
  RegisterTileMatmul(MLIRContext *ctx, unsigned vectorBits, bool amx)
      : OpInterfaceRewritePattern(ctx), vectorBits(vectorBits), amx(amx) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "not on buffers");
    std::optional<RowMatmul> mm = matchRowMatmul(op);
    if (!mm)
      return rewriter.notifyMatchFailure(op, "not a row matmul");
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    // Rows known at run time: the tile for many of them.
    int64_t rows = ShapedType::isDynamic(ranges[mm->rows]) ? int64_t(1) << 20 : ranges[mm->rows];
    bool dynamicN = ShapedType::isDynamic(ranges[mm->n]);
    int64_t N = dynamicN ? int64_t(1) << 20 : ranges[mm->n];
    // AMX tiles where the rows, k and n are static (a batch, C's outer
    // loop, may not be). Rows known at run time have a block for every
    // leftover count (an scf.index_switch of 31 cases), which ran LLVM's
    // tile register allocation out of registers.
    bool tiles = amx && mm->int8 &&
                 llvm::none_of(ArrayRef<unsigned>{mm->rows, mm->k, mm->n},
                               [&](unsigned l) { return ShapedType::isDynamic(ranges[l]); });
    // 8-bit products: whole 16-lane panels (zero-padded), the last vector's
    // columns masked in C.
    if (mm->int8)
      N = std::max(N, mm->packed);
    MatmulRegisterTile tile =
        chooseMatmulRegisterTile(rows, N, vectorBits, registerTileDepth(op, *mm), tiles);
    // (vpmaddubsw's ResNet-50 1.3x faster at 4 x 2 than 4 x 3.)
    fitInt8Tile(tile, mm->int8, vectorBits);
    // Panels one vector wide, whole: else the op lowers as loops.
    if (mm->packed && mm->packed != tile.width)
      return rewriter.notifyMatchFailure(op, "B packed for another vector width");
    // The epilogue (bias, residual add, ReLU) on the accumulators: the
    // tile's temporary was filled, loaded, stored and read again by a loop
    // of its own. Its loops are the temporary's dimensions, so C's indices
    // are where it reads and writes; C's last one is n, the vector's.
    // (Not with columns known at run time: its loads take static masks.)
    std::optional<Epilogue> epilogue =
        dynamicN ? std::nullopt : matchEpilogue(op, /*columnVectors=*/true);
    rewriter.setInsertionPoint(epilogue ? epilogue->op.getOperation() : op.getOperation());
    MatmulEmitter(rewriter, op, *mm, tile, epilogue, tiles).emit();
    eraseWithEpilogue(rewriter, op, epilogue);
    return success();
  }

  unsigned vectorBits;
  bool amx;
};

struct KilnVectorizeMatmulPass final : impl::KilnVectorizeMatmulBase<KilnVectorizeMatmulPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RegisterTileMatmul>(&getContext(), vectorBits, amx);
    populateVecmatAsRowMatmulPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-vectorize-matmul: rewriting did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln
