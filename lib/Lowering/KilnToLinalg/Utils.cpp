//===- Utils.cpp - builders shared by the kiln-to-linalg patterns ---------===//

#include "Utils.h"

#include "mlir/Interfaces/DestinationStyleOpInterface.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace kiln {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

AffineMap broadcastMap(ArrayRef<int64_t> outShape, ArrayRef<int64_t> operandShape,
                       MLIRContext *ctx) {
  int64_t outRank = outShape.size(), rank = operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t outDim = outRank - rank + i;
    if (operandShape[i] == 1 && outShape[outDim] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(outDim, ctx));
  }
  return AffineMap::get(outRank, 0, exprs, ctx);
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, ScalarFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(resultType.getShape(), tensorType(in).getShape(), ctx));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  Value init = tensor::EmptyOp::create(
      b, loc, resultType.getShape(), resultType.getElementType(),
      dynamicSizes(b, loc, resultType, inputs, ArrayRef(maps).drop_back(), maps.back()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, value));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, (int64_t)value));
}

Value lowestValue(OpBuilder &b, Location loc, Type type) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), true)));
  auto it = cast<IntegerType>(type);
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, APInt::getSignedMinValue(it.getWidth())));
}

Value highestValue(OpBuilder &b, Location loc, Type type) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), false)));
  auto it = cast<IntegerType>(type);
  if (it.getWidth() == 1)
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, 1));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, APInt::getSignedMaxValue(it.getWidth())));
}

bool isHalfFloat(Type t) { return t.isF16() || t.isBF16(); }

RankedTensorType accumulationType(RankedTensorType t) {
  return isHalfFloat(t.getElementType())
             ? RankedTensorType::get(t.getShape(), Float32Type::get(t.getContext()))
             : t;
}

Value convertFloat(OpBuilder &b, Location loc, Value x, Type et) {
  auto t = tensorType(x);
  if (t.getElementType() == et)
    return x;
  bool wider = et.getIntOrFloatBitWidth() > t.getElementType().getIntOrFloatBitWidth();
  return buildElementwise(b, loc, RankedTensorType::get(t.getShape(), et), ValueRange{x},
                          [et, wider](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            if (wider)
                              return arith::ExtFOp::create(nb, l, et, a[0]);
                            return arith::TruncFOp::create(nb, l, et, a[0]);
                          });
}

Value producedSize(Value v, int64_t d) {
  // Through destination operands to the tensor.empty that sized it.
  for (Value at = v;;) {
    auto result = dyn_cast<OpResult>(at);
    if (!result)
      return Value();
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(result.getOwner())) {
      at = dps.getTiedOpOperand(result)->get();
      continue;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(result.getOwner()))
      if (empty.getType().isDynamicDim(d))
        return empty.getDynamicSize(d);
    return Value();
  }
}

Value dimOf(OpBuilder &b, Location loc, Value v, int64_t d) {
  if (Value size = producedSize(v, d))
    return size;
  return tensor::DimOp::create(b, loc, v, d);
}

SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc, RankedTensorType outType,
                                ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                                AffineMap outMap) {
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < outType.getRank(); ++i) {
    if (!outType.isDynamicDim(i))
      continue;
    auto loop = dyn_cast<AffineDimExpr>(outMap.getResult(i));
    Value size;
    for (auto [in, map] : llvm::zip(inputs, inputMaps)) {
      auto t = dyn_cast<RankedTensorType>(in.getType());
      for (unsigned r = 0; t && loop && !size && r < map.getNumResults(); ++r)
        if (map.getResult(r) == loop && t.isDynamicDim(r))
          size = dimOf(b, loc, in, r);
      if (size)
        break;
    }
    // Inference made this dimension dynamic only because an input's is.
    assert(size && "a dynamic result dimension no input dimension gives");
    sizes.push_back(size);
  }
  return sizes;
}

SmallVector<Value> sameDynamicSizes(OpBuilder &b, Location loc, RankedTensorType outType,
                                    Value in) {
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < outType.getRank(); ++d)
    if (outType.isDynamicDim(d))
      sizes.push_back(dimOf(b, loc, in, d));
  return sizes;
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type, Value value,
                   ValueRange dynSizes) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(), dynSizes);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

