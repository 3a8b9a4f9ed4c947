//===- OnnxImporter.cpp - ONNX ModelProto to the kiln dialect -------------===//
//
// One pass over the graph in order (ONNX requires topological order): graph
// inputs become function arguments, initializers constants, each node goes
// through its handler. Unsupported ops are collected first and reported in
// one error, so a user sees everything missing at once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "NodeContext.h"

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
    registerEinsumHandlers(t);
    return t;
  }();
  return table;
}

bool isDefaultDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

/// A node's name for messages; exporters may leave it empty, then the name
/// of its first output identifies it.
std::string nodeName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  if (node.output_size() && !node.output(0).empty())
    return "<" + node.output(0) + ">";
  return "<unnamed>";
}

/// Parses a model held in memory (ONNX text syntax when `path` ends in
/// .onnxtxt); on failure `error` says why.
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

/// Reads and parses the file; on failure `error` says why.
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
  for (const auto &node : graph.node()) {
    auto it = opsets.find(isDefaultDomain(node.domain()) ? "" : node.domain());
    int64_t opset = it == opsets.end() ? -1 : it->second;
    bool ok = isDefaultDomain(node.domain()) && handlers().count(node.op_type());
    if (!ok)
      bad.push_back("node '" + nodeName(node) + "' (" + node.op_type() + ", domain '" +
                    (node.domain().empty() ? "ai.onnx" : node.domain()) + "', opset " +
                    std::to_string(opset) + ")");
  }
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
  if (!opsets.count(""))
    return fileError("model imports no default-domain opset");
  int64_t opset = opsets[""];
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
    if (auto known = tensorProtoToKnown(t, &ctx, modelDir)) {
      values[t.name()] = GraphValue{Value(), std::move(known)};
      continue;
    }
    std::string error;
    auto attr = tensorProtoToAttr(t, &ctx, modelDir, error);
    if (failed(attr))
      return fileError("initializer: " + error);
    values[t.name()] = GraphValue{ConstantOp::create(b, fileLoc, *attr), std::nullopt};
  }
  return success();
}

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &graph, OpBuilder &b,
                                         int64_t opset) {
  for (const auto &node : graph.node()) {
    NodeContext nc(node, opset, b, nodeLoc(node), values, modelDir);
    for (const auto &out : node.output())
      if (!out.empty() && values.count(out))
        return nc.error("value '" + out + "' is defined twice (outputs must be unique)");
    if (foldKnownNode(nc))
      continue;
    if (failed(handlers().lookup(node.op_type())(nc)) || nc.hasFailed())
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

bool describeOnnxModel(const std::string &path, std::string &text, std::string &error) {
  onnx::ModelProto model;
  if (!loadModel(path, model, error))
    return false;
  std::ostringstream os;
  const auto &g = model.graph();
  os << "model: " << path << "\n  ir_version " << model.ir_version() << ", producer '"
     << model.producer_name() << "'";
  for (const auto &o : model.opset_import())
    os << ", opset " << (o.domain().empty() ? "ai.onnx" : o.domain()) << " " << o.version();
  std::set<std::string> inits;
  for (const auto &t : g.initializer())
    inits.insert(t.name());
  auto describe = [&](const onnx::ValueInfoProto &v) {
    os << "  " << v.name() << ": ";
    const auto &tt = v.type().tensor_type();
    os << onnxTypeName(tt.elem_type()) << " [";
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto &d = tt.shape().dim(i);
      os << (i ? "x" : "") << (d.has_dim_value() ? std::to_string(d.dim_value())
                                                 : (d.dim_param().empty() ? "?" : d.dim_param()));
    }
    os << "]\n";
  };
  os << "\ninputs:\n";
  for (const auto &v : g.input())
    if (!inits.count(v.name()))
      describe(v);
  os << "outputs:\n";
  for (const auto &v : g.output())
    describe(v);
  int64_t params = 0;
  for (const auto &t : g.initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    params += n;
  }
  os << "initializers: " << g.initializer_size() << " (" << params << " values)\n";
  std::map<std::string, int> histogram;
  for (const auto &n : g.node())
    ++histogram[(isDefaultDomain(n.domain()) ? "" : n.domain() + "::") + n.op_type()];
  os << "ops (" << g.node_size() << " nodes):\n";
  for (const auto &[op, count] : histogram) {
    bool ok = handlers().count(op);
    os << "  " << op << " " << count << (ok ? "" : "   [unsupported]") << "\n";
  }
  text = os.str();
  return true;
}

bool reportOnnxSupport(const std::string &path, const ImportOptions &options,
                       std::string &text) {
  onnx::ModelProto model;
  std::string error;
  if (!loadModel(path, model, error)) {
    text = "error: " + path + ": " + error + "\n";
    return false;
  }
  // Import once, collecting the diagnostics instead of printing them; the
  // first error located at a node marks that node.
  MLIRContext ctx;
  std::string failedNode, failedMessage, otherError;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return success();
      if (auto name = dyn_cast<NameLoc>(d.getLocation()); name && failedNode.empty()) {
        failedNode = name.getName().str();
        failedMessage = d.str();
      } else if (otherError.empty()) {
        otherError = d.str();
      }
      return success();
    });
    (void)importOnnxModel(ctx, path, options);
  }
  std::map<std::string, int64_t> opsets;
  for (const auto &op : model.opset_import())
    opsets[isDefaultDomain(op.domain()) ? "" : op.domain()] = op.version();
  std::ostringstream os;
  int unsupported = 0;
  for (const auto &node : model.graph().node()) {
    std::string label = "node '" + nodeName(node) + "' (" + node.op_type() + ")";
    std::string domain = isDefaultDomain(node.domain()) ? "" : node.domain();
    os << label << ": ";
    if (!domain.empty() || !handlers().count(node.op_type())) {
      ++unsupported;
      os << "unsupported: no importer for " << node.op_type() << " in domain '"
         << (domain.empty() ? "ai.onnx" : domain) << "' (opset " << opsets[domain] << ")\n";
    } else if (label == failedNode) {
      ++unsupported;
      os << "error: " << failedMessage << "\n";
    } else {
      os << "supported\n";
    }
  }
  if (!otherError.empty() && otherError.find("unsupported node") == std::string::npos) {
    ++unsupported;
    os << "model: " << otherError << "\n";
  }
  os << unsupported << " problem" << (unsupported == 1 ? "" : "s") << " in "
     << model.graph().node_size() << " nodes\n";
  text = os.str();
  return unsupported == 0;
}

