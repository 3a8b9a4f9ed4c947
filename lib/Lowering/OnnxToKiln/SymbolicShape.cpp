//===- SymbolicShape.cpp - polynomials over dynamic dimensions ------------===//

#include "SymbolicShape.h"

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln {

DimPoly DimPoly::constant(int64_t c) {
  DimPoly p;
  if (c)
    p.terms[{}] = c;
  return p;
}

DimPoly DimPoly::atom(int32_t id) {
  DimPoly p;
  p.terms[{id}] = 1;
  return p;
}

std::optional<int64_t> DimPoly::constantValue() const {
  if (terms.empty())
    return 0;
  if (terms.size() == 1 && terms.begin()->first.empty())
    return terms.begin()->second;
  return std::nullopt;
}

bool DimPoly::add(const Term &term, int64_t c) {
  int64_t &sum = terms[term];
  if (__builtin_add_overflow(sum, c, &sum))
    return false;
  if (!sum)
    terms.erase(term);
  return true;
}

std::optional<DimPoly> DimPoly::plus(const DimPoly &o) const {
  DimPoly r = *this;
  for (const auto &[term, c] : o.terms)
    if (!r.add(term, c))
      return std::nullopt;
  return r;
}

std::optional<DimPoly> DimPoly::minus(const DimPoly &o) const {
  std::optional<DimPoly> neg = o.times(constant(-1));
  return neg ? plus(*neg) : std::nullopt;
}

std::optional<DimPoly> DimPoly::times(const DimPoly &o) const {
  // Shape arithmetic multiplies a few sizes; a product growing past this
  // (a crafted model squaring sums) is given up on, not expanded.
  constexpr size_t kMaxTerms = 64, kMaxDegree = 16;
  if (terms.size() * o.terms.size() > kMaxTerms)
    return std::nullopt;
  DimPoly r;
  for (const auto &[ta, ca] : terms)
    for (const auto &[tb, cb] : o.terms) {
      Term t = ta;
      t.append(tb.begin(), tb.end());
      if (t.size() > kMaxDegree)
        return std::nullopt;
      llvm::sort(t);
      int64_t c;
      if (__builtin_mul_overflow(ca, cb, &c) || !r.add(t, c))
        return std::nullopt;
    }
  return r;
}

std::optional<DimPoly> DimPoly::exactDiv(const DimPoly &o) const {
  if (*this == o && !terms.empty())
    return constant(1);
  if (o.terms.size() != 1 || o.terms.begin()->second == 0)
    return std::nullopt;
  const auto &[divTerm, divCoef] = *o.terms.begin();
  DimPoly r;
  for (const auto &[term, c] : terms) {
    if ((divCoef == -1 && c == INT64_MIN) || c % divCoef) // (the one quotient that overflows)
      return std::nullopt;
    // The divisor's atoms, each taken out of the term once.
    Term rest = term;
    for (int32_t a : divTerm) {
      auto it = llvm::find(rest, a);
      if (it == rest.end())
        return std::nullopt;
      rest.erase(it);
    }
    r.terms[rest] = c / divCoef;
  }
  return r;
}

int32_t ShapeSymbols::intern(const DimPoly &p) {
  for (size_t i = 0; i < polys.size(); ++i)
    if (polys[i] == p)
      return i;
  polys.push_back(p);
  return polys.size() - 1;
}

DimPoly ShapeSymbols::opaque(Value index) {
  atoms.push_back(index);
  return DimPoly::atom(atoms.size() - 1);
}

void ShapeSymbols::record(Value v, ArrayRef<DimPoly> dims) {
  shapes[v] = SmallVector<DimPoly>(dims.begin(), dims.end());
}

int32_t ShapeSymbols::atomFor(OpBuilder &b, Value v, int64_t axis) {
  // A graph input's dimension is its symbol's atom: two inputs sharing a
  // symbol share the atom.
  std::string symbol;
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      if (auto dims = fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                                     KilnDialect::getDimsAttrName()))
        if (axis < (int64_t)dims.size())
          if (auto s = dyn_cast<StringAttr>(dims[axis]))
            symbol = s.str();
  if (!symbol.empty())
    if (auto it = symbolAtoms.find(symbol); it != symbolAtoms.end())
      return it->second;
  auto key = std::make_pair(v, axis);
  if (auto it = atomIds.find(key); it != atomIds.end())
    return it->second;
  // Right after `v`'s definition: the atom dominates every use of `v`,
  // inside a control-flow region or not.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(v);
  atoms.push_back(tensor::DimOp::create(b, v.getLoc(), v, axis));
  int32_t id = atoms.size() - 1;
  atomIds[key] = id;
  if (!symbol.empty())
    symbolAtoms[symbol] = id;
  return id;
}

