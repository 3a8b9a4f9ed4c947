//===- NodeContext.cpp - ONNX node access and TensorProto conversion ------===//

#include "NodeContext.h"
#include "SymbolicShape.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>
#include <memory>

using namespace mlir;

namespace kiln {

Type onnxElementType(MLIRContext *ctx, int32_t dataType) {
  Builder b(ctx);
  switch (dataType) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  // Unsigned types stay unsigned at the kiln level (the ops' semantics
  // differ); kiln-signless makes them signless for lowering.
  case onnx::TensorProto::INT8: return b.getIntegerType(8);
  case onnx::TensorProto::UINT8: return b.getIntegerType(8, false);
  case onnx::TensorProto::INT16: return b.getIntegerType(16);
  case onnx::TensorProto::UINT16: return b.getIntegerType(16, false);
  case onnx::TensorProto::INT32: return b.getIntegerType(32);
  case onnx::TensorProto::UINT32: return b.getIntegerType(32, false);
  case onnx::TensorProto::INT64: return b.getIntegerType(64);
  case onnx::TensorProto::UINT64: return b.getIntegerType(64, false);
  case onnx::TensorProto::BOOL: return b.getI1Type();
  default: return nullptr;
  }
}

std::string onnxTypeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name((onnx::TensorProto_DataType)dataType);
  return "type " + std::to_string(dataType);
}

LogicalResult NodeContext::error(const Twine &msg) const {
  return emitError(loc) << msg;
}

FailureOr<Value> NodeContext::input(size_t i) {
  if (!has(i))
    return error("missing input " + Twine(i));
  return valueNamed(node.input(i));
}

FailureOr<GraphValue *> NodeContext::lookup(StringRef name) {
  auto it = values.find(name);
  if (it == values.end())
    return error("input '" + name + "' is not defined by any earlier node, "
                 "initializer or graph input (graphs must be acyclic and sorted)");
  return &it->second;
}

FailureOr<Value> NodeContext::valueNamed(StringRef name) {
  auto found = lookup(name);
  if (failed(found))
    return failure();
  return tensorOf(**found, "input '" + name + "'");
}

FailureOr<Value> NodeContext::tensorOf(GraphValue &gv, const Twine &what) {
  if (gv.sequence)
    return error(what + " is a sequence (" + Twine(gv.sequence->size()) +
                 " tensors), which only the Sequence ops take; a tensor was expected");
  if (!gv.value && gv.known)
    gv.value = constant(*gv.known);
  return gv.value;
}

bool NodeContext::isTrainable(size_t i) const {
  if (!has(i))
    return false;
  auto it = values.find(node.input(i));
  Operation *def = it == values.end() || !it->second.value ? nullptr
                                                           : it->second.value.getDefiningOp();
  return def && def->hasAttr(KilnDialect::getInitializerAttrName());
}

FailureOr<SmallVector<Value>> NodeContext::presentInputs(size_t count, size_t required) {
  SmallVector<Value> out;
  for (size_t i = 0; i < required; ++i)
    if (!has(i))
      return error("input " + Twine(i) + " is required (the node has " + Twine(numInputs()) +
                   " inputs)");
  for (size_t i = 0; i < std::min(count, numInputs()); ++i) {
    if (!has(i))
      continue;
    auto v = input(i);
    if (failed(v))
      return failure();
    out.push_back(*v);
  }
  return out;
}

const KnownTensor *NodeContext::knownOrSymbolic(size_t i) const {
  if (!has(i))
    return nullptr;
  auto it = values.find(node.input(i));
  if (it == values.end() || !it->second.known)
    return nullptr;
  return &*it->second.known;
}

const KnownTensor *NodeContext::known(size_t i) const {
  const KnownTensor *k = knownOrSymbolic(i);
  return k && !k->symbolic() ? k : nullptr;
}

FailureOr<std::vector<int64_t>> NodeContext::constInts(size_t i, StringRef what) {
  const KnownTensor *k = known(i);
  if (!k)
    return error(Twine(what) + " (input " + Twine(i) +
                 ") must be a constant known at compile time");
  for (double v : k->values)
    if (!std::isfinite(v))
      return error(Twine(what) + " (input " + Twine(i) + ") must hold integers, not " +
                   Twine(v != v ? "NaN" : "infinity"));
  return k->ints();
}

