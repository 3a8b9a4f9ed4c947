//===- SymbolicFolding.cpp - shape arithmetic over dynamic dimensions -----===//
//
// dynamo's exports of transformers compute every reshape target from
// Shape: Shape -> Gather/Slice -> Squeeze -> Mul -> Concat -> Reshape. With
// a dynamic batch or sequence, Shape's elements are polynomials over the
// dynamic dimensions (SymbolicShape.h), kept as symbolic known tensors.
// Data movement (Concat, Gather, Slice, Squeeze, Unsqueeze, Reshape,
// Identity, integer Cast) reuses ShapeFolding's folders on element ids;
// Add, Sub, Mul and exact Div work on the polynomials. A Reshape to such a
// target gets its dynamic sizes as index values.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"
#include "SymbolicShape.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

/// The data inputs of a folded op: the tensors whose elements move or
/// combine (the others, such as Gather's indices, must be numbers).
SmallVector<size_t> dataInputs(NodeContext &nc) {
  StringRef op = nc.node.op_type();
  if (op == "Concat" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    SmallVector<size_t> all;
    for (size_t i = 0; i < nc.numInputs(); ++i)
      all.push_back(i);
    return all;
  }
  if (op == "Identity" || op == "Squeeze" || op == "Unsqueeze" || op == "Reshape" ||
      op == "Gather" || op == "Slice")
    return {0};
  // Integer and float casts keep sizes (a float one: arange(seq) exported
  // with optimize=False counts in f32 to Cast(seq)); a cast to bool
  // computes with them.
  int64_t to = nc.attrInt("to", 0);
  if (op == "Cast" && (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 ||
                       to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE))
    return {0};
  return {};
}

KnownTensor sizesTensor(NodeContext &nc, ArrayRef<DimPoly> elems, ArrayRef<int64_t> shape,
                        Type et) {
  KnownTensor k;
  k.shape.assign(shape.begin(), shape.end());
  k.elementType = et;
  bool symbolic = false;
  for (const DimPoly &p : elems) {
    std::optional<int64_t> c = p.constantValue();
    k.values.push_back(c ? (double)*c : 0.0);
    k.syms.push_back(c ? -1 : nc.shapes->intern(p));
    symbolic |= !c;
  }
  if (!symbolic) // every size turned out static
    k.syms.clear();
  return k;
}

bool foldShapeOf(NodeContext &nc) {
  auto t = nc.inputType(0);
  if (!t || t.hasStaticShape())
    return false;
  auto x = nc.input(0);
  if (failed(x))
    return false;
  int64_t rank = t.getRank();
  SmallVector<DimPoly> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(nc.shapes->dimOf(nc.b, *x, d));
  Type i64 = IntegerType::get(nc.ctx(), 64);
  if (nc.node.op_type() == "Size") {
    DimPoly n = DimPoly::constant(1);
    for (const DimPoly &d : dims) {
      std::optional<DimPoly> p = n.times(d);
      if (!p)
        return false;
      n = *p;
    }
    return succeeded(nc.setKnown(0, sizesTensor(nc, {n}, {}, i64)));
  }
  int64_t start = nc.attrInt("start", 0), end = nc.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  ArrayRef<DimPoly> slice = end > start ? ArrayRef<DimPoly>(dims).slice(start, end - start)
                                        : ArrayRef<DimPoly>();
  return succeeded(nc.setKnown(0, sizesTensor(nc, slice, {(int64_t)slice.size()}, i64)));
}

std::optional<DimPoly> combine(StringRef op, const DimPoly &a, const DimPoly &b) {
  if (op == "Add")
    return a.plus(b);
  if (op == "Sub")
    return a.minus(b);
  if (op == "Mul")
    return a.times(b);
  return a.exactDiv(b); // Div: integer division, exact
}

} // namespace