std::optional<DimPoly> ShapeSymbols::traced(OpBuilder &b, Value v, int64_t axis) {
  Operation *op = v.getDefiningOp();
  // A split's pieces keep the input's other dimensions (attention's
  // query/key/value cut from one projection).
  if (auto split = dyn_cast_or_null<SplitOp>(op)) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    int64_t a = split.getAxis() < 0 ? split.getAxis() + rank : split.getAxis();
    return axis == a ? std::nullopt : std::optional<DimPoly>(dimOf(b, split.getInput(), axis));
  }
  if (!op || op->getNumResults() != 1)
    return std::nullopt;
  if (auto t = dyn_cast<TransposeOp>(op))
    return dimOf(b, t.getInput(), t.getPerm()[axis]);
  auto rt = cast<RankedTensorType>(v.getType());
  int64_t rank = rt.getRank();
  // Products: rows from the left operand, columns from the right, batch
  // dimensions (aligned from the right) from one that has them dynamic.
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lt = cast<RankedTensorType>(mm.getLhs().getType());
    auto rhsT = cast<RankedTensorType>(mm.getRhs().getType());
    if (lt.getRank() < 2 || rhsT.getRank() < 2)
      return std::nullopt;
    if (axis == rank - 1)
      return dimOf(b, mm.getRhs(), rhsT.getRank() - 1);
    if (axis == rank - 2)
      return dimOf(b, mm.getLhs(), lt.getRank() - 2);
    for (auto [operand, ot] : {std::make_pair(mm.getLhs(), lt), std::make_pair(mm.getRhs(), rhsT)}) {
      int64_t d = axis - (rank - ot.getRank());
      if (d >= 0 && ot.isDynamicDim(d))
        return dimOf(b, operand, d);
    }
    return std::nullopt;
  }
  // An integer product's B is a constant matrix: every dimension but the
  // last is A's.
  if (auto mm = dyn_cast<MatmulIntegerOp>(op))
    return axis == rank - 1 ? std::nullopt : std::optional<DimPoly>(dimOf(b, mm.getLhs(), axis));
  // Gathers: the indices' shape in place of the data's axis.
  if (auto g = dyn_cast<GatherOp>(op)) {
    auto dt = cast<RankedTensorType>(g.getData().getType());
    int64_t ir = cast<RankedTensorType>(g.getIndices().getType()).getRank();
    int64_t a = g.getAxis() < 0 ? g.getAxis() + dt.getRank() : g.getAxis();
    if (axis < a)
      return dimOf(b, g.getData(), axis);
    if (axis < a + ir)
      return dimOf(b, g.getIndices(), axis - a);
    return dimOf(b, g.getData(), axis - ir + 1);
  }
  if (auto g = dyn_cast<GatherElementsOp>(op))
    return dimOf(b, g.getIndices(), axis);
  // Concatenation: the pieces' sizes summed along the axis, the first
  // piece's elsewhere.
  if (auto c = dyn_cast<ConcatOp>(op)) {
    int64_t a = c.getAxis() < 0 ? c.getAxis() + rank : c.getAxis();
    if (axis != a)
      return dimOf(b, c.getInputs()[0], axis);
    std::optional<DimPoly> sum = DimPoly::constant(0);
    for (Value in : c.getInputs())
      if (sum)
        sum = sum->plus(dimOf(b, in, axis));
    return sum;
  }
  if (auto g = dyn_cast<GemmOp>(op))
    return axis == 0 ? dimOf(b, g.getA(), g.getTransA() ? 1 : 0)
                     : dimOf(b, g.getB(), g.getTransB() ? 0 : 1);
  // Ops whose result has the shape of their operands broadcast: the
  // dimension is that of an operand of the same rank where it is dynamic.
  static const llvm::StringSet<> sameShape = {
      "kiln.add",        "kiln.sub",     "kiln.mul",         "kiln.div",
      "kiln.pow",        "kiln.max",     "kiln.min",         "kiln.mod",
      "kiln.and",        "kiln.or",      "kiln.xor",         "kiln.bitshift",
      "kiln.equal",      "kiln.less",    "kiln.less_equal",  "kiln.greater",
      "kiln.greater_equal", "kiln.where", "kiln.softmax",    "kiln.layer_norm",
      "kiln.dropout"};
  // One operand of the result's shape (unary ops, casts, is_nan).
  auto sameDims = [&](Type t) {
    auto ot = dyn_cast<RankedTensorType>(t);
    return ot && ot.getShape() == cast<RankedTensorType>(v.getType()).getShape();
  };
  bool unary = op->getNumOperands() == 1 && sameDims(op->getOperand(0).getType());
  if (!unary && !sameShape.contains(op->getName().getStringRef()))
    return std::nullopt;
  for (Value operand : op->getOperands()) {
    auto ot = dyn_cast<RankedTensorType>(operand.getType());
    if (ot && ot.getRank() == rt.getRank() && ot.isDynamicDim(axis))
      return dimOf(b, operand, axis);
  }
  return std::nullopt;
}

