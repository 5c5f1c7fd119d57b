// bf16 on the host links at every optimization level and for the generic
// CPU (issue 51, item 4): a select against a bf16 constant (JAX's
// `where(x > 0, x, 0)`), maximumf, a mask, and constants of every kind
// (-0.0, inf, -inf, NaN, a subnormal, the largest finite) import no
// compiler-rt conversion (`__truncsfbf2`, `__extendbfsf2`, which Debian's
// libgcc lacks), and LLVM is given no `bfloat` to promote.
//
// RUN: overlap-compile --target=host --emit=so -O0 %s -o %t.O0.so
// RUN: llvm-nm -D --undefined-only %t.O0.so | FileCheck %s --check-prefix=NM
// RUN: overlap-compile --target=host --emit=so -O1 %s -o %t.O1.so
// RUN: llvm-nm -D --undefined-only %t.O1.so | FileCheck %s --check-prefix=NM
// RUN: overlap-compile --target=host --emit=so -O3 %s -o %t.O3.so
// RUN: llvm-nm -D --undefined-only %t.O3.so | FileCheck %s --check-prefix=NM
// RUN: overlap-compile --target=host --emit=llvm -O3 %s | FileCheck %s --check-prefix=IR
//
// NM-NOT: bf
// NM-NOT: __trunc
// NM-NOT: __extend
// IR-NOT: bfloat
// IR: define {{.*}}@_mlir_ciface_forms
// IR-NOT: bfloat

#map = affine_map<(i, j) -> (i, j)>
func.func @forms(%x: tensor<64x64xbf16>, %m: tensor<64x64xbf16>)
    -> (tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>,
        tensor<8xbf16>, tensor<64x64xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<64x64xbf16>
  // where(x > 0, x, 0)
  %relu = linalg.generic {indexing_maps = [#map, #map],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xbf16>) outs(%e : tensor<64x64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %c = arith.cmpf ogt, %a, %zero : bf16
    %s = arith.select %c, %a, %zero : bf16
    linalg.yield %s : bf16
  } -> tensor<64x64xbf16>
  %max = linalg.generic {indexing_maps = [#map, #map, #map],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<64x64xbf16>, tensor<64x64xbf16>)
      outs(%e : tensor<64x64xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %s = arith.maximumf %a, %b : bf16
    linalg.yield %s : bf16
  } -> tensor<64x64xbf16>
  // A mask: m > 0.5 ? x : -inf
  %half = arith.constant 0.5 : bf16
  %ninf = arith.constant 0xFF80 : bf16
  %masked = linalg.generic {indexing_maps = [#map, #map, #map],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<64x64xbf16>, tensor<64x64xbf16>)
      outs(%e : tensor<64x64xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %c = arith.cmpf ogt, %b, %half : bf16
    %s = arith.select %c, %a, %ninf : bf16
    linalg.yield %s : bf16
  } -> tensor<64x64xbf16>
  // -0.0, +inf, -inf, NaN, the smallest subnormal, the largest finite,
  // 1.0, -2.5
  %k = arith.constant dense<[0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x7F7F,
                             0x3F80, 0xC020]> : tensor<8xbf16>
  // A bf16 constant stored: what x86 materialised through __truncsfbf2.
  %fill = linalg.fill ins(%half : bf16) outs(%e : tensor<64x64xbf16>)
      -> tensor<64x64xbf16>
  return %relu, %max, %masked, %k, %fill
      : tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>,
        tensor<8xbf16>, tensor<64x64xbf16>
}
