//===- OverlapDialect.h - Overlap dialect -------------------*- C++ -*-===//
//
// Declares the `overlap` dialect, its enums, attributes and types.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_IR_OVERLAPDIALECT_H
#define OVERLAP_DIALECT_OVERLAP_IR_OVERLAPDIALECT_H

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "overlap/Dialect/Overlap/IR/OverlapDialect.h.inc"
#include "overlap/Dialect/Overlap/IR/OverlapEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "overlap/Dialect/Overlap/IR/OverlapAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "overlap/Dialect/Overlap/IR/OverlapTypes.h.inc"

#endif // OVERLAP_DIALECT_OVERLAP_IR_OVERLAPDIALECT_H
