//===- ModelInfo.cpp - describing an ONNX model without compiling it -----===//
//
// `kiln inspect MODEL` (inputs, outputs, op histogram), the support report,
// the graph for `--graph`, the list of supported ops and their limits.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "ModelFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <map>
#include <set>
#include <sstream>

using namespace mlir;

namespace kiln {

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
    if (!handlers().count(handlerKey(node))) {
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
      {"MaxPool", "1-D, 2-D and 3-D; floating-point and 8-bit integers; the Indices output in 2-D"},
      {"AveragePool", "1-D, 2-D and 3-D; no dilations"},
      {"BatchNormalization", "training_mode=1 computes batch statistics and running statistics"},
      {"Dropout", "training mode (training_mode=1, or --train): counter-based random mask, not "
                  "numpy's stream; training_mode or ratio given as data outside --train"},
      {"RoiAlign", "avg and max; each output's sample grid read from the boxes at run time (loops "
                   "per element)"},
      {"Det", "matrices of a size known at compile time; Gaussian elimination with partial "
              "pivoting in f64, one matrix after another"},
      {"Pad", "modes constant, reflect, edge (not wrap)"},
      {"Pow", "integer bases computed in f64"},
      {"QuantizeLinear", "integer quantized types"},
      {"Einsum", "one or two operands"},
      {"TopK", "k known at compile time: k rounds of argmax; else a selection by rank "
               "(quadratic in the axis's length)"},
      {"RNN", "forward, reverse and bidirectional, default activations; one loop over a "
              "sequence of any length (the input projection one matmul over all steps); "
              "sequence_lens in every direction (a reverse one starts at each sequence's end)"},
      {"GRU", "forward, reverse and bidirectional, default activations; one loop over a "
              "sequence of any length (the input projection one matmul over all steps); "
              "sequence_lens in every direction (a reverse one starts at each sequence's end)"},
      {"LSTM", "forward, reverse and bidirectional, peepholes, default activations; one loop "
               "over a sequence of any length (the input projection one matmul over all "
               "steps); sequence_lens in every direction (a reverse one starts at each "
               "sequence's end)"},
      {"Mod", "floating-point needs fmod=1"},
      {"LpNormalization", "p = 1 or 2"},
      {"LayerNormalization", "stash_type=1"},
      {"Reshape", "any shape; one known only at run time sizes the output there"},
      {"Slice", "any starts/ends/axes/steps; ones known only at run time gather (a "
                "copy), their output sized there"},
      {"Split", "any split sizes (their count is the outputs')"},
      {"Squeeze", "any axes (their count fixes the rank)"},
      {"Unsqueeze", "any axes (their count fixes the rank)"},
      {"Expand", "any shape (its length fixes the rank)"},
      {"Tile", "any repeats"},
      {"Trilu", "any k"},
      {"OneHot", "any depth"},
      {"CumSum", "any axis; quadratic along the axis"},
      {"Range", "any start, limit and delta (a length known only at run time sizes the "
                "output there)"},
      {"SplitToSequence", "the split axis's size known at compile time"},
      {"SequenceAt", "position known at compile time"},
      {"SequenceInsert", "position known at compile time"},
      {"SequenceErase", "position known at compile time"},
      {"ConcatFromSequence", "a sequence of one tensor or more"},
      {"NonZero", "rank 1 or more; a counting loop, then a filling loop"},
      {"Compress", "a counting loop, then a gather"},
      {"Unique", "static input; loops over the elements or slices (quadratic in their count)"},
      {"NonMaxSuppression", "f32; greedy selection as loops (the order a counting sort, "
                            "quadratic in the boxes)"},
      {"Shape", "folded at import (dynamic dimensions as sizes known at run time)"},
      {"Size", "folded at import (dynamic dimensions as sizes known at run time)"},
      {"ConstantOfShape", "any shape (its length fixes the rank)"},
      {"Softmax", "opset < 13: 2-D coercion at axis"},
      {"LogSoftmax", "opset < 13: 2-D coercion at axis"},
      {"Hardmax", "opset < 13: 2-D coercion at axis"},
      {"Cast", "no string types"},
      {"Resize", "nearest/linear/cubic; no antialias or half_pixel_symmetric"},
      {"Upsample", "nearest/linear, asymmetric coordinates"},
      {"ConvTranspose", "1-D, 2-D and 3-D"},
      {"NegativeLogLikelihoodLoss", "targets within [0, C) or ignore_index"},
      {"MatMulInteger", "exact; uint8 x constant int8 on AVX512-VNNI or AVX2 where the CPU "
                        "has it (--int8-arith=saturate on AVX2: onnxruntime's saturated 16-bit "
                        "pairs), else as exact f32 chunks"},
      {"QLinearMatMul", "exact; uint8 x constant int8 on AVX512-VNNI or AVX2 where the CPU has "
                        "it (--int8-arith=saturate on AVX2: onnxruntime's saturated 16-bit "
                        "pairs), else as exact f32 chunks; a depth known only at run time up to "
                        "4112"},
      {"ConvInteger", "exact; uint8 x constant int8 channels last where the CPU has an "
                      "8-bit tile: group 1 or depthwise on AVX512-VNNI, group 1 on AVX2 in a "
                      "graph without grouped convolutions (--int8-arith=saturate there: "
                      "onnxruntime's saturated 16-bit pairs); else accumulated in f32, exact "
                      "while partial sums stay below 2^24, but for 3x3 ones of 64 channels "
                      "or more, which Winograd rounds (--no-winograd keeps them exact)"},
      {"QLinearConv", "exact; uint8 x constant int8 channels last where the CPU has an "
                      "8-bit tile: group 1 or depthwise on AVX512-VNNI, group 1 on AVX2 in a "
                      "graph without grouped convolutions (--int8-arith=saturate there: "
                      "onnxruntime's saturated 16-bit pairs); else accumulated in f32, exact "
                      "while partial sums stay below 2^24, but for 3x3 ones of 64 channels "
                      "or more, which Winograd rounds (--no-winograd keeps them exact)"},
      {"HannWindow", "any size"},
      {"HammingWindow", "any size"},
      {"BlackmanWindow", "any size"},
      {"LRN", "rank 3 or more"},
      {"If", "a condition known at compile time imports the taken branch; else scf.if (the "
             "branches' outputs of one rank and type)"},
      {"Loop", "trip count (up to 32) and condition known at compile time: unrolled; else "
               "scf.while (scan outputs need the trip count M), the host program's loop on CUDA "
               "too (a condition computed on the device is read back)"},
      {"Scan", "one loop over the steps (scan outputs of static shape); opset 8 (batch "
               "first): a loop per batch element, no sequence_lens"},
      {"DFT", "as products with cosine/sine tables (quadratic in the length); no inverse one-sided (irfft); dft_length and axis known at compile time"},
      {"STFT", "frame_step and frame_length known at compile time: framed products; else "
               "each output summed over its frame in a loop"},
      {"MelWeightMatrix", "a constant when its inputs are; else each weight computed at run time"},
      {"MaxUnpool", "an output_shape given as data needs X and I of static shapes"},
      {"GridSample", "2-D; cubic with border padding clamps each tap (as PyTorch and onnxruntime)"},
      {"com.microsoft::QLinearAdd", "per-tensor scales"},
      {"com.microsoft::QLinearMul", "per-tensor scales"},
      {"com.microsoft::QLinearGlobalAveragePool", "per-tensor scales; channels_last=0"},
      {"com.microsoft::QLinearAveragePool", "per-tensor scales; channels_last=0"},
      {"com.microsoft::QLinearConcat", "per-tensor scales"},
      {"com.microsoft::QLinearSigmoid", "per-tensor scales"},
      {"com.microsoft::QLinearLeakyRelu", "per-tensor scales"},
      {"com.microsoft::QLinearSoftmax", "per-tensor scales; opset < 13 only over the last axis"},
      {"com.microsoft::QGemm", "B's scale and zero point per tensor or per column"},
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
