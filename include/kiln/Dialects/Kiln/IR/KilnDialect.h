//===- KilnDialect.h - the kiln dialect -------------------------*- C++ -*-===//
//
// Kiln's graph dialect: value-semantics ops on builtin ranked tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_IR_KILNDIALECT_H
#define KILN_DIALECTS_KILN_IR_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "kiln/Dialects/Kiln/IR/KilnDialect.h.inc"

#endif // KILN_DIALECTS_KILN_IR_KILNDIALECT_H
