//===- PackMatmulWeights.cpp - kiln-pack-matmul-weights --------------------===//
//
// C(..m.., n) += A(..m.., k) * W(k, n)      W a constant [K, N] (f32)
//   =>
// C(..m.., n) += A(..m.., k) * Wp(n floordiv P, k, n mod P)
//   with Wp = W as [N/P, K, P] (P: lanes of a vector), packed at compile time
//
// kiln-vectorize-matmul reads one vector of B's row k per column vector
// and k step. Row-major, consecutive k are a row of N apart: each load a
// new cache line, half used on AVX2, and a new 4 KiB page past 1024
// columns, and the whole of W streams from L3 again for every block of
// rows. Packed, a vector's column panel is K x P contiguous (32 KiB for
// K = 1024 on AVX2): read front to back, every line whole. This is the
// prepacked layout of ../shared/reading/cpu-codegen.md (MLAS and oneDNN
// pack constant weights the same way). Only where the vectorizer takes
// the product (N more than one vector: a whole number of them, or 4 or
// more with the last panel zero-padded): a linear layer's weights, a 1x1
// convolution's image. A B known only at run time (a training step's
// weights, dY in dW = X^T dY, the images of a batch) is packed by a copy
// kernel before the product, when 64 rows of C or more read it; so is one
// read transposed, B(n, k) (a training step's x W^T), which the vectorizer
// takes only packed. With `int8`, 8-bit products' constant weights are
// packed for vpdpbusd, vpmaddubsw or vpmaddwd (packInt8Weights,
// PackInt8Weights.cpp). Then, where B is
// packed, a constant A (a 1x1 convolution's weights, Winograd's filters)
// is packed by rows, a register block's 4 side by side (packWeightRows).
//
//===----------------------------------------------------------------------===//

#include "PackWeights.h"

#include "kiln/Dialects/Kiln/IR/ConstantData.h"
#include "kiln/Lowering/MatmulTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNPACKMATMULWEIGHTS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// Rows of C (over every batch) from which a run-time B is packed first.
constexpr int64_t kMinRuntimeRows = 64;

// Rows of a constant A side by side when packed (packWeightRows): the
// register tile's rows on AVX2 and AVX-512.
constexpr int64_t kPackedRows = 4;

/// `w` [K, N] as [ceil(N/P), K, P], packed now: a constant's bytes, the
/// last panel's columns past N zero.
Value packConstant(OpBuilder &b, arith::ConstantOp constant, ArrayRef<char> raw, int64_t K,
                   int64_t N, int64_t lanes) {
  int64_t panels = (N + lanes - 1) / lanes;
  std::vector<char> packed(panels * K * lanes * sizeof(float), 0);
  for (int64_t panel = 0; panel < panels; ++panel) {
    int64_t width = std::min(lanes, N - panel * lanes);
    for (int64_t r = 0; r < K; ++r)
      std::memcpy(&packed[((panel * K + r) * lanes) * sizeof(float)],
                  &raw[(r * N + panel * lanes) * sizeof(float)], width * sizeof(float));
  }
  auto packedType = RankedTensorType::get({panels, K, lanes}, b.getF32Type());
  return arith::ConstantOp::create(
      b, constant.getLoc(),
      cast<TypedAttr>(DenseResourceElementsAttr::get(
          packedType, "packed",
          HeapAsmResourceBlob::allocateAndCopyWithAlign(packed, alignof(std::max_align_t)))));
}

