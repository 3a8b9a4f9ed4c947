//===- Partition.cpp - kiln-partition -------------------------------------===//
//
//   func.func @main(%x, %w) -> (%loss, %dw)     (joint, from kiln-autograd)
// =>
//   func.func private @kiln_forward(%x, %w) -> (%loss, %saved...)
//   func.func private @kiln_backward(%x, %w, %saved...) -> (%dw)
//   func.func @main(%x, %w) -> (%loss, %dw) { call @kiln_forward; call @kiln_backward }
//
// Save vs recompute is AOTAutograd's min-cut: every forward value v is an
// edge v_in -> v_out whose capacity is v's size; v_out -> u_in (infinite)
// for each forward user u; v_out -> sink (infinite) when the backward reads
// v; source -> v_in (infinite) when v's op must not be recomputed. The cut
// edges are the values saved; forward values the backward needs on the sink
// side are recomputed from them. Arguments and constants are free.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNPARTITION
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

/// Edmonds-Karp max flow; afterwards `sourceSide` is the minimum cut.
class FlowGraph {
public:
  explicit FlowGraph(int nodes) : adj(nodes) {}
  void edge(int from, int to, int64_t cap) {
    adj[from].push_back(edges.size());
    edges.push_back({to, cap});
    adj[to].push_back(edges.size());
    edges.push_back({from, 0});
  }
  void maxFlow(int s, int t) {
    while (true) {
      std::vector<int> via(adj.size(), -1);
      std::deque<int> queue{s};
      via[s] = -2;
      while (!queue.empty() && via[t] == -1) {
        int n = queue.front();
        queue.pop_front();
        for (int e : adj[n])
          if (edges[e].cap > 0 && via[edges[e].to] == -1) {
            via[edges[e].to] = e;
            queue.push_back(edges[e].to);
          }
      }
      if (via[t] == -1)
        return;
      int64_t push = kInf;
      for (int n = t; n != s; n = edges[via[n] ^ 1].to)
        push = std::min(push, edges[via[n]].cap);
      if (push >= kInf) // an infinite path: nothing can be cut (not expected)
        return;
      for (int n = t; n != s; n = edges[via[n] ^ 1].to) {
        edges[via[n]].cap -= push;
        edges[via[n] ^ 1].cap += push;
      }
    }
  }
  std::vector<bool> sourceSide(int s) const {
    std::vector<bool> seen(adj.size());
    std::deque<int> queue{s};
    seen[s] = true;
    while (!queue.empty()) {
      int n = queue.front();
      queue.pop_front();
      for (int e : adj[n])
        if (edges[e].cap > 0 && !seen[edges[e].to]) {
          seen[edges[e].to] = true;
          queue.push_back(edges[e].to);
        }
    }
    return seen;
  }

private:
  struct Edge {
    int to;
    int64_t cap;
  };
  std::vector<Edge> edges;
  std::vector<std::vector<int>> adj;
};

/// Heavy or gathering ops: recomputing them costs more than keeping them (a
/// collective: another round trip to every rank).
bool mustNotRecompute(Operation *op) {
  return isa<AllReduceOp, MatmulOp, GemmOp, ConvOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
             ReduceMinOp, ReduceProdOp, SoftmaxOp, LayerNormOp, BatchNormOp, MaxPoolOp, AvgPoolOp,
             GlobalAvgPoolOp, CumSumOp, GatherOp, GatherElementsOp, GatherNDOp, ScatterElementsOp,
             ScatterNDOp, ArgMaxOp, ArgMinOp>(op);
}

int64_t bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t) // a size (tensor.dim) the backward pass reads
    return 8;
  int64_t bits = t.getElementType().isIntOrFloat() ? t.getElementTypeBitWidth() : 64;
  // A dynamic batch is weighed as 64 (as kernel outlining estimates it).
  int64_t elems = 1;
  for (int64_t d : t.getShape())
    elems *= ShapedType::isDynamic(d) ? 64 : d;
  return std::max<int64_t>(1, elems * std::max<int64_t>(bits, 8) / 8);
}

/// Only backward ops that reach a result matter (rules also build the
/// gradients of constants, which nothing uses): the others leave `bwd`.
void keepLiveBackward(SmallVector<Operation *> &bwd, func::ReturnOp ret) {
  llvm::DenseSet<Operation *> live;
  llvm::DenseSet<Operation *> isBwd(bwd.begin(), bwd.end());
  SmallVector<Operation *> work;
  for (Value r : ret.getOperands())
    if (Operation *def = r.getDefiningOp(); def && isBwd.contains(def))
      work.push_back(def);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!live.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && isBwd.contains(def))
        work.push_back(def);
  }
  llvm::erase_if(bwd, [&](Operation *op) { return !live.contains(op); });
}

