//===- ControlFlowRuntime.cpp - If and Loop decided at run time -----------===//
//
// An If whose condition, or a Loop whose trip count or condition, is known
// only at run time becomes structured control flow on tensors:
//   If   => scf.if, each branch imported into its region, results joined to
//           one type (dynamic where the branches' sizes differ);
//   Loop => scf.while over (iteration, condition, carried values, scan
//           buffers): the body imported once into its `after` region, each
//           scan output written into a buffer of M rows, sliced to the
//           iterations run.
// Bufferization gives each iteration's values their buffers; the CPU's
// kernels form inside the regions as at the top level.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

/// One type both may take: equal sizes kept, differing ones dynamic;
/// nothing when rank or element type differ.
std::optional<RankedTensorType> join(RankedTensorType a, RankedTensorType b) {
  if (a.getRank() != b.getRank() || a.getElementType() != b.getElementType())
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < a.getRank(); ++d)
    shape.push_back(a.getDimSize(d) == b.getDimSize(d) ? a.getDimSize(d)
                                                       : ShapedType::kDynamic);
  return RankedTensorType::get(shape, a.getElementType());
}

Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  return v.getType() == type ? v : tensor::CastOp::create(b, loc, type, v).getResult();
}

/// A scalar i1 or i64 read from a one-element tensor.
FailureOr<Value> scalarOf(NodeContext &nc, Value t, const Twine &what) {
  auto type = cast<RankedTensorType>(t.getType());
  if (!type.hasStaticShape() || type.getNumElements() != 1)
    return nc.error(what + " must hold one value, not " + shapeText(type.getShape()));
  SmallVector<Value> at(type.getRank(), arith::ConstantIndexOp::create(nc.b, nc.loc, 0));
  return tensor::ExtractOp::create(nc.b, nc.loc, t, at).getResult();
}

} // namespace

FailureOr<SmallVector<Value>> GraphImporter::bodyTensors(NodeContext &nc,
                                                         const onnx::GraphProto &body,
                                                         ArrayRef<GraphValue> inputs,
                                                         OpBuilder &b, int64_t opset,
                                                         StringRef what) {
  NodeContext bc(nc.node, opset, b, nc.loc, values, modelDir);
  bc.shapes = &shapes;
  auto results = runBody(bc, body, inputs, b, opset);
  if (failed(results))
    return failure();
  SmallVector<Value> out;
  for (auto [i, gv] : llvm::enumerate(*results)) {
    auto t = bc.tensorOf(gv, what + "'s output " + Twine(i));
    if (failed(t))
      return failure();
    out.push_back(*t);
  }
  return out;
}