/// `w` [.., K, N] as [.., ceil(N/P), K, P], packed at run time: [.., K,
/// N/P, P] (a view) with K and the panels swapped, rows of P copied whole.
/// When N is not whole panels, the whole ones are packed that way into
/// the packed tensor and the last one, zero-padded, after them: padding
/// all of w first was a pass over it of its own (ResNet-50's 1024 x 196
/// 1x1 convolution images at 14x14: 60 us, besides the transpose's 38).
/// The leading dimensions are a 1x1 convolution's images (their number
/// may be known only at run time).
Value packAtRunTime(OpBuilder &b, Location loc, Value w, int64_t K, int64_t N, int64_t lanes) {
  auto type = cast<RankedTensorType>(w.getType());
  int64_t nb = type.getRank() - 2;
  SmallVector<OpFoldResult> batch = tensor::getMixedSizes(b, loc, w);
  batch.resize(nb);
  // K known only at run time (dW over a dynamic batch): its size read off w.
  OpFoldResult kSize = ShapedType::isDynamic(K) ? tensor::getMixedSize(b, loc, w, nb)
                                                : OpFoldResult(b.getIndexAttr(K));
  int64_t whole = N / lanes, panels = (N + lanes - 1) / lanes;
  Value packed;
  if (whole < panels) {
    SmallVector<OpFoldResult> packedSizes(batch);
    packedSizes.append({b.getIndexAttr(panels), kSize, b.getIndexAttr(lanes)});
    packed = tensor::EmptyOp::create(b, loc, packedSizes, b.getF32Type());
  }
  SmallVector<OpFoldResult> zeros(nb + 2, b.getIndexAttr(0)), ones(nb + 3, b.getIndexAttr(1));
  // w's `width` columns from panel `first`'s, as [.., K, width].
  auto columns = [&](int64_t first, int64_t width) {
    SmallVector<OpFoldResult> offsets(zeros), sizes(batch);
    offsets.back() = b.getIndexAttr(first * lanes);
    sizes.append({kSize, b.getIndexAttr(width)});
    return tensor::ExtractSliceOp::create(b, loc, w, offsets, sizes,
                                          ArrayRef<OpFoldResult>(ones).drop_back());
  };
  auto insert = [&](Value panels, int64_t first) {
    SmallVector<OpFoldResult> offsets(zeros), sizes = tensor::getMixedSizes(b, loc, panels);
    offsets.push_back(b.getIndexAttr(0));
    offsets[nb] = b.getIndexAttr(first);
    packed = tensor::InsertSliceOp::create(b, loc, panels, packed, offsets, sizes, ones);
  };
  if (whole) {
    Value src = whole < panels ? columns(0, whole * lanes) : w;
    SmallVector<int64_t> splitShape(type.getShape().take_front(nb));
    splitShape.append({K, whole, lanes});
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < nb; ++d)
      groups.push_back({d});
    groups.push_back({nb});
    groups.push_back({nb + 1, nb + 2});
    SmallVector<OpFoldResult> splitSizes(batch);
    splitSizes.append({kSize, b.getIndexAttr(whole), b.getIndexAttr(lanes)});
    Value view = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(splitShape, b.getF32Type()), src, groups, splitSizes);
    SmallVector<OpFoldResult> wholeSizes(batch);
    wholeSizes.append({b.getIndexAttr(whole), kSize, b.getIndexAttr(lanes)});
    Value init = tensor::EmptyOp::create(b, loc, wholeSizes, b.getF32Type());
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, nb));
    perm.append({nb + 1, nb, nb + 2});
    auto transpose = linalg::TransposeOp::create(b, loc, view, init, perm);
    // One matrix (a batch-1 1x1 convolution's image): split by its panels,
    // the pixels, as the kernel that wrote it split them (kiln.spread).
    if (llvm::all_of(type.getShape().take_front(nb), [](int64_t d) { return d == 1; }))
      transpose->setAttr(kSpreadAttr, b.getUnitAttr());
    if (whole == panels)
      return transpose.getResult()[0];
    insert(transpose.getResult()[0], 0);
  }
  // The last panel: its N mod P columns, zero-padded to P, as [.., 1, K, P].
  Value rest = columns(whole, N - whole * lanes);
  SmallVector<int64_t> restShape(type.getShape().take_front(nb));
  restShape.append({K, lanes});
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  // A dynamic batch: the padded tensor's leading sizes are w's.
  SmallVector<Value> dynamicBatch;
  for (int64_t d = 0; d < nb; ++d)
    if (type.isDynamicDim(d))
      dynamicBatch.push_back(cast<Value>(batch[d]));
  Value padded = tensor::createPadHighOp(RankedTensorType::get(restShape, b.getF32Type()), rest,
                                         zero, /*nofold=*/false, loc, b, dynamicBatch);
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < nb; ++d)
    groups.push_back({d});
  groups.push_back({nb, nb + 1});
  groups.push_back({nb + 2});
  SmallVector<int64_t> panelShape(type.getShape().take_front(nb));
  panelShape.append({1, K, lanes});
  SmallVector<OpFoldResult> panelSizes(batch);
  panelSizes.append({b.getIndexAttr(1), kSize, b.getIndexAttr(lanes)});
  insert(tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(panelShape, b.getF32Type()),
                                       padded, groups, panelSizes),
         whole);
  return packed;
}

