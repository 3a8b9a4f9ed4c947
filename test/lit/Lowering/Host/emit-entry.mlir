// RUN: kiln-opt %s -split-input-file -kiln-emit-entry -verify-diagnostics | FileCheck %s

// Tests that the entry keeps the host in a thread-local, unpacks one pointer
// per buffer, in order, and calls @main.
// CHECK: llvm.mlir.global internal thread_local @__kiln_host()
// CHECK-LABEL: llvm.func @kiln_model_run(%arg0: !llvm.ptr, %arg1: !llvm.ptr) -> i32
// CHECK: llvm.store %arg1
// CHECK: %[[P0:.*]] = llvm.getelementptr %arg0[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[P1:.*]] = llvm.getelementptr %arg0[1]
// CHECK: %[[A1:.*]] = llvm.load %[[P1]]
// CHECK: llvm.call @main(%[[A0]], %[[A1]])
// CHECK: llvm.return
llvm.func @main(%in: !llvm.ptr, %out: !llvm.ptr) {
  llvm.return
}

// -----

// Tests that a parallel dispatcher packs its buffers, calls the host's
// parallel_for with a trampoline, and runs inline without a host.
// CHECK-LABEL: llvm.func internal @__kiln_parallel_0(%arg0: i64, %arg1: !llvm.ptr)
// CHECK: %[[CTX:.*]] = llvm.alloca
// CHECK: llvm.store %arg1
// CHECK: %[[TRAMP:.*]] = llvm.mlir.addressof @__kiln_parallel_0_trampoline
// CHECK: llvm.cond_br
// CHECK-DAG: llvm.call %{{.*}}(%{{.*}}, %arg0, %[[TRAMP]], %[[CTX]])
// CHECK-DAG: llvm.call @__kiln_parallel_0_trampoline(%[[CTX]], %{{.*}}, %arg0)
// CHECK-LABEL: llvm.func internal @__kiln_parallel_0_trampoline(%arg0: !llvm.ptr, %arg1: i64, %arg2: i64)
// CHECK: llvm.call @main_task0(%arg1, %arg2, %{{.*}})
llvm.func @main(%out: !llvm.ptr) {
  %n = llvm.mlir.constant(8 : i64) : i64
  llvm.call @__kiln_parallel_0(%n, %out) : (i64, !llvm.ptr) -> ()
  llvm.return
}
llvm.func @main_task0(%b: i64, %e: i64, %buf: !llvm.ptr) {
  llvm.return
}
llvm.func @__kiln_parallel_0(i64, !llvm.ptr) attributes {kiln.task = @main_task0}

// -----

// Tests that a @main that still returns a value is rejected.
// expected-error @+1 {{@main must take buffer pointers (then the dynamic sizes, kiln-split-dynamic-args) and return nothing}}
llvm.func @main(%in: !llvm.ptr) -> !llvm.ptr {
  llvm.return %in : !llvm.ptr
}

// -----

// Tests that a collective's declaration gets a body calling
// host->all_reduce (field 12) with host->comm (field 11), the element
// count, the dtype code and the reduction (1: mean); nothing without a host
// or an all_reduce; a nonzero result becomes the run's status.
// CHECK-LABEL: llvm.func internal @__kiln_all_reduce_0(%arg0: !llvm.ptr)
// CHECK: llvm.getelementptr %{{.*}}[12] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[11] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[N:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK: %[[D:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[OP:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[R:.*]] = llvm.call %{{.*}}(%{{.*}}, %arg0, %[[N]], %[[D]], %[[OP]]) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i32
// CHECK: llvm.cond_br %{{.*}}, ^{{.*}}, ^[[FAILED:bb[0-9]+]](%[[R]] : i32)
// CHECK: ^[[FAILED]](%[[S:.*]]: i32):
// CHECK: llvm.store %[[S]], %{{.*}} : i32, !llvm.ptr
llvm.func @__kiln_all_reduce_0(!llvm.ptr) attributes {kiln.collective = "mean", kiln.dtype = 0 : i32, kiln.elements = 6 : i64}
llvm.func @main(%in: !llvm.ptr, %out: !llvm.ptr) {
  llvm.call @__kiln_all_reduce_0(%out) : (!llvm.ptr) -> ()
  llvm.return
}

// -----

// Tests a split reduction: the start calls host->all_reduce_start (field
// 13), or host->all_reduce (12) when the host has no start; the wait calls
// host->all_reduce_wait (14) with the buffer alone.
// CHECK-LABEL: llvm.func internal @__kiln_all_reduce_0(%arg0: !llvm.ptr)
// CHECK: llvm.getelementptr %{{.*}}[13]
// CHECK: llvm.call %{{.*}}(%{{.*}}, %arg0, %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i32
// CHECK: llvm.getelementptr %{{.*}}[12]
// CHECK: llvm.call %{{.*}}(%{{.*}}, %arg0, %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i32
// CHECK-LABEL: llvm.func internal @__kiln_all_reduce_1(%arg0: !llvm.ptr)
// CHECK: llvm.getelementptr %{{.*}}[14]
// CHECK: llvm.call %{{.*}}(%{{.*}}, %arg0) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> i32
llvm.func @__kiln_all_reduce_0(!llvm.ptr) attributes {kiln.collective = "mean", kiln.dtype = 0 : i32, kiln.elements = 6 : i64, kiln.phase = "start"}
llvm.func @__kiln_all_reduce_1(!llvm.ptr) attributes {kiln.phase = "wait"}
llvm.func @main(%in: !llvm.ptr, %out: !llvm.ptr) {
  llvm.call @__kiln_all_reduce_0(%out) : (!llvm.ptr) -> ()
  llvm.call @__kiln_all_reduce_1(%out) : (!llvm.ptr) -> ()
  llvm.return
}
