overlap-entry-signature 1
entry mlp
symbol _mlir_ciface_mlp
target host
strategy uniform:4
profile h100-nvlink-datasheet
grid tp 4
arg arg0 256x512xf32
arg arg1 512x512xf32 inout
result result0 256x512xf32