DimPoly ShapeSymbols::dimOf(OpBuilder &b, Value v, int64_t axis) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.isDynamicDim(axis))
    return DimPoly::constant(t.getDimSize(axis));
  if (auto it = shapes.find(v); it != shapes.end())
    return it->second[axis];
  if (std::optional<DimPoly> p = traced(b, v, axis))
    return *p;
  return DimPoly::atom(atomFor(b, v, axis));
}

std::optional<std::string> ShapeSymbols::symbolOf(const DimPoly &p) const {
  const auto &terms = p.getTerms();
  if (terms.size() != 1 || terms.begin()->second != 1 || terms.begin()->first.size() != 1)
    return std::nullopt;
  int32_t atom = terms.begin()->first[0];
  for (const auto &entry : symbolAtoms)
    if (entry.second == atom)
      return entry.first().str();
  return std::nullopt;
}

bool ShapeSymbols::requireAtMost(const DimPoly &p, int64_t max) {
  std::optional<std::string> s = symbolOf(p);
  if (!s)
    return false;
  auto [it, fresh] = required.try_emplace(*s, max, 0);
  it->second.first = std::min(it->second.first, max);
  return true;
}

bool ShapeSymbols::requireAtLeast(const DimPoly &p, int64_t min) {
  if (min <= 0)
    return true; // a size is never negative (x[:, 0:] of any size)
  std::optional<std::string> s = symbolOf(p);
  if (!s)
    return false;
  auto [it, fresh] = required.try_emplace(*s, INT64_MAX, min);
  it->second.second = std::max(it->second.second, min);
  return true;
}

Value ShapeSymbols::materialize(OpBuilder &b, Location loc, const DimPoly &p, Value like) {
  if (like) {
    auto t = cast<RankedTensorType>(like.getType());
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i) && dimOf(b, like, i) == p)
        return tensor::DimOp::create(b, loc, like, i);
  }
  auto cst = [&](int64_t c) { return arith::ConstantIndexOp::create(b, loc, c).getResult(); };
  Value sum;
  for (const auto &[term, c] : p.getTerms()) {
    Value prod;
    for (int32_t a : term)
      prod = prod ? arith::MulIOp::create(b, loc, prod, atoms[a]).getResult() : atoms[a];
    if (!prod)
      prod = cst(c);
    else if (c != 1)
      prod = arith::MulIOp::create(b, loc, prod, cst(c));
    sum = sum ? arith::AddIOp::create(b, loc, sum, prod).getResult() : prod;
  }
  return sum ? sum : cst(0);
}

} // namespace kiln
