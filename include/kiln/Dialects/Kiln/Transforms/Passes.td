//===- Passes.td - passes over the kiln dialect ------------*- tablegen -*-===//

#ifndef KILN_DIALECTS_KILN_TRANSFORMS_PASSES_TD
#define KILN_DIALECTS_KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnSignless : Pass<"kiln-signless", "::mlir::ModuleOp"> {
  let summary = "replaces unsigned integer types by signless ones, marking the ops";
  let description = [{
    The importer keeps ONNX's unsigned types (`ui8`...) so that the ops'
    semantics are visible; arith and linalg want signless integers. This
    pass retypes every value, constant and function signature to signless
    and marks the ops whose meaning depends on signedness with the unit
    attribute `kiln.unsigned` (div, mod, max/min, comparisons, reductions,
    argmax/argmin, bitshift), and casts with `kiln.unsigned_in` /
    `kiln.unsigned_out`, which the lowering reads.
  }];
}

#endif // KILN_DIALECTS_KILN_TRANSFORMS_PASSES_TD