LogicalResult GraphImporter::importIfRuntime(NodeContext &nc, OpBuilder &b, int64_t opset) {
  ctx.getOrLoadDialect<scf::SCFDialect>();
  auto condTensor = nc.input(0);
  if (failed(condTensor))
    return failure();
  auto cond = scalarOf(nc, *condTensor, "the condition");
  if (failed(cond))
    return failure();
  if (!cond->getType().isInteger(1))
    return nc.error("the condition must be a bool");
  // Each branch imported into a region of its own; the results' types are
  // known once both are.
  auto draft = scf::IfOp::create(b, nc.loc, TypeRange{}, *cond, /*withElseRegion=*/true);
  SmallVector<SmallVector<Value>> outs(2);
  for (int side = 0; side < 2; ++side) {
    StringRef name = side == 0 ? "then_branch" : "else_branch";
    const onnx::AttributeProto *branch = nc.attr(name);
    if (!branch || !branch->has_g())
      return nc.error("has no " + name + " graph");
    const onnx::GraphProto &g = branch->g();
    if (g.output_size() != nc.node.output_size())
      return nc.error(name + " has " + Twine(g.output_size()) + " outputs for the node's " +
                      Twine(nc.node.output_size()));
    Block *block = side == 0 ? draft.thenBlock() : draft.elseBlock();
    OpBuilder inner(block->getTerminator());
    auto results = bodyTensors(nc, g, {}, inner, opset, name);
    if (failed(results))
      return failure();
    outs[side] = *results;
  }
  SmallVector<Type> types;
  for (size_t i = 0; i < outs[0].size(); ++i) {
    auto t = join(cast<RankedTensorType>(outs[0][i].getType()),
                  cast<RankedTensorType>(outs[1][i].getType()));
    if (!t)
      return nc.error("output " + Twine(i) + ": the branches give different ranks or types");
    types.push_back(*t);
  }
  auto ifOp = scf::IfOp::create(b, nc.loc, types, *cond, /*withElseRegion=*/true);
  for (int side = 0; side < 2; ++side) {
    Block *from = side == 0 ? draft.thenBlock() : draft.elseBlock();
    Block *to = side == 0 ? ifOp.thenBlock() : ifOp.elseBlock();
    Operation *oldYield = to->mightHaveTerminator() ? to->getTerminator() : nullptr;
    to->getOperations().splice(oldYield ? Block::iterator(oldYield) : to->end(),
                               from->getOperations(), from->begin(), std::prev(from->end()));
    OpBuilder yb = oldYield ? OpBuilder(oldYield) : OpBuilder::atBlockEnd(to);
    SmallVector<Value> yielded;
    for (auto [v, t] : llvm::zip(outs[side], types))
      yielded.push_back(castTo(yb, nc.loc, v, t));
    scf::YieldOp::create(yb, nc.loc, yielded);
    if (oldYield)
      oldYield->erase();
  }
  draft.erase();
  for (auto [i, out] : llvm::enumerate(nc.node.output()))
    if (!out.empty())
      values[out] = GraphValue{ifOp.getResult(i), std::nullopt};
  return success();
}

