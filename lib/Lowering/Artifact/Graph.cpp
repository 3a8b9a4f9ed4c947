//===- Graph.cpp - `kiln inspect MODEL --graph=FILE.dot`: the fusion plan --===//
//
// Compiles the model up to the kernels (no code generation), then draws the
// ONNX graph with each kernel as a cluster of the nodes whose code it
// holds. A node split over several kernels (a Gemm: fill, product, bias)
// sits in the one it shares with the most other nodes and is marked
// "xN kernels"; nodes in no kernel (folded shape arithmetic, reshapes that
// became views) stay outside, dashed.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

namespace kiln {
namespace {

std::string dotQuote(const std::string &s) {
  std::string out = "\"";
  for (char c : s)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

} // namespace

bool writeFusionGraph(const std::string &model, const std::string &kernelTable,
                      llvm::raw_ostream &os, std::string &error) {
  std::vector<OnnxNodeInfo> nodes;
  std::vector<std::string> inputs, outputs;
  if (!onnxGraphNodes(model, nodes, inputs, outputs, error))
    return false;
  // Kernels and the node labels in each.
  std::vector<std::pair<std::string, std::vector<std::string>>> kernels;
  for (llvm::StringRef line : llvm::split(kernelTable, '\n')) {
    if (line.empty())
      continue;
    auto [name, rest] = line.split('\t');
    std::vector<std::string> labels;
    for (llvm::StringRef l : llvm::split(rest, '\t'))
      if (!l.empty())
        labels.push_back(l.str());
    kernels.push_back({name.str(), labels});
  }
  llvm::StringMap<int> home, count; // label -> kernel index, kernels holding it
  for (size_t k = 0; k < kernels.size(); ++k)
    for (const auto &label : kernels[k].second) {
      ++count[label];
      auto it = home.find(label);
      if (it == home.end() || kernels[k].second.size() > kernels[it->second].second.size())
        home[label] = k;
    }

  os << "// The fusion plan of " << model << ": clusters are kernels.\n"
     << "digraph kiln {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
        "fillcolor=white, fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=gray40];\n";
  auto nodeLine = [&](size_t i) {
    const OnnxNodeInfo &n = nodes[i];
    std::string label = n.opType + "\\n" + n.name;
    auto c = count.find(n.label);
    if (c != count.end() && c->second > 1)
      label += "\\n\u00d7" + std::to_string(c->second) + " kernels";
    std::string style = c == count.end() ? ", style=\"rounded,dashed\"" : "";
    return "n" + std::to_string(i) + " [label=\"" + label + "\"" + style + "];";
  };
  std::map<int, std::vector<size_t>> members;
  std::vector<size_t> loose;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto it = home.find(nodes[i].label);
    if (it == home.end())
      loose.push_back(i);
    else
      members[it->second].push_back(i);
  }
  for (const auto &[k, list] : members) {
    bool parallel = kernels[k].first.find("_task") != std::string::npos;
    os << "  subgraph cluster_" << k << " {\n    label=" << dotQuote(kernels[k].first +
                                                                     (parallel ? " (parallel)" : ""))
       << "; style=\"rounded,filled\"; fillcolor=\"" << (parallel ? "#dbe8fb" : "#eef2f7")
       << "\"; fontname=\"Helvetica\"; fontsize=9;\n";
    for (size_t i : list)
      os << "    " << nodeLine(i) << "\n";
    os << "  }\n";
  }
  for (size_t i : loose)
    os << "  " << nodeLine(i) << "\n";
  // Edges: from the node (or graph input) defining a value to its users.
  std::map<std::string, std::string> producer;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string id = "in" + std::to_string(i);
    os << "  " << id << " [label=" << dotQuote(inputs[i]) << ", shape=ellipse];\n";
    producer[inputs[i]] = id;
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto &out : nodes[i].outputs)
      producer[out] = "n" + std::to_string(i);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto &in : nodes[i].inputs) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end())
        os << "  " << it->second << " -> n" << i << ";\n";
    }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string id = "out" + std::to_string(i);
    os << "  " << id << " [label=" << dotQuote(outputs[i]) << ", shape=ellipse];\n";
    auto it = producer.find(outputs[i]);
    if (it != producer.end())
      os << "  " << it->second << " -> " << id << ";\n";
  }
  os << "}\n";
  return true;
}

} // namespace kiln
