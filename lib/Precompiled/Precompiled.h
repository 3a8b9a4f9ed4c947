// The MLIR headers most of Kiln's compiler sources include, parsed once per
// build into a precompiled header (lib/Precompiled/CMakeLists.txt). Parsing
// and instantiating them is most of a source file's compile time: with the
// header a typical pass compiles 2-3x faster. Only MLIR's and LLVM's own
// headers belong here: they change with the toolchain, not with Kiln, so
// editing Kiln never rebuilds the header.
#ifndef KILN_PRECOMPILED_H
#define KILN_PRECOMPILED_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#endif // KILN_PRECOMPILED_H
