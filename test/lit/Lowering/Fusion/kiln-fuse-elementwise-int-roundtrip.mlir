// RUN: kiln-opt %s -split-input-file -kiln-fuse-elementwise | FileCheck %s

// Tests that a quantize's byte read back by the dequantize after it (a QDQ
// pair, fused into one body) is the clamped float plus +0 (a -0 comes
// back +0): rounded, shifted by a zero point (an op's 0-d constant, fused
// into the body), clamped to [0, 255].
// CHECK-LABEL: func.func @qdq_pair
// CHECK: linalg.generic
// CHECK: %[[R:.*]] = math.roundeven
// CHECK: %[[S:.*]] = arith.addf %[[R]]
// CHECK: %[[LO:.*]] = arith.maximumf %[[S]]
// CHECK: %[[C:.*]] = arith.minimumf %[[LO]]
// CHECK-NOT: arith.uitofp
// CHECK: arith.addf %[[C]], %{{.*}} : f32
// CHECK-NOT: arith.uitofp
// CHECK: return
#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @qdq_pair(%x: tensor<16xf32>) -> tensor<16xf32> {
  %scale = arith.constant 0.05 : f32
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %zpv = arith.constant 128.0 : f32
  %ze = tensor.empty() : tensor<f32>
  %zp = linalg.generic {indexing_maps = [affine_map<() -> ()>], iterator_types = []} outs(%ze : tensor<f32>) {
  ^bb0(%o: f32):
    linalg.yield %zpv : f32
  } -> tensor<f32>
  %e8 = tensor.empty() : tensor<16xi8>
  %q = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%x, %zp : tensor<16xf32>, tensor<f32>) outs(%e8 : tensor<16xi8>) {
  ^bb0(%a: f32, %z: f32, %o: i8):
    %d = arith.divf %a, %scale : f32
    %r = math.roundeven %d : f32
    %s = arith.addf %r, %z : f32
    %m = arith.maximumf %s, %lo : f32
    %c = arith.minimumf %m, %hi : f32
    %b = arith.fptoui %c : f32 to i8
    linalg.yield %b : i8
  } -> tensor<16xi8>
  %ef = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%q, %zp : tensor<16xi8>, tensor<f32>) outs(%ef : tensor<16xf32>) {
  ^bb0(%b: i8, %z: f32, %o: f32):
    %f = arith.uitofp %b : i8 to f32
    %t = arith.subf %f, %z : f32
    %u = arith.mulf %t, %scale : f32
    linalg.yield %u : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// Tests that without the clamp (a value past the byte's range would wrap)
// or with a value not known whole (no rounding), the round trip stays.
// CHECK-LABEL: func.func @not_clamped
// CHECK: arith.fptoui
// CHECK: arith.uitofp
// CHECK-LABEL: func.func @not_whole
// CHECK: arith.fptoui
// CHECK: arith.uitofp
// CHECK-LABEL: func.func @signed_range
// CHECK-NOT: arith.sitofp
// CHECK: return
// CHECK-LABEL: func.func @signed_past_range
// CHECK: arith.sitofp
#id2 = affine_map<(d0) -> (d0)>
func.func @not_clamped(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.roundeven %a : f32
    %b = arith.fptoui %r : f32 to i8
    %f = arith.uitofp %b : i8 to f32
    linalg.yield %f : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}
func.func @not_whole(%x: tensor<16xf32>) -> tensor<16xf32> {
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %lo : f32
    %c = arith.minimumf %m, %hi : f32
    %b = arith.fptoui %c : f32 to i8
    %f = arith.uitofp %b : i8 to f32
    linalg.yield %f : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}
func.func @signed_range(%x: tensor<16xf32>) -> tensor<16xf32> {
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.roundeven %a : f32
    %c = arith.minimumf %r, %hi : f32
    %m = arith.maximumf %c, %lo : f32
    %b = arith.fptosi %m : f32 to i8
    %f = arith.sitofp %b : i8 to f32
    linalg.yield %f : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}
func.func @signed_past_range(%x: tensor<16xf32>) -> tensor<16xf32> {
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 255.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.roundeven %a : f32
    %c = arith.minimumf %r, %hi : f32
    %m = arith.maximumf %c, %lo : f32
    %b = arith.fptosi %m : f32 to i8
    %f = arith.sitofp %b : i8 to f32
    linalg.yield %f : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// Tests a zero point the body reads itself, tensor.extract of a 0-d
// tensor that an op fills with a whole constant (as kiln-to-linalg's
// quantize leaves it): still a whole shift, the round trip goes.
// A zero point of 3.5 is no whole shift: that round trip stays.
// CHECK-LABEL: func.func @extracted_zero_point
// CHECK: tensor.extract
// CHECK: arith.fptoui
// CHECK-NOT: arith.uitofp
// CHECK: return
// CHECK-LABEL: func.func @extracted_half_zero_point
// CHECK: arith.fptoui
// CHECK: arith.uitofp
#id3 = affine_map<(d0) -> (d0)>
func.func @extracted_zero_point(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xi8>) {
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %zpv = arith.constant 3.0 : f32
  %ze = tensor.empty() : tensor<f32>
  %zp = linalg.generic {indexing_maps = [affine_map<() -> ()>], iterator_types = []} outs(%ze : tensor<f32>) {
  ^bb0(%o: f32):
    linalg.yield %zpv : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<16xf32>
  %e8 = tensor.empty() : tensor<16xi8>
  %y:2 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e, %e8 : tensor<16xf32>, tensor<16xi8>) {
  ^bb0(%a: f32, %o: f32, %o8: i8):
    %z = tensor.extract %zp[] : tensor<f32>
    %r = math.roundeven %a : f32
    %s = arith.addf %r, %z : f32
    %m = arith.maximumf %s, %lo : f32
    %c = arith.minimumf %m, %hi : f32
    %b = arith.fptoui %c : f32 to i8
    %f = arith.uitofp %b : i8 to f32
    linalg.yield %f, %b : f32, i8
  } -> (tensor<16xf32>, tensor<16xi8>)
  return %y#0, %y#1 : tensor<16xf32>, tensor<16xi8>
}
func.func @extracted_half_zero_point(%x: tensor<16xf32>) -> tensor<16xf32> {
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %zpv = arith.constant 3.5 : f32
  %ze = tensor.empty() : tensor<f32>
  %zp = linalg.generic {indexing_maps = [affine_map<() -> ()>], iterator_types = []} outs(%ze : tensor<f32>) {
  ^bb0(%o: f32):
    linalg.yield %zpv : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = tensor.extract %zp[] : tensor<f32>
    %r = math.roundeven %a : f32
    %s = arith.addf %r, %z : f32
    %m = arith.maximumf %s, %lo : f32
    %c = arith.minimumf %m, %hi : f32
    %b = arith.fptoui %c : f32 to i8
    %f = arith.uitofp %b : i8 to f32
    linalg.yield %f : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}
