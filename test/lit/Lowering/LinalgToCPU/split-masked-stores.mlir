// RUN: kiln-opt %s -kiln-split-masked-stores | FileCheck %s

// Tests that a masked store of a constant prefix mask (7 of 8 lanes)
// becomes plain stores of 4, 2 and 1 lanes at their offsets.
// CHECK-LABEL: func.func @prefix
// CHECK-NOT: vector.maskedstore
// CHECK: %[[A:.*]] = vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [4], strides = [1]} : vector<8xf32> to vector<4xf32>
// CHECK: vector.store %[[A]], %{{.*}}[%{{.*}}, %[[I:.*]]] : memref<4x16xf32>, vector<4xf32>
// CHECK: %[[B:.*]] = vector.extract_strided_slice %{{.*}} {offsets = [4], sizes = [2], strides = [1]} : vector<8xf32> to vector<2xf32>
// CHECK: %[[I4:.*]] = arith.addi %[[I]], %c4
// CHECK: vector.store %[[B]], %{{.*}}[%{{.*}}, %[[I4]]] : memref<4x16xf32>, vector<2xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [6], sizes = [1], strides = [1]} : vector<8xf32> to vector<1xf32>
// CHECK: arith.addi %[[I]], %c6
// CHECK: vector.store {{.*}} : memref<4x16xf32>, vector<1xf32>
func.func @prefix(%m: memref<4x16xf32>, %v: vector<8xf32>, %r: index, %i: index) {
  %mask = vector.constant_mask [7] : vector<8xi1>
  vector.maskedstore %m[%r, %i], %mask, %v : memref<4x16xf32>, vector<8xi1>, vector<8xf32>
  return
}

// Tests a constant mask with a run in the middle (lanes 3..5): a store of
// 2 lanes at +3 and 1 at +5; an empty mask stores nothing; a full one
// stores the vector.
// CHECK-LABEL: func.func @runs
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [3], sizes = [2], strides = [1]}
// CHECK: vector.store {{.*}} vector<2xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [5], sizes = [1], strides = [1]}
// CHECK: vector.store {{.*}} vector<1xf32>
// CHECK-NEXT: vector.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<16xf32>, vector<8xf32>
// CHECK-NEXT: return
func.func @runs(%m: memref<16xf32>, %v: vector<8xf32>, %i: index) {
  %mask = arith.constant dense<[false, false, false, true, true, true, false, false]> : vector<8xi1>
  vector.maskedstore %m[%i], %mask, %v : memref<16xf32>, vector<8xi1>, vector<8xf32>
  %none = vector.constant_mask [0] : vector<8xi1>
  vector.maskedstore %m[%i], %none, %v : memref<16xf32>, vector<8xi1>, vector<8xf32>
  %c8 = arith.constant 8 : index
  %all = vector.create_mask %c8 : vector<8xi1>
  vector.maskedstore %m[%i], %all, %v : memref<16xf32>, vector<8xi1>, vector<8xf32>
  return
}

// Tests that a mask known only at run time stays.
// CHECK-LABEL: func.func @dynamic
// CHECK: vector.maskedstore
func.func @dynamic(%m: memref<16xf32>, %v: vector<8xf32>, %i: index, %n: index) {
  %mask = vector.create_mask %n : vector<8xi1>
  vector.maskedstore %m[%i], %mask, %v : memref<16xf32>, vector<8xi1>, vector<8xf32>
  return
}
