// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-to-linalg))' | FileCheck %s

// Tests that a broadcasting add reads the smaller operand through a map that
// drops the broadcast dimensions.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
func.func @add_broadcast(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = kiln.add %x, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests that size-1 dimensions broadcast through a constant-0 index.
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func @sub_keepdim
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[COL]], {{.*}}]
// CHECK: arith.subf
func.func @sub_keepdim(%x: tensor<2x8xf32>, %m: tensor<2x1xf32>) -> tensor<2x8xf32> {
  %0 = kiln.sub %x, %m : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests integer forms: signed division and max.
// CHECK-LABEL: func @integers
// CHECK: arith.divsi
// CHECK: arith.maxsi
func.func @integers(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = kiln.div %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %1 = kiln.max %0, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %1 : tensor<4xi64>
}

// -----

// Tests the scalar bodies of the unary ops.
// CHECK-LABEL: func @unary
// CHECK: math.erf
// CHECK: math.tanh
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.maximumf
// CHECK: arith.minimumf
func.func @unary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.erf %x : tensor<4xf32>
  %1 = kiln.tanh %0 : tensor<4xf32>
  %2 = kiln.sigmoid %1 : tensor<4xf32>
  %3 = kiln.clip %2 {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// Tests compare + where: a cmpf producing i1 and a select.
// CHECK-LABEL: func @compare_where
// CHECK: arith.cmpf olt
// CHECK: arith.select
func.func @compare_where(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %c = kiln.less %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %0 = kiln.where %c, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests casts: float to int truncates, int to bool compares with zero.
// CHECK-LABEL: func @casts
// CHECK: arith.fptosi
// CHECK: arith.cmpi ne
func.func @casts(%x: tensor<4xf32>) -> tensor<4xi1> {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xi32>
  %1 = kiln.cast %0 : tensor<4xi32> -> tensor<4xi1>
  return %1 : tensor<4xi1>
}

// -----

// Tests that sizes of dynamic dimensions are the sizes each result was
// made with: no tensor.dim of an intermediate is left (it would be a
// second use, keeping elementwise fusion from taking the intermediate),
// however the ops were ordered when lowered.
// CHECK-LABEL: func.func @dynamic_chain
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-NOT: tensor.dim %{{[0-9]+}}
// CHECK: return
func.func @dynamic_chain(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %s = kiln.softmax %x {axis = -1 : i64} : tensor<?x?xf32>
  %n = kiln.is_nan %s : tensor<?x?xf32> -> tensor<?x?xi1>
  %z = kiln.constant dense<0.0> : tensor<f32>
  %w = kiln.where %n, %z, %s : tensor<?x?xi1>, tensor<f32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}
