//===- Sequence.cpp - ONNX sequences of a length known at import ----------===//
//
// torch.split / torch.chunk / unbind export (dynamo, optimize=False) as
// SplitToSequence + SequenceAt, and list building as SequenceConstruct /
// ConcatFromSequence. A sequence never becomes a value here: the importer
// keeps its elements (GraphValue::sequence), each a tensor or a known
// tensor, so SequenceAt is a lookup, SequenceLength a known integer, and
// what remains are the Split and Concat of its ends. Positions must be
// known at compile time.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

using namespace mlir;

namespace kiln {
namespace {

/// Input `i`'s position among `size` elements (negative from the end);
/// with `end`, `size` itself too (an insertion at the end).
FailureOr<int64_t> position(NodeContext &nc, size_t i, int64_t size, bool end) {
  auto p = nc.constInts(i, "position");
  if (failed(p))
    return failure();
  if (p->size() != 1)
    return nc.error("position must be one integer, got " + Twine(p->size()));
  int64_t pos = (*p)[0] < 0 ? (*p)[0] + size : (*p)[0];
  if (pos < 0 || pos > size || (pos == size && !end))
    return nc.error("position " + Twine((*p)[0]) + " is out of range for a sequence of " +
                    Twine(size) + " tensors");
  return pos;
}

LogicalResult sequenceConstruct(NodeContext &nc) {
  std::vector<GraphValue> elements;
  for (size_t i = 0; i < nc.numInputs(); ++i) {
    auto v = nc.graphValue(i);
    if (failed(v))
      return failure();
    if (v->sequence)
      return nc.error("input '" + nc.node.input(i) + "' is a sequence; a tensor was expected");
    elements.push_back(*v);
  }
  return nc.setSequence(0, std::move(elements));
}

LogicalResult sequenceLength(NodeContext &nc) {
  auto s = nc.sequenceInput(0);
  if (failed(s))
    return failure();
  KnownTensor n;
  n.elementType = nc.b.getI64Type();
  n.values.push_back(s->size());
  return nc.setKnown(0, std::move(n));
}

LogicalResult sequenceAt(NodeContext &nc) {
  auto s = nc.sequenceInput(0);
  if (failed(s))
    return failure();
  auto pos = position(nc, 1, s->size(), /*end=*/false);
  if (failed(pos))
    return failure();
  return nc.setGraphValue(0, (*s)[*pos]);
}

LogicalResult sequenceInsert(NodeContext &nc) {
  auto s = nc.sequenceInput(0);
  auto v = nc.graphValue(1);
  if (failed(s) || failed(v))
    return failure();
  if (v->sequence)
    return nc.error("input '" + nc.node.input(1) + "' is a sequence; a tensor was expected");
  int64_t pos = s->size();
  if (nc.has(2)) {
    auto p = position(nc, 2, s->size(), /*end=*/true);
    if (failed(p))
      return failure();
    pos = *p;
  }
  s->insert(s->begin() + pos, *v);
  return nc.setSequence(0, std::move(*s));
}

LogicalResult sequenceErase(NodeContext &nc) {
  auto s = nc.sequenceInput(0);
  if (failed(s))
    return failure();
  if (s->empty())
    return nc.error("cannot erase from an empty sequence");
  int64_t pos = s->size() - 1;
  if (nc.has(1)) {
    auto p = position(nc, 1, s->size(), /*end=*/false);
    if (failed(p))
      return failure();
    pos = *p;
  }
  s->erase(s->begin() + pos);
  return nc.setSequence(0, std::move(*s));
}

/// The pieces along `axis`: all of size 1 without `split` (each squeezed
/// unless keepdims), pieces of a scalar `split` (the last one smaller), or
/// the sizes a 1-D `split` lists.
LogicalResult splitToSequence(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = nc.attrInt("axis", 0);
  std::optional<int64_t> norm = normalizeAxis(axis, xt.getRank());
  if (!norm)
    return nc.error("axis " + Twine(axis) + " is out of range for rank " + Twine(xt.getRank()));
  if (xt.isDynamicDim(*norm))
    return nc.error("split axis " + Twine(*norm) + " has a size known only at run time (the "
                    "sequence's length would be too); pin it with --shape or --dim");
  int64_t dim = xt.getDimSize(*norm);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  // One op result per piece: a model splitting a huge axis into ones
  // must not make the importer build millions of them.
  constexpr int64_t kMaxPieces = 1 << 16;
  if (!nc.has(1)) {
    if (dim > kMaxPieces)
      return nc.error("splits axis " + Twine(*norm) + " of size " + Twine(dim) +
                      " into one tensor each; at most " + Twine(kMaxPieces) + " pieces");
    sizes.assign(dim, 1);
    squeeze = nc.attrInt("keepdims", 1) == 0;
  } else {
    auto split = nc.constInts(1, "split");
    if (failed(split))
      return failure();
    const KnownTensor *k = nc.known(1);
    if (k && k->shape.empty()) { // one size: equal pieces, the last one smaller
      int64_t chunk = split->front();
      if (chunk <= 0)
        return nc.error("split size " + Twine(chunk) + " must be positive");
      if ((dim + chunk - 1) / chunk > kMaxPieces)
        return nc.error("splits axis " + Twine(*norm) + " of size " + Twine(dim) +
                        " into pieces of " + Twine(chunk) + "; at most " + Twine(kMaxPieces) +
                        " pieces");
      for (int64_t at = 0; at < dim; at += chunk)
        sizes.push_back(std::min(chunk, dim - at));
    } else {
      sizes = *split;
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0)
          return nc.error("split sizes must not be negative");
        total += s;
      }
      if (total != dim)
        return nc.error("split sizes add up to " + Twine(total) + ", but axis " + Twine(*norm) +
                        " has " + Twine(dim));
    }
  }
  std::vector<GraphValue> elements;
  if (sizes.empty())
    return nc.setSequence(0, std::move(elements));
  auto op = nc.build<SplitOp>({*x},
                              {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(*norm)),
                               nc.b.getNamedAttr("sizes", nc.b.getDenseI64ArrayAttr(sizes))},
                              sizes.size());
  if (failed(op))
    return failure();
  for (Value piece : (*op)->getResults()) {
    if (squeeze) {
      auto sq = nc.build<SqueezeOp>(
          {piece}, {nc.b.getNamedAttr("axes", nc.b.getDenseI64ArrayAttr({*norm}))});
      if (failed(sq))
        return failure();
      piece = (*sq)->getResult(0);
    }
    elements.push_back(GraphValue{piece, std::nullopt, nullptr});
  }
  return nc.setSequence(0, std::move(elements));
}

