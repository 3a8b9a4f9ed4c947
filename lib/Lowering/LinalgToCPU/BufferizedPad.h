//===- BufferizedPad.h - a tensor.pad after bufferization -------*- C++ -*-===//
//
// One-shot bufferization writes a tensor.pad as a fill of a new buffer and
// a copy of the image into a window of it. kiln-pad-copies writes such a
// pair row by row; kiln-implicit-padding removes it where convolutions can
// read the image itself.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_BUFFERIZEDPAD_H
#define KILN_LIB_LOWERING_LINALGTOCPU_BUFFERIZEDPAD_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace kiln {

struct BufferizedPad {
  mlir::Operation *fill;    // a linalg.fill or map of all of `padded`
  mlir::linalg::CopyOp copy; // `source` into the window at `low`
  mlir::Value padded, source;
  llvm::SmallVector<int64_t> low;
  mlir::Value value; // the padding value
};

/// The pad `copy` completes: `padded` static but for an unpadded batch,
/// identity layout, the window's offsets static, the fill right before.
std::optional<BufferizedPad> matchBufferizedPad(mlir::linalg::CopyOp copy);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_BUFFERIZEDPAD_H