/// A reshape keeping `lead` leading dynamic dimensions in place: the static
/// rest collapsed to one dimension, then expanded to the target's rest.
static Value reshapeTail(OpBuilder &b, Location loc, Value input, RankedTensorType type,
                         int64_t lead) {
  auto src = tensorType(input);
  // Both sides have a static tail (the importer checks): one group each.
  auto groups = [&](int64_t rank) {
    SmallVector<ReassociationIndices> re;
    for (int64_t i = 0; i < lead; ++i)
      re.push_back({i});
    re.push_back(llvm::to_vector(llvm::seq<int64_t>(lead, rank)));
    return re;
  };
  int64_t tail = 1;
  for (int64_t d : src.getShape().drop_front(lead))
    tail *= d;
  SmallVector<int64_t> mid(src.getShape().take_front(lead));
  mid.push_back(tail);
  auto midType = RankedTensorType::get(mid, src.getElementType());
  Value v = input;
  if (src.getRank() != lead + 1)
    v = tensor::CollapseShapeOp::create(b, loc, midType, v, groups(src.getRank()));
  if (type.getRank() != lead + 1)
    v = tensor::ExpandShapeOp::create(b, loc, type, v, groups(type.getRank()));
  return v;
}

/// Groups joining `big`'s dimensions into `small`'s when they differ only
/// by static 1s (each joins its left neighbor, or the first group):
/// nothing when they differ otherwise.
static std::optional<SmallVector<ReassociationIndices>> unitDimGroups(RankedTensorType big,
                                                                       RankedTensorType small) {
  SmallVector<ReassociationIndices> groups(small.getRank());
  ReassociationIndices pending; // 1s before the first match
  int64_t j = 0;
  for (int64_t i = 0; i < big.getRank(); ++i) {
    if (j < small.getRank() && big.getDimSize(i) == small.getDimSize(j)) {
      groups[j] = pending;
      groups[j++].push_back(i);
      pending.clear();
    } else if (big.getDimSize(i) == 1) {
      (j ? groups[j - 1] : pending).push_back(i);
    } else {
      return std::nullopt;
    }
  }
  if (j != small.getRank() || (!pending.empty() && small.getRank()))
    return std::nullopt;
  return groups;
}

/// The groups of `a`'s and of `c`'s dimensions (static, none 0) whose
/// sizes multiply to the same numbers in turn: their common
/// factorization ([1, 197, 1, 1, 768] and [197, 12, 64] meet at [197,
/// 768]), a 1 joining the group on its left (or the first). Nothing for
/// rank 0.
static std::optional<std::pair<SmallVector<ReassociationIndices>,
                               SmallVector<ReassociationIndices>>>