/// `w` [N, K] (B read transposed, at (n, k): a Gemm's transB, a linear
/// layer's weight as a training step's input) as [ceil(N/P), K, P] at run
/// time: [N/P, P, K] (a view), its last two dimensions swapped.
Value packTransposedAtRunTime(OpBuilder &b, Location loc, Value w, int64_t N, int64_t K,
                              int64_t lanes) {
  if (N % lanes) {
    N = (N + lanes - 1) / lanes * lanes;
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    w = tensor::createPadHighOp(RankedTensorType::get({N, K}, b.getF32Type()), w, zero,
                                /*nofold=*/false, loc, b);
  }
  Value view = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({N / lanes, lanes, K}, b.getF32Type()), w,
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{N / lanes, K, lanes},
                                       b.getF32Type());
  return linalg::TransposeOp::create(b, loc, view, init, ArrayRef<int64_t>{0, 2, 1})
      .getResult()[0];
}

/// A product whose B [N, K] is known only at run time and read transposed
/// (C(.., m, n) += A(.., m, k) * B(n, k)), which the vectorizer takes only
/// packed: B packed by a copy kernel first when enough rows of C reuse it.
/// Unpacked, a training step's forward products ran at 50 GFLOP/s (an MLP's
/// 256 x 1024 x 4096 at 45 ms); packed, at the FMA peak.
bool packTransposedWeights(linalg::GenericOp op, int64_t lanes) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2)
    return false;
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->n.size() != 1 || dims->k.size() != 1 || !dims->batch.empty() ||
      dims->m.empty())
    return false;
  Value w = op.getDpsInputs()[1];
  auto type = dyn_cast<RankedTensorType>(w.getType());
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(dims->n[0], ctx), k = getAffineDimExpr(dims->k[0], ctx);
  AffineMap bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap cMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32() ||
      w.getDefiningOp<arith::ConstantOp>() || bMap.getNumResults() != 2 ||
      bMap.getResult(0) != n || bMap.getResult(1) != k || cMap.getResults().back() != n)
    return false;
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return false;
  int64_t N = type.getDimSize(0), K = type.getDimSize(1);
  if (N <= lanes || (N % lanes && N < 4 * lanes))
    return false;
  // Rows of C known only at run time (a training step's dynamic batch)
  // count as enough: unpacked, the product runs at a quarter of the FMA
  // peak, and the copy pays for itself from about 30 rows.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = 1;
  for (unsigned d : dims->m)
    rows *= ShapedType::isDynamic(ranges[d]) ? kMinRuntimeRows : ranges[d];
  if (rows < kMinRuntimeRows)
    return false;
  OpBuilder b(op);
  Value weights = packTransposedAtRunTime(b, op.getLoc(), w, N, K, lanes);
  replaceInput(op, 1, weights, {n.floorDiv(lanes), k, n % lanes});
  return true;
}

