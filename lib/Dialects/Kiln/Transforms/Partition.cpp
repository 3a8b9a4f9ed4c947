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

/// Heavy or gathering ops: recomputing them costs more than keeping them.
bool mustNotRecompute(Operation *op) {
  return isa<MatmulOp, GemmOp, ConvOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
             ReduceProdOp, SoftmaxOp, LayerNormOp, BatchNormOp, MaxPoolOp, AvgPoolOp,
             GlobalAvgPoolOp, CumSumOp, GatherOp, GatherElementsOp, GatherNDOp,
             ScatterElementsOp, ScatterNDOp, ArgMaxOp, ArgMinOp>(op);
}

int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  int64_t bits = t.getElementType().isIntOrFloat() ? t.getElementTypeBitWidth() : 64;
  return std::max<int64_t>(1, t.getNumElements() * std::max<int64_t>(bits, 8) / 8);
}

struct KilnPartitionPass final : impl::KilnPartitionBase<KilnPartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || !main.getBody().hasOneBlock()) {
      module.emitError("kiln-partition expects a func.func @main with one block");
      return signalPassFailure();
    }
    Block &body = main.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Operation *> fwd, bwd;
    for (Operation &op : body.without_terminator())
      (op.hasAttr("kiln.backward") ? bwd : fwd).push_back(&op);
    if (bwd.empty()) {
      main.emitError("kiln-partition: no backward ops (run kiln-autograd first)");
      return signalPassFailure();
    }
    // Only backward ops that reach a result matter (rules also build the
    // gradients of constants, which nothing uses).
    llvm::DenseSet<Operation *> live;
    {
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
      llvm::erase_if(bwd, [&](Operation *op) {
        if (live.contains(op))
          return false;
        return true;
      });
    }
    llvm::DenseSet<Operation *> isFwd(fwd.begin(), fwd.end());
    auto isFree = [&](Value v) {
      return isa<BlockArgument>(v) || isa<ConstantOp>(v.getDefiningOp());
    };
    // Forward values the backward reads.
    llvm::SetVector<Value> needed;
    for (Operation *op : bwd)
      for (Value v : op->getOperands())
        if (!isFree(v) && isFwd.contains(v.getDefiningOp()))
          needed.insert(v);
    // Forward values the caller needs (the loss), from the forward function.
    int64_t saveAll = 0;
    for (Value v : needed)
      saveAll += bytesOf(v);

    // The cut.
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
    llvm::SetVector<Value> saved;
    for (Value v : values)
      if (sourceSide[node[v]] && !sourceSide[node[v] + 1])
        saved.insert(v);
    // What the backward recomputes: the sink-side producers of what it reads.
    llvm::DenseSet<Operation *> recomputed;
    SmallVector<Value> work(needed.begin(), needed.end());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (isFree(v) || saved.contains(v) || recomputed.contains(v.getDefiningOp()))
        continue;
      recomputed.insert(v.getDefiningOp());
      for (Value operand : v.getDefiningOp()->getOperands())
        work.push_back(operand);
    }

    int64_t savedBytes = 0;
    for (Value v : saved)
      savedBytes += bytesOf(v);

    // @kiln_forward(args) -> (forward results of @main, saved...)
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
    auto makeFunc = [&](StringRef name, TypeRange inputs, ArrayRef<Operation *> ops,
                        ValueRange mappedFrom, ValueRange outputs, IRMapping &map) {
      auto fn = func::FuncOp::create(b, main.getLoc(), name,
                                     FunctionType::get(ctx, inputs, {}));
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
      func::ReturnOp::create(fb, main.getLoc(), results);
      fn.setType(FunctionType::get(ctx, inputs, ValueRange(results).getTypes()));
      return fn;
    };
    SmallVector<Value> fwdOutputs;
    for (unsigned i : fromForward)
      fwdOutputs.push_back(ret.getOperand(i));
    fwdOutputs.append(saved.begin(), saved.end());
    IRMapping fmap;
    auto forwardFn = makeFunc("kiln_forward", argTypes, fwd, body.getArguments(), fwdOutputs, fmap);

    // @kiln_backward(args, saved...) -> (backward results of @main)
    SmallVector<Type> bwdInputs(argTypes.begin(), argTypes.end());
    SmallVector<Value> bwdFrom(body.getArguments().begin(), body.getArguments().end());
    for (Value v : saved) {
      bwdInputs.push_back(v.getType());
      bwdFrom.push_back(v);
    }
    SmallVector<Operation *> bwdOps;
    for (Operation *op : fwd) // constants and recomputed ops, in forward order
      if ((isa<ConstantOp>(op) && llvm::any_of(op->getUsers(), [&](Operation *u) {
             return !isFwd.contains(u) || recomputed.contains(u);
           })) ||
          recomputed.contains(op))
        bwdOps.push_back(op);
    bwdOps.append(bwd.begin(), bwd.end());
    SmallVector<Value> bwdOutputs;
    for (unsigned i : fromBackward)
      bwdOutputs.push_back(ret.getOperand(i));
    IRMapping bmap;
    auto backwardFn = makeFunc("kiln_backward", bwdInputs, bwdOps, bwdFrom, bwdOutputs, bmap);
    backwardFn.walk([&](Operation *op) {
      op->removeAttr("kiln.backward");
      if (recomputed.contains(op))
        op->setAttr("kiln.recompute", UnitAttr::get(ctx));
    });
    for (Operation *op : recomputed)
      if (Operation *clone = bmap.lookupOrNull(op->getResult(0)).getDefiningOp())
        clone->setAttr("kiln.recompute", UnitAttr::get(ctx));

    // @main: the two calls.
    SmallVector<Value> oldResults(ret.getOperands());
    OpBuilder mb(ret);
    Operation *fcallOp = nullptr, *bcallOp = nullptr;
    auto fcall = func::CallOp::create(mb, main.getLoc(), forwardFn, body.getArguments());
    fcallOp = fcall;
    SmallVector<Value> bargs(body.getArguments().begin(), body.getArguments().end());
    for (unsigned k = 0; k < saved.size(); ++k)
      bargs.push_back(fcall.getResult(fromForward.size() + k));
    auto bcall = func::CallOp::create(mb, main.getLoc(), backwardFn, bargs);
    bcallOp = bcall;
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
      if (&op != fcallOp && &op != bcallOp && !isa<func::ReturnOp>(op))
        old.push_back(&op);
    for (Operation *op : llvm::reverse(old))
      op->erase();

    Builder attrs(ctx);
    module->setAttr("kiln.partition",
                    attrs.getDictionaryAttr(
                        {attrs.getNamedAttr("saved_bytes", attrs.getI64IntegerAttr(savedBytes)),
                         attrs.getNamedAttr("save_all_bytes", attrs.getI64IntegerAttr(saveAll)),
                         attrs.getNamedAttr("recomputed_ops",
                                            attrs.getI64IntegerAttr(recomputed.size()))}));
  }
};

} // namespace
} // namespace kiln
