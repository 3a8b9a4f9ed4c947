//===- FoldIntegerRoundTrips.h - float -> int -> float of integers -*- C++ -*-===//
//
// uitofp(fptoui(v)) and sitofp(fptosi(v)) are v itself where v is known
// to be a whole number within the integer type's range: a quantize's
// rounded, shifted and clamped value read back by the dequantize after it
// (QDQ models' fake-quant pairs, a quantized op's requantized output).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_FUSION_FOLDINTEGERROUNDTRIPS_H
#define KILN_LIB_LOWERING_FUSION_FOLDINTEGERROUNDTRIPS_H

#include "mlir/IR/PatternMatch.h"

namespace kiln {
void populateFoldIntegerRoundTripsPatterns(mlir::RewritePatternSet &patterns);
} // namespace kiln

#endif // KILN_LIB_LOWERING_FUSION_FOLDINTEGERROUNDTRIPS_H