FailureOr<double> NodeContext::constScalar(size_t i, StringRef what) {
  const KnownTensor *k = known(i);
  if (!k || k->numElements() != 1)
    return error(Twine(what) + " (input " + Twine(i) +
                 ") must be a constant scalar known at compile time");
  return k->values[0];
}

RankedTensorType NodeContext::inputType(size_t i) {
  auto v = input(i);
  return succeeded(v) ? dyn_cast<RankedTensorType>(v->getType()) : nullptr;
}

const onnx::AttributeProto *NodeContext::attr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::attrInt(StringRef name, int64_t dflt) const {
  auto *a = attr(name);
  return a ? a->i() : dflt;
}

double NodeContext::attrFloat(StringRef name, double dflt) const {
  auto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::attrString(StringRef name, StringRef dflt) const {
  auto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::vector<int64_t> NodeContext::attrInts(StringRef name, std::vector<int64_t> dflt) const {
  auto *a = attr(name);
  if (!a)
    return dflt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

LogicalResult NodeContext::setOutput(size_t i, Value v) {
  if (!hasOutput(i))
    return success();
  values[node.output(i)] = GraphValue{v, std::nullopt};
  return success();
}

void NodeContext::noteDequantized(size_t i, Dequantized d) {
  if (hasOutput(i))
    values[node.output(i)].dequantized = std::make_shared<const Dequantized>(d);
}

const Dequantized *NodeContext::dequantizedInput(size_t i) const {
  if (!has(i))
    return nullptr;
  auto it = values.find(node.input(i));
  return it == values.end() ? nullptr : it->second.dequantized.get();
}

LogicalResult NodeContext::setKnown(size_t i, KnownTensor t) {
  if (!hasOutput(i))
    return success();
  values[node.output(i)] = GraphValue{Value(), std::move(t)};
  return success();
}

FailureOr<GraphValue> NodeContext::graphValue(size_t i) {
  if (!has(i))
    return error("missing input " + Twine(i));
  auto found = lookup(node.input(i));
  if (failed(found))
    return failure();
  return **found;
}

FailureOr<std::vector<GraphValue>> NodeContext::sequenceInput(size_t i) {
  auto v = graphValue(i);
  if (failed(v))
    return failure();
  if (!v->sequence)
    return error("input '" + node.input(i) + "' is a tensor; a sequence was expected");
  return *v->sequence;
}

LogicalResult NodeContext::setGraphValue(size_t i, GraphValue v) {
  if (hasOutput(i))
    values[node.output(i)] = std::move(v);
  return success();
}

LogicalResult NodeContext::setSequence(size_t i, std::vector<GraphValue> elements) {
  GraphValue v;
  v.sequence = std::make_shared<const std::vector<GraphValue>>(std::move(elements));
  return setGraphValue(i, std::move(v));
}

Value NodeContext::constant(const KnownTensor &t) {
  auto type = RankedTensorType::get(t.shape, t.elementType);
  if (t.symbolic()) {
    // Sizes known at run time: a tensor of their index values.
    SmallVector<Value> elems;
    for (size_t i = 0; i < t.values.size(); ++i) {
      Value v = t.syms[i] >= 0 ? shapes->materialize(b, loc, shapes->poly(t.syms[i]))
                               : arith::ConstantIndexOp::create(b, loc, toInt64(t.values[i]));
      if (isa<FloatType>(t.elementType)) { // a size cast to float
        v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
        elems.push_back(arith::SIToFPOp::create(b, loc, t.elementType, v));
        continue;
      }
      elems.push_back(arith::IndexCastOp::create(b, loc, t.elementType, v));
    }
    return tensor::FromElementsOp::create(b, loc, type, elems);
  }
  DenseElementsAttr attr;
  if (auto ft = dyn_cast<FloatType>(t.elementType)) {
    SmallVector<APFloat> vals;
    for (double v : t.values) {
      APFloat f(v);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(f);
    }
    attr = DenseElementsAttr::get(type, vals);
  } else {
    unsigned w = t.elementType.getIntOrFloatBitWidth();
    SmallVector<APInt> vals;
    for (double v : t.values)
      vals.push_back(v < 0 ? APInt(w, (uint64_t)toInt64(v), /*isSigned=*/true, /*implicitTrunc=*/true)
                           : APInt(w, (uint64_t)v, /*isSigned=*/false, /*implicitTrunc=*/true));
    attr = DenseElementsAttr::get(type, vals);
  }
  return ConstantOp::create(b, loc, attr);
}

Value NodeContext::castTo(Value v, Type elementType) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType() == elementType)
    return v;
  return CastOp::create(b, loc, RankedTensorType::get(t.getShape(), elementType), v);
}

FailureOr<Operation *> NodeContext::buildInferred(StringRef name, ValueRange operands,
                                                  ArrayRef<NamedAttribute> attrs,
                                                  unsigned numResults, InferFn infer) {
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  // Placeholder types, replaced once inference (which reads the op's
  // properties) succeeds; the op is erased when it fails.
  Type placeholder = operands.empty() ? (Type)b.getNoneType() : operands[0].getType();
  state.addTypes(SmallVector<Type>(numResults, placeholder));
  Operation *op = b.create(state);
  SmallVector<Type> types;
  if (failed(infer(ctx(), loc, op->getOperands(), op->getRawDictionaryAttrs(),
                   op->getPropertiesStorage(), op->getRegions(), types)) ||
      types.size() != numResults) {
    op->erase();
    return failure();
  }
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  // Verify now, not at the end: handlers go on computing with what they
  // built (an out-of-range axis once drove a loop over 4e13 dimensions).
  if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return failure();
  }
  return op;
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

namespace {
/// Reads the bytes of a tensor stored in an external file, refusing paths
/// that leave the model's folder.
bool mapExternal(const onnx::TensorProto &t, const std::string &modelDir,
                 std::shared_ptr<llvm::MemoryBuffer> &file, ArrayRef<char> &bytes,
                 std::string &error) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    int64_t *field = kv.key() == "offset" ? &offset : kv.key() == "length" ? &length : nullptr;
    if (kv.key() == "location")
      location = kv.value();
    else if (field && (llvm::StringRef(kv.value()).getAsInteger(10, *field) || *field < 0)) {
      error = "tensor '" + t.name() + "': external data " + kv.key() + " '" + kv.value() +
              "' is not a non-negative integer";
      return false;
    }
  }
  if (location.empty() || llvm::sys::path::is_absolute(location) ||
      llvm::StringRef(location).contains("..")) {
    error = "external data location '" + location + "' must be a relative path "
            "inside the model's folder";
    return false;
  }
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  // Symbolic links may point anywhere: the file itself must be in the folder.
  llvm::SmallString<256> realDir, realFile;
  if (!llvm::sys::fs::real_path(modelDir, realDir) && !llvm::sys::fs::real_path(path, realFile)) {
    llvm::StringRef file(realFile);
    if (!file.starts_with(realDir) || file.size() <= realDir.size() ||
        !llvm::sys::path::is_separator(file[realDir.size()])) {
      error = "external data location '" + location + "' resolves to '" + realFile.str().str() +
              "', outside the model's folder";
      return false;
    }
  }
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "cannot read external data file '" + std::string(path) + "'";
    return false;
  }
  int64_t size = (*buf)->getBufferSize();
  if (offset > size || (length >= 0 && length > size - offset)) {
    error = "external data range past the end of '" + std::string(path) + "' (" +
            std::to_string(size) + " bytes)";
    return false;
  }
  if (length < 0)
    length = size - offset;
  file = std::move(*buf);
  bytes = ArrayRef<char>(file->getBufferStart() + offset, length);
  return true;
}

