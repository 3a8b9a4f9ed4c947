//===- ControlFlow.cpp - ONNX If, Loop and Scan ---------------------------===//
//
// Resolved while importing: an If's taken branch imported in its place, a
// Loop unrolled (the body imported per iteration, its names forgotten
// between them). Control flow decided at run time, and every Scan, become
// loops and branches (ControlFlowRuntime.cpp).
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "GraphImporter.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln {

/// An If whose condition is known at compile time (a test on shapes, or
/// an input compiled in with --const-input): the taken branch's nodes are
/// imported in its place, reading the enclosing graph's values by name,
/// and its outputs become the If's.
LogicalResult GraphImporter::importIf(NodeContext &nc, OpBuilder &b, int64_t opset) {
  const KnownTensor *cond = nc.known(0);
  if (cond->numElements() != 1)
    return nc.error("the condition must be one value, not " + Twine(cond->numElements()));
  StringRef name = cond->values[0] != 0 ? "then_branch" : "else_branch";
  const onnx::AttributeProto *branch = nc.attr(name);
  if (!branch || !branch->has_g())
    return nc.error("has no " + name + " graph");
  const onnx::GraphProto &g = branch->g();
  if (g.output_size() != nc.node.output_size())
    return nc.error(name + " has " + Twine(g.output_size()) + " outputs for the node's " +
                    Twine(nc.node.output_size()));
  if (failed(importInitializers(g, b)) || failed(importNodes(g, b, opset)))
    return failure();
  for (int i = 0; i < g.output_size(); ++i) {
    auto it = values.find(g.output(i).name());
    if (it == values.end())
      return nc.error(name + " output '" + g.output(i).name() + "' is not produced");
    if (!nc.node.output(i).empty())
      values[nc.node.output(i)] = it->second;
  }
  return success();
}