/// One scf.while for a Loop: `carriedTypes` the carried values' types,
/// `scanTypes` one iteration's scan outputs (empty: not known yet). Returns
/// the body's output types (condition first), so a first try learns them.
FailureOr<SmallVector<Type>> GraphImporter::buildLoop(NodeContext &nc, OpBuilder &b, int64_t opset,
                                                      const LoopSpec &spec,
                                                      ArrayRef<Type> carriedTypes,
                                                      ArrayRef<Type> scanTypes,
                                                      scf::WhileOp &out) {
  Location loc = nc.loc;
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  SmallVector<Value> inits{arith::ConstantIntOp::create(b, loc, 0, 64), spec.cond};
  for (auto [v, t] : llvm::zip(spec.carried, carriedTypes))
    inits.push_back(castTo(b, loc, v, t));
  // Scan outputs go into M rows (the trip count), sliced at the end.
  Value rows = spec.trips ? arith::IndexCastOp::create(
                                b, loc, b.getIndexType(),
                                arith::MaxSIOp::create(b, loc, spec.trips,
                                                       arith::ConstantIntOp::create(b, loc, 0, 64)))
                                .getResult()
                          : Value();
  // A scan output's sizes known only at run time are its first iteration's
  // (the buffer is made then; 0 until).
  for (Type t : scanTypes) {
    auto st = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape{ShapedType::kDynamic};
    shape.append(st.getShape().begin(), st.getShape().end());
    SmallVector<Value> sizes{rows};
    for (int64_t d = 0; d < st.getRank(); ++d)
      if (st.isDynamicDim(d))
        sizes.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    inits.push_back(tensor::EmptyOp::create(b, loc, shape, st.getElementType(), sizes));
  }
  SmallVector<Type> types = llvm::to_vector(ValueRange(inits).getTypes());
  auto loop = scf::WhileOp::create(b, loc, types, inits);
  SmallVector<Location> locs(types.size(), loc);
  OpBuilder rb(b.getContext()); // (createBlock moves its builder's point)
  Block *before = rb.createBlock(&loop.getBefore(), {}, types, locs);
  Block *after = rb.createBlock(&loop.getAfter(), {}, types, locs);
  OpBuilder bb = OpBuilder::atBlockEnd(before);
  Value more = before->getArgument(1);
  if (spec.trips)
    more = arith::AndIOp::create(bb, loc, more,
                                 arith::CmpIOp::create(bb, loc, arith::CmpIPredicate::slt,
                                                       before->getArgument(0), spec.trips));
  scf::ConditionOp::create(bb, loc, more, before->getArguments());
  OpBuilder ab = OpBuilder::atBlockEnd(after);
  Value iter = after->getArgument(0);
  SmallVector<GraphValue> inputs{
      GraphValue{tensor::FromElementsOp::create(ab, loc, RankedTensorType::get({}, i64), iter),
                 std::nullopt},
      GraphValue{tensor::FromElementsOp::create(ab, loc, RankedTensorType::get({}, i1),
                                                after->getArgument(1)),
                 std::nullopt}};
  size_t carriedCount = carriedTypes.size();
  for (size_t k = 0; k < carriedCount; ++k)
    inputs.push_back(GraphValue{after->getArgument(2 + k), std::nullopt});
  auto results = bodyTensors(nc, *spec.body, inputs, ab, opset, "the body");
  if (failed(results))
    return failure();
  SmallVector<Value> outs = *results;
  SmallVector<Type> outTypes = llvm::to_vector(ValueRange(outs).getTypes());
  out = loop;
  if (scanTypes.size() != outs.size() - 1 - carriedCount)
    return outTypes; // a first try: only the types were wanted
  NodeContext yc(nc.node, opset, ab, loc, values, modelDir);
  auto condOut = scalarOf(yc, outs[0], "the body's condition");
  if (failed(condOut))
    return failure();
  SmallVector<Value> yielded{
      arith::AddIOp::create(ab, loc, iter, arith::ConstantIntOp::create(ab, loc, 1, 64)),
      *condOut};
  for (size_t k = 0; k < carriedCount; ++k) {
    if (!tensor::CastOp::areCastCompatible(outs[1 + k].getType(), carriedTypes[k]))
      return nc.error("carried value " + Twine(k) + " changes rank or type between iterations");
    yielded.push_back(castTo(ab, loc, outs[1 + k], carriedTypes[k]));
  }
  Value at = arith::IndexCastOp::create(ab, loc, ab.getIndexType(), iter);
  for (size_t j = 0; j < scanTypes.size(); ++j) {
    Value v = outs[1 + carriedCount + j];
    if (v.getType() != scanTypes[j])
      return nc.error("scan output " + Twine(j) + " changes shape between iterations");
    auto vt = cast<RankedTensorType>(v.getType());
    int64_t r = vt.getRank();
    Value acc = after->getArgument(2 + carriedCount + j);
    SmallVector<OpFoldResult> offs(r + 1, ab.getIndexAttr(0)), sizes, ones(r + 1, ab.getIndexAttr(1));
    offs[0] = at;
    sizes.push_back(ab.getIndexAttr(1));
    for (int64_t d : vt.getShape())
      sizes.push_back(ab.getIndexAttr(d));
    if (!vt.hasStaticShape()) {
      // The buffer is made at the first iteration, with its sizes; a later
      // one's piece is cut to them (never written past the buffer).
      Value first = arith::CmpIOp::create(ab, loc, arith::CmpIPredicate::eq, iter,
                                          arith::ConstantIntOp::create(ab, loc, 0, 64));
      auto made = scf::IfOp::create(ab, loc, acc.getType(), first, /*withElseRegion=*/true);
      OpBuilder tb = made.getThenBodyBuilder();
      SmallVector<Value> dims{rows};
      for (int64_t d = 0; d < r; ++d)
        if (vt.isDynamicDim(d))
          dims.push_back(tensor::DimOp::create(tb, loc, v, d));
      scf::YieldOp::create(tb, loc, tensor::EmptyOp::create(tb, loc, acc.getType(), dims).getResult());
      OpBuilder eb = made.getElseBodyBuilder();
      scf::YieldOp::create(eb, loc, acc);
      acc = made.getResult(0);
      SmallVector<OpFoldResult> zeros(r, ab.getIndexAttr(0)), cut, unit(r, ab.getIndexAttr(1));
      for (int64_t d = 0; d < r; ++d) {
        if (!vt.isDynamicDim(d)) {
          cut.push_back(ab.getIndexAttr(vt.getDimSize(d)));
          continue;
        }
        Value n = arith::MinSIOp::create(ab, loc, tensor::DimOp::create(ab, loc, v, d),
                                         tensor::DimOp::create(ab, loc, acc, d + 1));
        cut.push_back(n);
        sizes[d + 1] = n;
      }
      v = tensor::ExtractSliceOp::create(ab, loc, v, zeros, cut, unit);
    }
    yielded.push_back(tensor::InsertSliceOp::create(ab, loc, v, acc, offs, sizes, ones));
  }
  scf::YieldOp::create(ab, loc, yielded);
  return outTypes;
}