/// The external data as a string (small tensors that are read as values).
bool readExternal(const onnx::TensorProto &t, const std::string &modelDir, std::string &bytes,
                  std::string &error) {
  std::shared_ptr<llvm::MemoryBuffer> file;
  ArrayRef<char> data;
  if (!mapExternal(t, modelDir, file, data, error))
    return false;
  bytes.assign(data.begin(), data.end());
  return true;
}

/// The tensor's data in its little-endian in-memory layout (bools one byte).
bool tensorBytes(const onnx::TensorProto &t, Type et, int64_t count,
                 const std::string &modelDir, std::string &bytes, std::string &error) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return readExternal(t, modelDir, bytes, error);
  if (t.has_raw_data()) {
    bytes = t.raw_data();
    return true;
  }
  unsigned width = et.isInteger(1) ? 8 : et.getIntOrFloatBitWidth();
  bytes.resize(count * (width / 8));
  if (count == 0) // empty repeated fields have no data pointer to copy from
    return true;
  char *out = bytes.data();
  auto put = [&](int64_t i, uint64_t v) { std::memcpy(out + i * (width / 8), &v, width / 8); };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    if (t.float_data_size() != count) break;
    std::memcpy(out, t.float_data().data(), count * 4);
    return true;
  case onnx::TensorProto::DOUBLE:
    if (t.double_data_size() != count) break;
    std::memcpy(out, t.double_data().data(), count * 8);
    return true;
  case onnx::TensorProto::INT64:
    if (t.int64_data_size() != count) break;
    std::memcpy(out, t.int64_data().data(), count * 8);
    return true;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    if (t.uint64_data_size() != count) break;
    for (int64_t i = 0; i < count; ++i) put(i, t.uint64_data(i));
    return true;
  default: // int32_data holds every narrower integer, bool and 16-bit float
    if (t.int32_data_size() != count) break;
    for (int64_t i = 0; i < count; ++i) put(i, (uint64_t)(int64_t)t.int32_data(i));
    return true;
  }
  error = "tensor '" + t.name() + "' holds a different number of values than its "
          "dims (" + std::to_string(count) + ") require";
  return false;
}

