//===- TensorCorePlan.cpp - which matmuls go to tensor cores, in what tiles ===//
//
// A matmul qualifies when its body is a multiply-add (16-bit products may be
// widened into an f32 C), its buffers static with identity layouts, and
// its M, N, K tile: M by 16 to 64 (128 for big products), N by 8 to 64
// (128), K by one k step (16 for f32, 32 for 16-bit data). Convolutions
// (NCHW, f32, f16 or bf16) qualify as implicit GEMMs per image.
//
//===----------------------------------------------------------------------===//

#include "TensorCorePlan.h"
#include "KernelFactory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

using namespace mlir;

namespace kiln {

namespace {
/// A tuning setting (a pass option, for measuring) that does not fit a
/// matmul here: said once per setting and value, on stderr.
void ignored(const std::string &setting, const char *why) {
  static std::mutex lock;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> guard(lock);
  if (said.insert(setting).second)
    std::fprintf(stderr, "kiln: warning: gpu tuning %s ignored for a matmul here (%s)\n",
                 setting.c_str(), why);
}

/// The element types the kernel takes.
bool isMmaElement(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

/// The largest of `options` dividing `n`, or 0.
int64_t largestDividing(int64_t n, std::initializer_list<int64_t> options) {
  for (int64_t o : options)
    if (n % o == 0)
      return o;
  return 0;
}

/// The largest of `options` dividing `n`; else, for a tile that may
/// overhang, the largest that wastes at most a third of its tiles' work
/// (the smallest, when none does).
int64_t tileFor(int64_t n, std::initializer_list<int64_t> options, bool overhang) {
  if (int64_t o = largestDividing(n, options); o || !overhang)
    return o;
  for (int64_t o : options)
    if ((n + o - 1) / o * o * 3 <= n * 4)
      return o;
  return *std::prev(options.end());
}

/// Picks block and warp tiles for `p`'s M, N, K; false when none fits.
bool tile(Plan &p, const GpuTuning &tuning) {
  // A convolution's K may end inside a k step (read as zeros past K).
  if ((p.form != Plan::Conv && !p.dynK && p.K % p.tileK()) || p.K == 0 || p.batch > 65535)
    return false;
  // Big products: 128x128 block tiles of four 64x64 warp tiles, three
  // stages (57 KiB of dynamic shared memory, rows padded), the upstream
  // recipe's shape, when that still gives every SM of a big GPU (132 on an
  // H100) two blocks; 16-bit C keeps 64x64 (its f32 staging tile would
  // need more).
  if (!p.narrows() && p.form != Plan::Conv && !p.dynamic() && p.M % 128 == 0 && p.N % 128 == 0 &&
      p.K >= 4 * p.tileK() && p.M / 128 <= 65535 && (p.M / 128) * (p.N / 128) * p.batch >= 256) {
    p.tileM = p.tileN = 128;
    p.warpM = p.warpN = 64;
    p.stages = 3;
    // tuning.mma = <k>x<stages> (32x4, 64x3...) overrides the k step and
    // the ring's depth, for measuring variants against each other on a
    // GPU (scripts/gpu-check.sh packs some); ignored when the tiles would
    // not fit 227 KiB of shared memory or K does not divide.
    if (!tuning.mma.empty()) {
      long k = 0, s = 0;
      int64_t eltBytes = p.halves() ? 2 : 4;
      if (std::sscanf(tuning.mma.c_str(), "%ldx%ld", &k, &s) == 2 && k >= p.mmaK() && k <= 64 &&
          k % p.mmaK() == 0 && s >= 2 && s <= 6 && p.K % k == 0 && p.K >= 2 * k &&
          s * (128 * (k + 16 / eltBytes) + k * (128 + (p.halves() ? 16 : 32) / eltBytes)) *
                  eltBytes <= 227 * 1024) {
        p.kTile = k;
        p.stages = s;
      } else {
        ignored("mma=" + tuning.mma,
                "wants <k>x<stages>: k a multiple of the mma's k up to 64 dividing K, 2-6 "
                "stages, all within 227 KiB of shared memory");
      }
    }
    return true;
  }
  // Tiles may overhang M and N (a ViT's 197 tokens, a 14x14 image) when
  // there is a whole smallest tile to fill; a matmul's B rows (N long) must
  // stay in 16-byte pieces. Smaller products are left to the matvec and
  // direct kernels.
  bool overhangM = p.M >= 16,
       overhangN = p.N >= 8 && (p.form == Plan::Conv || p.gatheredB() || p.N % p.vec() == 0);
  // A run-time size's tile is the widest its largest fills (what divides
  // the largest says nothing of the run's).
  auto widest = [](int64_t n, std::initializer_list<int64_t> options) {
    for (int64_t o : options)
      if (o <= n)
        return o;
    return *std::prev(options.end());
  };
  p.tileM = p.dynM ? widest(p.M, {64, 32, 16}) : tileFor(p.M, {64, 32, 16}, overhangM);
  p.tileN = p.dynN ? widest(p.N, {64, 32, 16, 8}) : tileFor(p.N, {64, 32, 16, 8}, overhangN);
  if (!p.tileM || !p.tileN)
    return false;
  // Each thread copies whole 16-byte pieces of both tiles, the same number
  // each: a narrow B tile (8 columns) may need fewer warps, so fewer rows.
  for (; p.tileM >= 16; p.tileM /= 2) {
    p.warpM = std::min<int64_t>(32, p.tileM);
    p.warpN = std::min<int64_t>(32, p.tileN);
    int64_t copiesA = p.tileM * p.tileK() / p.vec(), copiesB = p.tileK() * p.tileN / p.vec();
    if (copiesA % p.threads() == 0 && copiesB % p.threads() == 0)
      return (p.M + p.tileM - 1) / p.tileM <= 65535;
  }
  return false;
}

} // namespace

/// True when `op`'s body is `out + a * b` (floats), in either operand order,
/// or `out + extf(a) * extf(b)` (16-bit operands, f32 out).
bool isMulAdd(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  size_t extensions = 0;
  for (Operation &inner : body->without_terminator())
    if (auto ext = dyn_cast<arith::ExtFOp>(inner)) {
      if (!isa<BlockArgument>(ext.getIn()) || ext->getBlock() != body)
        return false;
      ++extensions;
    }
  if (!add || (extensions != 0 && extensions != 2) ||
      body->getOperations().size() != 3 + extensions)
    return false;
  auto widened = [](Value v) -> Value {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return ext ? ext.getIn() : v;
  };
  Value out = body->getArgument(2);
  Value other = add.getLhs() == out ? add.getRhs() : add.getRhs() == out ? add.getLhs() : Value();
  auto mul = other ? other.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  Value a = body->getArgument(0), b = body->getArgument(1);
  Value l = widened(mul.getLhs()), r = widened(mul.getRhs());
  return (l == a && r == b) || (l == b && r == a);
}

MatmulLoops::MatmulLoops(MLIRContext *ctx, unsigned loops) : ctx(ctx), loops(loops) {
  for (unsigned d = 0; d + 3 < loops; ++d)
    lead.push_back(getAffineDimExpr(d, ctx));
  m = getAffineDimExpr(loops - 3, ctx);
  n = getAffineDimExpr(loops - 2, ctx);
  k = getAffineDimExpr(loops - 1, ctx);
}

AffineMap MatmulLoops::with(ArrayRef<AffineExpr> front, AffineExpr x, AffineExpr y) const {
  SmallVector<AffineExpr> e(front);
  e.append({x, y});
  return AffineMap::get(loops, 0, e, ctx);
}

/// A convolution as an implicit GEMM per image: Y[n] (F x OH*OW) = W (F x
/// C*KH*KW) * the im2col of X[n], gathered into shared memory. X is the
/// padded input (or, with an ImplicitPad, the image it was padded from).
/// Untiled.
static std::optional<Plan> convShape(linalg::Conv2DNchwFchwOp conv) {
  if (!conv.hasPureBufferSemantics())
    return std::nullopt;
  // X and W of one type; Y f32 (Kiln's lowering sums a 16-bit convolution
  // in f32) or of their type (narrowed from the kernel's f32 accumulators).
  Type elt = cast<MemRefType>(conv.getInputs()[0].getType()).getElementType();
  Type cElt = cast<MemRefType>(conv.getOutputs()[0].getType()).getElementType();
  if (!isMmaElement(elt) || (cElt != elt && !cElt.isF32()))
    return std::nullopt;
  for (Value v : conv->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    Type want = v == conv.getOutputs()[0] ? cElt : elt;
    if (!t || t.getElementType() != want || !t.hasStaticShape() || !t.getLayout().isIdentity())
      return std::nullopt;
  }
  auto x = cast<MemRefType>(conv.getInputs()[0].getType()).getShape();
  auto w = cast<MemRefType>(conv.getInputs()[1].getType()).getShape();
  auto y = cast<MemRefType>(conv.getOutputs()[0].getType()).getShape();
  Plan p;
  p.form = Plan::Conv;
  p.elt = elt;
  p.cElt = cElt;
  p.batch = y[0];
  p.M = w[0];
  p.N = y[2] * y[3];
  p.K = w[1] * w[2] * w[3];
  p.kh = w[2];
  p.kw = w[3];
  p.ow = y[3];
  auto strides = conv.getStrides().getValues<int64_t>();
  auto dilations = conv.getDilations().getValues<int64_t>();
  p.strideH = strides[0];
  p.strideW = strides[1];
  p.dilH = dilations[0];
  p.dilW = dilations[1];
  if (x[1] != w[1] || (y[2] - 1) * p.strideH + (p.kh - 1) * p.dilH >= x[2] ||
      (y[3] - 1) * p.strideW + (p.kw - 1) * p.dilW >= x[3])
    return std::nullopt;
  return p;
}

static std::optional<Plan> planConv(linalg::Conv2DNchwFchwOp conv, const GpuTuning &tuning) {
  std::optional<Plan> p = convShape(conv);
  if (!p || !tile(*p, tuning))
    return std::nullopt;
  return p;
}

/// A 1x1 convolution of stride 1 over an unpadded image is a matmul per
/// image with shared A: Y[n] (F x H*W) = W (F x C) * X[n] (C x H*W), X[n]
/// as it lies (no im2col).
static std::optional<Plan> pointwiseConvShape(linalg::LinalgOp op) {
  auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation());
  if (!conv)
    return std::nullopt;
  std::optional<Plan> p = convShape(conv);
  auto x = cast<MemRefType>(conv.getInputs()[0].getType()).getShape();
  auto y = cast<MemRefType>(conv.getOutputs()[0].getType()).getShape();
  if (!p || p->kh != 1 || p->kw != 1 || p->strideH != 1 || p->strideW != 1 || x[2] != y[2] ||
      x[3] != y[3])
    return std::nullopt;
  return p;
}

/// `op`'s form and sizes when it is a matmul on tensor-core types, untiled.
/// With `inputMax`, its loops may be run-time sizes with a largest (a
/// plain or batched matmul's), which the plan holds.
static std::optional<Plan> matmulShape(linalg::LinalgOp op, ArrayAttr inputMax = {}) {
  if (!op.hasPureBufferSemantics() || op->getNumOperands() != 3 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || !isMulAdd(op))
    return std::nullopt;
  Type elt = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  Type cElt = cast<ShapedType>(op->getOperand(2).getType()).getElementType();
  // Widened products (extf in the body) only from 16-bit operands into f32.
  bool widens = llvm::any_of(op.getBlock()->getOperations(),
                             [](Operation &o) { return isa<arith::ExtFOp>(o); });
  if (widens != (cElt != elt) || (widens && !(cElt.isF32() && !elt.isF32())))
    return std::nullopt;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    Type want = v == op->getOperand(2) ? cElt : elt;
    if (!t || t.getElementType() != want || !isMmaElement(elt) ||
        (!inputMax && !t.hasStaticShape()) || !t.getLayout().isIdentity())
      return std::nullopt;
  }
  MLIRContext *ctx = op.getContext();
  unsigned loops = op.getNumLoops();
  if (loops < 3)
    return std::nullopt;
  // Loops (lead..., m, n, k): every A, B and C index in order.
  MatmulLoops names(ctx, loops);
  ArrayRef<AffineExpr> lead = names.lead;
  AffineExpr m = names.m, n = names.n, k = names.k;
  auto with = [&](ArrayRef<AffineExpr> front, AffineExpr x, AffineExpr y) {
    return names.with(front, x, y);
  };
  auto maps = op.getIndexingMapsArray();
  Plan p;
  p.elt = elt;
  p.cElt = cElt;
  SmallVector<int64_t> r = op.getStaticLoopRanges();
  SmallVector<bool> dynamicLoop(loops, false);
  for (unsigned d = 0; d < loops; ++d)
    if (ShapedType::isDynamic(r[d])) {
      std::optional<int64_t> largest = largestLoop(op, d, inputMax);
      if (!largest || *largest < 1)
        return std::nullopt;
      r[d] = *largest;
      dynamicLoop[d] = true;
    }
  if (maps[0] != with(lead, m, k) || maps[2] != with(lead, m, n))
    return std::nullopt;
  if (maps[1] == with(lead, k, n)) {
    // Several batch loops (batch, heads) fold into one.
    p.form = lead.empty() ? Plan::Plain : Plan::Batched;
    for (unsigned d = 0; d < lead.size(); ++d) {
      p.batch *= r[d];
      p.dynBatch |= dynamicLoop[d];
    }
    p.M = r[loops - 3];
  } else if (maps[1] == with({}, k, n) && !llvm::is_contained(dynamicLoop, true)) {
    // A and C are contiguous: their leading indices fold into M.
    p.form = Plan::SharedB;
    p.M = 1;
    for (unsigned d = 0; d + 2 < loops; ++d)
      p.M *= r[d];
  } else {
    return std::nullopt;
  }
  p.N = r[loops - 2];
  p.K = r[loops - 1];
  p.dynM = dynamicLoop[loops - 3];
  p.dynN = dynamicLoop[loops - 2];
  p.dynK = dynamicLoop[loops - 1];
  return p;
}

