//===- ConstantData.h - the bytes behind a constant tensor ------*- C++ -*-===//
//
// Compile-time data movement of weights (pretransposing, slicing, packing)
// reads a constant's bytes, whether it is inline (dense) or a resource blob
// (an initializer).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_IR_CONSTANTDATA_H
#define KILN_DIALECTS_KILN_IR_CONSTANTDATA_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace kiln {

/// The row-major bytes of a constant's value; empty for a splat or a
/// resource without its blob (no data to move).
inline llvm::ArrayRef<char> constantData(mlir::Attribute value) {
  if (auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value)) {
    auto *blob = resource.getRawHandle().getBlob();
    return blob ? blob->getData() : llvm::ArrayRef<char>();
  }
  if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(value); dense && !dense.isSplat())
    return dense.getRawData();
  return {};
}

/// A constant of `type` holding the row-major `bytes`: a resource blob
/// named `name`, but inline for a single element, since the LLVM lowering
/// of a scalar global unpacks its one value, which a resource cannot give.
inline mlir::ElementsAttr bytesAttr(mlir::RankedTensorType type, llvm::StringRef name,
                                    llvm::ArrayRef<char> bytes) {
  if (type.getNumElements() == 1 && !type.getElementType().isInteger(1))
    return llvm::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::getFromRawBuffer(type, bytes));
  auto blob = mlir::HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(std::max_align_t));
  return llvm::cast<mlir::ElementsAttr>(
      mlir::DenseResourceElementsAttr::get(type, name, std::move(blob)));
}

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_CONSTANTDATA_H
