//===- OnnxImporter.cpp - ONNX ModelProto to the kiln dialect -------------===//
//
// One pass over the graph in order (ONNX requires topological order): graph
// inputs become function arguments, initializers constants, each node goes
// through its handler. Unsupported ops are collected first and reported in
// one error, so a user sees everything missing at once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "Expr.h"
#include "ModelFile.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/tensor_io.hpp"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include "mlir/IR/Diagnostics.h"

#include <climits>
#include <sys/resource.h>
#include <unistd.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>

using namespace mlir;

namespace kiln {
namespace {

// Opsets before 11 differ mostly in attributes that later became inputs;
// the handlers read both forms.
constexpr int64_t kMinOpset = 1, kMaxOpset = 21;
// IR 10 goes with opset 21; 11 only adds element types, refused by name.
constexpr int64_t kMaxIrVersion = 11;
// Any tensor's element count, as the runtime's signature parser allows.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Bytes this process may still allocate: physical memory, or less under
/// an address-space limit (ulimit -v). 0 when unknown.
uint64_t availableMemoryBytes() {
  uint64_t bytes = 0;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0)
    bytes = (uint64_t)pages * (uint64_t)pageSize;
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (bytes == 0 || limit.rlim_cur < bytes))
    bytes = limit.rlim_cur;
  return bytes;
}

/// "2x3x4" for messages.
std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

/// False when the element count of `shape` exceeds kMaxElements (or would
/// overflow computing it).
bool boundedShape(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxElements / d))
      return false;
    n *= d;
  }
  return true;
}

} // namespace

const HandlerTable &handlers() {
  static HandlerTable table = [] {
    HandlerTable t;
    registerMathHandlers(t);
    registerNNHandlers(t);
    registerTensorHandlers(t);
    registerReductionHandlers(t);
    registerActivationHandlers(t);
    registerLossHandlers(t);
    registerResizeHandlers(t);
    registerQuantizeHandlers(t);
    registerRecurrentHandlers(t);
    registerTrainingHandlers(t);
    registerEinsumHandlers(t);
    registerLocalNormHandlers(t);
    registerWindowHandlers(t);
    registerReverseSequenceHandlers(t);
    registerGridSampleHandlers(t);
    registerSpectralHandlers(t);
    registerQLinearContribHandlers(t);
    registerQuantizedProductHandlers(t);
    // Imported by the graph importer (importIf) when its condition is
    // known; reached only when it is not.
    t["Scan"] = [](NodeContext &nc) -> LogicalResult {
      return nc.error("is unrolled by the graph importer"); // never reached
    };
    t["Loop"] = [](NodeContext &nc) -> LogicalResult {
      return nc.error("is unrolled by the graph importer"); // never reached
    };
    t["If"] = [](NodeContext &nc) -> LogicalResult {
      return nc.error("the condition must be known at compile time (a test on shapes, or an "
                      "input compiled in with --const-input); data-dependent branches are not "
                      "supported");
    };
    return t;
  }();
  return table;
}

bool isDefaultDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

std::string handlerKey(const onnx::NodeProto &node) {
  return isDefaultDomain(node.domain()) ? node.op_type() : node.domain() + "::" + node.op_type();
}

std::string nodeName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  if (node.output_size() && !node.output(0).empty())
    return "<" + node.output(0) + ">";
  return "<unnamed>";
}

bool parseModel(const std::string &bytes, const std::string &path, onnx::ModelProto &model,
                std::string &error) {
  if (bytes.empty()) {
    error = "file is empty";
    return false;
  }
  if (llvm::StringRef(path).ends_with(".onnxtxt")) {
    if (!parseOnnxText(bytes, model, error))
      return false;
  } else if (bytes.size() > (size_t)INT_MAX || !model.ParseFromString(bytes)) {
    error = bytes.size() > (size_t)INT_MAX
                ? "model file is over 2 GB: keep the weights in external data files"
                : "not a valid ONNX protobuf (truncated or not a model file)";
    return false;
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    error = "not an ONNX model (no graph or ir_version)";
    return false;
  }
  if (model.ir_version() > kMaxIrVersion) {
    error = "ONNX IR version " + std::to_string(model.ir_version()) +
            " is newer than Kiln reads (up to " + std::to_string(kMaxIrVersion) + ")";
    return false;
  }
  return true;
}