bool foldSymbolicNode(NodeContext &nc) {
  if (!nc.shapes || nc.numInputs() == 0)
    return false;
  StringRef op = nc.node.op_type();
  if (op == "Shape" || op == "Size")
    return foldShapeOf(nc);
  SmallVector<size_t> data = dataInputs(nc);
  bool arith = op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
  if (data.empty() || (arith && nc.numInputs() != 2))
    return false;
  // Every input known; the data ones may be symbolic, the others not.
  SmallVector<const KnownTensor *> in;
  bool symbolic = false;
  for (size_t i = 0; i < nc.numInputs(); ++i) {
    const KnownTensor *k = nc.knownOrSymbolic(i);
    if (nc.has(i) && !k)
      return false;
    bool isData = llvm::is_contained(data, i);
    if (k && k->symbolic() && !isData)
      return false;
    symbolic |= k && k->symbolic();
    in.push_back(k);
  }
  if (!symbolic)
    return false;
  // Each data element gets an id; the folders move ids, not values.
  std::vector<DimPoly> elems;
  SmallVector<KnownTensor> encoded;
  encoded.reserve(data.size());
  for (size_t i : data) {
    const KnownTensor *k = in[i];
    KnownTensor e = *k;
    e.syms.clear();
    e.elementType = IntegerType::get(nc.ctx(), 64);
    for (size_t j = 0; j < k->values.size(); ++j) {
      bool sym = k->symbolic() && k->syms[j] >= 0;
      // A float that is no whole number (seq * 0.5) is no size: computed
      // at run time from the materialized sizes instead.
      if (!sym && k->values[j] != std::trunc(k->values[j]))
        return false;
      elems.push_back(sym ? nc.shapes->poly(k->syms[j])
                          : DimPoly::constant(toInt64(k->values[j])));
      e.values[j] = elems.size() - 1;
    }
    encoded.push_back(std::move(e));
  }
  for (auto [n, i] : llvm::enumerate(data))
    in[i] = &encoded[n];
  std::optional<KnownTensor> r;
  bool failedOp = false;
  if (arith) {
    r = broadcastMap(in, in[0]->elementType, [&](ArrayRef<double> ids) {
      std::optional<DimPoly> p = combine(op, elems[(size_t)ids[0]], elems[(size_t)ids[1]]);
      failedOp |= !p;
      elems.push_back(p ? *p : DimPoly::constant(0));
      return (double)(elems.size() - 1);
    });
  } else {
    r = foldKnown(nc, in);
  }
  if (!r || failedOp)
    return false;
  SmallVector<DimPoly> out;
  for (double id : r->values)
    out.push_back(elems[(size_t)id]);
  // The folders ran on element ids (i64): the result has its data's type,
  // or the cast's. Float sizes stay exact: only exact divisions fold.
  Type et = nc.knownOrSymbolic(data[0])->elementType;
  if (op == "Cast")
    et = onnxElementType(nc.ctx(), nc.attrInt("to", 0));
  return succeeded(nc.setKnown(0, sizesTensor(nc, out, r->shape, et)));
}

LogicalResult reshapeSymbolic(NodeContext &nc, Value x, bool allowZero) {
  const KnownTensor *target = nc.knownOrSymbolic(1);
  if (!target || target->shape.size() != 1)
    return nc.error("reshapes a tensor of shape " +
                    shapeText(cast<RankedTensorType>(x.getType()).getShape()) +
                    " to a shape computed at run time that the importer cannot follow; "
                    "pin the dynamic dimensions with --shape or --dim");
  auto xt = cast<RankedTensorType>(x.getType());
  ShapeSymbols &sym = *nc.shapes;
  std::optional<DimPoly> total = DimPoly::constant(1);
  for (int64_t d = 0; d < xt.getRank() && total; ++d)
    total = total->times(sym.dimOf(nc.b, x, d));
  SmallVector<DimPoly> dims;
  int64_t inferred = -1;
  for (size_t i = 0; i < target->values.size(); ++i) {
    bool isSym = target->symbolic() && target->syms[i] >= 0;
    DimPoly p = isSym ? sym.poly(target->syms[i]) : DimPoly::constant(toInt64(target->values[i]));
    std::optional<int64_t> c = p.constantValue();
    if (c && *c == 0 && !allowZero) {
      if ((int64_t)i >= xt.getRank())
        return nc.error("shape copies dimension " + Twine(i) + " of a rank-" +
                        Twine(xt.getRank()) + " input");
      p = sym.dimOf(nc.b, x, i);
    } else if (c && *c == -1) {
      if (inferred >= 0)
        return nc.error("shape has more than one -1");
      inferred = i;
    } else if (c && *c < 0) {
      return nc.error("shape has negative dimension " + Twine(*c));
    }
    dims.push_back(p);
  }
  if (inferred >= 0) {
    std::optional<DimPoly> rest = DimPoly::constant(1);
    for (size_t i = 0; i < dims.size() && rest; ++i)
      if ((int64_t)i != inferred)
        rest = rest->times(dims[i]);
    std::optional<DimPoly> q = total && rest ? total->exactDiv(*rest) : std::nullopt;
    // Sizes the polynomials do not relate: divided at run time.
    if (!q && total && rest && rest->constantValue() != std::optional<int64_t>(0))
      q = sym.opaque(arith::DivUIOp::create(nc.b, nc.loc, sym.materialize(nc.b, nc.loc, *total),
                                            sym.materialize(nc.b, nc.loc, *rest)));
    if (!q)
      return nc.error("reshapes a tensor of shape " + shapeText(xt.getShape()) +
                      " with a -1 the importer cannot infer from sizes known at run time");
    dims[inferred] = *q;
  }
  SmallVector<int64_t> shape;
  for (const DimPoly &p : dims)
    shape.push_back(p.constantValue().value_or(ShapedType::kDynamic));
  auto type = RankedTensorType::get(shape, xt.getElementType());
  if (type.hasStaticShape() && xt.hasStaticShape())
    return nc.setOutput(0, ReshapeOp::create(nc.b, nc.loc, type, x));
  if (type.getRank() == 0)
    return nc.error("reshapes a tensor of shape " + shapeText(xt.getShape()) +
                    " with dynamic dimensions to a scalar; pin them with --shape or --dim");
  SmallVector<Value> sizes;
  for (const DimPoly &p : dims)
    if (!p.constantValue())
      sizes.push_back(sym.materialize(nc.b, nc.loc, p, x));
  // (No sizes when the result is static: the input's sizes are implied.)
  auto op = ReshapeOp::create(nc.b, nc.loc, type, x, sizes);
  sym.record(op, dims);
  return nc.setOutput(0, op);
}

} // namespace kiln
