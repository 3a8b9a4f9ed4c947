//===- Passes.h - passes over the kiln dialect ------------------*- C++ -*-===//

#ifndef KILN_DIALECTS_KILN_TRANSFORMS_PASSES_H
#define KILN_DIALECTS_KILN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
}

namespace kiln {
/// kiln-sink-transposes' patterns for f32 depthwise convolutions: one
/// reading the NHWC -> NCHW permute of an image, or read by the NCHW ->
/// NHWC permute, runs channels last (SinkTransposeConvs.cpp).
void populateChannelsLastConvPatterns(mlir::RewritePatternSet &patterns);

#define GEN_PASS_DECL
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

#endif // KILN_DIALECTS_KILN_TRANSFORMS_PASSES_H