/// A vector-matrix product out(n) += x(k) * W(k, n) (a classifier at
/// batch 1, its unit row folded away) with W a constant [K, N]: W packed
/// as a row matmul's would be, which kiln-vectorize-matmul takes as one.
/// Row-major, each k step of a 64-column chunk read 256 bytes of another
/// row, 4 KB apart: MobileNetV3's 960 x 1280 and 1280 x 1000 classifier
/// layers streamed their weights at 16 GB/s on 2 Zen 2 cores, 0.56 ms of 8
/// (onnxruntime 0.37).
bool packVecmatWeights(linalg::GenericOp op, int64_t lanes, llvm::DenseMap<Value, Value> &packed) {
  std::optional<Vecmat> vm = matchVecmat(op);
  if (!vm || vm->packed || !op.hasPureTensorSemantics())
    return false;
  Value w = op.getDpsInputs()[1];
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  if (!constant)
    return false;
  auto type = cast<RankedTensorType>(w.getType());
  int64_t K = type.getDimSize(0), N = type.getDimSize(1);
  if (N <= lanes || (N % lanes && N < 4 * lanes))
    return false;
  ArrayRef<char> raw = constantData(constant.getValue());
  if (raw.size() != size_t(K * N) * sizeof(float))
    return false;
  Value &copy = packed[w];
  if (!copy) {
    OpBuilder atConstant(constant);
    copy = packConstant(atConstant, constant, raw, K, N, lanes);
  }
  MLIRContext *ctx = op.getContext();
  AffineExpr k = getAffineDimExpr(vm->k, ctx), n = getAffineDimExpr(vm->n, ctx);
  replaceInput(op, 1, copy, {n.floorDiv(lanes), k, n % lanes});
  return true;
}