bool loadModel(const std::string &path, onnx::ModelProto &model, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open file";
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = "cannot read file";
    return false;
  }
  return parseModel(bytes, path, model, error);
}

namespace {

class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const std::string &path, const ImportOptions &opts)
      : ctx(ctx), opts(opts), fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)) {
    modelDir = llvm::sys::path::parent_path(path).str();
    if (modelDir.empty())
      modelDir = ".";
  }

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

private:
  Location nodeLoc(const onnx::NodeProto &node) {
    return NameLoc::get(StringAttr::get(&ctx, "node '" + nodeName(node) + "' (" +
                                                  node.op_type() + ")"),
                        fileLoc);
  }
  LogicalResult fileError(const Twine &msg) { return emitError(fileLoc) << msg; }
  LogicalResult checkSupported(const onnx::GraphProto &graph);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  FailureOr<int64_t> defaultOpset(const onnx::ModelProto &model);
  FailureOr<func::FuncOp> declareFunction(const onnx::GraphProto &graph, OpBuilder &b);
  LogicalResult importInitializers(const onnx::GraphProto &graph, OpBuilder &b);
  LogicalResult importNodes(const onnx::GraphProto &graph, OpBuilder &b, int64_t opset);
  LogicalResult importIf(NodeContext &nc, OpBuilder &b, int64_t opset);
  LogicalResult importLoop(NodeContext &nc, OpBuilder &b, int64_t opset);
  LogicalResult importScan(NodeContext &nc, OpBuilder &b, int64_t opset);
  FailureOr<SmallVector<GraphValue>> runBody(NodeContext &nc, const onnx::GraphProto &body,
                                             ArrayRef<GraphValue> inputs, OpBuilder &b,
                                             int64_t opset);
  LogicalResult finish(const onnx::GraphProto &graph, func::FuncOp func, OpBuilder &b,
                       int64_t opset);
  LogicalResult checkDeclaredType(const onnx::ValueInfoProto &out, RankedTensorType inferred);

  MLIRContext &ctx;
  const ImportOptions &opts;
  Location fileLoc;
  std::string modelDir;
  std::map<std::string, int64_t> opsets;
  llvm::StringMap<GraphValue> values;
};

LogicalResult GraphImporter::checkSupported(const onnx::GraphProto &graph) {
  std::vector<std::string> bad;
  std::function<void(const onnx::GraphProto &)> check = [&](const onnx::GraphProto &g) {
    for (const auto &node : g.node()) {
      auto it = opsets.find(isDefaultDomain(node.domain()) ? "" : node.domain());
      int64_t opset = it == opsets.end() ? -1 : it->second;
      bool ok = handlers().count(handlerKey(node)) && opset >= 0;
      if (!ok)
        bad.push_back("node '" + nodeName(node) + "' (" + node.op_type() + ", domain '" +
                      (node.domain().empty() ? "ai.onnx" : node.domain()) + "', opset " +
                      std::to_string(opset) + ")");
      // The branches of an If (one is imported in its place), a Loop's
      // body (unrolled).
      for (const auto &attr : node.attribute())
        if (attr.has_g() && isDefaultDomain(node.domain()) &&
            (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan"))
          check(attr.g());
    }
  };
  check(graph);
  if (bad.empty())
    return success();
  std::string msg = std::to_string(bad.size()) + " unsupported node" +
                    (bad.size() > 1 ? "s" : "") + ":";
  for (auto &b : bad)
    msg += "\n  " + b;
  return fileError(msg);
}

FailureOr<RankedTensorType> GraphImporter::inputType(const onnx::ValueInfoProto &info) {
  if (!info.type().has_tensor_type())
    return fileError("graph input '" + info.name() + "' is not a tensor");
  const auto &tt = info.type().tensor_type();
  Type et = onnxElementType(&ctx, tt.elem_type());
  if (!et)
    return fileError("graph input '" + info.name() + "' has unsupported element type " +
                     onnxTypeName(tt.elem_type()));
  SmallVector<int64_t> shape;
  auto pinned = opts.shapes.find(info.name());
  if (pinned != opts.shapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != (int)pinned->second.size())
      return fileError("--shape " + info.name() + " has rank " +
                       Twine(pinned->second.size()) + ", the model declares rank " +
                       Twine(tt.shape().dim_size()));
    for (size_t i = 0; i < pinned->second.size(); ++i) {
      int64_t d = pinned->second[i];
      if (tt.has_shape() && tt.shape().dim(i).has_dim_value() &&
          tt.shape().dim(i).dim_value() != d)
        return fileError("--shape " + info.name() + " sets dimension " + Twine(i) + " to " +
                         Twine(d) + ", the model fixes it to " +
                         Twine(tt.shape().dim(i).dim_value()));
      shape.push_back(d);
    }
    if (!boundedShape(shape))
      return fileError("--shape " + info.name() + "=" + shapeText(shape) +
                       " has more than 2^48 elements");
    return RankedTensorType::get(shape, et);
  }
  if (!tt.has_shape())
    return fileError("graph input '" + info.name() +
                     "' has no shape; pin it with --shape " + info.name() + "=D0xD1...");
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &dim = tt.shape().dim(i);
    if (dim.has_dim_value() && dim.dim_value() < 0)
      return fileError("graph input '" + info.name() + "' has negative dimension " +
                       Twine(dim.dim_value()) + " at axis " + Twine(i));
    if (!dim.has_dim_value()) {
      std::string sym = dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "";
      return fileError("graph input '" + info.name() + "' has dynamic dimension " +
                       Twine(i) + sym + "; pin it with --shape " + info.name() +
                       "=D0xD1...");
    }
    shape.push_back(dim.dim_value());
  }
  if (!boundedShape(shape))
    return fileError("graph input '" + info.name() + "' has shape " + shapeText(shape) +
                     ": more than 2^48 elements");
  return RankedTensorType::get(shape, et);
}

