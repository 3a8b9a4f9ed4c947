//===- Einsum.cpp - ONNX Einsum as transposes, reductions and a matmul ----===//
//
// One operand: transpose to (output letters, summed letters), reduce the
// rest. Two operands: sum away letters only one side has, then arrange both
// as [batch, free, contracted] / [batch, contracted, free], one batched
// matmul, and a final reshape and transpose into the output order. A letter
// repeated within one operand (a diagonal) is taken with a gather first.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace kiln {
namespace {

NamedAttribute i64s(NodeContext &nc, StringRef name, ArrayRef<int64_t> v) {
  return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(v));
}

struct Term {
  Value value;
  std::string letters;
};

/// Permutes `t` so its letters read `order` (a permutation of them).
Term permute(NodeContext &nc, Expr &e, Term t, const std::string &order) {
  if (t.letters == order)
    return t;
  SmallVector<int64_t> perm;
  for (char c : order)
    perm.push_back(t.letters.find(c));
  return {e.op<TransposeOp>({t.value}, {i64s(nc, "perm", perm)}), order};
}

/// Sums away the letters of `t` for which `drop` holds.
template <typename Pred>
Term sumAway(NodeContext &nc, Expr &e, Term t, Pred drop) {
  SmallVector<int64_t> axes;
  std::string kept;
  for (size_t i = 0; i < t.letters.size(); ++i)
    (drop(t.letters[i]) ? (void)axes.push_back(i) : (void)kept.push_back(t.letters[i]));
  if (axes.empty())
    return t;
  Value v = e.op<ReduceSumOp>({t.value}, {i64s(nc, "axes", axes),
                                          nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(false))});
  return {v, kept};
}

/// x[..., i, ..., i, ...] => x[..., i, ...] for the first repeated letter.
FailureOr<Term> takeDiagonal(NodeContext &nc, Expr &e, Term t) {
  for (size_t a = 0; a < t.letters.size(); ++a) {
    size_t b = t.letters.find(t.letters[a], a + 1);
    if (b == std::string::npos)
      continue;
    std::string order = t.letters;
    order.erase(b, 1);
    order.erase(a, 1);
    order += t.letters[a];
    order += t.letters[a];
    // Move both copies last, then pick element i*(n+1) of the flattened pair.
    SmallVector<int64_t> perm;
    for (size_t i = 0; i < t.letters.size(); ++i)
      if (i != a && i != b)
        perm.push_back(i);
    perm.push_back(a);
    perm.push_back(b);
    Value v = e.op<TransposeOp>({t.value}, {i64s(nc, "perm", perm)});
    auto vt = cast<RankedTensorType>(v.getType());
    int64_t n = vt.getDimSize(vt.getRank() - 1);
    if (vt.getDimSize(vt.getRank() - 2) != n)
      return nc.error("einsum diagonal over dimensions of different sizes");
    SmallVector<int64_t> shape(vt.getShape().drop_back(2));
    shape.push_back(n * n);
    v = e.reshape(v, shape);
    SmallVector<int64_t> diag;
    for (int64_t i = 0; i < n; ++i)
      diag.push_back(i * (n + 1));
    Value idx = ConstantOp::create(
        nc.b, nc.loc, DenseElementsAttr::get(RankedTensorType::get({n}, nc.b.getI64Type()),
                                             ArrayRef<int64_t>(diag)));
    v = e.op<GatherOp>({v, idx}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(shape.size() - 1))});
    order.pop_back();
    return takeDiagonal(nc, e, {v, order});
  }
  return t;
}