/// The plan for `op` when it is a matmul the kernel handles.
std::optional<Plan> planMatmul(linalg::LinalgOp op, const GpuTuning &tuning) {
  if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation()))
    return planConv(conv, tuning);
  std::optional<Plan> p = matmulShape(op);
  if (!p || !tile(*p, tuning))
    return std::nullopt;
  return p;
}

std::optional<Plan> planDynamicMatmul(linalg::LinalgOp op, ArrayAttr inputMax,
                                      const GpuTuning &tuning) {
  std::optional<Plan> p = inputMax ? matmulShape(op, inputMax) : std::nullopt;
  if (!p || !p->dynamic() || !tile(*p, tuning))
    return std::nullopt;
  return p;
}

std::optional<Plan> planWarpgroupMatmul(linalg::LinalgOp op, const GpuTuning &tuning) {
  std::optional<Plan> p = matmulShape(op);
  if (!p) {
    // A convolution only when its 128x128 tiles about fill a Hopper GPU
    // (132 SMs) once: fewer (a batch-1 image's deep layers) spread wider
    // as mma.sync's smaller tiles.
    p = pointwiseConvShape(op);
    if (p && (p->M + 127) / 128 * ((p->N + 127) / 128) * p->batch < 128)
      return std::nullopt;
  }
  if (!p)
    return std::nullopt;
  p->warpgroups = true;
  p->tileM = 128;
  p->stages = 4;
  // 128x256 tiles (each warpgroup m64n256, as cuBLAS's big tiles) read
  // less shared memory per product; when there are blocks enough for every
  // SM of a Hopper GPU (132). tuning.tileN (128 or 256) overrides, for
  // measuring one against the other.
  int64_t blocks256 = (p->M + 127) / 128 * (p->N / 256) * p->batch;
  p->tileN = p->N % 256 == 0 && blocks256 >= 132 ? 256 : 128;
  if (tuning.tileN) {
    if (p->N % tuning.tileN == 0)
      p->tileN = tuning.tileN;
    else
      ignored("tile-n=" + std::to_string(tuning.tileN), "wants a width dividing the matmul's N");
  }
  // The tiles may overhang M and N (2464 tokens: 20 tiles of 128 rows) by
  // up to a third of what they cover, as the mma.sync tiles do: rows and
  // columns past the end read as zeros and are not stored. B's rows (N
  // long) stay in 16-byte pieces.
  auto overhangs = [](int64_t n, int64_t t) { return (n + t - 1) / t * t * 3 <= n * 4; };
  if (p->M % 128 && !overhangs(p->M, 128))
    return std::nullopt;
  if (p->N % p->tileN && (p->N % p->vec() || !overhangs(p->N, p->tileN)))
    return std::nullopt;
  // K may end inside the last k tile, in whole 16-byte pieces (zeros
  // past it), with the specialized kernel.
  if (p->K % p->vec() || p->K == 0 || (p->M + 127) / 128 > 65535 || p->batch > 65535)
    return std::nullopt;
  // Tiles come by a loading warpgroup of their own (WarpgroupSpecialized.cpp);
  // tuning.loads = ring keeps the shared ring, for measuring one against
  // the other (whole tiles only).
  p->specialized = tuning.loads != "ring";
  if (!p->specialized && (p->raggedM() || p->raggedN() || p->K % p->tileK()))
    return std::nullopt;
  // tuning.loads = tma: the loading warpgroup copies by TMA (measured
  // against the cp.async one by gpu-check before it becomes the default).
  p->tma = p->specialized && tuning.loads == "tma";
  // tuning.tf32Drain: the f32 kernel's wgmma groups complete one k tile at
  // a time (the old loop, for gpu-check to time against).
  p->tf32Drain = p->specialized && tuning.tf32Drain;
  // tuning.cluster = 2 (with TMA): pairs of blocks along M share B's tiles
  // (TMA multicast); the M tiles must pair up, B's 128-byte column blocks
  // split in two.
  if (tuning.cluster == 2 && p->tma) {
    int64_t mTiles = (p->M + 127) / 128;
    int64_t blocksB = p->tileN * p->elt.getIntOrFloatBitWidth() / 8 / 128;
    if (mTiles % 2 == 0 && blocksB % 2 == 0)
      p->cluster = 2;
  }
  return p;
}

} // namespace kiln
