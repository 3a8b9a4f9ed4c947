//===- HostMemory.h - the runtime's large host buffers ----------*- C++ -*-===//
//
// A session's arena and the blocks of buffers sized at run time. Those of
// 2 MiB or more are mapped on their own, 2 MiB aligned, and asked for
// transparent huge pages (madvise: the kernel's default policy gives them
// only on request): a model's kernels sweep tens of MB of activations, a
// TLB miss every 4 KiB page otherwise. ResNet-50 at batch 1 on 2 Sapphire
// Rapids cores 31.9 -> 30.9 ms; EfficientNet-B0 and MobileNetV3 ~1.5%;
// BERT and GPT-2 (their time in weights, which stay in the artifact's
// file-backed pages) unchanged. Smaller ones come from the heap, 64-byte
// aligned.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_HOSTMEMORY_H
#define KILN_LIB_RUNTIME_HOSTMEMORY_H

#include <cstdint>

namespace kiln::rt {

/// `bytes` of host memory, 64-byte aligned (2 MiB from 2 MiB on), or null.
void *allocateHost(uint64_t bytes);

/// Gives back what allocateHost(bytes) returned (null is ignored).
void releaseHost(void *p, uint64_t bytes);

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_HOSTMEMORY_H