LogicalResult einsum(NodeContext &nc) {
  auto inputs = nc.presentInputs();
  if (failed(inputs))
    return failure();
  if (inputs->empty() || inputs->size() > 2)
    return nc.error("einsum with " + Twine(inputs->size()) + " operands is not supported");
  std::string eq;
  for (char c : nc.attrString("equation", ""))
    if (c != ' ')
      eq += c;
  std::string lhs = eq.substr(0, eq.find("->"));
  std::vector<std::string> specs;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    specs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (specs.size() != inputs->size())
    return nc.error("equation names " + Twine(specs.size()) + " operands");
  bool arrow = eq.find("->") != std::string::npos;
  std::string outSpec = arrow ? eq.substr(eq.find("->") + 2) : "";
  // Terms are letters with at most one "..."; anything else is malformed.
  auto wellFormed = [](const std::string &term) {
    size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos)
      letters = term.substr(0, dots) + term.substr(dots + 3);
    return llvm::all_of(letters, [](char c) { return llvm::isAlpha(c); });
  };
  for (const auto &term : specs)
    if (!wellFormed(term))
      return nc.error("malformed einsum equation '" + eq + "' (term '" + term + "')");
  if (arrow && !wellFormed(outSpec))
    return nc.error("malformed einsum equation '" + eq + "' (output '" + outSpec + "')");
  // Expand "..." into characters that cannot clash with letters (digits).
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].find("...") != std::string::npos) {
      int64_t n = cast<RankedTensorType>((*inputs)[i].getType()).getRank() -
                  (int64_t)(specs[i].size() - 3);
      if (n < 0)
        return nc.error("einsum operand " + Twine(i) + " has fewer dimensions than '" +
                        specs[i] + "' names");
      ellipsisRank = std::max(ellipsisRank, n);
    }
  if (ellipsisRank > 10)
    return nc.error("einsum '...' covering more than 10 dimensions is not supported");
  std::string ell;
  for (int64_t i = 0; i < ellipsisRank; ++i)
    ell += char('0' + i);
  auto expand = [&](std::string s, int64_t rank) {
    size_t pos = s.find("...");
    if (pos == std::string::npos)
      return s;
    int64_t n = rank - (int64_t)(s.size() - 3);
    return s.substr(0, pos) + ell.substr(ell.size() - n) + s.substr(pos + 3);
  };
  std::vector<Term> terms;
  Expr e(nc, (*inputs)[0]);
  std::map<char, int> count;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto t = cast<RankedTensorType>((*inputs)[i].getType());
    std::string letters = expand(specs[i], t.getRank());
    if ((int64_t)letters.size() != t.getRank())
      return nc.error("equation operand '" + specs[i] + "' does not match rank " +
                      Twine(t.getRank()));
    auto term = takeDiagonal(nc, e, {(*inputs)[i], letters});
    if (failed(term))
      return failure();
    for (char c : term->letters)
      ++count[c];
    terms.push_back(*term);
  }
  std::string out;
  if (arrow) {
    out = outSpec;
    if (out.find("...") != std::string::npos)
      out = out.substr(0, out.find("...")) + ell + out.substr(out.find("...") + 3);
    for (size_t i = 0; i < out.size(); ++i)
      if (!count.count(out[i]) || out.find(out[i], i + 1) != std::string::npos)
        return nc.error("einsum output '" + outSpec +
                        "' repeats a letter or names one no operand has");
  } else { // implicit: ellipsis letters, then letters seen once, sorted
    out = ell;
    for (auto &[c, n] : count)
      if (n == 1 && ell.find(c) == std::string::npos)
        out += c;
  }
  auto inOut = [&](char c) { return out.find(c) != std::string::npos; };
  if (terms.size() == 1) {
    Term t = sumAway(nc, e, terms[0], [&](char c) { return !inOut(c); });
    return nc.setOutput(0, permute(nc, e, t, out).value);
  }
  Term a = terms[0], b = terms[1];
  auto inA = [&](char c) { return a.letters.find(c) != std::string::npos; };
  auto inB = [&](char c) { return b.letters.find(c) != std::string::npos; };
  a = sumAway(nc, e, a, [&](char c) { return !inOut(c) && !inB(c); });
  b = sumAway(nc, e, b, [&](char c) { return !inOut(c) && !inA(c); });
  std::string batch, left, right, contracted;
  for (char c : a.letters) {
    if (inB(c))
      (inOut(c) ? batch : contracted) += c;
    else
      left += c;
  }
  for (char c : b.letters)
    if (!inA(c))
      right += c;
  auto dims = [&](const Term &t, const std::string &letters) {
    int64_t n = 1;
    auto tt = cast<RankedTensorType>(t.value.getType());
    for (char c : letters)
      n *= tt.getDimSize(t.letters.find(c));
    return n;
  };
  SmallVector<int64_t> batchShape;
  for (char c : batch)
    batchShape.push_back(cast<RankedTensorType>(a.value.getType()).getDimSize(a.letters.find(c)));
  auto withBatch = [&](std::initializer_list<int64_t> tail) {
    SmallVector<int64_t> s(batchShape);
    s.append(tail);
    return s;
  };
  int64_t m = dims(a, left), k = dims(a, contracted), n = dims(b, right);
  Value am = e.reshape(permute(nc, e, a, batch + left + contracted).value, withBatch({m, k}));
  Value bm = e.reshape(permute(nc, e, b, batch + contracted + right).value, withBatch({k, n}));
  Value prod = e.op<MatmulOp>({am, bm});
  SmallVector<int64_t> full(batchShape);
  for (char c : left)
    full.push_back(cast<RankedTensorType>(a.value.getType()).getDimSize(a.letters.find(c)));
  for (char c : right)
    full.push_back(cast<RankedTensorType>(b.value.getType()).getDimSize(b.letters.find(c)));
  Term r{e.reshape(prod, full), batch + left + right};
  if (r.letters.size() != out.size() ||
      !std::is_permutation(r.letters.begin(), r.letters.end(), out.begin()))
    return nc.error("einsum output '" + out + "' must use each operand letter once");
  return nc.setOutput(0, permute(nc, e, r, out).value);
}

} // namespace

void registerEinsumHandlers(HandlerTable &t) { t["Einsum"] = einsum; }

} // namespace kiln