commonFactorization(ArrayRef<int64_t> a, ArrayRef<int64_t> c) {
  auto positive = [](int64_t d) { return d > 0; };
  if (a.empty() || c.empty() || !llvm::all_of(a, positive) || !llvm::all_of(c, positive))
    return std::nullopt;
  SmallVector<ReassociationIndices> ga, gc;
  int64_t i = 0, j = 0, na = a.size(), nc = c.size();
  while (i < na && j < nc) {
    ReassociationIndices ra{i}, rc{j};
    int64_t pa = a[i++], pc = c[j++];
    // Equal element counts: the smaller side always has a next dimension.
    while (pa != pc) {
      if (pa < pc) {
        ra.push_back(i);
        pa *= a[i++];
      } else {
        rc.push_back(j);
        pc *= c[j++];
      }
    }
    // 1s on one side only join this group (1s on both make groups of
    // their own).
    while (i < na && a[i] == 1 && !(j < nc && c[j] == 1))
      ra.push_back(i++);
    while (j < nc && c[j] == 1 && !(i < na && a[i] == 1))
      rc.push_back(j++);
    ga.push_back(ra);
    gc.push_back(rc);
  }
  if (i != na || j != nc)
    return std::nullopt;
  return std::make_pair(ga, gc);
}

Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType type) {
  auto src = tensorType(input);
  if (src == type)
    return input;
  if (!src.hasStaticShape() || !type.hasStaticShape()) {
    int64_t lead = 0;
    while (lead < src.getRank() && src.isDynamicDim(lead))
      ++lead;
    // reshapeTail keeps the leading dynamic dimensions and regroups a
    // static tail; otherwise only 1s may come or go (a reduction's
    // keepdims=0 over the last axis of [batch, seq, 8]).
    bool tailOk = type.getRank() > lead &&
                  llvm::all_of(type.getShape().take_front(lead), ShapedType::isDynamic) &&
                  llvm::none_of(type.getShape().drop_front(lead), ShapedType::isDynamic) &&
                  llvm::none_of(src.getShape().drop_front(lead), ShapedType::isDynamic);
    if (!tailOk) {
      if (auto groups = unitDimGroups(src, type))
        return tensor::CollapseShapeOp::create(b, loc, type, input, *groups);
      if (auto groups = unitDimGroups(type, src))
        return tensor::ExpandShapeOp::create(b, loc, type, input, *groups);
    }
    return reshapeTail(b, loc, input, type, lead);
  }
  // Collapsed to the common factorization, then expanded: a strided input
  // (a slice) stays a view, where a collapse to 1-D needs a copy of it
  // (ViT's q, k, v slices of the packed projection, reshaped into heads).
  if (auto groups = commonFactorization(src.getShape(), type.getShape())) {
    auto [ga, gc] = *groups;
    Value v = input;
    if (ga.size() != size_t(src.getRank()))
      v = tensor::CollapseShapeOp::create(b, loc, v, ga);
    if (gc.size() != size_t(type.getRank()))
      v = tensor::ExpandShapeOp::create(b, loc, type, v, gc);
    return v;
  }
  Value flat = input;
  if (src.getRank() != 1) {
    SmallVector<ReassociationIndices> reassoc;
    if (src.getRank() > 0)
      reassoc.push_back(llvm::to_vector(llvm::seq<int64_t>(0, src.getRank())));
    auto flatType = RankedTensorType::get(
        src.getRank() == 0 ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{src.getNumElements()},
        src.getElementType());
    if (src.getRank() == 0)
      flat = input; // rank 0 expands directly below
    else
      flat = tensor::CollapseShapeOp::create(b, loc, flatType, input, reassoc);
  }
  auto flatType = tensorType(flat);
  if (flatType == type)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  SmallVector<ReassociationIndices> reassoc;
  if (flatType.getRank() > 0)
    reassoc.push_back(llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
  return tensor::ExpandShapeOp::create(b, loc, type, flat, reassoc);
}

Value reshapeWithSizes(OpBuilder &b, Location loc, Value input, RankedTensorType type,
                       ValueRange sizes) {
  auto src = tensorType(input);
  int64_t n = src.getRank(), m = type.getRank();
  SmallVector<OpFoldResult> outSizes;
  for (int64_t j = 0, k = 0; j < m; ++j)
    outSizes.push_back(type.isDynamicDim(j) ? OpFoldResult(sizes[k++])
                                            : OpFoldResult(b.getIndexAttr(type.getDimSize(j))));
  // Input dimension i is output dimension j: equal static sizes, or the
  // size the importer gave j is `tensor.dim` of the input at i.
  auto same = [&](int64_t i, int64_t j) {
    if (!src.isDynamicDim(i) || !type.isDynamicDim(j))
      return !src.isDynamicDim(i) && !type.isDynamicDim(j) &&
             src.getDimSize(i) == type.getDimSize(j);
    auto dim = dyn_cast<Value>(outSizes[j]).getDefiningOp<tensor::DimOp>();
    return dim && dim.getSource() == input && dim.getConstantIndex() == i;
  };
  // Dimensions kept at either end stay groups of their own (a batch, a
  // sequence), so later passes see them; the middle regroups as one.
  int64_t pre = 0, post = 0;
  while (pre < n && pre < m && same(pre, pre))
    ++pre;
  while (post < n - pre && post < m - pre && same(n - 1 - post, m - 1 - post))
    ++post;
  // A group is never empty: unit dimensions inserted or dropped join a
  // neighbour.
  while ((n - pre - post == 0) != (m - pre - post == 0) && pre + post > 0)
    (pre > 0 ? pre : post) -= 1;
  if (n - pre - post == 0)
    return tensor::CastOp::create(b, loc, type, input);
  auto groups = [&](int64_t rank) {
    SmallVector<ReassociationIndices> re;
    for (int64_t i = 0; i < pre; ++i)
      re.push_back({i});
    re.push_back(llvm::to_vector(llvm::seq<int64_t>(pre, rank - post)));
    for (int64_t i = rank - post; i < rank; ++i)
      re.push_back({i});
    return re;
  };
  Value v = input;
  if (n - pre - post > 1)
    v = tensor::CollapseShapeOp::create(b, loc, v, groups(n));
  if (m - pre - post > 1) {
    // A static extent regrouped into sizes known only at run time (read
    // from data): expand_shape wants the collapsed dimension dynamic.
    auto vt = tensorType(v);
    bool dynamicOut = llvm::any_of(llvm::seq<int64_t>(pre, m - post),
                                   [&](int64_t j) { return type.isDynamicDim(j); });
    if (dynamicOut && !vt.isDynamicDim(pre)) {
      SmallVector<int64_t> shape(vt.getShape());
      shape[pre] = ShapedType::kDynamic;
      v = tensor::CastOp::create(b, loc, vt.clone(shape), v);
    }
    return tensor::ExpandShapeOp::create(b, loc, type, v, groups(m), outSizes);
  }
  return tensorType(v) == type ? v : tensor::CastOp::create(b, loc, type, v).getResult();
}

Value addScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}

