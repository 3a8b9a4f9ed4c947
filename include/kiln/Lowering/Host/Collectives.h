//===- Collectives.h - collectives through bufferization --------*- C++ -*-===//
//
// kiln.all_reduce survives the lowering to linalg as an op of its own; this
// model bufferizes it in place (kiln.all_reduce_in_place on its operand's
// buffer, copied first where the operand is still read after it).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_HOST_COLLECTIVES_H
#define KILN_LOWERING_HOST_COLLECTIVES_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace kiln {

/// Attaches the bufferization model of kiln.all_reduce.
void registerCollectiveBufferization(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_LOWERING_HOST_COLLECTIVES_H
