//===- DynamicDims.cpp - graph inputs' dynamic dimensions -----------------===//
//
// An input dimension the model leaves open (dim_param, or no value) stays
// dynamic unless `--shape` or `--dim` pins it. Every dynamic dimension is
// bound to a symbol: its dim_param, so two inputs naming the same symbol
// share it, or INPUT.AXIS. The symbols' ranges (`--dim`, ranges in
// `--shape`) go on the module as `kiln.dim_ranges`, and each argument's
// binding as `kiln.dims`; the signature and the runtime's checks come
// from those.
//
// Dynamic shapes reach only the ops that handle them end to end so far
// (kDynamicReady); any other op says so and names the flag that pins them.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln {

namespace {

/// ONNX ops (default domain) whose handlers, kiln ops, lowerings and CPU
/// code take dynamic dimensions.
const llvm::StringSet<> &dynamicReady() {
  static const llvm::StringSet<> ops = {
      // elementwise
      "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg",
      "Abs", "Erf", "Reciprocal", "Identity", "Clip", "Sin", "Cos", "Floor", "Ceil",
      // activations composed of those (Activation.cpp)
      "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "ThresholdedRelu",
      "Softplus", "Softsign", "Mish", "Shrink", "PRelu",
      // products and normalizations over static inner dimensions
      "Gemm", "MatMul", "Softmax",
      // convolutional networks over a dynamic batch
      "Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool",
      "ReduceMean", "Reshape", "Flatten",
      // transformers: layouts, embeddings, normalization, attention products
      "Transpose", "Squeeze", "Unsqueeze", "Gather", "LayerNormalization", "Pow", "Cast",
      "Slice", "Expand", "Range", "GatherElements", "Where", "IsNaN", "Gelu", "Equal",
      "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Not", "Max", "Min",
      "Concat", "GatherND", "Split", "ReduceSum", "ReduceMax", "ReduceMin",
      // recurrences over a sequence known only at run time (one loop)
      "RNN", "GRU", "LSTM",
      // sequences of known length (torch.split/chunk, unbind): Split, Concat
      "SplitToSequence", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceLength",
      "SequenceInsert", "SequenceErase", "ConcatFromSequence",
      // quantized transformers (onnxruntime's dynamic, QOperator and QDQ forms)
      "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "MatMulInteger",
      "QLinearMatMul",
      // quantized convolutional networks over a dynamic batch
      "ConvInteger", "QLinearConv"};
  return ops;
}

/// onnxruntime's com.microsoft ops of its QOperator format that take them
/// too: elementwise math and softmax on dequantized values, QGemm.
const llvm::StringSet<> &dynamicReadyContrib() {
  static const llvm::StringSet<> ops = {"QLinearAdd",     "QLinearMul",       "QLinearSigmoid",
                                        "QLinearSoftmax", "QLinearLeakyRelu", "QGemm"};
  return ops;
}

} // namespace

std::string GraphImporter::symbolFor(const std::string &input, int axis,
                                     const onnx::TensorShapeProto_Dimension *dim) {
  return dim && !dim->dim_param().empty() ? dim->dim_param()
                                          : input + "." + std::to_string(axis);
}