LogicalResult GraphImporter::importLoopRuntime(NodeContext &nc, OpBuilder &b, int64_t opset) {
  ctx.getOrLoadDialect<scf::SCFDialect>();
  const onnx::NodeProto &node = nc.node;
  const onnx::AttributeProto *bodyAttr = nc.attr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return nc.error("has no body graph");
  LoopSpec spec;
  spec.body = &bodyAttr->g();
  int64_t carriedCount = node.input_size() - 2;
  if (carriedCount < 0 || spec.body->input_size() != carriedCount + 2 ||
      spec.body->output_size() < carriedCount + 1)
    return nc.error("the body must take (iteration, condition, carried values) and return "
                    "(condition, carried values, scan outputs)");
  int64_t scanCount = spec.body->output_size() - 1 - carriedCount;
  if (!node.input(0).empty()) {
    auto m = nc.input(0);
    auto trips = succeeded(m) ? scalarOf(nc, *m, "the trip count M") : FailureOr<Value>();
    if (failed(m) || failed(trips))
      return failure();
    spec.trips = *trips;
  } else if (scanCount > 0) {
    return nc.error("has scan outputs but no trip count M (their length would be unbounded)");
  }
  if (!node.input(1).empty()) {
    auto c = nc.input(1);
    auto cond = succeeded(c) ? scalarOf(nc, *c, "the condition") : FailureOr<Value>();
    if (failed(c) || failed(cond))
      return failure();
    spec.cond = *cond;
  } else {
    spec.cond = arith::ConstantIntOp::create(b, nc.loc, 1, 1);
  }
  SmallVector<Type> carriedTypes;
  for (int64_t k = 0; k < carriedCount; ++k) {
    auto v = nc.input(2 + k);
    if (failed(v))
      return failure();
    spec.carried.push_back(*v);
    carriedTypes.push_back(v->getType());
  }
  // A first try learns what the body returns: carried values whose sizes
  // change (a growing sequence) become dynamic there; then the loop.
  scf::WhileOp draft;
  auto learned = buildLoop(nc, b, opset, spec, carriedTypes, {}, draft);
  if (draft)
    draft.erase();
  if (failed(learned))
    return failure();
  for (int64_t k = 0; k < carriedCount; ++k) {
    auto t = join(cast<RankedTensorType>(carriedTypes[k]),
                  cast<RankedTensorType>((*learned)[1 + k]));
    if (!t)
      return nc.error("carried value " + Twine(k) + " changes rank or type between iterations");
    carriedTypes[k] = *t;
  }
  SmallVector<Type> scanTypes((*learned).begin() + 1 + carriedCount, (*learned).end());
  scf::WhileOp loop;
  if (failed(buildLoop(nc, b, opset, spec, carriedTypes, scanTypes, loop)))
    return failure();
  for (int64_t k = 0; k < carriedCount && k < node.output_size(); ++k)
    if (!node.output(k).empty())
      values[node.output(k)] = GraphValue{loop.getResult(2 + k), std::nullopt};
  Value count = arith::IndexCastOp::create(b, nc.loc, b.getIndexType(), loop.getResult(0));
  for (int64_t j = 0; j < scanCount; ++j) {
    if (node.output_size() <= carriedCount + j || node.output(carriedCount + j).empty())
      continue;
    Value acc = loop.getResult(2 + carriedCount + j);
    auto at = cast<RankedTensorType>(acc.getType());
    SmallVector<OpFoldResult> offs(at.getRank(), b.getIndexAttr(0)), sizes,
        ones(at.getRank(), b.getIndexAttr(1));
    sizes.push_back(count);
    for (int64_t d = 1; d < at.getRank(); ++d)
      sizes.push_back(at.isDynamicDim(d)
                          ? OpFoldResult(tensor::DimOp::create(b, nc.loc, acc, d).getResult())
                          : OpFoldResult(b.getIndexAttr(at.getDimSize(d))));
    Value part = tensor::ExtractSliceOp::create(b, nc.loc, at, acc, offs, sizes, ones);
    values[node.output(carriedCount + j)] = GraphValue{part, std::nullopt};
  }
  return success();
}