FailureOr<int64_t> GraphImporter::defaultOpset(const onnx::ModelProto &model) {
  for (const auto &op : model.opset_import())
    opsets[isDefaultDomain(op.domain()) ? "" : op.domain()] = op.version();
  // A model of only ai.onnx.preview.training ops needs no default opset
  // (a default-domain node then is refused by checkSupported).
  bool otherDomains = !opsets.empty();
  if (!opsets.count("") && !otherDomains)
    return fileError("model imports no default-domain opset");
  int64_t opset = opsets.count("") ? opsets[""] : kMaxOpset;
  if (opset < kMinOpset || opset > kMaxOpset)
    return fileError("opset " + Twine(opset) + " is not supported (Kiln reads opsets " +
                     Twine(kMinOpset) + " to " + Twine(kMaxOpset) + ")");
  return opset;
}

FailureOr<func::FuncOp> GraphImporter::declareFunction(const onnx::GraphProto &graph,
                                                       OpBuilder &b) {
  // Old exporters also list initializers as graph inputs: those are weights.
  llvm::StringSet<> initNames;
  for (const auto &t : graph.initializer())
    initNames.insert(t.name());
  for (const auto &pinned : opts.shapes) {
    const std::string &name = pinned.first;
    bool found = llvm::any_of(graph.input(), [&](const onnx::ValueInfoProto &in) {
      return in.name() == name && !initNames.contains(name);
    });
    if (!found)
      return fileError("--shape names '" + name + "', which is not a graph input");
  }
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  llvm::StringSet<> seen;
  for (const auto &in : graph.input()) {
    if (!seen.insert(in.name()).second)
      return fileError("graph input '" + in.name() + "' is declared twice");
    if (initNames.contains(in.name()))
      continue;
    auto type = inputType(in);
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
    argNames.push_back(in.name());
  }
  // Result types are known only after import; finish() sets them.
  auto func = func::FuncOp::create(b, fileLoc, "main", b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, "kiln.name", b.getStringAttr(name));
    values[name] = GraphValue{entry->getArgument(i), std::nullopt};
  }
  return func;
}