double readScalar(const char *p, Type et, int32_t onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT: { float v; std::memcpy(&v, p, 4); return v; }
  case onnx::TensorProto::DOUBLE: { double v; std::memcpy(&v, p, 8); return v; }
  case onnx::TensorProto::INT64: { int64_t v; std::memcpy(&v, p, 8); return (double)v; }
  case onnx::TensorProto::INT32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case onnx::TensorProto::INT16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case onnx::TensorProto::INT8: return (int8_t)*p;
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL: return (uint8_t)*p;
  case onnx::TensorProto::UINT16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  case onnx::TensorProto::UINT32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case onnx::TensorProto::UINT64: { uint64_t v; std::memcpy(&v, p, 8); return (double)v; }
  default: return 0;
  }
}

/// A resource name for the tensor: its name, made a valid identifier.
std::string resourceKey(const onnx::TensorProto &t) {
  std::string key = t.name().empty() ? "tensor" : t.name();
  for (char &c : key)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  if (!llvm::isAlpha(key[0]) && key[0] != '_')
    key = "_" + key;
  return key;
}

bool shapeOf(const onnx::TensorProto &t, SmallVectorImpl<int64_t> &shape, int64_t &count) {
  count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && count > (int64_t(1) << 48) / d))
      return false;
    shape.push_back(d);
    count *= d;
  }
  return true;
}
} // namespace

