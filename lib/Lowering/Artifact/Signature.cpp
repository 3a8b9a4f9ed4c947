//===- Signature.cpp - the artifact's self-description --------------------===//

#include "Artifact.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/OutputDims.h"

#include "kiln/ArtifactFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"

#include <sstream>

using namespace mlir;

namespace kiln {
namespace {
std::string dtypeName(Type t) {
  if (t.isF16()) return "f16";
  if (t.isBF16()) return "bf16";
  if (t.isF32()) return "f32";
  if (t.isF64()) return "f64";
  if (t.isInteger(1)) return "bool";
  if (t.isUnsignedInteger(8)) return "u8";
  if (t.isUnsignedInteger(16)) return "u16";
  if (t.isUnsignedInteger(32)) return "u32";
  if (t.isUnsignedInteger(64)) return "u64";
  if (t.isInteger(8)) return "i8";
  if (t.isInteger(16)) return "i16";
  if (t.isInteger(32)) return "i32";
  if (t.isInteger(64)) return "i64";
  return "";
}

/// The `dimexpr` line of a derived symbol (kiln.dim_exprs' [constant,
/// [coef, symbol...]...]), appending its range, from its terms' ranges, to
/// `ranges`; nothing when a symbol is unknown or a bound overflows.
std::optional<std::string> derivedSymbol(ArrayAttr expr, const std::vector<std::string> &symbols,
                                         std::vector<std::pair<int64_t, int64_t>> &ranges) {
  int64_t constant = cast<IntegerAttr>(expr[0]).getInt();
  int64_t lo = constant, hi = constant;
  bool unbounded = false, noMinimum = false, overflow = false;
  std::ostringstream line;
  line << "dimexpr " << symbols.size() << " " << constant << " " << expr.size() - 1;
  for (Attribute t : expr.getValue().drop_front()) {
    auto term = cast<ArrayAttr>(t);
    int64_t coef = cast<IntegerAttr>(term[0]).getInt();
    int64_t tlo = coef, thi = coef; // sizes are nonnegative: monotone in each
    bool tUnbounded = false;
    line << " " << coef << " " << term.size() - 1;
    for (Attribute n : term.getValue().drop_front()) {
      auto it = llvm::find(symbols, cast<StringAttr>(n).str());
      if (it == symbols.end())
        return std::nullopt;
      auto [min, max] = ranges[it - symbols.begin()];
      line << " " << it - symbols.begin();
      overflow |= __builtin_mul_overflow(tlo, min, &tlo);
      if (max < 0)
        tUnbounded = true;
      else
        overflow |= __builtin_mul_overflow(thi, max, &thi);
    }
    if (coef < 0)
      std::swap(tlo, thi);
    // An unbounded term lifts the maximum, or, subtracted, sinks the
    // minimum (to 0: a size is never less).
    (coef > 0 ? unbounded : noMinimum) |= tUnbounded;
    overflow |= __builtin_add_overflow(lo, tlo, &lo) || __builtin_add_overflow(hi, thi, &hi);
  }
  if (overflow)
    return std::nullopt;
  ranges.emplace_back(noMinimum ? 0 : std::max<int64_t>(lo, 0),
                      unbounded ? -1 : std::max<int64_t>(hi, 0));
  line << "\n";
  return line.str();
}
} // namespace

FailureOr<std::vector<TensorInfo>> describeMain(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("module has no func.func @main");
  std::vector<TensorInfo> out;
  auto describe = [&](bool isInput, Type type, StringAttr nameAttr, ArrayAttr dims,
                      unsigned i) -> LogicalResult {
    const char *kind = isInput ? "input" : "output";
    auto t = dyn_cast<RankedTensorType>(type);
    std::string dtype = t ? dtypeName(t.getElementType()) : "";
    if (!t || dtype.empty())
      return main.emitError() << kind << " " << i << " has unsupported type " << type;
    std::string name = nameAttr ? nameAttr.str() : std::string(kind) + std::to_string(i);
    TensorInfo info{isInput, name, dtype, {}, {}};
    for (int64_t d = 0; d < t.getRank(); ++d) {
      auto symbol = dims && (int64_t)dims.size() == t.getRank() ? dyn_cast<StringAttr>(dims[d])
                                                                 : StringAttr();
      info.shape.push_back(t.isDynamicDim(d) ? -1 : t.getDimSize(d));
      info.symbols.push_back(t.isDynamicDim(d) && symbol ? symbol.str() : "");
    }
    out.push_back(std::move(info));
    return success();
  };
  auto fnType = main.getFunctionType();
  for (unsigned i = 0; i < fnType.getNumInputs(); ++i)
    if (failed(describe(true, fnType.getInput(i),
                        main.getArgAttrOfType<StringAttr>(i, KilnDialect::getNameAttrName()),
                        main.getArgAttrOfType<ArrayAttr>(i, KilnDialect::getDimsAttrName()), i)))
      return failure();
  for (unsigned i = 0; i < fnType.getNumResults(); ++i)
    if (failed(describe(false, fnType.getResult(i),
                        main.getResultAttrOfType<StringAttr>(i, KilnDialect::getNameAttrName()),
                        main.getResultAttrOfType<ArrayAttr>(i, KilnDialect::getDimsAttrName()),
                        i)))
      return failure();
  return out;
}

FailureOr<std::string> buildSignature(ModuleOp module, bool complete) {
  auto tensors = describeMain(module);
  if (failed(tensors))
    return failure();
  std::ostringstream os;
  os << KILN_ARTIFACT_SIGNATURE_MAGIC << "\n";
  // Symbols in the order of their ranges (the module's kiln.dim_ranges).
  std::vector<std::string> symbols;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  if (auto dict = module->getAttrOfType<DictionaryAttr>(KilnDialect::getDimRangesAttrName()))
    for (NamedAttribute r : dict) {
      auto mm = cast<DenseI64ArrayAttr>(r.getValue()).asArrayRef();
      symbols.push_back(r.getName().str());
      ranges.emplace_back(mm[0], mm[1]);
    }
  // Then the symbols outputs compute from those (kiln-bind-result-dims).
  std::string exprLines;
  if (auto dict = module->getAttrOfType<DictionaryAttr>(KilnDialect::getDimExprsAttrName()))
    for (NamedAttribute e : dict) {
      auto line = derivedSymbol(cast<ArrayAttr>(e.getValue()), symbols, ranges);
      if (!line)
        return module.emitError() << "output dimension '" << e.getName().str()
                                  << "' is computed from unknown symbols or overflows";
      symbols.push_back(e.getName().str());
      exprLines += *line;
    }
  // Then the sizes computed from the inputs' values (OutputDims.h): any
  // size, 0 included.
  if (auto values = module->getAttrOfType<ArrayAttr>(kDimValuesAttrName))
    for (auto [i, v] : llvm::enumerate(values.getAsValueRange<StringAttr>())) {
      exprLines += "dimvalue " + std::to_string(symbols.size()) + " " + std::to_string(i) + "\n";
      symbols.push_back(v.str());
      ranges.emplace_back(0, -1);
    }
  for (size_t k = 0; k < symbols.size(); ++k)
    os << "dim " << symbols[k].size() << " " << symbols[k] << " " << ranges[k].first << " "
       << ranges[k].second << "\n";
  os << exprLines;
  for (const TensorInfo &t : *tensors) {
    os << (t.isInput ? "input " : "output ") << t.name.size() << " " << t.name << " " << t.dtype
       << " " << t.shape.size();
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] >= 0) {
        os << " " << t.shape[d];
        continue;
      }
      auto it = llvm::find(symbols, t.symbols[d]);
      if (it == symbols.end() && complete)
        return module.emitError() << (t.isInput ? "input '" : "output '") << t.name
                                  << "': dimension " << d
                                  << " is computed from the dynamic dimensions, not one of "
                                     "them; such outputs are not supported yet";
      if (it == symbols.end())
        os << " ?";
      else
        os << " $" << (it - symbols.begin());
    }
    os << "\n";
  }
  return os.str();
}

