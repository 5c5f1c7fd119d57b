// RUN: overlap-opt %s --convert-overlap-to-runtime="target=cuda" -split-input-file -verify-diagnostics | FileCheck %s

// Device memory and kernels on the streams: the function first checks that
// its context is a CUDA one and makes its device current; the allocation
// becomes a stream-ordered overlap_alloc_async usable on every stream (-1;
// checked, an LLVM descriptor cast to the memref), the deallocation
// overlap_free_async; the kernel inside the comm stream is launched on that
// stream's CUDA stream (stream 1) as an async dependency, after the wait;
// the region ends with a join of the streams (no host wait); the kernel
// outside a concurrent region goes on the compute stream, then the streams
// join; the host waits only before the return.
// CHECK-LABEL: func.func @kernels
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr,
// CHECK: %[[S0:.*]] = call @overlap_cuda_stream(%[[CTX]], %c0_i32{{.*}})
// CHECK: llvm.icmp "ne" %[[S0]]
// CHECK: cf.assert %{{.*}}, "this program was compiled with target=cuda and needs a CUDA context
// CHECK: %[[MC:.*]] = call @overlap_cuda_make_current(%[[CTX]])
// CHECK: cf.assert %{{.*}}, "overlap_cuda_make_current: cannot make the context's device current"
// CHECK: %[[ST:.*]] = call @overlap_alloc_async(%[[CTX]], %c-1_i32, %c8192_i64, %[[SLOT:.*]]) :
// CHECK: cf.assert %{{.*}}, "overlap_alloc_async: cannot allocate 8192 bytes of device memory for memref<64x32xf32>"
// CHECK: %[[P:.*]] = llvm.load %[[SLOT]]
// CHECK: llvm.insertvalue %[[P]], %{{.*}}[0]
// CHECK: llvm.insertvalue %[[P]], %{{.*}}[1]
// CHECK: %[[BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<64x32xf32>
// CHECK: call @overlap_gemm(%[[CTX]], %c0_i32{{.*}}
// CHECK: call @overlap_signal(%[[CTX]], %c0_i32{{.*}}
// CHECK: call @overlap_wait(%[[CTX]], %c1_i32
// CHECK: %[[S1:.*]] = call @overlap_cuda_stream(%[[CTX]], %c1_i32{{.*}})
// CHECK: %[[T1:.*]] = builtin.unrealized_conversion_cast %[[S1]] : !llvm.ptr to !gpu.async.token
// CHECK: gpu.launch_func async [%[[T1]]] @kernels_kernel::@kernels_kernel
// CHECK-SAME: args(%[[BUF]] : memref<64x32xf32>)
// CHECK: call @overlap_all_reduce(%[[CTX]], %c1_i32
// CHECK-NEXT: call @overlap_streams_join(%[[CTX]])
// CHECK: %[[S2:.*]] = call @overlap_cuda_stream(%[[CTX]], %c0_i32{{.*}})
// CHECK: %[[T2:.*]] = builtin.unrealized_conversion_cast %[[S2]]
// CHECK: gpu.launch_func async [%[[T2]]] @kernels_kernel_0::@kernels_kernel
// CHECK-NEXT: call @overlap_streams_join(%[[CTX]])
// CHECK-NOT: synchronize
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: call @overlap_free_async(%[[CTX]], %c-1_i32{{.*}}, %{{.*}})
// CHECK: call @overlap_context_synchronize(%[[CTX]])
// CHECK-NEXT: return
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
module attributes {gpu.container_module} {
  shard.grid @tp(shape = 2)
  gpu.module @kernels_kernel {
    gpu.func @kernels_kernel(%arg0: memref<64x32xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @kernels_kernel_0 {
    gpu.func @kernels_kernel(%arg0: memref<64x32xf32>) kernel {
      gpu.return
    }
  }
  func.func @kernels(%a: memref<64x16xf32>, %b: memref<16x32xf32>, %out: memref<64x32xf32>) {
    %c1 = arith.constant 1 : index
    %buf = memref.alloc() : memref<64x32xf32>
    %s = overlap.signals : !overlap.signals<1>
    overlap.concurrent {
      overlap.stream compute {
        linalg.matmul ins(%a, %b : memref<64x16xf32>, memref<16x32xf32>) outs(%buf : memref<64x32xf32>)
        overlap.signal %s[0] : !overlap.signals<1>
      }
      overlap.stream comm {
        overlap.wait %s[0] : !overlap.signals<1>
        gpu.launch_func @kernels_kernel::@kernels_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<64x32xf32>)
        overlap.all_reduce %buf on @tp grid_axes = [0] : memref<64x32xf32>
      }
    }
    gpu.launch_func @kernels_kernel_0::@kernels_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<64x32xf32>)
    memref.copy %buf, %out : memref<64x32xf32> to memref<64x32xf32>
    memref.dealloc %buf : memref<64x32xf32>
    return
  }
}