/// Packs `op`'s B when it qualifies; true when it did. A constant read by
/// several products (an unrolled RNN's R at every step, tied weights) is
/// packed once: `packed` holds each constant's packed copy.
bool packWeights(linalg::GenericOp op, int64_t lanes, int64_t columnBlockBytes,
                 llvm::DenseMap<Value, Value> &packed) {
  std::optional<RowMatmul> mm = matchRowMatmul(op);
  if (!mm || mm->packed)
    return false;
  Value w = op.getDpsInputs()[1];
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(w.getType());
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(mm->n, ctx), k = getAffineDimExpr(mm->k, ctx);
  AffineMap bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  // B is [K, N], or [.., K, N] read at (.., k, n) with its leading loops
  // C's outer ones (a 1x1 convolution's image per batch element), packed
  // only at run time.
  if (!type || type.getRank() < 2 || bMap.getNumResults() != (unsigned)type.getRank() ||
      bMap.getResult(type.getRank() - 2) != k || bMap.getResult(type.getRank() - 1) != n)
    return false;
  int64_t nb = type.getRank() - 2;
  for (AffineExpr e : bMap.getResults().take_front(nb)) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || !llvm::is_contained(mm->outer, d.getPosition()))
      return false;
  }
  int64_t K = type.getDimSize(nb), N = type.getDimSize(nb + 1);
  // A K known only at run time: packed at run time, in whole panels.
  if ((ShapedType::isDynamic(K) && (constant || nb || N % lanes)) || ShapedType::isDynamic(N) ||
      (nb && constant))
    return false;
  // A last panel part empty (a 14x14 image's 196 pixels as columns) is
  // zero-padded; the products read only its first N mod P columns.
  // ResNet-50's 1x1 convolutions at 14x14 and 7x7: 1.0 -> 0.75-0.85 ms.
  if (N <= lanes || (N % lanes && N < 4 * lanes)) // padding past a quarter of the panels
    return false;
  int64_t panels = (N + lanes - 1) / lanes;
  ArrayRef<char> raw = constant ? constantData(constant.getValue()) : ArrayRef<char>();
  auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
  OpBuilder b(op);
  Value weights;
  if (constant && (splat || !raw.empty())) {
    Value &copy = packed[w];
    if (!copy) {
      // Beside the constant, which dominates every product reading it.
      OpBuilder atConstant(constant);
      if (splat) // every element the same: the same value in the packed shape
        copy = arith::ConstantOp::create(
            atConstant, constant.getLoc(),
            splat.resizeSplat(RankedTensorType::get({panels, K, lanes}, b.getF32Type())));
      else if (raw.size() == size_t(K * N) * sizeof(float))
        copy = packConstant(atConstant, constant, raw, K, N, lanes);
      else
        return false;
    }
    weights = copy;
  } else {
    // Known only at run time (a training step's weights, its gradients'
    // operands): the copy reads and writes B once; worth it when enough
    // rows reuse it (at 16 rows the copy would cost about as much as the
    // time it saves).
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    // Rows known only at run time: a 1x1 convolution's images count as one
    // each; a plain product's (a training step's dynamic batch, whose dX =
    // dY W reads the weights once per row) as enough. Unpacked, a dynamic
    // MLP step's dX ran at a third of the packed speed (its step 90 -> 68 ms).
    auto extent = [&](unsigned d) {
      return ShapedType::isDynamic(ranges[d]) ? (nb ? 1 : kMinRuntimeRows) : ranges[d];
    };
    // Rows that read the same B: not those of another image.
    int64_t rows = extent(mm->rows);
    for (unsigned d : mm->outer)
      if (!bMap.isFunctionOfDim(d))
        rows *= extent(d);
    if (rows < kMinRuntimeRows)
      return false;
    // A 1x1 convolution's image, packed per image, is a copy as big as
    // the image: worth it for the expansions (rows 4x the depth: ResNet-50's
    // 64 -> 256 channels at 56x56 and batch 8, 8.1 -> 0.55 + 5.1 ms, its
    // 128 -> 512 at 28x28 5.1 -> 0.25 + 4.2), not for the reductions (256
    // -> 64: 4.9 -> 2.4 + 4.7 ms), whose rows read each image's column
    // panel fewer times. But for those of pixels that are not whole
    // vectors (14x14, 7x7), whose rows unpacked are read at every
    // alignment with a masked last vector: ResNet-50 at batch 8 on 2 Zen 2
    // cores, 1024 -> 256 at 14x14 6.96 -> 0.47 + 4.91 ms, 2048 -> 512 at
    // 7x7 6.17 -> 0.28 + 5.23 (at 28x28, whole vectors, 5.0 -> 1.1 + 5.3).
    // Nor for images past kernel formation's column blocks, whose tiles
    // each pack their own panel into a stack buffer, no pass of its own
    // (when two vectors' panel fits it; a wider K would be packed by a
    // pass, the copy that did not pay): ResNet-50 at batch 8 on 2 Zen 2
    // cores, the 256 -> 64 and 256 -> 128 reductions at 56x56 6.7-7.0 ->
    // 5.3-5.5 and 12.3 -> 9.9 ms.
    // (With images, K is static: a dynamic one returned above.)
    bool columnBlocked = nb && columnBlockBytes > 0 && K * N * 4 > columnBlockBytes &&
                         K * 2 * lanes * 4 <= kMaxTilePanelBytes;
    if (nb && rows < 4 * K && N % lanes == 0 && !columnBlocked)
      return false;
    weights = packAtRunTime(b, op.getLoc(), w, K, N, lanes);
  }
  SmallVector<AffineExpr> packedAt(bMap.getResults().take_front(nb));
  packedAt.append({n.floorDiv(lanes), k, n % lanes});
  replaceInput(op, 1, weights, packedAt);
  return true;
}