void collectKernelTable(ModuleOp module) {
  std::string table;
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
    auto ops = fn->getAttrOfType<ArrayAttr>(KilnDialect::getOpsAttrName());
    if (!ops)
      continue;
    // A CUDA launch stands for its kernel, named by its PTX entry point.
    auto kernel = fn->getAttrOfType<StringAttr>(KilnDialect::getKernelNameAttrName());
    table += kernel ? kernel.str() : fn.getName().str();
    for (Attribute op : ops)
      table += "\t" + cast<StringAttr>(op).str();
    // What the kernel costs, for throughput figures: "#cost FLOPS BYTES".
    if (auto cost = fn->getAttrOfType<ArrayAttr>(KilnDialect::getCostAttrName());
        cost && cost.size() == 2)
      table += "\t#cost " + std::to_string(cast<IntegerAttr>(cost[0]).getInt()) + " " +
               std::to_string(cast<IntegerAttr>(cost[1]).getInt());
    table += "\n";
    fn->removeAttr(KilnDialect::getOpsAttrName());
    fn->removeAttr(KilnDialect::getCostAttrName());
    fn->removeAttr(KilnDialect::getKernelNameAttrName());
  }
  module->setAttr(KilnDialect::getKernelTableAttrName(),
                  StringAttr::get(module.getContext(), table));
}

std::string memoryPlanLines(ModuleOp module) {
  auto bytes = [&](StringRef attr) {
    auto a = module->getAttrOfType<IntegerAttr>(attr);
    return a ? a.getInt() : 0;
  };
  return "arena " + std::to_string(bytes(KilnDialect::getArenaBytesAttrName())) + "\nweights " +
         std::to_string(bytes(KilnDialect::getWeightBytesAttrName())) + "\n";
}

} // namespace kiln
