//===- Weights.cpp - the external weights file (--weights=external) -------===//
//
// The file is the blobs at the offsets kiln-externalize-weights chose, zero
// padded between; the signature carries its size and an FNV-1a 64 checksum
// that the runtime verifies when it maps the file.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "kiln/ArtifactFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>

using namespace mlir;

namespace kiln {

void embedWeights(ModuleOp module, bool releaseSources) {
  auto entries = module->getAttrOfType<ArrayAttr>(KilnDialect::getExternalWeightsAttrName());
  if (!entries)
    return;
  module->removeAttr(KilnDialect::getExternalWeightsAttrName());
  uint64_t size = 0;
  for (Attribute e : entries) {
    auto pair = cast<ArrayAttr>(e);
    size = cast<IntegerAttr>(pair[0]).getInt() +
           cast<DenseResourceElementsAttr>(pair[1]).getRawHandle().getBlob()->getData().size();
  }
  // Filled in place (the padding zeroed): one copy of the weights, not two.
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(size, 64, /*dataIsMutable=*/true);
  MutableArrayRef<char> out = blob.getMutableData();
  std::memset(out.data(), 0, size);
  for (Attribute e : entries) {
    auto pair = cast<ArrayAttr>(e);
    ArrayRef<char> data =
        cast<DenseResourceElementsAttr>(pair[1]).getRawHandle().getBlob()->getData();
    std::memcpy(out.data() + cast<IntegerAttr>(pair[0]).getInt(), data.data(), data.size());
  }
  // The weights' own blobs (packed copies on the heap, initializers mapped
  // from the model's files) are read by nothing once copied: freed now,
  // not held to the end beside the blob and LLVM's copy of it (GPT-2's
  // compile peaked at 5x its 497 MB of weights).
  if (releaseSources)
    for (Attribute e : entries)
      if (auto *resource = cast<DenseResourceElementsAttr>(cast<ArrayAttr>(e)[1])
                               .getRawHandle()
                               .getResource())
        resource->setBlob(AsmResourceBlob());
  Builder b(module.getContext());
  auto type = RankedTensorType::get({(int64_t)size}, b.getIntegerType(8));
  module->setAttr(KilnDialect::getWeightsBlobAttrName(),
                  DenseResourceElementsAttr::get(type, "kiln_weights", std::move(blob)));
  if (auto inside = module->getAttrOfType<IntegerAttr>(KilnDialect::getWeightBytesAttrName()))
    module->setAttr(KilnDialect::getWeightBytesAttrName(),
                    b.getI64IntegerAttr(inside.getInt() + size));
}

LogicalResult writeExternalWeights(ModuleOp module, const std::string &path, std::string &line,
                                   std::string &error) {
  auto entries = module->getAttrOfType<ArrayAttr>(KilnDialect::getExternalWeightsAttrName());
  line.clear();
  if (!entries)
    return success();
  module->removeAttr(KilnDialect::getExternalWeightsAttrName());
  std::error_code ec;
  std::optional<llvm::raw_fd_ostream> os;
  if (!path.empty()) {
    os.emplace(path, ec);
    if (ec) {
      error = "cannot write '" + path + "': " + ec.message();
      return failure();
    }
  }
  uint64_t hash = KILN_FNV1A64_INIT, size = 0;
  auto put = [&](const char *data, size_t n) {
    hash = kiln_fnv1a64(hash, data, n);
    if (os)
      os->write(data, n);
    size += n;
  };
  static const char zeros[64] = {};
  for (Attribute e : entries) {
    auto pair = cast<ArrayAttr>(e);
    uint64_t offset = cast<IntegerAttr>(pair[0]).getInt();
    ArrayRef<char> data =
        cast<DenseResourceElementsAttr>(pair[1]).getRawHandle().getBlob()->getData();
    while (size < offset)
      put(zeros, std::min<uint64_t>(sizeof zeros, offset - size));
    put(data.data(), data.size());
  }
  if (os) {
    os->close();
    if (os->has_error()) {
      error = "cannot write '" + path + "': " + os->error().message();
      os->clear_error();
      return failure();
    }
  }
  char buf[96];
  snprintf(buf, sizeof buf, "external_weights %llu %016llx\n", (unsigned long long)size,
           (unsigned long long)hash);
  line = buf;
  return success();
}

} // namespace kiln