LogicalResult GraphImporter::importInitializers(const onnx::GraphProto &graph, OpBuilder &b) {
  llvm::StringSet<> seen;
  uint64_t declared = 0;
  for (const auto &t : graph.initializer()) {
    if (!seen.insert(t.name()).second)
      return fileError("initializer '" + t.name() + "' is defined twice");
    declared += declaredBytes(t, &ctx);
  }
  // Weights are held about twice while compiling (the blob, then the
  // object code): refuse up front what can't fit rather than die midway.
  uint64_t available = availableMemoryBytes();
  if (declared && available && declared > available / 2)
    return fileError("the model's weights take " + formatBytes(declared) +
                     "; compiling them needs about twice that, and this process can use " +
                     formatBytes(available));
  for (const auto &t : graph.initializer()) {
    bool trainable = opts.trainable && t.data_type() != onnx::TensorProto::BOOL &&
                     isa_and_nonnull<FloatType>(onnxElementType(&ctx, t.data_type()));
    if (auto known = trainable ? std::nullopt : tensorProtoToKnown(t, &ctx, modelDir)) {
      values[t.name()] = GraphValue{Value(), std::move(known)};
      continue;
    }
    std::string error;
    auto attr = tensorProtoToAttr(t, &ctx, modelDir, error);
    if (failed(attr))
      return fileError("initializer: " + error);
    auto constant = ConstantOp::create(b, fileLoc, *attr);
    std::optional<KnownTensor> known;
    if (trainable) {
      constant->setAttr("kiln.initializer", b.getStringAttr(t.name()));
      // Small ones stay known too, for the handlers that need a value at
      // compile time (Resize scales): used that way, the constant is left
      // without uses and kiln-lift-parameters does not train it. Known
      // folding skips them (NodeContext::isTrainable).
      known = tensorProtoToKnown(t, &ctx, modelDir);
    }
    values[t.name()] = GraphValue{constant, std::move(known)};
  }
  return success();
}

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &graph, OpBuilder &b,
                                         int64_t opset) {
  for (const auto &node : graph.node()) {
    NodeContext nc(node, opset, b, nodeLoc(node), values, modelDir);
    nc.training = opts.trainable;
    for (const auto &out : node.output())
      if (!out.empty() && values.count(out))
        return nc.error("value '" + out + "' is defined twice (outputs must be unique)");
    if (foldKnownNode(nc))
      continue;
    if (isDefaultDomain(node.domain()) && node.op_type() == "If" && nc.known(0)) {
      if (failed(importIf(nc, b, opset)))
        return failure();
      continue;
    }
    if (isDefaultDomain(node.domain()) && node.op_type() == "Loop") {
      if (failed(importLoop(nc, b, opset)))
        return failure();
      continue;
    }
    if (isDefaultDomain(node.domain()) && node.op_type() == "Scan") {
      if (failed(importScan(nc, b, opset)))
        return failure();
      continue;
    }
    if (!handlers().count(handlerKey(node)))
      return nc.error("unsupported op (domain '" +
                      Twine(node.domain().empty() ? "ai.onnx" : node.domain()) + "')");
    if (failed(handlers().lookup(handlerKey(node))(nc)) || nc.hasFailed())
      return failure();
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty())
        continue;
      auto it = values.find(node.output(i));
      if (it == values.end())
        return nc.error("output " + Twine(i) + " ('" + node.output(i) + "') is not supported");
      if (!it->second.value)
        continue;
      auto type = cast<RankedTensorType>(it->second.value.getType());
      if (!boundedShape(type.getShape()))
        return nc.error("output '" + node.output(i) + "' would have shape " +
                        shapeText(type.getShape()) + ": more than 2^48 elements");
    }
  }
  return success();
}

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
    return nc.error("the body must take (iteration, condition, " + Twine(std::max<int64_t>(carriedCount, 0)) +
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
  SmallVector<SmallVector<GraphValue>> scans(scanCount);
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
    if (!c.known || c.known->numElements() != 1)
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
      Value x = v.value ? v.value : nc.constant(*v.known);
      auto t = cast<RankedTensorType>(x.getType());
      SmallVector<int64_t> shape{1};
      shape.append(t.getShape().begin(), t.getShape().end());
      parts.push_back(ReshapeOp::create(b, nc.loc, RankedTensorType::get(shape, t.getElementType()), x));
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
                                                         ArrayRef<GraphValue> inputs,
                                                         OpBuilder &b, int64_t opset) {
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
  constexpr int64_t kMaxSteps = 4096;
  if (nc.opset < 9)
    return nc.error("Scan before opset 9 (with its batch dimension) is not supported");
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
  if ((int64_t)inAxes.size() != M || (int64_t)inDirs.size() != M ||
      (int64_t)outAxes.size() != K || (int64_t)outDirs.size() != K)
    return nc.error("scan axes and directions must have one value per scan input and output");
  // Inputs by name, never default-created: an undefined one is an error.
  auto lookup = [&](const std::string &name) -> GraphValue * {
    auto it = values.find(name);
    return it == values.end() || (!it->second.value && !it->second.known) ? nullptr
                                                                           : &it->second;
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
    if (steps >= 0 && t.getDimSize(axis) != steps)
      return nc.error("the scan inputs differ in length along their scan axes");
    steps = t.getDimSize(axis);
    scanned.push_back(v);
  }
  if (steps < 1 || steps > kMaxSteps)
    return nc.error("scans " + Twine(steps) + " steps; unrolling takes 1 to " + Twine(kMaxSteps));
  Expr e(nc, scanned[0]);
  auto i64s = [&](StringRef name, int64_t v) {
    return b.getNamedAttr(name, b.getDenseI64ArrayAttr({v}));
  };
  SmallVector<SmallVector<Value>> outs(K);
  for (int64_t t = 0; t < steps; ++t) {
    SmallVector<GraphValue> inputs(states);
    for (int64_t j = 0; j < M; ++j) {
      int64_t at = inDirs[j] ? steps - 1 - t : t;
      auto type = cast<RankedTensorType>(scanned[j].getType());
      Value slice = e.op<SliceOp>({scanned[j]}, {i64s("starts", at), i64s("ends", at + 1),
                                                 i64s("axes", inAxes[j]), i64s("steps", 1)});
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + inAxes[j]);
      inputs.push_back(GraphValue{e.reshape(slice, shape), std::nullopt});
    }
    auto results = runBody(nc, body, inputs, b, opset);
    if (failed(results))
      return failure();
    for (int64_t i = 0; i < N; ++i)
      states[i] = (*results)[i];
    for (int64_t k = 0; k < K; ++k) {
      GraphValue &g = (*results)[N + k];
      outs[k].push_back(g.value ? g.value : nc.constant(*g.known));
    }
  }
  for (int64_t i = 0; i < N && i < node.output_size(); ++i)
    if (!node.output(i).empty())
      values[node.output(i)] = states[i];
  for (int64_t k = 0; k < K && N + k < node.output_size(); ++k) {
    if (node.output(N + k).empty())
      continue;
    if (outDirs[k])
      std::reverse(outs[k].begin(), outs[k].end());
    auto t = cast<RankedTensorType>(outs[k][0].getType());
    int64_t axis = outAxes[k] < 0 ? outAxes[k] + t.getRank() + 1 : outAxes[k];
    if (axis < 0 || axis > t.getRank())
      return nc.error("scan_output_axes[" + Twine(k) + "] is out of range");
    SmallVector<Value> parts;
    for (Value v : outs[k]) {
      SmallVector<int64_t> shape(t.getShape());
      shape.insert(shape.begin() + axis, 1);
      parts.push_back(e.reshape(v, shape));
    }
    Value stacked = e.op<ConcatOp>(parts, {b.getNamedAttr("axis", b.getI64IntegerAttr(axis))});
    values[node.output(N + k)] = GraphValue{stacked, std::nullopt};
  }
  return nc.hasFailed() ? failure() : success();
}

