// RUN: kiln-opt %s -kiln-form-kernels="conv-vector-bits=512 max-shared-bytes=65536" | FileCheck %s
// RUN: kiln-opt %s -kiln-form-kernels="conv-vector-bits=512 max-shared-bytes=32768" | FileCheck %s --check-prefix=SPLIT

// Tests a classifier over a dynamic batch: a packed 1x1 convolution (32 KB
// of filters), a sum over its pixels and a linear layer (16 KB of
// weights). Its kernel's tiles are whole images, so every tile reads all of
// the convolution's filters, as it reads all of the linear layer's
// weights: within max-shared-bytes together, one kernel per image (CHECK);
// past it the convolution is a kernel of its own, tiled by images, blocks
// of 32 output channels and rows (SPLIT), and the pooling and the linear
// layer take 8 images a tile. Under the one kernel, a batch of one image
// ran on one thread (ResNet-50's last 1x1 convolution, 4 MB of filters).
// CHECK-LABEL: func.func @classifier
// CHECK: scf.forall (%{{.*}}) in (%{{.*}})
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x64x4x4xf32>, tensor<8x64x1x1x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x128x4x4xf32>) outs(%{{.*}} : tensor<1x128xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x128xf32>, tensor<128x32xf32>)
// CHECK-NOT: scf.forall (
// SPLIT-LABEL: func.func @classifier
// SPLIT: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (%{{.*}}, 128, 4) step (1, 32, 4)
// SPLIT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x64x4x4xf32>, tensor<2x64x1x1x16xf32>)
// SPLIT: scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (8)
// SPLIT-NOT: tensor<2x64x1x1x16xf32>
// SPLIT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x128xf32>, tensor<128x32xf32>)
#in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#wp = affine_map<(n, f, oh, ow, c, kh, kw) -> (f floordiv 16, c, kh, kw, f mod 16)>
#out = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
#id4 = affine_map<(n, f, h, w) -> (n, f, h, w)>
#sum = affine_map<(n, f, h, w) -> (n, f)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @classifier(%x: tensor<?x64x4x4xf32>) -> tensor<?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64x4x4xf32>
  %filters = arith.constant dense<0.5> : tensor<8x64x1x1x16xf32>
  %weights = arith.constant dense<0.25> : tensor<128x32xf32>
  %e = tensor.empty(%n) : tensor<?x128x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128x4x4xf32>) -> tensor<?x128x4x4xf32>
  %conv = linalg.generic {indexing_maps = [#in, #wp, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %filters : tensor<?x64x4x4xf32>, tensor<8x64x1x1x16xf32>) outs(%f : tensor<?x128x4x4xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x128x4x4xf32>
  %es = tensor.empty(%n) : tensor<?x128xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<?x128xf32>) -> tensor<?x128xf32>
  %pooled = linalg.generic {indexing_maps = [#id4, #sum], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%conv : tensor<?x128x4x4xf32>) outs(%fs : tensor<?x128xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?x128xf32>
  %eo = tensor.empty(%n) : tensor<?x32xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<?x32xf32>) -> tensor<?x32xf32>
  %o = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%pooled, %weights : tensor<?x128xf32>, tensor<128x32xf32>) outs(%fo : tensor<?x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %o : tensor<?x32xf32>
}