/// One scf.for for a Scan: `stateTypes` the states' types, `outTypes` one
/// step's scan outputs (empty: not known yet). Returns the body's output
/// types, so a first try learns them.
FailureOr<SmallVector<Type>> GraphImporter::buildScan(NodeContext &nc, OpBuilder &b,
                                                      int64_t opset, const ScanSpec &spec,
                                                      ArrayRef<Type> stateTypes,
                                                      ArrayRef<Type> outTypes,
                                                      scf::ForOp &out) {
  Location loc = nc.loc;
  size_t n = stateTypes.size();
  SmallVector<Value> inits;
  for (auto [v, t] : llvm::zip(spec.states, stateTypes))
    inits.push_back(castTo(b, loc, v, t));
  // Each scan output's buffer: a step's shape with `steps` at its axis.
  std::optional<int64_t> known = getConstantIntValue(spec.steps);
  for (auto [k, t] : llvm::enumerate(outTypes)) {
    auto st = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(st.getShape());
    shape.insert(shape.begin() + spec.outAxes[k], known.value_or(ShapedType::kDynamic));
    inits.push_back(tensor::EmptyOp::create(b, loc, shape, st.getElementType(),
                                            known ? ValueRange{} : ValueRange{spec.steps}));
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, zero, spec.steps, one, inits);
  Block *body = loop.getBody();
  if (body->mightHaveTerminator())
    body->getTerminator()->erase();
  OpBuilder ab = OpBuilder::atBlockEnd(body);
  Value t = loop.getInductionVar();
  Value last = arith::SubIOp::create(ab, loc, spec.steps, one);
  Value back = arith::SubIOp::create(ab, loc, last, t);
  SmallVector<GraphValue> inputs;
  for (size_t i = 0; i < n; ++i)
    inputs.push_back(GraphValue{loop.getRegionIterArg(i), std::nullopt});
  // Each scan input's slice at this step, without its scan axis.
  for (auto [j, v] : llvm::enumerate(spec.scanned)) {
    auto vt = cast<RankedTensorType>(v.getType());
    int64_t r = vt.getRank(), axis = spec.inAxes[j];
    SmallVector<OpFoldResult> offs(r, ab.getIndexAttr(0)), sizes, ones(r, ab.getIndexAttr(1));
    for (int64_t d = 0; d < r; ++d)
      sizes.push_back(d == axis ? OpFoldResult(ab.getIndexAttr(1))
                      : vt.isDynamicDim(d)
                          ? OpFoldResult(tensor::DimOp::create(ab, loc, v, d).getResult())
                          : OpFoldResult(ab.getIndexAttr(vt.getDimSize(d))));
    offs[axis] = spec.inDirs[j] ? back : t;
    SmallVector<int64_t> shape(vt.getShape());
    shape.erase(shape.begin() + axis);
    auto sliceType = RankedTensorType::get(shape, vt.getElementType());
    inputs.push_back(GraphValue{
        tensor::ExtractSliceOp::create(ab, loc, sliceType, v, offs, sizes, ones), std::nullopt});
  }
  auto results = bodyTensors(nc, *spec.body, inputs, ab, opset, "the body");
  if (failed(results))
    return failure();
  SmallVector<Value> outs = *results;
  SmallVector<Type> types = llvm::to_vector(ValueRange(outs).getTypes());
  out = loop;
  if (outTypes.size() != outs.size() - n) {
    scf::YieldOp::create(ab, loc, loop.getRegionIterArgs()); // a first try
    return types;
  }
  SmallVector<Value> yielded;
  for (size_t i = 0; i < n; ++i) {
    if (!tensor::CastOp::areCastCompatible(outs[i].getType(), stateTypes[i]))
      return nc.error("state " + Twine(i) + " changes rank or type between steps");
    yielded.push_back(castTo(ab, loc, outs[i], stateTypes[i]));
  }
  for (auto [k, type] : llvm::enumerate(outTypes)) {
    Value v = outs[n + k];
    if (v.getType() != type)
      return nc.error("scan output " + Twine(k) + " changes shape between steps");
    auto vt = cast<RankedTensorType>(type);
    int64_t r = vt.getRank() + 1, axis = spec.outAxes[k];
    SmallVector<OpFoldResult> offs(r, ab.getIndexAttr(0)), sizes, ones(r, ab.getIndexAttr(1));
    for (int64_t d = 0, s = 0; d < r; ++d)
      sizes.push_back(d == axis ? ab.getIndexAttr(1) : ab.getIndexAttr(vt.getDimSize(s++)));
    offs[axis] = spec.outDirs[k] ? back : t;
    yielded.push_back(tensor::InsertSliceOp::create(ab, loc, v, loop.getRegionIterArg(n + k),
                                                    offs, sizes, ones));
  }
  scf::YieldOp::create(ab, loc, yielded);
  return types;
}

