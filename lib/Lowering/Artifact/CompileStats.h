//===- CompileStats.h - what `kiln compile --stats` prints ------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_ARTIFACT_COMPILESTATS_H
#define KILN_LIB_LOWERING_ARTIFACT_COMPILESTATS_H

#include "mlir/IR/BuiltinOps.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// `kiln compile --stats`: what was compiled and where the time went.
class CompileStats {
public:
  /// Ends the current stage (if any) and starts `name`.
  void stage(const char *name) {
    auto now = std::chrono::steady_clock::now();
    if (current)
      times.push_back({current, std::chrono::duration<double, std::milli>(now - start).count()});
    current = name;
    start = now;
  }
  void countImported(mlir::ModuleOp module) {
    module.walk([&](mlir::Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "kiln")
        ++kinds[op->getName().getStringRef()], ++ops;
    });
  }
  void countKernels(mlir::ModuleOp module) {
    auto table = module->getAttrOfType<mlir::StringAttr>(KilnDialect::getKernelTableAttrName());
    for (llvm::StringRef line : llvm::split(table ? table.strref() : "", '\n')) {
      kernels += !line.empty();
      tasks += line.split('\t').first.contains("_task");
    }
    auto bytes = [&](llvm::StringRef attr) {
      auto a = module->getAttrOfType<mlir::IntegerAttr>(attr);
      return a ? a.getInt() : 0;
    };
    arena = bytes(KilnDialect::getArenaBytesAttrName());
    weights = bytes(KilnDialect::getWeightBytesAttrName());
  }
  void print(const std::string &model, uint64_t externalWeights) {
    stage(nullptr);
    llvm::raw_ostream &os = llvm::errs();
    os << "stats: " << model << "\n  ops imported: " << ops << " (" << kinds.size()
       << " kinds)\n  kernels: " << kernels << " (" << tasks
       << " split over the thread pool)\n  arena: " << arena << " bytes\n  weights: " << weights
       << " bytes in the artifact, " << externalWeights << " external\n"
       << partition << "  time:";
    double total = 0;
    for (auto &[name, ms] : times) {
      os << " " << name << " " << llvm::format("%.0f", ms) << " ms,";
      total += ms;
    }
    os << " total " << llvm::format("%.0f", total) << " ms\n";
  }

  std::string partition; // training: what kiln-partition kept

private:
  const char *current = nullptr;
  std::chrono::steady_clock::time_point start;
  std::vector<std::pair<const char *, double>> times;
  llvm::StringMap<int> kinds;
  int64_t ops = 0, kernels = 0, tasks = 0, arena = 0, weights = 0;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_ARTIFACT_COMPILESTATS_H