bool isFree(Value v) { return isa<BlockArgument>(v) || isa<ConstantOp>(v.getDefiningOp()); }

/// Which forward values the backward pass keeps and which ops it recomputes.
struct Cut {
  llvm::SetVector<Value> saved;
  llvm::DenseSet<Operation *> recomputed;
};

/// The minimum cut between the forward pass and the values the backward
/// reads (`needed`), each value's cost its bytes (`recompute`; else 1 each,
/// and nothing is recomputed), heavy ops never recomputed.
Cut minCut(ArrayRef<Operation *> fwd, const llvm::DenseSet<Operation *> &isFwd,
           const llvm::SetVector<Value> &needed, bool recompute) {
  llvm::DenseMap<Value, int> node; // v -> v_in (v_out = v_in + 1)
  SmallVector<Value> values;
  for (Operation *op : fwd)
    if (!isa<ConstantOp>(op))
      for (Value r : op->getResults()) {
        node[r] = 2 + 2 * values.size();
        values.push_back(r);
      }
  const int source = 0, sink = 1;
  FlowGraph graph(2 + 2 * values.size());
  for (Value v : values) {
    int in = node[v];
    graph.edge(in, in + 1, recompute ? bytesOf(v) : 1);
    if (!recompute || mustNotRecompute(v.getDefiningOp()))
      graph.edge(source, in, kInf);
    if (needed.contains(v))
      graph.edge(in + 1, sink, kInf);
    for (Operation *user : v.getUsers())
      if (isFwd.contains(user))
        for (Value r : user->getResults())
          if (node.count(r))
            graph.edge(in + 1, node[r], kInf);
  }
  graph.maxFlow(source, sink);
  std::vector<bool> sourceSide = graph.sourceSide(source);
  Cut cut;
  for (Value v : values)
    if (sourceSide[node[v]] && !sourceSide[node[v] + 1])
      cut.saved.insert(v);
  // What the backward recomputes: the sink-side producers of what it reads.
  SmallVector<Value> work(needed.begin(), needed.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (isFree(v) || cut.saved.contains(v) || cut.recomputed.contains(v.getDefiningOp()))
      continue;
    cut.recomputed.insert(v.getDefiningOp());
    for (Value operand : v.getDefiningOp()->getOperands())
      work.push_back(operand);
  }
  return cut;
}

