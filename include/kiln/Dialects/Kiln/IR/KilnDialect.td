//===- KilnDialect.td - the kiln tensor dialect ------------*- tablegen -*-===//
//
// Kiln's graph-level dialect: value-semantics ops on builtin ranked tensors,
// close to ONNX and core ATen, so importers map 1:1 and fusion sees whole ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let summary = "Kiln's tensor-level graph dialect";
  let description = [{
    Ops of an imported neural network graph. Every op takes and returns
    builtin ranked tensors with static shapes, infers its result types, and
    follows numpy broadcasting where ONNX does.
  }];
  let cppNamespace = "::kiln";
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 0;
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_DIALECT_TD
