//===- Windows.cpp - HannWindow, HammingWindow, BlackmanWindow -------------===//
//
// Generalized cosine windows, w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),
// N the size (periodic) or the size - 1 (symmetric). A size known at compile
// time makes the window a constant, computed here in double and rounded
// once to the output type; one known only at run time, the same there.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"
#include "RuntimeShapes.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

Handler cosineWindow(double a0, double a1, double a2) {
  return [=](NodeContext &nc) -> LogicalResult {
    int32_t dataType = nc.attrInt("output_datatype", 1);
    Type type = onnxElementType(nc.ctx(), dataType);
    if (!type)
      return nc.error("unsupported output_datatype " + onnxTypeName(dataType));
    bool periodic = nc.attrInt("periodic", 1) != 0;
    // A size known only at run time: the window is computed there.
    if (!nc.known(0))
      return cosineWindowRuntime(nc, a0, a1, a2, type, periodic);
    auto size = nc.constInts(0, "size");
    if (failed(size))
      return failure();
    if (size->size() != 1 || (*size)[0] < 0)
      return nc.error("size must be one non-negative integer");
    int64_t n = (*size)[0];
    if (n > (int64_t(1) << 26))
      return nc.error("size " + Twine(n) + " is past the 2^26 values a constant window may hold");
    double denominator = periodic ? n : n - 1;
    KnownTensor window;
    window.shape = {n};
    window.elementType = type;
    for (int64_t i = 0; i < n; ++i) {
      // A symmetric window of one sample is that sample at n = 0.
      double x = denominator > 0 ? 2 * M_PI * i / denominator : 0;
      double v = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
      window.values.push_back(isa<IntegerType>(type) ? std::trunc(v) : v);
    }
    return nc.setOutput(0, nc.constant(window));
  };
}

} // namespace

void registerWindowHandlers(HandlerTable &t) {
  t["HannWindow"] = cosineWindow(0.5, 0.5, 0);
  t["HammingWindow"] = cosineWindow(25.0 / 46.0, 21.0 / 46.0, 0);
  t["BlackmanWindow"] = cosineWindow(0.42, 0.5, 0.08);
}

} // namespace kiln