/// A private function `name` computing `outputs` by clones of `ops`, its
/// arguments standing for `mappedFrom`.
func::FuncOp makeFunc(OpBuilder &b, Location loc, StringRef name, TypeRange inputs,
                      ArrayRef<Operation *> ops, ValueRange mappedFrom, ValueRange outputs,
                      IRMapping &map) {
  MLIRContext *ctx = b.getContext();
  auto fn = func::FuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  for (auto [from, to] : llvm::zip(mappedFrom, entry->getArguments()))
    map.map(from, to);
  OpBuilder fb = OpBuilder::atBlockEnd(entry);
  for (Operation *op : ops)
    fb.clone(*op, map);
  SmallVector<Value> results;
  for (Value v : outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(fb, loc, results);
  fn.setType(FunctionType::get(ctx, inputs, ValueRange(results).getTypes()));
  return fn;
}

/// @main as two calls: @kiln_forward(args) -> (forward results of @main,
/// saved...), then @kiln_backward(args, saved...) -> (backward results).
void splitMain(ModuleOp module, func::FuncOp main, ArrayRef<Operation *> fwd,
               ArrayRef<Operation *> bwd, const llvm::DenseSet<Operation *> &isFwd,
               const Cut &cut) {
  MLIRContext *ctx = module.getContext();
  Block &body = main.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(module.getBody(), module.getBody()->end());
  TypeRange argTypes = main.getArgumentTypes();
  SmallVector<unsigned> fromForward, fromBackward, fromArgs;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    Value r = ret.getOperand(i);
    if (isa<BlockArgument>(r))
      fromArgs.push_back(i);
    else if (isFwd.contains(r.getDefiningOp()))
      fromForward.push_back(i);
    else
      fromBackward.push_back(i);
  }
  SmallVector<Value> fwdOutputs;
  for (unsigned i : fromForward)
    fwdOutputs.push_back(ret.getOperand(i));
  fwdOutputs.append(cut.saved.begin(), cut.saved.end());
  IRMapping fmap;
  auto forwardFn = makeFunc(b, main.getLoc(), "kiln_forward", argTypes, fwd, body.getArguments(),
                            fwdOutputs, fmap);
  SmallVector<Type> bwdInputs(argTypes.begin(), argTypes.end());
  SmallVector<Value> bwdFrom(body.getArguments().begin(), body.getArguments().end());
  for (Value v : cut.saved) {
    bwdInputs.push_back(v.getType());
    bwdFrom.push_back(v);
  }
  SmallVector<Operation *> bwdOps;
  for (Operation *op : fwd) // constants and recomputed ops, in forward order
    if ((isa<ConstantOp>(op) && llvm::any_of(op->getUsers(),
                                             [&](Operation *u) {
                                               return !isFwd.contains(u) ||
                                                      cut.recomputed.contains(u);
                                             })) ||
        cut.recomputed.contains(op))
      bwdOps.push_back(op);
  bwdOps.append(bwd.begin(), bwd.end());
  SmallVector<Value> bwdOutputs;
  for (unsigned i : fromBackward)
    bwdOutputs.push_back(ret.getOperand(i));
  IRMapping bmap;
  auto backwardFn =
      makeFunc(b, main.getLoc(), "kiln_backward", bwdInputs, bwdOps, bwdFrom, bwdOutputs, bmap);
  backwardFn.walk([&](Operation *op) {
    op->removeAttr(KilnDialect::getBackwardAttrName());
    if (cut.recomputed.contains(op))
      op->setAttr(KilnDialect::getRecomputeAttrName(), UnitAttr::get(ctx));
  });
  for (Operation *op : cut.recomputed)
    if (Operation *clone = bmap.lookupOrNull(op->getResult(0)).getDefiningOp())
      clone->setAttr(KilnDialect::getRecomputeAttrName(), UnitAttr::get(ctx));

  // @main: the two calls.
  SmallVector<Value> oldResults(ret.getOperands());
  OpBuilder mb(ret);
  auto fcall = func::CallOp::create(mb, main.getLoc(), forwardFn, body.getArguments());
  SmallVector<Value> bargs(body.getArguments().begin(), body.getArguments().end());
  for (unsigned k = 0; k < cut.saved.size(); ++k)
    bargs.push_back(fcall.getResult(fromForward.size() + k));
  auto bcall = func::CallOp::create(mb, main.getLoc(), backwardFn, bargs);
  SmallVector<Value> results(oldResults.size());
  for (auto [k, i] : llvm::enumerate(fromForward))
    results[i] = fcall.getResult(k);
  for (auto [k, i] : llvm::enumerate(fromBackward))
    results[i] = bcall.getResult(k);
  for (unsigned i : fromArgs)
    results[i] = oldResults[i];
  func::ReturnOp::create(mb, main.getLoc(), results);
  ret.erase();
  // Everything but the calls and the return goes (dead backward ops too).
  SmallVector<Operation *> old;
  for (Operation &op : body)
    if (&op != fcall.getOperation() && &op != bcall.getOperation() && !isa<func::ReturnOp>(op))
      old.push_back(&op);
  for (Operation *op : llvm::reverse(old))
    op->erase();
}

struct KilnPartitionPass final : impl::KilnPartitionBase<KilnPartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || !main.getBody().hasOneBlock()) {
      module.emitError("kiln-partition expects a func.func @main with one block");
      return signalPassFailure();
    }
    Block &body = main.front();
    SmallVector<Operation *> fwd, bwd;
    for (Operation &op : body.without_terminator())
      (op.hasAttr(KilnDialect::getBackwardAttrName()) ? bwd : fwd).push_back(&op);
    if (bwd.empty()) {
      main.emitError("kiln-partition: no backward ops (run kiln-autograd first)");
      return signalPassFailure();
    }
    keepLiveBackward(bwd, cast<func::ReturnOp>(body.getTerminator()));
    llvm::DenseSet<Operation *> isFwd(fwd.begin(), fwd.end());
    // Forward values the backward reads.
    llvm::SetVector<Value> needed;
    for (Operation *op : bwd)
      for (Value v : op->getOperands())
        if (!isFree(v) && isFwd.contains(v.getDefiningOp()))
          needed.insert(v);
    int64_t saveAll = 0;
    for (Value v : needed)
      saveAll += bytesOf(v);
    Cut cut = minCut(fwd, isFwd, needed, recompute);
    int64_t savedBytes = 0;
    for (Value v : cut.saved)
      savedBytes += bytesOf(v);
    int64_t recomputedOps = cut.recomputed.size();
    splitMain(module, main, fwd, bwd, isFwd, cut);
    Builder attrs(&getContext());
    module->setAttr(
        KilnDialect::getPartitionAttrName(),
        attrs.getDictionaryAttr(
            {attrs.getNamedAttr("saved_bytes", attrs.getI64IntegerAttr(savedBytes)),
             attrs.getNamedAttr("save_all_bytes", attrs.getI64IntegerAttr(saveAll)),
             attrs.getNamedAttr("recomputed_ops", attrs.getI64IntegerAttr(recomputedOps))}));
  }
};

} // namespace
} // namespace kiln