LogicalResult GraphImporter::importScanLoop(NodeContext &nc, OpBuilder &b, int64_t opset,
                                            ScanSpec &spec) {
  ctx.getOrLoadDialect<scf::SCFDialect>();
  SmallVector<Type> stateTypes = llvm::to_vector(ValueRange(spec.states).getTypes());
  // A first try learns the body's types (states that change size become
  // dynamic), then the loop.
  scf::ForOp draft;
  auto learned = buildScan(nc, b, opset, spec, stateTypes, {}, draft);
  if (draft)
    draft.erase();
  if (failed(learned))
    return failure();
  size_t n = stateTypes.size();
  for (size_t i = 0; i < n; ++i) {
    auto t = join(cast<RankedTensorType>(stateTypes[i]), cast<RankedTensorType>((*learned)[i]));
    if (!t)
      return nc.error("state " + Twine(i) + " changes rank or type between steps");
    stateTypes[i] = *t;
  }
  SmallVector<Type> outTypes((*learned).begin() + n, (*learned).end());
  for (auto [k, t] : llvm::enumerate(outTypes)) {
    auto st = cast<RankedTensorType>(t);
    if (!st.hasStaticShape())
      return nc.error("scan output " + Twine(k) + " has sizes known only at run time");
    int64_t &axis = spec.outAxes[k];
    axis = axis < 0 ? axis + st.getRank() + 1 : axis;
    if (axis < 0 || axis > st.getRank())
      return nc.error("scan_output_axes[" + Twine(k) + "] is out of range");
  }
  scf::ForOp loop;
  if (failed(buildScan(nc, b, opset, spec, stateTypes, outTypes, loop)))
    return failure();
  const onnx::NodeProto &node = nc.node;
  for (size_t i = 0; i < loop.getNumResults(); ++i)
    if ((int64_t)i < node.output_size() && !node.output(i).empty())
      values[node.output(i)] = GraphValue{loop.getResult(i), std::nullopt};
  return success();
}

} // namespace kiln
