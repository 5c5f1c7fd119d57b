overlap-entry-signature 1
entry huge
symbol _mlir_ciface_huge
target host
grid g 2
arg arg0 4294967296x4294967296x16xf32
