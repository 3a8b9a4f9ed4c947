// RUN: kiln-opt %s -kiln-form-kernels="conv-vector-bits=512 max-shared-bytes=65536" | FileCheck %s
// RUN: kiln-opt %s -kiln-form-kernels="conv-vector-bits=512 max-shared-bytes=262144" | FileCheck %s --check-prefix=SHARED

// Tests a classifier over a dynamic batch: pooling (a sum over 49 pixels,
// ReLU before it), then a linear layer whose weights (120 KB) pass
// max-shared-bytes and whose 120 columns are not whole vectors (which
// column blocks need). The linear layer stays whole, outside any tile (for
// kiln-vectorize-matmul to split its columns when the rows are few); the
// pooling and the bias after it are kernels of their own, a tile per row.
// Under a larger max-shared-bytes the layer joins the kernel of its bias
// and pooling, a tile per 8 rows, as before.
// CHECK-LABEL: func.func @classifier
// CHECK: scf.forall
// CHECK: math.absf
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256x120xf32>)
// CHECK: scf.forall
// CHECK: arith.addf
// CHECK: return
// SHARED-LABEL: func.func @classifier
// SHARED: scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (8)
// SHARED: math.absf
// SHARED: ins(%{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256x120xf32>)
// SHARED: scf.forall.in_parallel
// SHARED-NOT: scf.forall
// SHARED: return
#img = affine_map<(n, c, p) -> (n, c, p)>
#pooled = affine_map<(n, c, p) -> (n, c)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#row = affine_map<(m, n) -> (m, n)>
#bias = affine_map<(m, n) -> (n)>
func.func @classifier(%x: tensor<?x256x49xf32>) -> tensor<?x120xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<256x120xf32>
  %bv = arith.constant dense<0.25> : tensor<120xf32>
  %n = tensor.dim %x, %c0 : tensor<?x256x49xf32>
  %pe = tensor.empty(%n) : tensor<?x256xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<?x256xf32>) -> tensor<?x256xf32>
  %pool = linalg.generic {indexing_maps = [#img, #pooled], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<?x256x49xf32>) outs(%pz : tensor<?x256xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = math.absf %v : f32
    %s = arith.addf %acc, %r : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  %ye = tensor.empty(%n) : tensor<?x120xf32>
  %yz = linalg.fill ins(%zero : f32) outs(%ye : tensor<?x120xf32>) -> tensor<?x120xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%pool, %w : tensor<?x256xf32>, tensor<256x120xf32>) outs(%yz : tensor<?x120xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x120xf32>
  %y = linalg.generic {indexing_maps = [#row, #bias, #row], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bv : tensor<?x120xf32>, tensor<120xf32>) outs(%ye : tensor<?x120xf32>) {
  ^bb0(%v: f32, %bb: f32, %o: f32):
    %s = arith.addf %v, %bb : f32
    linalg.yield %s : f32
  } -> tensor<?x120xf32>
  return %y : tensor<?x120xf32>
}

// Tests that the same layer with 128 columns (whole vectors) is not left
// whole: its product is in a kernel (column blocks or row tiles).
// CHECK-LABEL: func.func @whole_vectors
// CHECK: scf.forall
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256x128xf32>)
// CHECK: scf.forall.in_parallel
// CHECK: return
// SHARED-LABEL: func.func @whole_vectors
func.func @whole_vectors(%x: tensor<?x256xf32>) -> tensor<?x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<256x128xf32>
  %bv = arith.constant dense<0.25> : tensor<128xf32>
  %n = tensor.dim %x, %c0 : tensor<?x256xf32>
  %ye = tensor.empty(%n) : tensor<?x128xf32>
  %yz = linalg.fill ins(%zero : f32) outs(%ye : tensor<?x128xf32>) -> tensor<?x128xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x256xf32>, tensor<256x128xf32>) outs(%yz : tensor<?x128xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x128xf32>
  %y = linalg.generic {indexing_maps = [#row, #bias, #row], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bv : tensor<?x128xf32>, tensor<128xf32>) outs(%ye : tensor<?x128xf32>) {
  ^bb0(%v: f32, %bb: f32, %o: f32):
    %s = arith.addf %v, %bb : f32
    linalg.yield %s : f32
  } -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