LogicalResult GraphImporter::finish(const onnx::GraphProto &graph, func::FuncOp func,
                                    OpBuilder &b, int64_t opset) {
  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return fileError("graph output '" + out.name() + "' is not produced by any node");
    NodeContext nc(onnx::NodeProto(), opset, b, fileLoc, values, modelDir);
    if (!it->second.value && it->second.known)
      it->second.value = nc.constant(*it->second.known);
    if (failed(checkDeclaredType(out, cast<RankedTensorType>(it->second.value.getType()))))
      return failure();
    results.push_back(it->second.value);
  }
  func::ReturnOp::create(b, fileLoc, results);
  func.setType(b.getFunctionType(func.getArgumentTypes(), ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "kiln.name", b.getStringAttr(out.name()));
  return success();
}

LogicalResult GraphImporter::checkDeclaredType(const onnx::ValueInfoProto &out,
                                               RankedTensorType inferred) {
  // A declared static shape or type that disagrees with inference means the
  // model is inconsistent (or the importer is wrong): never guess.
  if (!out.type().has_tensor_type())
    return success();
  const auto &tt = out.type().tensor_type();
  Type declared = onnxElementType(&ctx, tt.elem_type());
  if (tt.elem_type() != 0 && declared && declared != inferred.getElementType())
    return fileError("graph output '" + out.name() + "' is declared " +
                     onnxTypeName(tt.elem_type()) + " but computes a different element type");
  if (!tt.has_shape())
    return success();
  bool mismatch = tt.shape().dim_size() != inferred.getRank();
  for (int i = 0; !mismatch && i < tt.shape().dim_size(); ++i)
    mismatch = tt.shape().dim(i).has_dim_value() &&
               tt.shape().dim(i).dim_value() != inferred.getDimSize(i);
  if (!mismatch)
    return success();
  std::string want;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    want += (i ? "x" : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
  }
  std::string got;
  for (int64_t i = 0; i < inferred.getRank(); ++i)
    got += (i ? "x" : "") + std::to_string(inferred.getDimSize(i));
  return fileError("graph output '" + out.name() + "' is declared with shape [" + want +
                   "] but its computed shape is [" + got + "]");
}