LogicalResult GraphImporter::collectSymbols(const onnx::GraphProto &graph,
                                            const llvm::StringSet<> &initializers) {
  // Every input first: a symbol shared by two inputs is pinned, or given a
  // range, by a flag on either, and both must see its final range.
  for (const auto &in : graph.input()) {
    if (initializers.contains(in.name()) || !in.type().has_tensor_type())
      continue;
    const auto &tt = in.type().tensor_type();
    auto given = opts.shapes.find(in.name());
    const std::vector<DimRange> *flag = given == opts.shapes.end() ? nullptr : &given->second;
    int rank = flag ? (int)flag->size() : tt.has_shape() ? tt.shape().dim_size() : 0;
    if (flag && tt.has_shape() && tt.shape().dim_size() != rank)
      continue; // inputType reports the mismatch
    for (int i = 0; i < rank; ++i) {
      const onnx::TensorShapeProto_Dimension *dim = tt.has_shape() ? &tt.shape().dim(i) : nullptr;
      if (dim && dim->has_dim_value())
        continue;
      std::string symbol = symbolFor(in.name(), i, dim);
      // Unless given, a size is 1 or more; `--dim past=0..` may allow 0 (an
      // empty KV cache).
      DimRange range = flag ? (*flag)[i] : DimRange();
      if (auto set = opts.dims.find(symbol); set != opts.dims.end())
        range = flag ? range.intersect(set->second) : set->second;
      auto [it, fresh] = symbolRanges.try_emplace(symbol, range);
      if (!fresh) // a symbol bound twice: both ranges hold
        it->second = it->second.intersect(range);
      if (it->second.empty())
        return fileError("dimension '" + symbol + "' of graph input '" + in.name() +
                         "' has no size left: the ranges given for it do not overlap");
    }
  }
  return success();
}

FailureOr<RankedTensorType> GraphImporter::inputType(const onnx::ValueInfoProto &info,
                                                     ArrayAttr &dimsAttr) {
  const std::string &name = info.name();
  if (!info.type().has_tensor_type())
    return fileError("graph input '" + name + "' is not a tensor");
  const auto &tt = info.type().tensor_type();
  Type et = onnxElementType(&ctx, tt.elem_type());
  if (!et)
    return fileError("graph input '" + name + "' has unsupported element type " +
                     onnxTypeName(tt.elem_type()));
  auto given = opts.shapes.find(name);
  const std::vector<DimRange> *flag = given == opts.shapes.end() ? nullptr : &given->second;
  if (!tt.has_shape() && !flag)
    return fileError("graph input '" + name + "' has no shape; give it with --shape " + name +
                     "=D0xD1...");
  int rank = flag ? (int)flag->size() : tt.shape().dim_size();
  if (flag && tt.has_shape() && tt.shape().dim_size() != rank)
    return fileError("--shape " + name + " has rank " + Twine(rank) +
                     ", the model declares rank " + Twine(tt.shape().dim_size()));
  SmallVector<int64_t> shape;
  SmallVector<Attribute> binding;
  bool dynamic = false;
  Builder b(&ctx);
  for (int i = 0; i < rank; ++i) {
    const onnx::TensorShapeProto_Dimension *dim = tt.has_shape() ? &tt.shape().dim(i) : nullptr;
    if (dim && dim->has_dim_value() && dim->dim_value() < 0)
      return fileError("graph input '" + name + "' has negative dimension " +
                       Twine(dim->dim_value()) + " at axis " + Twine(i));
    if (dim && dim->has_dim_value()) {
      int64_t d = dim->dim_value();
      if (flag && !(*flag)[i].contains(d))
        return fileError("--shape " + name + " sets dimension " + Twine(i) + " to " +
                         (*flag)[i].text() + ", the model fixes it to " + Twine(d));
      // A range would be silently pinned: the graph was exported for d.
      if (flag && !(*flag)[i].pinned())
        return fileError("--shape " + name + " gives dimension " + Twine(i) + " the range " +
                         (*flag)[i].text() + ", but the model fixes it to " + Twine(d) +
                         " (export it with a dynamic axis to vary it)");
      shape.push_back(d);
      binding.push_back(b.getI64IntegerAttr(d));
      continue;
    }
    // Its symbol's range, from every input that has it (collectSymbols).
    std::string symbol = symbolFor(name, i, dim);
    const DimRange &range = symbolRanges.at(symbol);
    if (range.pinned()) {
      shape.push_back(range.min);
      binding.push_back(b.getI64IntegerAttr(range.min));
      continue;
    }
    shape.push_back(ShapedType::kDynamic);
    binding.push_back(b.getStringAttr(symbol));
    dynamic = true;
  }
  dimsAttr = dynamic ? b.getArrayAttr(binding) : ArrayAttr();
  return RankedTensorType::get(shape, et);
}