std::vector<std::string> onnxGraphInputNames(const std::string &path) {
  onnx::ModelProto model;
  std::string error;
  std::vector<std::string> names;
  if (!loadModel(path, model, error))
    return names;
  std::set<std::string> inits;
  for (const auto &t : model.graph().initializer())
    inits.insert(t.name());
  for (const auto &in : model.graph().input())
    if (!inits.count(in.name()))
      names.push_back(in.name());
  return names;
}

bool onnxGraphNodes(const std::string &path, std::vector<OnnxNodeInfo> &nodes,
                    std::vector<std::string> &inputs, std::vector<std::string> &outputs,
                    std::string &error) {
  onnx::ModelProto model;
  if (!loadModel(path, model, error))
    return false;
  for (const auto &node : model.graph().node()) {
    OnnxNodeInfo info;
    info.name = nodeName(node);
    info.label = "node '" + info.name + "' (" + node.op_type() + ")";
    info.opType = node.op_type();
    info.inputs.assign(node.input().begin(), node.input().end());
    info.outputs.assign(node.output().begin(), node.output().end());
    nodes.push_back(std::move(info));
  }
  inputs = onnxGraphInputNames(path);
  for (const auto &out : model.graph().output())
    outputs.push_back(out.name());
  return true;
}

std::string onnxOpLimits(const std::string &opType) {
  static const std::map<std::string, std::string> limits = {
      {"Conv", "1-D, 2-D and 3-D"},
      {"MaxPool", "1-D, 2-D and 3-D; no Indices output"},
      {"AveragePool", "1-D, 2-D and 3-D; no dilations"},
      {"BatchNormalization", "inference only (training_mode=0)"},
      {"Dropout", "inference only; no mask output"},
      {"Pad", "modes constant, reflect, edge (not wrap)"},
      {"Pow", "integer bases computed in f64"},
      {"QuantizeLinear", "integer quantized types"},
      {"Einsum", "one or two operands"},
      {"TopK", "k known at compile time; k rounds of argmax"},
      {"RNN", "forward direction, default activations, full-length sequences (unrolled)"},
      {"GRU", "forward direction, default activations, full-length sequences (unrolled)"},
      {"LSTM", "forward direction, default activations, full-length sequences (unrolled)"},
      {"Mod", "floating-point needs fmod=1"},
      {"LpNormalization", "p = 1 or 2"},
      {"LayerNormalization", "stash_type=1"},
      {"Reshape", "shape must be known at compile time"},
      {"Slice", "starts/ends/axes/steps known at compile time"},
      {"Split", "split sizes known at compile time"},
      {"Squeeze", "axes known at compile time"},
      {"Unsqueeze", "axes known at compile time"},
      {"Expand", "shape known at compile time"},
      {"Tile", "repeats known at compile time"},
      {"Trilu", "k known at compile time"},
      {"OneHot", "depth known at compile time"},
      {"CumSum", "axis known at compile time; quadratic along the axis"},
      {"Range", "folded at import: inputs known at compile time"},
      {"Shape", "folded at import (static shapes)"},
      {"Size", "folded at import (static shapes)"},
      {"ConstantOfShape", "shape known at compile time"},
      {"Softmax", "opset < 13: 2-D coercion at axis"},
      {"LogSoftmax", "opset < 13: 2-D coercion at axis"},
      {"Hardmax", "opset < 13: 2-D coercion at axis"},
      {"Cast", "no string types"},
      {"Resize", "nearest/linear/cubic; no antialias, tf_crop_and_resize or half_pixel_symmetric"},
      {"Upsample", "nearest/linear, asymmetric coordinates"},
      {"ConvTranspose", "1-D and 2-D"},
      {"NegativeLogLikelihoodLoss", "targets within [0, C) or ignore_index"},
  };
  auto it = limits.find(opType);
  return it == limits.end() ? "" : it->second;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto &e : handlers())
    ops.push_back(e.getKey().str());
  std::sort(ops.begin(), ops.end());
  return ops;
}

} // namespace kiln
