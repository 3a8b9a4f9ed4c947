//===- SymbolicShape.h - dynamic dimensions in shape arithmetic -*- C++ -*-===//
//
// Exporters compute reshape targets from Shape: `Concat(Shape(x)[1],
// Shape(x)[0] * 4, 16)`. With dynamic dimensions those elements are not
// numbers but sizes known at run time. The importer keeps each as a
// polynomial (DimPoly) over atoms, the dynamic dimensions of values, so
// products and exact quotients simplify (B * 4 / 4 is B) and a reshape's
// dynamic size is materialized once, as index arithmetic on `tensor.dim`s,
// only where an op needs it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_SYMBOLICSHAPE_H
#define KILN_LIB_LOWERING_ONNXTOKILN_SYMBOLICSHAPE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// A size: a sum of coefficient x product of atoms (ids of ShapeSymbols'
/// atoms, sorted; a repeated id is a power). Arithmetic that would
/// overflow, or a quotient that is not exact, has no result.
class DimPoly {
public:
  using Term = llvm::SmallVector<int32_t, 2>;

  static DimPoly constant(int64_t c);
  static DimPoly atom(int32_t id);

  std::optional<int64_t> constantValue() const;
  bool operator==(const DimPoly &o) const { return terms == o.terms; }
  bool operator!=(const DimPoly &o) const { return terms != o.terms; }

  std::optional<DimPoly> plus(const DimPoly &o) const;
  std::optional<DimPoly> minus(const DimPoly &o) const;
  std::optional<DimPoly> times(const DimPoly &o) const;
  /// This / o when o divides every term (a constant or a single term), or
  /// when they are equal.
  std::optional<DimPoly> exactDiv(const DimPoly &o) const;

  const std::map<Term, int64_t> &getTerms() const { return terms; }

private:
  /// Adds c x term; false on overflow.
  bool add(const Term &term, int64_t c);

  std::map<Term, int64_t> terms; // no zero coefficients
};

/// The importer's symbolic sizes: the table of polynomials that known
/// tensors' symbolic elements index, the atoms, and what is known of each
/// dynamic value's dimensions.
class ShapeSymbols {
public:
  /// Index of `p` in the table (KnownTensor::syms holds these).
  int32_t intern(const DimPoly &p);
  const DimPoly &poly(int32_t index) const { return polys[index]; }

  /// Dimension `axis` of `v`: its size when static; the polynomial a
  /// reshape recorded or one traced through ops that keep it (transpose,
  /// elementwise, softmax...); a graph input's symbol; else an atom of its
  /// own (`tensor.dim`, built right after `v` is defined).
  DimPoly dimOf(mlir::OpBuilder &b, mlir::Value v, int64_t axis);
  /// A size computed at run time (`index` is its value, at the builder's
  /// point): an atom of its own, for what polynomials cannot say (a
  /// quotient that is not exact).
  DimPoly opaque(mlir::Value index);
  /// Records the dimensions of `v` (a reshape's result).
  void record(mlir::Value v, llvm::ArrayRef<DimPoly> dims);

  /// `p` as an index value at the builder's point: a dimension of `like`
  /// equal to it when there is one (so lowering sees the dimension kept),
  /// else arithmetic on the atoms.
  mlir::Value materialize(mlir::OpBuilder &b, mlir::Location loc, const DimPoly &p,
                          mlir::Value like = {});

  /// What the model requires of a size that is a graph input's symbol
  /// (slicing a static axis to it, or a fixed length out of it): its range
  /// narrows to that, checked at run time. False when `p` is not a symbol.
  bool requireAtMost(const DimPoly &p, int64_t max);
  bool requireAtLeast(const DimPoly &p, int64_t min);
  /// Per symbol, the (lowest maximum, highest minimum) the model required.
  const std::map<std::string, std::pair<int64_t, int64_t>> &requirements() const {
    return required;
  }

private:
  std::optional<std::string> symbolOf(const DimPoly &p) const;
  int32_t atomFor(mlir::OpBuilder &b, mlir::Value v, int64_t axis);
  std::optional<DimPoly> traced(mlir::OpBuilder &b, mlir::Value v, int64_t axis);

  std::vector<DimPoly> polys;
  std::vector<mlir::Value> atoms; // index values
  llvm::DenseMap<std::pair<mlir::Value, int64_t>, int32_t> atomIds;
  llvm::StringMap<int32_t> symbolAtoms; // graph inputs' symbols
  llvm::DenseMap<mlir::Value, llvm::SmallVector<DimPoly>> shapes;
  std::map<std::string, std::pair<int64_t, int64_t>> required;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_SYMBOLICSHAPE_H
