// RUN: overlap-opt %s --convert-overlap-to-runtime="target=cuda" -split-input-file -verify-diagnostics | FileCheck %s

// Device memory and kernels on the streams: the function first checks that
// its context is a CUDA one; the allocation becomes overlap_alloc (checked,
// an LLVM descriptor cast to the memref), the deallocation overlap_free;
// the kernel inside the comm stream is launched on that stream's CUDA
// stream (stream 1) as an async dependency, after the wait; the kernel
// outside a concurrent region goes on the compute stream, synchronized.
// CHECK-LABEL: func.func @kernels
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr,
// CHECK: %[[S0:.*]] = call @overlap_cuda_stream(%[[CTX]], %c0_i32{{.*}})
// CHECK: llvm.icmp "ne" %[[S0]]
// CHECK: cf.assert %{{.*}}, "this program was compiled with target=cuda and needs a CUDA context
// CHECK: %[[ST:.*]] = call @overlap_alloc(%[[CTX]], %c8192_i64, %[[SLOT:.*]]) :
// CHECK: cf.assert %{{.*}}, "overlap_alloc: cannot allocate 8192 bytes of device memory for memref<64x32xf32>"
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
// CHECK: call @overlap_context_synchronize(%[[CTX]])
// CHECK: %[[S2:.*]] = call @overlap_cuda_stream(%[[CTX]], %c0_i32{{.*}})
// CHECK: %[[T2:.*]] = builtin.unrealized_conversion_cast %[[S2]]
// CHECK: gpu.launch_func async [%[[T2]]] @kernels_kernel_0::@kernels_kernel
// CHECK: call @overlap_stream_synchronize(%[[CTX]], %c0_i32{{.*}})
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: call @overlap_free(%[[CTX]], %{{.*}})
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
// emits around an accumulator) is launched on the compute stream and
// synchronized.
// CHECK-LABEL: func.func @nested
// CHECK: scf.if
// CHECK: %[[S:.*]] = func.call @overlap_cuda_stream(%{{.*}}, %c0_i32{{.*}})
// CHECK: gpu.launch_func async
// CHECK: func.call @overlap_stream_synchronize(%{{.*}}, %c0_i32{{.*}}
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

// The host cannot read device memory: an op left on the host that touches
// a buffer is an error with target=cuda.
func.func @host_load(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op would run on the host, but with target=cuda its buffers are device memory}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

func.func @dynamic_alloc(%n: index) {
  // expected-error @below {{'memref.alloc' op cannot be lowered for target=cuda: device buffers need a static shape, an identity layout and whole-byte elements, got 'memref<?xf32>'}}
  %a = memref.alloc(%n) : memref<?xf32>
  return
}