FailureOr<ElementsAttr> tensorProtoToAttr(const onnx::TensorProto &t, MLIRContext *ctx,
                                          const std::string &modelDir, std::string &error) {
  Type et = onnxElementType(ctx, t.data_type());
  if (!et) {
    error = "tensor '" + t.name() + "' has unsupported element type " +
            onnxTypeName(t.data_type());
    return failure();
  }
  SmallVector<int64_t> shape;
  int64_t count;
  if (!shapeOf(t, shape, count)) {
    error = "tensor '" + t.name() + "' has negative or overflowing dims";
    return failure();
  }
  unsigned elemBytes = et.isInteger(1) ? 1 : et.getIntOrFloatBitWidth() / 8;
  auto type = RankedTensorType::get(shape, et);
  // Weights in external files (models over 2 GB) become blobs over the
  // mapped file: never read into memory twice.
  if (t.data_location() == onnx::TensorProto::EXTERNAL && !et.isInteger(1) && count > 1) {
    std::shared_ptr<llvm::MemoryBuffer> file;
    ArrayRef<char> data;
    if (!mapExternal(t, modelDir, file, data, error))
      return failure();
    if ((int64_t)data.size() != count * elemBytes) {
      error = "tensor '" + t.name() + "' has " + std::to_string(data.size()) +
              " bytes of data, its dims and type need " + std::to_string(count * elemBytes);
      return failure();
    }
    if ((uintptr_t)data.data() % elemBytes == 0) {
      AsmResourceBlob blob(data, elemBytes, [file](void *, size_t, size_t) {},
                           /*dataIsMutable=*/false);
      return cast<ElementsAttr>(
          DenseResourceElementsAttr::get(type, resourceKey(t), std::move(blob)));
    }
  }
  std::string bytes;
  if (!tensorBytes(t, et, count, modelDir, bytes, error))
    return failure();
  if ((int64_t)bytes.size() != count * elemBytes) {
    error = "tensor '" + t.name() + "' has " + std::to_string(bytes.size()) +
            " bytes of data, its dims and type need " + std::to_string(count * elemBytes);
    return failure();
  }
  // Bools and scalars stay inline (readable, foldable); every other tensor
  // becomes a resource blob, copied once, never turned into attribute lists.
  if (et.isInteger(1)) {
    auto flags = std::make_unique<bool[]>(count);
    for (int64_t i = 0; i < count; ++i)
      flags[i] = bytes[i] != 0;
    return cast<ElementsAttr>(DenseElementsAttr::get(type, llvm::ArrayRef(flags.get(), count)));
  }
  if (count <= 1) {
    SmallVector<Attribute> elems;
    const char *p = bytes.data();
    for (int64_t i = 0; i < count; ++i, p += elemBytes) {
      double v = readScalar(p, et, t.data_type());
      if (isa<FloatType>(et)) {
        if (t.data_type() == onnx::TensorProto::FLOAT16 ||
            t.data_type() == onnx::TensorProto::BFLOAT16) {
          uint16_t bits;
          std::memcpy(&bits, p, 2);
          elems.push_back(FloatAttr::get(
              et, APFloat(cast<FloatType>(et).getFloatSemantics(), APInt(16, bits))));
        } else {
          elems.push_back(FloatAttr::get(et, v));
        }
      } else {
        elems.push_back(IntegerAttr::get(et, APInt(et.getIntOrFloatBitWidth(),
                                                   (uint64_t)toInt64(v), true, true)));
      }
    }
    return cast<ElementsAttr>(DenseElementsAttr::get(type, elems));
  }
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(bytes.data(), bytes.size()), alignof(std::max_align_t));
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(type, resourceKey(t), std::move(blob)));
}

uint64_t declaredBytes(const onnx::TensorProto &t, MLIRContext *ctx) {
  SmallVector<int64_t> shape;
  int64_t count;
  Type et = onnxElementType(ctx, t.data_type());
  if (!et || !shapeOf(t, shape, count))
    return 0;
  return (uint64_t)count * (et.isInteger(1) ? 1 : et.getIntOrFloatBitWidth() / 8);
}

std::optional<KnownTensor> tensorProtoToKnown(const onnx::TensorProto &t, MLIRContext *ctx,
                                              const std::string &modelDir) {
  Type et = onnxElementType(ctx, t.data_type());
  if (!et || t.data_type() == onnx::TensorProto::FLOAT16 ||
      t.data_type() == onnx::TensorProto::BFLOAT16)
    return std::nullopt;
  KnownTensor k;
  int64_t count;
  // Integer tensors feed shape arithmetic; of floats only tiny ones (Clip
  // bounds, Resize scales) need to be known. Weights stay resources.
  if (!shapeOf(t, k.shape, count) || count > 64 || (isa<FloatType>(et) && count > 8))
    return std::nullopt;
  std::string bytes, error;
  if (!tensorBytes(t, et, count, modelDir, bytes, error))
    return std::nullopt;
  unsigned elemBytes = et.isInteger(1) ? 1 : et.getIntOrFloatBitWidth() / 8;
  if ((int64_t)bytes.size() != count * elemBytes)
    return std::nullopt;
  k.elementType = et;
  for (int64_t i = 0; i < count; ++i)
    k.values.push_back(readScalar(bytes.data() + i * elemBytes, et, t.data_type()));
  return k;
}

} // namespace kiln
