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
#include "GraphImporter.h"
#include "ModelFile.h"
#include "RuntimeShapes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Support/FormatBytes.h"
#include "kiln/tensor_io.hpp" // tensorFileStem (inline: no runtime link)

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

/// False when the element count of `shape` exceeds kMaxElements (or would
/// overflow computing it).
bool boundedShape(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      continue; // bounded by its range, checked by the runtime
    if (d < 0 || (d > 0 && n > kMaxElements / d))
      return false;
    n *= d;
  }
  return true;
}

} // namespace

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + (ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]));
  return s.empty() ? "scalar" : s;
}

const HandlerTable &handlers() {
  static HandlerTable table = [] {
    HandlerTable t;
    registerMathHandlers(t);
    registerNNHandlers(t);
    registerPoolHandlers(t);
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
    registerSequenceHandlers(t);
    registerSpectralHandlers(t);
    registerQLinearContribHandlers(t);
    registerQuantizedProductHandlers(t);
    // Trilu's k, CumSum's axis, Tile's repeats, OneHot's depth, Split's
    // sizes, Pad's pads given as graph inputs (RuntimeValues.cpp).
    wrapRuntimeArguments(t);
    registerDataDependentHandlers(t);
    registerDeterminant(t);
    registerRoiAlign(t);
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
  for (const auto &given : opts.shapes) {
    const std::string &name = given.first;
    bool found = llvm::any_of(graph.input(), [&](const onnx::ValueInfoProto &in) {
      return in.name() == name && !initNames.contains(name);
    });
    if (!found)
      return fileError("--shape names '" + name + "', which is not a graph input");
  }
  if (failed(collectSymbols(graph, initNames)))
    return failure();
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<ArrayAttr> argDims;
  llvm::StringSet<> seen;
  for (const auto &in : graph.input()) {
    if (!seen.insert(in.name()).second)
      return fileError("graph input '" + in.name() + "' is declared twice");
    if (initNames.contains(in.name()))
      continue;
    ArrayAttr dims;
    auto type = inputType(in, dims);
    if (failed(type))
      return failure();
    if (!boundedShape(type->getShape()))
      return fileError("graph input '" + in.name() + "' has shape " +
                       shapeText(type->getShape()) + ": more than 2^48 elements");
    argTypes.push_back(*type);
    argDims.push_back(dims);
    argNames.push_back(in.name());
  }
  // Result types are known only after import; finish() sets them.
  auto func = func::FuncOp::create(b, fileLoc, "main", b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, KilnDialect::getNameAttrName(), b.getStringAttr(name));
    if (argDims[i])
      func.setArgAttr(i, KilnDialect::getDimsAttrName(), argDims[i]);
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
    return fileError("the model's weights take " + formatByteCount(declared) +
                     "; compiling them needs about twice that, and this process can use " +
                     formatByteCount(available));
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
      constant->setAttr(KilnDialect::getInitializerAttrName(), b.getStringAttr(t.name()));
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

namespace {
/// Whether `graph` has a grouped convolution (MobileNet's depthwise ones).
bool hasGroupedConv(const onnx::GraphProto &graph) {
  return llvm::any_of(graph.node(), [](const onnx::NodeProto &node) {
    const std::string &op = node.op_type();
    if (op != "Conv" && op != "QLinearConv" && op != "ConvInteger")
      return false;
    return llvm::any_of(node.attribute(), [](const onnx::AttributeProto &a) {
      return a.name() == "group" && a.i() > 1;
    });
  });
}
} // namespace

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &graph, OpBuilder &b,
                                         int64_t opset) {
  // Integer convolutions beside f32 depthwise ones (no integer depthwise
  // tile) fuse into slow kernels around them: the MobileNetV2-style
  // example, QOperator at batch 8 on 2 Zen 3 cores, 1.44 -> 1.85 ms. The
  // whole graph then stays on the f32 path.
  bool integerConvs = opts.integerConvs && (opts.integerDepthwise || !hasGroupedConv(graph));
  for (const auto &node : graph.node()) {
    NodeContext nc(node, opset, b, nodeLoc(node), values, modelDir);
    nc.training = opts.trainable;
    nc.integerProducts = opts.integerProducts;
    nc.integerConvs = integerConvs;
    nc.integerDepthwise = opts.integerDepthwise;
    nc.shapes = &shapes;
    for (const auto &out : node.output())
      if (!out.empty() && values.count(out))
        return nc.error("value '" + out + "' is defined twice (outputs must be unique)");
    if (foldKnownNode(nc) || foldSymbolicNode(nc))
      continue;
    if (isDefaultDomain(node.domain()) && node.op_type() == "If") {
      if (failed(nc.known(0) ? importIf(nc, b, opset) : importIfRuntime(nc, b, opset)))
        return failure();
      continue;
    }
    if (isDefaultDomain(node.domain()) && node.op_type() == "Loop") {
      // Unrolled when its trip count and condition are known and it is
      // short (what it computes may then fold: exporters' shape loops);
      // else a loop, on both targets.
      constexpr int64_t kMaxUnrolled = 32;
      const KnownTensor *trips = nc.has(0) ? nc.known(0) : nullptr;
      bool known = (!nc.has(0) || trips) && (!nc.has(1) || nc.known(1));
      bool shortLoop = trips && trips->numElements() == 1 && trips->values[0] <= kMaxUnrolled;
      bool unroll = known && shortLoop;
      if (failed(unroll ? importLoop(nc, b, opset) : importLoopRuntime(nc, b, opset)))
        return failure();
      continue;
    }
    if (isDefaultDomain(node.domain()) && node.op_type() == "Scan") {
      if (failed(importScan(nc, b, opset)))
        return failure();
      continue;
    }
    if (failed(checkDynamicSupport(nc, node)))
      return failure();
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

LogicalResult GraphImporter::finish(const onnx::GraphProto &graph, func::FuncOp func,
                                    OpBuilder &b, int64_t opset) {
  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return fileError("graph output '" + out.name() + "' is not produced by any node");
    NodeContext nc(onnx::NodeProto(), opset, b, fileLoc, values, modelDir);
    nc.shapes = &shapes;
    FailureOr<Value> v = nc.tensorOf(it->second, "graph output '" + out.name() + "'");
    if (failed(v) || failed(checkDeclaredType(out, cast<RankedTensorType>(v->getType()))))
      return failure();
    results.push_back(*v);
  }
  func::ReturnOp::create(b, fileLoc, results);
  func.setType(b.getFunctionType(func.getArgumentTypes(), ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, KilnDialect::getNameAttrName(), b.getStringAttr(out.name()));
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
    // A size known only at run time (read from an input's data) may be
    // declared: the runtime computes the real one.
    mismatch = tt.shape().dim(i).has_dim_value() && !inferred.isDynamicDim(i) &&
               tt.shape().dim(i).dim_value() != inferred.getDimSize(i);
  if (!mismatch)
    return success();
  std::string want;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    want += (i ? "x" : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
  }
  std::string got = inferred.getRank() ? shapeText(inferred.getShape()) : "";
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
      failed(finish(graph, *func, b, *opset)) || failed(checkDimSymbols(*module)) ||
      failed(verify(*module)))
    return nullptr;
  return module;
}

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