/// A Loop whose trip count and conditions are known at compile time,
/// unrolled: the body runs once per iteration (runBody), its inputs bound
/// to the iteration number, the condition and the carried values. Scan outputs
/// are the iterations' values stacked on a new first dimension.
LogicalResult GraphImporter::importLoop(NodeContext &nc, OpBuilder &b, int64_t opset) {
  constexpr int64_t kMaxIterations = 4096;
  const onnx::NodeProto &node = nc.node;
  const onnx::AttributeProto *bodyAttr = nc.attr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return nc.error("has no body graph");
  const onnx::GraphProto &body = bodyAttr->g();
  int64_t carriedCount = node.input_size() - 2;
  if (carriedCount < 0 || body.input_size() != carriedCount + 2 ||
      body.output_size() < carriedCount + 1)
    return nc.error("the body must take (iteration, condition, " +
                    Twine(std::max<int64_t>(carriedCount, 0)) +
                    " carried values) and return (condition, carried values, scan outputs)");
  int64_t scanCount = body.output_size() - 1 - carriedCount;
  std::optional<int64_t> trips;
  if (!node.input(0).empty()) {
    auto m = nc.constInts(0, "the trip count M");
    if (failed(m))
      return failure();
    if (m->size() != 1)
      return nc.error("the trip count M must be one integer");
    trips = (*m)[0];
  }
  bool cond = true;
  if (!node.input(1).empty()) {
    const KnownTensor *c = nc.known(1);
    if (!c || c->numElements() != 1)
      return nc.error("the condition must be known at compile time (unrolling a Loop needs its "
                      "trip count)");
    cond = c->values[0] != 0;
  }
  if (!trips && !cond)
    trips = 0;
  SmallVector<GraphValue> carried;
  for (int64_t k = 0; k < carriedCount; ++k) {
    auto it = values.find(node.input(2 + k));
    if (it == values.end())
      return nc.error("input '" + node.input(2 + k) + "' is not defined");
    carried.push_back(it->second);
  }
  SmallVector<SmallVector<GraphValue>, 1> scans(scanCount);
  for (int64_t i = 0; cond && (!trips || i < *trips); ++i) {
    if (i >= kMaxIterations)
      return nc.error("runs more than " + Twine(kMaxIterations) +
                      " iterations; unrolling stops there");
    KnownTensor iteration, condition;
    iteration.elementType = b.getI64Type();
    iteration.values = {(double)i};
    condition.elementType = b.getI1Type();
    condition.values = {1};
    SmallVector<GraphValue> inputs{GraphValue{Value(), iteration}, GraphValue{Value(), condition}};
    inputs.append(carried.begin(), carried.end());
    auto results = runBody(nc, body, inputs, b, opset);
    if (failed(results))
      return failure();
    GraphValue &c = (*results)[0];
    if (!c.known || c.known->symbolic() || c.known->numElements() != 1)
      return nc.error("the body's condition must be known at compile time (unrolling a Loop "
                      "needs its trip count)");
    cond = c.known->values[0] != 0;
    for (int64_t k = 0; k < carriedCount; ++k)
      carried[k] = (*results)[1 + k];
    for (int64_t j = 0; j < scanCount; ++j)
      scans[j].push_back((*results)[1 + carriedCount + j]);
  }
  for (int64_t k = 0; k < carriedCount && k < node.output_size(); ++k)
    if (!node.output(k).empty())
      values[node.output(k)] = carried[k];
  for (int64_t j = 0; j < scanCount; ++j) {
    if (node.output_size() <= carriedCount + j || node.output(carriedCount + j).empty())
      continue;
    if (scans[j].empty())
      return nc.error("runs no iteration: its scan outputs would be empty tensors");
    SmallVector<Value> parts;
    for (GraphValue &v : scans[j]) {
      FailureOr<Value> tensor = nc.tensorOf(v, "scan output " + Twine(j));
      if (failed(tensor))
        return failure();
      Value x = *tensor;
      auto t = cast<RankedTensorType>(x.getType());
      SmallVector<int64_t> shape{1};
      shape.append(t.getShape().begin(), t.getShape().end());
      parts.push_back(
          ReshapeOp::create(b, nc.loc, RankedTensorType::get(shape, t.getElementType()), x));
    }
    auto stacked = nc.build<ConcatOp>(parts, {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    if (failed(stacked))
      return failure();
    values[node.output(carriedCount + j)] = GraphValue{(*stacked)->getResult(0), std::nullopt};
  }
  return success();
}

/// Imports `body` once with its inputs bound to `inputs`, returns its
/// outputs, and forgets the names it defined (so it can run again).
FailureOr<SmallVector<GraphValue>> GraphImporter::runBody(NodeContext &nc,
                                                          const onnx::GraphProto &body,
                                                          ArrayRef<GraphValue> inputs, OpBuilder &b,
                                                          int64_t opset) {
  llvm::StringSet<> before;
  for (const auto &entry : values)
    before.insert(entry.getKey());
  for (auto [i, v] : llvm::enumerate(inputs))
    values[body.input(i).name()] = v;
  if (failed(importInitializers(body, b)) || failed(importNodes(body, b, opset)))
    return failure();
  SmallVector<GraphValue> outputs;
  for (const auto &out : body.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return nc.error("the body's output '" + out.name() + "' is not produced");
    outputs.push_back(it->second);
  }
  SmallVector<std::string> fresh;
  for (const auto &entry : values)
    if (!before.contains(entry.getKey()))
      fresh.push_back(entry.getKey().str());
  for (const auto &name : fresh)
    values.erase(name);
  return outputs;
}

/// A Scan (opset 9 and later) unrolled along its scan inputs' axis: the
/// body runs once per step on the states and one slice of every scan
/// input (in either direction); its scan outputs are stacked.
LogicalResult GraphImporter::importScan(NodeContext &nc, OpBuilder &b, int64_t opset) {
  if (nc.opset < 9)
    return importBatchedScan(nc, b, opset);
  const onnx::NodeProto &node = nc.node;
  const onnx::AttributeProto *bodyAttr = nc.attr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return nc.error("has no body graph");
  const onnx::GraphProto &body = bodyAttr->g();
  int64_t M = nc.attrInt("num_scan_inputs", 0), N = node.input_size() - M;
  int64_t K = body.output_size() - N;
  if (M < 1 || N < 0 || body.input_size() != N + M || K < 0)
    return nc.error("the body must take the " + Twine(N) + " states and " + Twine(M) +
                    " scan slices, and return the states and the scan outputs");
  auto inAxes = nc.attrInts("scan_input_axes", std::vector<int64_t>(M, 0));
  auto inDirs = nc.attrInts("scan_input_directions", std::vector<int64_t>(M, 0));
  auto outAxes = nc.attrInts("scan_output_axes", std::vector<int64_t>(K, 0));
  auto outDirs = nc.attrInts("scan_output_directions", std::vector<int64_t>(K, 0));
  if ((int64_t)inAxes.size() != M || (int64_t)inDirs.size() != M || (int64_t)outAxes.size() != K ||
      (int64_t)outDirs.size() != K)
    return nc.error("scan axes and directions must have one value per scan input and output");
  // Inputs by name, never default-created: an undefined one is an error.
  auto lookup = [&](const std::string &name) -> GraphValue * {
    auto it = values.find(name);
    return it == values.end() || (!it->second.value && !it->second.known) ? nullptr : &it->second;
  };
  auto valueOf = [&](const std::string &name) -> Value {
    GraphValue *g = lookup(name);
    if (g && !g->value)
      g->value = nc.constant(*g->known);
    return g ? g->value : Value();
  };
  SmallVector<GraphValue> states;
  for (int64_t i = 0; i < N; ++i) {
    GraphValue *g = lookup(node.input(i));
    if (!g)
      return nc.error("state input '" + node.input(i) + "' is not defined");
    states.push_back(*g);
  }
  SmallVector<Value> scanned;
  int64_t steps = -1;
  for (int64_t j = 0; j < M; ++j) {
    Value v = valueOf(node.input(N + j));
    if (!v)
      return nc.error("scan input '" + node.input(N + j) + "' is not defined");
    auto t = cast<RankedTensorType>(v.getType());
    int64_t axis = inAxes[j] < 0 ? inAxes[j] + t.getRank() : inAxes[j];
    if (axis < 0 || axis >= t.getRank())
      return nc.error("scan_input_axes[" + Twine(j) + "] is out of range");
    inAxes[j] = axis;
    if (steps != -1 && !t.isDynamicDim(axis) && !ShapedType::isDynamic(steps) &&
        t.getDimSize(axis) != steps)
      return nc.error("the scan inputs differ in length along their scan axes");
    steps = t.getDimSize(axis);
    scanned.push_back(v);
  }
  // One loop over the steps (ControlFlowRuntime.cpp), on both targets.
  return scanAsLoop(nc, b, opset, body, states, scanned, steps,
                    {inAxes, inDirs, outAxes, outDirs});
}

/// Opset 8's Scan: inputs (sequence_lens, states..., scan inputs...),
/// each with a batch dimension first, the scan axis second. Each batch
/// element is scanned as opset 9 scans (its slices, without the batch
/// dimension), and the results are stacked along the batch again.
LogicalResult GraphImporter::importBatchedScan(NodeContext &nc, OpBuilder &b, int64_t opset) {
  const onnx::NodeProto &node = nc.node;
  const onnx::AttributeProto *bodyAttr = nc.attr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return nc.error("has no body graph");
  const onnx::GraphProto &body = bodyAttr->g();
  int64_t M = nc.attrInt("num_scan_inputs", 0), N = node.input_size() - 1 - M;
  int64_t K = body.output_size() - N;
  if (M < 1 || N < 0 || body.input_size() != N + M || K < 0 || node.output_size() > N + K)
    return nc.error("the body must take the " + Twine(N) + " states and " + Twine(M) +
                    " scan slices, and return the states and the scan outputs");
  if (nc.has(0))
    return nc.error("sequence_lens (a length per batch element) is not supported");
  auto dirs = nc.attrInts("directions", std::vector<int64_t>(M, 0));
  if ((int64_t)dirs.size() != M)
    return nc.error("directions must have one value per scan input");
  SmallVector<Value> inputs;
  for (int64_t i = 1; i < node.input_size(); ++i) {
    auto v = nc.input(i);
    if (failed(v))
      return failure();
    auto t = cast<RankedTensorType>(v->getType());
    if (t.getRank() < (i > N ? 2 : 1) || t.isDynamicDim(0))
      return nc.error("input '" + node.input(i) + "' needs a batch dimension of a known size");
    inputs.push_back(*v);
  }
  int64_t batch = cast<RankedTensorType>(inputs[0].getType()).getDimSize(0);
  Expr e(nc, inputs[0]);
  auto i64s = [&](StringRef name, int64_t v) {
    return b.getNamedAttr(name, b.getDenseI64ArrayAttr({v}));
  };
  auto element = [&](Value v, int64_t at) { // v[at], without the batch dimension
    auto shape = cast<RankedTensorType>(v.getType()).getShape().drop_front();
    Value slice = e.op<SliceOp>({v}, {i64s("starts", at), i64s("ends", at + 1), i64s("axes", 0),
                                      i64s("steps", 1)});
    return e.reshape(slice, shape);
  };
  SmallVector<SmallVector<Value>> results(node.output_size());
  for (int64_t at = 0; at < batch; ++at) {
    SmallVector<GraphValue> states;
    SmallVector<Value> scanned;
    for (auto [i, v] : llvm::enumerate(inputs))
      if ((int64_t)i < N)
        states.push_back(GraphValue{element(v, at), std::nullopt});
      else
        scanned.push_back(element(v, at));
    int64_t steps = cast<RankedTensorType>(scanned[0].getType()).getDimSize(0);
    if (nc.hasFailed() ||
        failed(scanAsLoop(nc, b, opset, body, states, scanned, steps,
                          {std::vector<int64_t>(M, 0), dirs, std::vector<int64_t>(K, 0),
                           std::vector<int64_t>(K, 0)})))
      return failure();
    for (int64_t k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty())
        continue;
      FailureOr<Value> out = nc.tensorOf(values[node.output(k)], "output " + Twine(k));
      if (failed(out))
        return failure();
      SmallVector<int64_t> shape{1};
      llvm::append_range(shape, cast<RankedTensorType>(out->getType()).getShape());
      results[k].push_back(e.reshape(*out, shape));
    }
  }
  for (int64_t k = 0; k < node.output_size(); ++k)
    if (!node.output(k).empty())
      values[node.output(k)] = GraphValue{
          e.op<ConcatOp>(results[k], {b.getNamedAttr("axis", b.getI64IntegerAttr(0))}),
          std::nullopt};
  return nc.hasFailed() ? failure() : success();
}

LogicalResult GraphImporter::scanAsLoop(NodeContext &nc, OpBuilder &b, int64_t opset,
                                        const onnx::GraphProto &body,
                                        ArrayRef<GraphValue> states, ArrayRef<Value> scanned,
                                        int64_t steps, ScanAxes axes) {
  auto [inAxes, inDirs, outAxes, outDirs] = axes;
  ScanSpec spec;
  spec.body = &body;
  spec.scanned.assign(scanned.begin(), scanned.end());
  spec.inAxes = inAxes;
  spec.inDirs = inDirs;
  spec.outAxes = outAxes;
  spec.outDirs = outDirs;
  spec.steps = ShapedType::isDynamic(steps)
                   ? tensor::DimOp::create(b, nc.loc, scanned[0], inAxes[0]).getResult()
                   : arith::ConstantIndexOp::create(b, nc.loc, steps).getResult();
  for (auto [i, state] : llvm::enumerate(states)) {
    GraphValue g = state;
    FailureOr<Value> v = nc.tensorOf(g, "state " + Twine(i));
    if (failed(v))
      return failure();
    spec.states.push_back(*v);
  }
  return importScanLoop(nc, b, opset, spec);
}

} // namespace kiln
