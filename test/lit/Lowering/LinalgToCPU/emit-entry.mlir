// RUN: kiln-opt %s -split-input-file -kiln-emit-entry -verify-diagnostics | FileCheck %s

// Tests that the entry unpacks one pointer per buffer, in order, and calls @main.
// CHECK: llvm.func internal @main
// CHECK-LABEL: llvm.func @kiln_model_run(%arg0: !llvm.ptr) -> i32
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

// Tests that a @main that still returns a value is rejected.
// expected-error @+1 {{@main must take only buffer pointers and return nothing}}
llvm.func @main(%in: !llvm.ptr) -> !llvm.ptr {
  llvm.return %in : !llvm.ptr
}