// -----

// A kernel nested in host control flow (the scf.if that shard-partition
// emits around an accumulator) is launched on the compute stream and the
// streams are joined.
// CHECK-LABEL: func.func @nested
// CHECK: scf.if
// CHECK: %[[S:.*]] = func.call @overlap_cuda_stream(%{{.*}}, %c0_i32{{.*}})
// CHECK: gpu.launch_func async
// CHECK: func.call @overlap_streams_join(%{{.*}})
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @nested(%p: i1, %x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    scf.if %p {
      gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    }
    return
  }
}

// -----

// The host cannot read device memory: a scalar it loads (a JAX while's
// condition, a cond's index) is staged through a slot on its stack, after
// every stream is done, by a copy on the compute stream it waits for; a
// store goes the other way.
// CHECK-LABEL: func.func @host_load
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x f32
// CHECK: memref.subview %{{.*}}[%{{.*}}] [1] [1]
// CHECK: call @overlap_context_synchronize
// CHECK: call @overlap_memcpy(%{{.*}}, %{{.*}}, %{{.*}}, %[[SLOT]], %{{.*}}, %c4_i64{{.*}})
// CHECK: call @overlap_stream_synchronize
// CHECK: %[[V:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> f32
// CHECK-NOT: memref.load
// CHECK: return %[[V]]
func.func @host_load(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

// CHECK-LABEL: func.func @host_store
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x i1
// CHECK: llvm.store %{{.*}}, %[[SLOT]] : i1, !llvm.ptr
// CHECK: call @overlap_memcpy(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SLOT]], %c1_i64{{.*}})
// CHECK-NOT: memref.store
func.func @host_store(%x: memref<4xi1>, %b: i1) {
  %c2 = arith.constant 2 : index
  memref.store %b, %x[%c2] : memref<4xi1>
  return
}

// -----

// A dynamic size: the bytes and the descriptor's sizes and strides at run
// time.
// CHECK-LABEL: func.func @dynamic_alloc
// CHECK-SAME: %[[N:[^:]*]]: index
// CHECK-SAME: %[[M:[^:]*]]: index
// CHECK-DAG: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-DAG: %[[M64:.*]] = arith.index_cast %[[M]] : index to i64
// CHECK: %[[B0:.*]] = arith.muli %c4_i64{{[_0-9]*}}, %[[N64]] : i64
// CHECK: %[[B1:.*]] = arith.muli %[[B0]], %c4_i64{{[_0-9]*}} : i64
// CHECK: %[[B:.*]] = arith.muli %[[B1]], %[[M64]] : i64
// CHECK: call @overlap_alloc_async(%{{.*}}, %c-1_i32{{[_0-9]*}}, %[[B]]
// CHECK: cf.assert {{.*}} "overlap_alloc_async: cannot allocate device memory (sizes known at run time) for memref<?x4x?xf32>"
// Sizes n, 4, m; strides 4 m, m, 1.
// CHECK: %[[S1:.*]] = arith.muli %c1_i64{{[_0-9]*}}, %[[M64]] : i64
// CHECK: %[[S0:.*]] = arith.muli %[[S1]], %c4_i64{{[_0-9]*}} : i64
// CHECK: llvm.insertvalue %[[N64]], %{{.*}}[3, 0]
// CHECK: llvm.insertvalue %[[S0]], %{{.*}}[4, 0]
// CHECK: llvm.insertvalue %[[S1]], %{{.*}}[4, 1]
// CHECK: llvm.insertvalue %[[M64]], %{{.*}}[3, 2]
func.func @dynamic_alloc(%n: index, %m: index) -> memref<?x4x?xf32> {
  %a = memref.alloc(%n, %m) : memref<?x4x?xf32>
  return %a : memref<?x4x?xf32>
}

// -----

func.func @index_alloc() {
  // expected-error @below {{got 'memref<4xindex>'}}
  %a = memref.alloc() : memref<4xindex>
  return
}

// -----

func.func @memory_space() {
  // expected-error @below {{the default memory space}}
  %a = memref.alloc() : memref<4xf32, 1>
  return
}

// -----

func.func @alignment() {
  // expected-error @below {{'memref.alloc' op asks for an alignment of 1024 bytes; device allocations (target=cuda) give 256}}
  %a = memref.alloc() {alignment = 1024} : memref<4xf32>
  return
}

// -----

func.func @stack(%x: memref<4xf32>) {
  // expected-error @below {{'memref.alloca' op is a buffer on the host stack, which kernels and the CUDA runtime cannot use (target=cuda)}}
  %t = memref.alloca() : memref<4xf32>
  memref.copy %t, %x : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A host constant is copied to device memory where it is taken (compute
// stream, then the streams join) and freed before the return.
memref.global "private" constant @cst : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func.func @constant
// CHECK: %[[G:.*]] = memref.get_global @cst
// CHECK: call @overlap_alloc_async(%{{.*}}, %c-1_i32{{.*}}, %c16_i64
// CHECK: %[[D:.*]] = builtin.unrealized_conversion_cast
// CHECK: call @overlap_memcpy(%{{.*}}, %c0_i32{{.*}}, %c16_i64{{.*}})
// CHECK: call @overlap_streams_join
// CHECK: call @overlap_memcpy(
// CHECK: %[[B:.*]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK: call @overlap_free_async(%{{.*}}, %c-1_i32{{.*}}, %{{.*}})
// CHECK-NEXT: call @overlap_context_synchronize
// CHECK-NEXT: return
func.func @constant(%x: memref<4xf32>) {
  %g = memref.get_global @cst : memref<4xf32>
  memref.copy %g, %x : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A rank-0 constant (JAX passes a scalar as tensor<f32>) and a rank-4 one
// are copied too: one overlap_memcpy each, of 4 and 64 bytes. (A rank-0
// copy was once classified as no copy and skipped, leaving the kernels to
// read uninitialized device memory: every JAX layer's output was NaN on
// the GPU.)
memref.global "private" constant @scalar : memref<f32> = dense<0.5>
memref.global "private" constant @block : memref<2x2x2x2xf32> = dense<1.0>
// CHECK-LABEL: func.func @scalar_and_4d_constants
// CHECK: memref.get_global @scalar
// CHECK: call @overlap_alloc_async(%{{.*}}, %c-1_i32{{.*}}, %c4_i64
// CHECK: call @overlap_memcpy(%{{.*}}, %c0_i32{{.*}}, %c4_i64{{.*}})
// CHECK: call @overlap_streams_join
// CHECK: memref.get_global @block
// CHECK: call @overlap_alloc_async(%{{.*}}, %c-1_i32{{.*}}, %c64_i64
// CHECK: call @overlap_memcpy(%{{.*}}, %c0_i32{{.*}}, %c64_i64{{.*}})
// CHECK: call @overlap_streams_join
func.func @scalar_and_4d_constants(%x: memref<f32>, %y: memref<2x2x2x2xf32>) {
  %g = memref.get_global @scalar : memref<f32>
  memref.copy %g, %x : memref<f32> to memref<f32>
  %h = memref.get_global @block : memref<2x2x2x2xf32>
  memref.copy %h, %y : memref<2x2x2x2xf32> to memref<2x2x2x2xf32>
  return
}

// -----

// Only entry points get device memory: a private function that touches
// buffers is refused (the cuda pipeline inlines calls first).
func.func private @helper(%x: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  // expected-error @below {{'linalg.fill' op is in @helper, which is not an entry point: with target=cuda only public functions get device memory and the context's streams (inline it into its callers)}}
  linalg.fill ins(%z : f32) outs(%x : memref<4xf32>)
  return
}
func.func @calls_helper(%x: memref<4xf32>) {
  func.call @helper(%x) : (memref<4xf32>) -> ()
  return
}

// -----

// Runtime calls nested in host control flow (a clone in a branch, from
// buffer deallocation) are enqueued and joined, not run on the host.
// CHECK-LABEL: func.func @nested_copy
// CHECK: scf.if
// CHECK: func.call @overlap_memcpy(%{{.*}}, %c0_i32
// CHECK: func.call @overlap_streams_join
// CHECK-NOT: memref.copy
func.func @nested_copy(%p: i1, %x: memref<4xf32>, %y: memref<4xf32>) {
  scf.if %p {
    memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  }
  return
}

// -----

// A kernel nested in control flow inside a stream goes on that stream, in
// its order: no synchronize and no join until the region ends.
// CHECK-LABEL: func.func @nested_in_stream
// CHECK: scf.if
// CHECK: %[[S:.*]] = func.call @overlap_cuda_stream(%{{.*}}, %c1_i32
// CHECK: gpu.launch_func async
// CHECK-NOT: synchronize
// CHECK: } 
// CHECK-NEXT: call @overlap_streams_join
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @nested_in_stream(%p: i1, %x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %s = overlap.signals : !overlap.signals<1>
    overlap.concurrent {
      overlap.stream compute {
        overlap.signal %s[0] : !overlap.signals<1>
      }
      overlap.stream comm {
        overlap.wait %s[0] : !overlap.signals<1>
        scf.if %p {
          gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
        }
      }
    }
    return
  }
}
