//===- kiln-opt.cpp - MlirOptMain with every Kiln dialect and pass --------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  kiln::registerKilnDialects(registry);
  mlir::registerAllPasses();
  kiln::registerKilnTransformsPasses();
  kiln::registerKilnLoweringPasses();
  kiln::registerKilnPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
