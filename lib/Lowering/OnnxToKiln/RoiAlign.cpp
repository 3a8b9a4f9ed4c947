//===- RoiAlign.cpp - RoiAlign as bilinear samples per output -------------===//
//
// Each output element [roi, c, ph, pw] averages (or takes the largest of)
// a grid of bilinear samples of its bin of the region of interest, as
// ONNX's reference does (Mask R-CNN's RoIAlign): the grid is
// sampling_ratio square, or ceil(bin size) per axis when it is 0, so its
// size is read from the boxes at run time (loops inside the element's
// computation). Samples outside [-1, size] count as 0; a box whose batch
// index names no image is NaN.
//
//===----------------------------------------------------------------------===//

#include "RuntimeShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

struct RoiAlignSpec {
  Value x, rois, batchIndices; // [N, C, H, W], [R, 4], [R]
  int64_t outH, outW, samplingRatio;
  double scale;
  bool halfPixel, max;
};

/// One output element: its bin's samples, averaged or the largest.
Value alignElement(OpBuilder &b, Location l, const RoiAlignSpec &s, ValueRange idx) {
  using P = arith::CmpFPredicate;
  F64 f{b, l};
  IndexMath m{b, l};
  Value r = idx[0], c = idx[1];
  auto roi = [&](int64_t k) {
    Value v = tensor::ExtractOp::create(b, l, s.rois, ValueRange{r, m.c(k)});
    return v.getType().isF64() ? v : arith::ExtFOp::create(b, l, b.getF64Type(), v).getResult();
  };
  // A batch index outside the images reads image 0 and yields NaN: no
  // read past the input, and no plausible number for a wrong box.
  Value given = arith::IndexCastOp::create(
      b, l, b.getIndexType(), tensor::ExtractOp::create(b, l, s.batchIndices, ValueRange{r}));
  Value inRange = m.both(m.cmp(arith::CmpIPredicate::sge, given, m.c(0)),
                         m.cmp(arith::CmpIPredicate::slt, given,
                               tensor::DimOp::create(b, l, s.x, 0)));
  Value batch = m.sel(inRange, given, m.c(0));
  Value offset = f.c(s.halfPixel ? 0.5 : 0.0), scale = f.c(s.scale);
  Value startW = f.sub(f.mul(roi(0), scale), offset), startH = f.sub(f.mul(roi(1), scale), offset);
  Value width = f.sub(f.sub(f.mul(roi(2), scale), offset), startW);
  Value height = f.sub(f.sub(f.mul(roi(3), scale), offset), startH);
  if (!s.halfPixel) { // legacy: at least one pixel
    width = arith::MaximumFOp::create(b, l, width, f.c(1));
    height = arith::MaximumFOp::create(b, l, height, f.c(1));
  }
  Value binH = f.div(height, f.c(s.outH)), binW = f.div(width, f.c(s.outW));
  auto grid = [&](Value bin) -> Value {
    if (s.samplingRatio > 0)
      return m.c(s.samplingRatio);
    Value n = math::CeilOp::create(b, l, bin);
    return arith::IndexCastOp::create(b, l, b.getIndexType(), f.toI64(n));
  };
  Value gridH = grid(binH), gridW = grid(binW);
  auto toF = [&](Value i) { return f.fromI64(arith::IndexCastOp::create(b, l, b.getI64Type(), i)); };
  auto dims = cast<RankedTensorType>(s.x.getType());
  Value heightIn = toF(tensor::DimOp::create(b, l, s.x, 2)),
        widthIn = toF(tensor::DimOp::create(b, l, s.x, 3));
  Value y0 = f.add(startH, f.mul(toF(idx[2]), binH)), x0 = f.add(startW, f.mul(toF(idx[3]), binW));
  Value stepH = f.div(binH, toF(gridH)), stepW = f.div(binW, toF(gridW));
  // Bilinear weights and clamped corners along one axis for coordinate v.
  auto axis = [&](OpBuilder &ob, Location ol, Value v, Value size) {
    F64 af{ob, ol};
    v = arith::MaximumFOp::create(ob, ol, v, af.c(0));
    Value low = af.floor(v), last = af.sub(size, af.c(1));
    Value atEnd = af.cmp(P::OGE, low, last);
    low = af.sel(atEnd, last, low);
    Value high = af.sel(atEnd, last, af.add(low, af.c(1)));
    v = af.sel(atEnd, low, v);
    Value frac = af.sub(v, low);
    auto idx = [&](Value i) {
      return arith::IndexCastOp::create(ob, ol, ob.getIndexType(), af.toI64(i)).getResult();
    };
    return std::make_tuple(idx(low), idx(high), af.sub(af.c(1), frac), frac);
  };
  Value init = f.c(s.max ? -std::numeric_limits<double>::infinity() : 0.0);
  auto rows = scf::ForOp::create(
      b, l, m.c(0), gridH, m.c(1), ValueRange{init},
      [&](OpBuilder &yb, Location yl, Value iy, ValueRange yacc) {
        F64 yf{yb, yl};
        Value y = yf.add(y0, yf.mul(yf.add(toF(iy), yf.c(0.5)), stepH));
        auto cols = scf::ForOp::create(
            yb, yl, IndexMath{yb, yl}.c(0), gridW, IndexMath{yb, yl}.c(1), yacc,
            [&](OpBuilder &xb, Location xl, Value ix, ValueRange xacc) {
              F64 xf{xb, xl};
              Value x = xf.add(x0, xf.mul(xf.add(toF(ix), xf.c(0.5)), stepW));
              Value outside = arith::OrIOp::create(
                  xb, xl,
                  arith::OrIOp::create(xb, xl, xf.cmp(P::OLT, y, xf.c(-1)),
                                       xf.cmp(P::OGT, y, heightIn)),
                  arith::OrIOp::create(xb, xl, xf.cmp(P::OLT, x, xf.c(-1)),
                                       xf.cmp(P::OGT, x, widthIn)));
              auto [yLow, yHigh, hy, ly] = axis(xb, xl, y, heightIn);
              auto [xLow, xHigh, hx, lx] = axis(xb, xl, x, widthIn);
              auto at = [&](Value yy, Value xx) {
                Value v = tensor::ExtractOp::create(xb, xl, s.x, ValueRange{batch, c, yy, xx});
                return v.getType().isF64() ? v
                                           : arith::ExtFOp::create(xb, xl, xb.getF64Type(), v)
                                                 .getResult();
              };
              Value terms[] = {xf.mul(xf.mul(hy, hx), at(yLow, xLow)),
                               xf.mul(xf.mul(hy, lx), at(yLow, xHigh)),
                               xf.mul(xf.mul(ly, hx), at(yHigh, xLow)),
                               xf.mul(xf.mul(ly, lx), at(yHigh, xHigh))};
              Value sample;
              if (s.max) {
                sample = terms[0];
                for (Value t : ArrayRef<Value>(terms).drop_front())
                  sample = arith::MaximumFOp::create(xb, xl, sample, t);
                sample = xf.sel(outside, xf.c(0), sample);
                sample = arith::MaximumFOp::create(xb, xl, xacc[0], sample);
              } else {
                sample = xf.add(xf.add(terms[0], terms[1]), xf.add(terms[2], terms[3]));
                sample = xf.add(xacc[0], xf.sel(outside, xf.c(0), sample));
              }
              scf::YieldOp::create(xb, xl, sample);
            });
        scf::YieldOp::create(yb, yl, cols.getResults());
      });
  Value out = rows.getResult(0);
  if (!s.max) {
    Value count = toF(arith::MaxSIOp::create(b, l, arith::MulIOp::create(b, l, gridH, gridW), m.c(1)));
    out = f.div(out, count);
  } else {
    out = f.sel(f.cmp(P::OEQ, out, init), f.c(0), out); // an empty grid
  }
  out = f.sel(inRange, out, f.c(std::numeric_limits<double>::quiet_NaN()));
  Type et = dims.getElementType();
  return et.isF64() ? out : arith::TruncFOp::create(b, l, et, out).getResult();
}