/// The elements joined along `axis`, or stacked along a new one.
LogicalResult concatFromSequence(NodeContext &nc) {
  auto s = nc.sequenceInput(0);
  if (failed(s))
    return failure();
  if (s->empty())
    return nc.error("cannot concatenate an empty sequence (its element shape is unknown)");
  bool stack = nc.attrInt("new_axis", 0) != 0;
  SmallVector<Value> parts;
  for (auto [i, e] : llvm::enumerate(*s)) {
    FailureOr<Value> v = nc.tensorOf(e, "element " + Twine(i));
    if (failed(v))
      return failure();
    parts.push_back(*v);
  }
  int64_t rank = cast<RankedTensorType>(parts[0].getType()).getRank() + (stack ? 1 : 0);
  int64_t axis = nc.attrInt("axis", 0);
  std::optional<int64_t> norm = normalizeAxis(axis, rank);
  if (!norm)
    return nc.error("axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
  if (stack)
    for (Value &v : parts) {
      auto u = nc.build<UnsqueezeOp>(
          {v}, {nc.b.getNamedAttr("axes", nc.b.getDenseI64ArrayAttr({*norm}))});
      if (failed(u))
        return failure();
      v = (*u)->getResult(0);
    }
  return nc.emit<ConcatOp>(parts, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(*norm))});
}

} // namespace

void registerSequenceHandlers(HandlerTable &t) {
  t["SequenceConstruct"] = sequenceConstruct;
  t["SequenceEmpty"] = [](NodeContext &nc) { return nc.setSequence(0, {}); };
  t["SequenceLength"] = sequenceLength;
  t["SequenceAt"] = sequenceAt;
  t["SequenceInsert"] = sequenceInsert;
  t["SequenceErase"] = sequenceErase;
  t["SplitToSequence"] = splitToSequence;
  t["ConcatFromSequence"] = concatFromSequence;
}

} // namespace kiln
