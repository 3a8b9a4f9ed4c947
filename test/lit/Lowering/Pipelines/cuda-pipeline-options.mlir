// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cuda-lower-to-llvm | FileCheck %s --check-prefix=SM80
// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cuda-lower-to-llvm='chip=sm_90a' | FileCheck %s --check-prefix=ASYNC
// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cuda-lower-to-llvm='chip=sm_90a loads=tma' | FileCheck %s --check-prefix=TMA
// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cuda-lower-to-llvm='chip=sm_90a loads=ring' | FileCheck %s --check-prefix=RING
// RUN: not kiln-opt %s -kiln-lower-to-linalg -kiln-cuda-lower-to-llvm='chip=sm_90a cluster=2' 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that the registered CUDA pipeline takes the options `kiln compile`
// passes, so lit reaches each variant of a matmul: mma.sync for sm_80 (PTX
// ISA 8.0), wgmma for sm_90a with a loading warpgroup copying by cp.async,
// by TMA (ISA 8.3, tensor maps) or, as a shared ring, by every thread; a
// setting that can fit no matmul is an error.
// SM80: kiln.ptx = "{{.*}}.version 8.0{{.*}}mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// SM80-NOT: wgmma
// ASYNC: kiln.ptx = "{{.*}}.version 8.0{{.*}}setmaxnreg{{.*}}cp.async.cg.shared.global{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// ASYNC-NOT: cp.async.bulk.tensor
// TMA: kiln.ptx = "{{.*}}.version 8.3{{.*}}cp.async.bulk.tensor{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// RING: kiln.ptx = "{{.*}}.version 8.0{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// RING-NOT: setmaxnreg
// BAD: error: gpu tuning cluster=2: clusters share tiles by TMA, which needs loads=tma
func.func @main(%a: tensor<256x192xf16>, %b: tensor<192x384xf16>) -> tensor<256x384xf16> {
  %y = kiln.matmul %a, %b : tensor<256x192xf16>, tensor<192x384xf16> -> tensor<256x384xf16>
  return %y : tensor<256x384xf16>
}