/// A product's A [.., M, K], read at (.., rows, k) with leading batch loops
/// of B's (Winograd's transform points), when it is an f32 constant
/// (perhaps a [F, C, 1, 1] convolution weight collapsed to [F, C]): the
/// constant, and its bytes unless it is a splat.
struct ConstantRows {
  arith::ConstantOp constant;
  SplatElementsAttr splat;
  ArrayRef<char> raw;
  SmallVector<int64_t> batch; // A's leading dimensions
  int64_t M = 0, K = 0;
};
std::optional<ConstantRows> constantRows(linalg::GenericOp op, const RowMatmul &mm) {
  if (mm.int8 || !op.hasPureTensorSemantics())
    return std::nullopt;
  Value a = op.getDpsInputs()[0];
  auto type = dyn_cast<RankedTensorType>(a.getType());
  if (!type || type.getRank() < 2 || !type.hasStaticShape() || !type.getElementType().isF32())
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineMap aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  int64_t nb = type.getRank() - 2;
  if (aMap.getResult(nb) != getAffineDimExpr(mm.rows, ctx) ||
      aMap.getResult(nb + 1) != getAffineDimExpr(mm.k, ctx))
    return std::nullopt;
  ConstantRows c;
  c.batch.assign(type.getShape().begin(), type.getShape().begin() + nb);
  c.M = type.getDimSize(nb);
  c.K = type.getDimSize(nb + 1);
  Value source = a;
  if (auto collapse = a.getDefiningOp<tensor::CollapseShapeOp>()) // [F, C, 1, 1] as [F, C]
    source = collapse.getSrc();
  c.constant = source.getDefiningOp<arith::ConstantOp>();
  if (!c.constant)
    return std::nullopt;
  c.raw = constantData(c.constant.getValue());
  c.splat = dyn_cast<SplatElementsAttr>(c.constant.getValue());
  if (!c.splat && c.raw.size() != size_t(type.getNumElements()) * sizeof(float))
    return std::nullopt;
  return c;
}

/// A product with packed B whose A [.., M, K] is a constant (a 1x1
/// convolution's weights, C's rows; Winograd's transformed filters per
/// point) reads A packed too, [.., M/R, K, R] at (.., m floordiv R, k, m
/// mod R): a register block's R rows side by side at each k, one stream
/// front to back. Row-major, a block read R rows K floats apart, R
/// streams of one page each (K = 1024), and from memory (a model's
/// weights pass through L3 once a run) the prefetchers did not keep up:
/// twelve 1024 -> 256 -> 1024 1x1 convolution pairs at 14x14, 24 MB of
/// weights, on one Zen 2 core 27.5 ms against onnxruntime's 25.4, with
/// the weights in cache level with it. Kernel formation tiles the rows in
/// power-of-two blocks (matmulRowBlock; here at least R = 4, M/R >= 2
/// and the register tile 4 rows or more), so no tile starts inside a
/// panel and runs past it: its slice of A, and the tile's (i floordiv R,
/// k, i mod R) from its first row, address the rows it computes.
bool packWeightRows(linalg::GenericOp op, unsigned vectorBits,
                    llvm::DenseMap<Value, Value> &packed) {
  std::optional<RowMatmul> mm = matchRowMatmul(op);
  if (!mm || !mm->packed || mm->packedRows)
    return false;
  std::optional<ConstantRows> c = constantRows(op, *mm);
  int64_t N = op.getStaticLoopRanges()[mm->n];
  if (!c || c->M % kPackedRows || c->M < 2 * kPackedRows || ShapedType::isDynamic(N) ||
      chooseMatmulRegisterTile(c->M, N, vectorBits, c->K).rows < kPackedRows)
    return false;
  Value a = op.getDpsInputs()[0];
  Value &copy = packed[a];
  if (!copy) {
    int64_t M = c->M, K = c->K, R = kPackedRows;
    OpBuilder b(c->constant->getBlock(), std::next(c->constant->getIterator()));
    SmallVector<int64_t> shape(c->batch);
    shape.append({M / R, K, R});
    auto packedType = RankedTensorType::get(shape, b.getF32Type());
    TypedAttr value;
    if (c->splat) {
      value = c->splat.resizeSplat(packedType);
    } else {
      std::vector<char> bytes(c->raw.size());
      auto *from = reinterpret_cast<const float *>(c->raw.data());
      auto *to = reinterpret_cast<float *>(bytes.data());
      for (int64_t i = 0; i < packedType.getNumElements() / (M * K); ++i, from += M * K, to += M * K)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t k = 0; k < K; ++k)
            to[(m / R * K + k) * R + m % R] = from[m * K + k];
      value = cast<TypedAttr>(bytesAttr(packedType, "packed_rows", bytes));
    }
    copy = arith::ConstantOp::create(b, c->constant.getLoc(), value);
  }
  MLIRContext *ctx = op.getContext();
  AffineExpr m = getAffineDimExpr(mm->rows, ctx), k = getAffineDimExpr(mm->k, ctx);
  SmallVector<AffineExpr> at(
      op.getMatchingIndexingMap(op.getDpsInputOperand(0)).getResults().drop_back(2));
  at.append({m.floorDiv(kPackedRows), k, m % kPackedRows});
  replaceInput(op, 0, copy, at);
  return true;
}