OwningOpRef<ModuleOp> GraphImporter::run(const onnx::ModelProto &model) {
  auto opset = defaultOpset(model);
  const auto &graph = model.graph();
  if (failed(opset) || failed(checkSupported(graph)))
    return nullptr;
  OwningOpRef<ModuleOp> module(ModuleOp::create(fileLoc));
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  auto func = declareFunction(graph, b);
  if (failed(func))
    return nullptr;
  b.setInsertionPointToStart(&func->getBody().front());
  if (failed(importInitializers(graph, b)) || failed(importNodes(graph, b, *opset)) ||
      failed(finish(graph, *func, b, *opset)) || failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

namespace {
OwningOpRef<ModuleOp> importParsed(MLIRContext &context, onnx::ModelProto &model,
                                   const std::string &path, const ImportOptions &options) {
  for (const auto &entry : options.constInputs) {
    const std::string &name = entry.first;
    const ConstInput &value = entry.second;
    auto *graph = model.mutable_graph();
    bool isInput = llvm::any_of(graph->input(), [&](const onnx::ValueInfoProto &v) {
      return v.name() == name;
    });
    if (!isInput) {
      emitError(FileLineColLoc::get(&context, path, 0, 0))
          << "--const-input names '" << name << "', which is not a graph input";
      return nullptr;
    }
    onnx::TensorProto *t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(value.onnxType);
    for (int64_t d : value.dims)
      t->add_dims(d);
    t->set_raw_data(value.bytes);
  }
  // Keys are file stems: an initializer matches under tensorFileStem.
  for (const auto &[stem, value] : options.initializerValues) {
    auto *graph = model.mutable_graph();
    onnx::TensorProto *t = nullptr;
    for (auto &init : *graph->mutable_initializer())
      if (tensorFileStem(init.name()) == stem)
        t = &init;
    auto fail = [&](const Twine &msg) {
      emitError(FileLineColLoc::get(&context, path, 0, 0)) << "--params: " << msg;
      return nullptr;
    };
    if (!t)
      return fail("the model has no initializer saved as '" + stem + ".npy'");
    std::string name = t->name();
    bool sameDims = t->dims_size() == (int)value.dims.size();
    for (int i = 0; sameDims && i < t->dims_size(); ++i)
      sameDims = t->dims(i) == value.dims[i];
    if (t->data_type() != value.onnxType || !sameDims)
      return fail("'" + name + "' does not match the model's initializer in dtype or shape");
    onnx::TensorProto replaced;
    replaced.set_name(name);
    replaced.set_data_type(value.onnxType);
    for (int64_t d : value.dims)
      replaced.add_dims(d);
    replaced.set_raw_data(value.bytes);
    *t = std::move(replaced);
  }
  GraphImporter importer(context, path, options);
  return importer.run(model);
}

} // namespace

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, const std::string &path,
                                      const ImportOptions &options) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  onnx::ModelProto model;
  std::string error;
  if (!loadModel(path, model, error)) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << error;
    return nullptr;
  }
  return importParsed(context, model, path, options);
}

OwningOpRef<ModuleOp> importOnnxModelFromBytes(MLIRContext &context, const std::string &bytes,
                                               const std::string &path,
                                               const ImportOptions &options) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  onnx::ModelProto model;
  std::string error;
  if (!parseModel(bytes, path, model, error)) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << error;
    return nullptr;
  }
  return importParsed(context, model, path, options);
}

} // namespace kiln