LogicalResult roiAlign(NodeContext &nc) {
  auto x = nc.input(0), rois = nc.input(1), batchIndices = nc.input(2);
  if (failed(x) || failed(rois) || failed(batchIndices))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto rt = cast<RankedTensorType>(rois->getType());
  auto bt = cast<RankedTensorType>(batchIndices->getType());
  if (xt.getRank() != 4 || !isa<FloatType>(xt.getElementType()) || rt.getRank() != 2 ||
      rt.getDimSize(1) != 4 || !isa<FloatType>(rt.getElementType()) || bt.getRank() != 1 ||
      !isa<IntegerType>(bt.getElementType()))
    return nc.error("expects X [N, C, H, W], rois [R, 4] (floats) and batch_indices [R]");
  std::string mode = nc.attrString("mode", "avg");
  std::string transform = nc.attrString("coordinate_transformation_mode",
                                        nc.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if ((mode != "avg" && mode != "max") ||
      (transform != "half_pixel" && transform != "output_half_pixel"))
    return nc.error("mode must be avg or max, coordinate_transformation_mode half_pixel or "
                    "output_half_pixel");
  RoiAlignSpec s{*x, *rois, *batchIndices, nc.attrInt("output_height", 1),
                 nc.attrInt("output_width", 1), nc.attrInt("sampling_ratio", 0),
                 nc.attrFloat("spatial_scale", 1.0), transform == "half_pixel", mode == "max"};
  if (s.outH < 1 || s.outW < 1 || s.samplingRatio < 0)
    return nc.error("output_height and output_width must be positive, sampling_ratio not "
                    "negative");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  nc.ctx()->getOrLoadDialect<math::MathDialect>();
  OpBuilder &b = nc.b;
  SmallVector<Value> dynamic;
  if (rt.isDynamicDim(0))
    dynamic.push_back(tensor::DimOp::create(b, nc.loc, *rois, 0));
  if (xt.isDynamicDim(1))
    dynamic.push_back(tensor::DimOp::create(b, nc.loc, *x, 1));
  auto type = RankedTensorType::get({rt.getDimSize(0), xt.getDimSize(1), s.outH, s.outW},
                                    xt.getElementType());
  auto out = tensor::GenerateOp::create(b, nc.loc, type, dynamic,
                                        [&](OpBuilder &gb, Location gl, ValueRange idx) {
                                          tensor::YieldOp::create(gb, gl,
                                                                  alignElement(gb, gl, s, idx));
                                        });
  return nc.setOutput(0, out);
}

} // namespace

void registerRoiAlign(HandlerTable &t) { t["RoiAlign"] = roiAlign; }

} // namespace kiln