Value mulScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}

Value maxScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MaximumFOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}

Value minScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MinimumFOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

Value reduceKeepDims(OpBuilder &b, Location loc, Value input, ArrayRef<bool> reduced,
                     ReduceKind kind, bool isUnsigned) {
  auto inType = tensorType(input);
  MLIRContext *ctx = b.getContext();
  int64_t rank = inType.getRank();
  SmallVector<int64_t> outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    outShape.push_back(reduced[d] ? 1 : inType.getDimSize(d));
    outExprs.push_back(reduced[d] ? getAffineConstantExpr(0, ctx)
                                  : getAffineDimExpr(d, ctx));
    iterators.push_back(reduced[d] ? utils::IteratorType::reduction
                                   : utils::IteratorType::parallel);
  }
  Type et = inType.getElementType();
  auto outType = RankedTensorType::get(outShape, et);
  Value initValue;
  switch (kind) {
  case ReduceKind::Sum: initValue = scalarConstant(b, loc, et, 0.0); break;
  case ReduceKind::Prod: initValue = scalarConstant(b, loc, et, 1.0); break;
  case ReduceKind::Max:
    initValue = isUnsigned ? scalarConstant(b, loc, et, 0) : lowestValue(b, loc, et);
    break;
  case ReduceKind::Min:
    initValue = isUnsigned ? (Value)arith::ConstantOp::create(
                                 b, loc, b.getIntegerAttr(et, APInt::getAllOnes(
                                                                  et.getIntOrFloatBitWidth())))
                           : highestValue(b, loc, et);
    break;
  }
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                              AffineMap::get(rank, 0, outExprs, ctx)};
  Value init = filledTensor(b, loc, outType, initValue,
                            dynamicSizes(b, loc, outType, input, maps[0], maps[1]));
  auto generic = linalg::GenericOp::create(
      b, loc, outType, ValueRange{input}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r;
        switch (kind) {
        case ReduceKind::Sum: r = addScalar(nb, nloc, args[0], args[1]); break;
        case ReduceKind::Prod: r = mulScalar(nb, nloc, args[0], args[1]); break;
        case ReduceKind::Max:
          r = isUnsigned ? (Value)arith::MaxUIOp::create(nb, nloc, args[0], args[1])
                         : maxScalar(nb, nloc, args[0], args[1]);
          break;
        case ReduceKind::Min:
          r = isUnsigned ? (Value)arith::MinUIOp::create(nb, nloc, args[0], args[1])
                         : minScalar(nb, nloc, args[0], args[1]);
          break;
        }
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> padsBegin,
                 ArrayRef<int64_t> padsEnd, Value padValue, bool channelsLast) {
  bool any = llvm::any_of(padsBegin, [](int64_t p) { return p != 0; }) ||
             llvm::any_of(padsEnd, [](int64_t p) { return p != 0; });
  if (!any)
    return input;
  auto type = tensorType(input);
  int64_t rank = type.getRank();
  SmallVector<int64_t> low(rank, 0), high(rank, 0), shape(type.getShape());
  for (size_t i = 0; i < padsBegin.size(); ++i) {
    int64_t d = rank - padsBegin.size() + i - (channelsLast ? 1 : 0);
    low[d] = padsBegin[i];
    high[d] = padsEnd[i];
    shape[d] += low[d] + high[d];
  }
  auto padType = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(b, loc, padType, input, getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high), padValue);
}

Value gatherGeneric(OpBuilder &b, Location loc, RankedTensorType outType,
                    ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                    llvm::function_ref<Value(OpBuilder &, Location, ValueRange,
                                             ArrayRef<Value>)> element,
                    ValueRange dynSizes) {
  int64_t rank = outType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = tensor::EmptyOp::create(b, loc, outType.getShape(), outType.getElementType(),
                                       dynSizes);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, outType, inputs, ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               SmallVector<Value> idx;
               for (int64_t d = 0; d < rank; ++d)
                 idx.push_back(linalg::IndexOp::create(nb, l, d));
               linalg::YieldOp::create(nb, l, element(nb, l, args.drop_back(), idx));
             })
      .getResult(0);
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

} // namespace kiln