/// A product's constant A [M, K] (a 1x1 convolution's weights, C's rows)
/// that packWeightRows leaves (B unpacked) whose rows are a multiple of
/// `aliasBytes` apart (4 KiB: K = 1024 or 2048 floats) is stored with 16
/// more floats a row and read through its [M, K] slice. Rows 4 KiB apart
/// all fall in one set of the 8-way L1: the broadcasts of a 12-row block
/// (the narrow last chunk's) evicted each other at every k.
bool padWeightRows(linalg::GenericOp op, int64_t aliasBytes,
                   llvm::DenseMap<Value, Value> &padded) {
  std::optional<RowMatmul> mm = matchRowMatmul(op);
  std::optional<ConstantRows> c = mm ? constantRows(op, *mm) : std::nullopt;
  if (!c || !c->batch.empty() || aliasBytes <= 0 || (c->K * 4) % aliasBytes || c->M < 8)
    return false;
  Value a = op.getDpsInputs()[0];
  Value &slice = padded[a];
  if (!slice) {
    int64_t M = c->M, K = c->K, stride = K + 16;
    OpBuilder b(c->constant->getBlock(), std::next(c->constant->getIterator()));
    Location loc = c->constant.getLoc();
    auto paddedType = RankedTensorType::get({M, stride}, b.getF32Type());
    TypedAttr value;
    if (c->splat) {
      value = c->splat.resizeSplat(paddedType);
    } else {
      std::vector<char> bytes(M * stride * sizeof(float), 0);
      for (int64_t m = 0; m < M; ++m)
        std::memcpy(&bytes[m * stride * sizeof(float)], &c->raw[m * K * sizeof(float)],
                    K * sizeof(float));
      value = cast<TypedAttr>(bytesAttr(paddedType, "padded_rows", bytes));
    }
    Value rows = arith::ConstantOp::create(b, loc, value);
    slice = tensor::ExtractSliceOp::create(
        b, loc, rows, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(M), b.getIndexAttr(K)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  op.getDpsInputOperand(0)->set(slice);
  return true;
}

struct KilnPackMatmulWeightsPass final
    : impl::KilnPackMatmulWeightsBase<KilnPackMatmulWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (vectorBits < 64)
      return;
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    llvm::DenseMap<Value, Value> packed, rowsPacked, padded;
    for (linalg::GenericOp op : ops)
      if (!(int8 && packInt8Weights(op, vectorBits / 32, int8Group(vectorBits, int8Saturate), packed)) &&
          !packWeights(op, vectorBits / 32, columnBlockBytes, packed) &&
          !packVecmatWeights(op, vectorBits / 32, packed))
        (void)packTransposedWeights(op, vectorBits / 32);
    // Then A, by what became of B (the ops above were replaced).
    ops.clear();
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    for (linalg::GenericOp op : ops)
      if (!packWeightRows(op, vectorBits, rowsPacked))
        (void)padWeightRows(op, rowAliasBytes, padded);
  }
};

} // namespace

void replaceInput(linalg::GenericOp op, unsigned i, Value v, ArrayRef<AffineExpr> at) {
  OpBuilder b(op);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps[i] = AffineMap::get(op.getNumLoops(), 0, at, op.getContext());
  SmallVector<Value> inputs(op.getDpsInputs());
  inputs[i] = v;
  auto repl = linalg::GenericOp::create(b, op.getLoc(), op->getResultTypes(), inputs,
                                        op.getDpsInits(), maps, op.getIteratorTypesArray());
  repl.getRegion().takeBody(op.getRegion());
  repl->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op->replaceAllUsesWith(repl->getResults());
  op.erase();
}

} // namespace kiln
