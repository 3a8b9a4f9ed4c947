//===- ModelFile.h - reading ONNX model files (importer internals) -*- C++ -*-===//
//
// Shared by the importer (OnnxImporter.cpp) and the model descriptions
// (ModelInfo.cpp: kiln inspect, the support report, the graph drawing).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_MODELFILE_H
#define KILN_LIB_LOWERING_ONNXTOKILN_MODELFILE_H

#include "NodeContext.h"

#include <string>

namespace kiln {

/// The op handlers of every category, by ONNX op type.
const HandlerTable &handlers();

bool isDefaultDomain(const std::string &domain);
/// The handler table's key of a node: its op type, prefixed by "domain::"
/// outside the default domain.
std::string handlerKey(const onnx::NodeProto &node);

/// A node's name for messages; exporters may leave it empty, then the name
/// of its first output identifies it.
std::string nodeName(const onnx::NodeProto &node);

/// Parses a model held in memory (ONNX text syntax when `path` ends in
/// .onnxtxt); on failure `error` says why.
bool parseModel(const std::string &bytes, const std::string &path, onnx::ModelProto &model,
                std::string &error);

/// Reads and parses the file; on failure `error` says why.
bool loadModel(const std::string &path, onnx::ModelProto &model, std::string &error);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_MODELFILE_H
