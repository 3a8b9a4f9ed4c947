//===- Passes.h - passes over the kiln dialect ------------------*- C++ -*-===//

#ifndef KILN_DIALECTS_KILN_TRANSFORMS_PASSES_H
#define KILN_DIALECTS_KILN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace kiln {
#define GEN_PASS_DECL
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

#endif // KILN_DIALECTS_KILN_TRANSFORMS_PASSES_H
