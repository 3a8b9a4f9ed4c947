//===- KilnOps.h - kiln dialect operations ----------------------*- C++ -*-===//
//
// Generated op classes of the kiln dialect.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_IR_KILNOPS_H
#define KILN_DIALECTS_KILN_IR_KILNOPS_H

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialects/Kiln/IR/GradBuilder.h"
#include "kiln/Dialects/Kiln/IR/KilnInterfaces.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialects/Kiln/IR/KilnOps.h.inc"

#endif // KILN_DIALECTS_KILN_IR_KILNOPS_H
