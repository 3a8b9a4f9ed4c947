//===- ParallelLoops.cpp - loop nests as thread-per-iteration kernels -----===//
//
// The CUDA outliner's generic kernel: what no specialized kernel takes
// becomes loops (linalg to parallel loops), each parallel nest one launch
// of one thread per iteration, linearized, innermost fastest. With sizes
// known at run time (a dynamic model's) the host computes the trip count
// and the grid, the kernel its bounds, from the same sizes.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace kiln {

namespace {
/// What the kernel of `par` takes (buffers) and recomputes.
LogicalResult capturesOf(scf::ParallelOp par, SetVector<Value> &args,
                         SetVector<Operation *> &clones) {
  if (collectCaptures({par.getOperation()}, args, clones, /*scalars=*/true))
    return success();
  return par.emitError("uses a value that cannot be passed to a CUDA kernel "
                       "(only identity-layout buffers can)");
}

/// `par`'s body at the iteration `ivs`, at `b` in its kernel; `par` goes.
void cloneBodyAt(OpBuilder &b, scf::ParallelOp par, ArrayRef<Value> ivs, IRMapping &map) {
  for (auto [from, to] : llvm::zip(par.getInductionVars(), ivs))
    map.map(from, to);
  for (Operation &inner : par.getBody()->without_terminator())
    b.clone(inner, map);
  par.erase();
}
} // namespace

/// outlineParallelLoop for a nest whose upper bounds are known at run time
/// (a dynamic model's sizes): the host computes the trip count and grid,
/// and the kernel its bounds, from the same sizes.
static LogicalResult outlineDynamicParallel(KernelFactory &kernels, func::FuncOp fn,
                                            scf::ParallelOp par, int64_t blockSize) {
  for (auto [l, s] : llvm::zip(par.getLowerBound(), par.getStep())) {
    auto lb = constIndex(l), st = constIndex(s);
    if (!lb || !st || *st <= 0)
      return par.emitError("a parallel loop without constant lower bounds and steps cannot "
                           "be mapped to CUDA threads yet");
  }
  SetVector<Value> args;
  SetVector<Operation *> clones;
  Operation *op = par;
  if (failed(capturesOf(par, args, clones)))
    return failure();
  Location loc = par.getLoc();
  // Per loop its trip count, from bounds mapped by `bounds` (host or kernel).
  auto tripsOf = [&](OpBuilder &b, function_ref<Value(Value)> bounds) {
    SmallVector<Value> trips;
    for (auto [l, u, s] : llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
      Value span = arith::SubIOp::create(b, loc, bounds(u), bounds(l));
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      span = arith::MaxSIOp::create(b, loc, span, zero);
      trips.push_back(arith::CeilDivUIOp::create(b, loc, span, bounds(s)));
    }
    return trips;
  };
  auto product = [&](OpBuilder &b, ArrayRef<Value> values) {
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    for (Value v : values)
      total = arith::MulIOp::create(b, loc, total, v);
    return total;
  };
  OpBuilder hb(par);
  Value hostTotal = product(hb, tripsOf(hb, [](Value v) { return v; }));
  // At least one block: an empty launch is an error, its threads idle.
  Value blockSizeValue = arith::ConstantIndexOp::create(hb, loc, blockSize);
  Value grid = arith::CeilDivUIOp::create(hb, loc, hostTotal, blockSizeValue);
  grid = arith::MaxUIOp::create(hb, loc, grid, arith::ConstantIndexOp::create(hb, loc, 1));
  IRMapping map;
  OpBuilder b(par.getContext());
  kernels.create(fn, op, args, clones, {1}, blockSize, map, b, grid);
  SmallVector<Value> trips = tripsOf(b, [&](Value v) { return map.lookupOrDefault(v); });
  Value lin = linearThreadIndex(b, loc, product(b, trips), blockSize);
  // Innermost dimension fastest: consecutive threads, consecutive addresses.
  Value rest = lin;
  SmallVector<Value> ivs(trips.size());
  for (int64_t d = trips.size() - 1; d >= 0; --d) {
    Value idx = rest;
    if (d > 0) {
      idx = arith::RemUIOp::create(b, loc, rest, trips[d]);
      rest = arith::DivUIOp::create(b, loc, rest, trips[d]);
    }
    idx = arith::MulIOp::create(b, loc, idx, map.lookupOrDefault(par.getStep()[d]));
    ivs[d] = arith::AddIOp::create(b, loc, idx, map.lookupOrDefault(par.getLowerBound()[d]));
  }
  cloneBodyAt(b, par, ivs, map);
  return success();
}

/// One thread per iteration of the whole parallel nest, linearized.
LogicalResult outlineParallelLoop(KernelFactory &kernels, func::FuncOp fn, scf::ParallelOp par,
                                  int64_t blockSize) {
  SmallVector<int64_t> lbs, steps, trips;
  int64_t total = 1;
  for (auto [l, u, s] : llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
    auto lb = constIndex(l), ub = constIndex(u), st = constIndex(s);
    if (lb && !ub && st && *st > 0)
      return outlineDynamicParallel(kernels, fn, par, blockSize);
    if (!lb || !ub || !st || *st <= 0)
      return par.emitError("a parallel loop without constant bounds cannot be mapped to "
                           "CUDA threads yet");
    int64_t trip = *ub > *lb ? (*ub - *lb + *st - 1) / *st : 0;
    lbs.push_back(*lb);
    steps.push_back(*st);
    trips.push_back(trip);
    if (__builtin_mul_overflow(total, trip, &total))
      return par.emitError("too many iterations for one CUDA launch");
  }
  if (total == 0) {
    par.erase();
    return success();
  }
  auto [block, grid] = launchShape(total, blockSize);
  if (grid > std::numeric_limits<int32_t>::max())
    return par.emitError("too many iterations for one CUDA launch (")
           << total << ", at most " << int64_t(std::numeric_limits<int32_t>::max()) * block
           << ")";
  SetVector<Value> args;
  SetVector<Operation *> clones;
  Operation *op = par;
  if (failed(capturesOf(par, args, clones)))
    return failure();
  IRMapping map;
  OpBuilder b(par.getContext());
  kernels.create(fn, op, args, clones, grid, block, map, b);
  Location loc = par.getLoc();
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value lin = linearThreadIndex(b, loc, total, block, grid);
  // Innermost dimension fastest: consecutive threads, consecutive addresses.
  Value rest = lin;
  SmallVector<Value> ivs(trips.size());
  for (int64_t d = trips.size() - 1; d >= 0; --d) {
    Value idx = rest;
    if (d > 0) {
      idx = arith::RemUIOp::create(b, loc, rest, cst(trips[d]));
      rest = arith::DivUIOp::create(b, loc, rest, cst(trips[d]));
    }
    if (steps[d] != 1)
      idx = arith::MulIOp::create(b, loc, idx, cst(steps[d]));
    if (lbs[d] != 0)
      idx = arith::AddIOp::create(b, loc, idx, cst(lbs[d]));
    ivs[d] = idx;
  }
  cloneBodyAt(b, par, ivs, map);
  return success();
}

} // namespace kiln