LogicalResult GraphImporter::checkDimSymbols(ModuleOp module) {
  // What the model's slices require of a symbol narrows its range.
  for (const auto &[symbol, req] : shapes.requirements()) {
    auto it = symbolRanges.find(symbol);
    if (it == symbolRanges.end())
      continue;
    DimRange &r = it->second;
    DimRange need{std::max<int64_t>(req.second, 0),
                  req.first == INT64_MAX ? DimRange::kUnbounded : req.first};
    DimRange met = r.intersect(need);
    if (met.empty())
      return fileError("dimension '" + symbol + "' is given the range " + r.text() +
                       ", and the model needs it in " + need.text());
    r = met;
  }
  for (const auto &[symbol, range] : opts.dims)
    if (!symbolRanges.count(symbol)) {
      std::string known;
      for (const auto &[s, r] : symbolRanges)
        known += (known.empty() ? "" : ", ") + s;
      return fileError("--dim names '" + symbol + "', which no graph input dimension has" +
                       (known.empty() ? std::string(" (every dimension is static)")
                                      : " (dynamic: " + known + ")"));
    }
  SmallVector<NamedAttribute> ranges;
  Builder b(&ctx);
  for (const auto &[symbol, range] : symbolRanges)
    if (!range.pinned())
      ranges.push_back(b.getNamedAttr(symbol, b.getDenseI64ArrayAttr({range.min, range.max})));
  if (!ranges.empty())
    module->setAttr(KilnDialect::getDimRangesAttrName(), b.getDictionaryAttr(ranges));
  return success();
}

/// Forms of the ready ops whose lowering still reshapes statically: a
/// Softmax before opset 13 (flattened to 2-D), a MatMul with a vector
/// operand, a convolution or pooling over dynamic spatial axes (only the
/// batch may vary: window sizes and pads are computed at compile time).
static bool staticOnlyForm(const NodeContext &nc, const onnx::NodeProto &node,
                           const llvm::StringMap<GraphValue> &values) {
  if (node.op_type() == "Softmax")
    return nc.opset < 13;
  auto typeOf = [&](const std::string &name) {
    auto it = values.find(name);
    return it == values.end() || !it->second.value
               ? RankedTensorType()
               : dyn_cast<RankedTensorType>(it->second.value.getType());
  };
  static const llvm::StringSet<> windowed = {"Conv", "MaxPool", "AveragePool", "ConvInteger",
                                             "QLinearConv"};
  if (windowed.contains(node.op_type()) && node.input_size() > 0) {
    auto x = typeOf(node.input(0));
    if (!x || llvm::any_of(x.getShape().drop_front(std::min<int64_t>(x.getRank(), 2)),
                           ShapedType::isDynamic))
      return true;
    // A convolution's weights and bias: static.
    for (int i = 1; i < node.input_size(); ++i)
      if (auto t = typeOf(node.input(i)); t && !t.hasStaticShape())
        return true;
    return false;
  }
  if (node.op_type() != "MatMul" || node.input_size() != 2)
    return false;
  auto a = typeOf(node.input(0)), b = typeOf(node.input(1));
  return !a || !b || a.getRank() < 2 || b.getRank() < 2;
}

LogicalResult GraphImporter::checkDynamicSupport(NodeContext &nc, const onnx::NodeProto &node) {
  if (isDefaultDomain(node.domain()) && dynamicReady().contains(node.op_type()) &&
      !staticOnlyForm(nc, node, values))
    return success(); // a dynamic dimension met against a static one: kiln-unify-dims pins it
  if (node.domain() == "com.microsoft" && dynamicReadyContrib().contains(node.op_type()))
    return success();
  for (const auto &in : node.input()) {
    auto it = values.find(in);
    if (in.empty() || it == values.end() || !it->second.value)
      continue;
    auto t = dyn_cast<RankedTensorType>(it->second.value.getType());
    if (t && !t.hasStaticShape())
      return nc.error("input '" + in + "' has dynamic shape " + shapeText(t.getShape()) +
                      ", and this op takes only static shapes so far; pin the model's "
                      "dynamic dimensions with --shape NAME=D0xD1... or --dim SYMBOL=N");
  }
  return success();
}

} // namespace kiln
