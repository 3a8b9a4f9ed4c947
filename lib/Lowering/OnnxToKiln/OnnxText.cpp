//===- OnnxText.cpp - the ONNX textual model format -----------------------===//
//
// `.onnxtxt` files hold a model in ONNX's textual syntax (onnx::OnnxParser),
// so lit tests and bug reports can carry a model inline and readable.
// Kept in its own file: the parser header pulls in <stdexcept> and friends.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"

#include <onnx/defs/parser.h>

namespace kiln {

bool parseOnnxText(const std::string &text, onnx::ModelProto &model, std::string &error) {
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) {
    error = "cannot parse ONNX text: " + status.ErrorMessage();
    return false;
  }
  return true;
}

} // namespace kiln
