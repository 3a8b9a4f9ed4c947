//===- ImageKernels.h - kernels that may run image by image -----*- C++ -*-===//
//
// What kiln-image-chains asks of a top-level kernel of @main: the images
// its first loop goes over (a count, or a dynamic batch's size), and
// whether it touches the buffers of @main only at the image of that loop.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_IMAGEKERNELS_H
#define KILN_LIB_LOWERING_LINALGTOCPU_IMAGEKERNELS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace kiln {

/// The images a run goes over: a static count, or (count dynamic) a
/// dynamic batch, `size` the buffer or value its loops' bound measures.
struct Images {
  int64_t count = 0;
  mlir::Value size;
  bool dynamic() const { return mlir::ShapedType::isDynamic(count); }
  bool operator==(const Images &o) const { return count == o.count && size == o.size; }
  bool operator!=(const Images &o) const { return !(*this == o); }
  /// Whether `t`, a view of the images' buffers, has them in dimension 0.
  bool sized(mlir::MemRefType t) const {
    return t.getRank() > 0 && (dynamic() ? t.isDynamicDim(0) : t.getDimSize(0) == count);
  }
};

/// A kernel of @main that may run image by image, with the bytes each of
/// its images touches and those of its weights.
struct Kernel {
  mlir::Operation *op; // an scf.parallel, or a linalg.generic not tiled
  int64_t imageBytes = 0, weightBytes = 0;
};

/// The bytes of one image of `t` (its dimensions after the first static),
/// or -1.
int64_t imageBytesOf(mlir::MemRefType t);

/// The first operand of `op` read at the image of its first loop (its
/// dimension 0 that loop), or null.
mlir::Value imageOperand(mlir::linalg::GenericOp op);

/// The images a top-level op's first loop goes over, if it has such loops.
std::optional<Images> imagesOf(mlir::Operation *op);

/// The kernel `op` is over `images` (every buffer of @main it uses besides
/// globals used only at the image of its first loop, its weights small
/// beside its images' bytes), or none.
std::optional<Kernel> asKernel(mlir::Operation *op, const Images &images);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_IMAGEKERNELS_H
