overlap-entry-signature 1
entry add1
symbol _mlir_ciface_add1
target cuda
grid g 2x1
arg arg0 4x8xbf16
arg s f16
result result0 0x8xf32
