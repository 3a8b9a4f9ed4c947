//===- ImportInputs.cpp - what `kiln compile` hands the importer ----------===//
//
// The command line's inputs to the ONNX import: fixed shapes, inputs made
// constants (--const-input NAME=FILE), initializer values from a folder of
// .npy files (--params), and whether initializers are parameters to train.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"

#include "kiln/Lowering/Artifact/Compiler.h"
#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "kiln/tensor_io.hpp"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace kiln {

/// A tensor file's contents as an ONNX-typed constant.
static bool readConstant(const std::string &file, ConstInput &out, std::string &error) {
  HostTensor t;
  if (!readTensorFile(file, t, error))
    return false;
  static const int32_t onnxTypes[] = {1, 11, 10, 16, 3, 5, 6, 7, 2, 9, 4, 12, 13}; // by kiln_dtype_t
  out = ConstInput{onnxTypes[t.dtype], t.shape, std::string(t.data.begin(), t.data.end())};
  return true;
}

bool gatherImportOptions(const CompileOptions &opts, ImportOptions &out, std::string &error) {
  out.shapes = opts.shapes;
  out.dims = opts.dims;
  for (const auto &[name, file] : opts.constInputs)
    if (!readConstant(file, out.constInputs[name], error)) {
      error = "--const-input " + name + ": " + error;
      return false;
    }
  if (!opts.params.empty()) {
    if (!llvm::sys::fs::is_directory(opts.params)) {
      error = "--params " + opts.params + ": not a folder";
      return false;
    }
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(opts.params, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef file = it->path();
      if (!file.ends_with(".npy"))
        continue;
      std::string name = llvm::sys::path::stem(file).str();
      if (!readConstant(file.str(), out.initializerValues[name], error)) {
        error = "--params: " + error;
        return false;
      }
    }
  }
  out.trainable = opts.train;
  return true;
}

} // namespace kiln
