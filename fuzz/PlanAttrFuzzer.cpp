//===- PlanAttrFuzzer.cpp - Fuzz the #overlap.plan parser -------*- C++ -*-===//
//
// Input: what follows `#overlap.plan` in a module, e.g.
//   <tiles = [32, 32], strategy = "mc2", bound = comm, predicted_us = 1.5,
//    serial_us = 2.0>
// It is put on each of the three fused ops (matmul_all_reduce,
// matmul_reduce_scatter, all_gather_matmul on a group of 4, M = 64) in a
// module of its own, which is parsed with the tools' registry (the
// attribute's parser and verifier, the op's check of the plan against M
// and the group size). A module that parses must print and parse back to
// the same plan, in the custom and the generic form; then its op is
// decomposed by the plan and lowered as overlap-compile lowers it
// (bufferize, schedule, runtime, llvm stages). Diagnostics are fine.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzz.h"

#include "overlap/Compiler/Options.h"
#include "overlap/Compiler/Stages.h"
#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

using namespace mlir;
using namespace ::overlap::fuzz;

namespace {
struct Host {
  const char *op;
  const char *lhs;
  const char *result;
};
} // namespace

static const Host hosts[] = {
    {"matmul_all_reduce", "tensor<64x32xf16>", "tensor<64x16xf16>"},
    {"matmul_reduce_scatter", "tensor<64x32xf16>", "tensor<16x16xf16>"},
    {"all_gather_matmul", "tensor<16x32xf16>", "tensor<64x16xf16>"},
};

static std::string moduleText(const Host &host, llvm::StringRef plan) {
  return llvm::formatv(
             "shard.grid @tp(shape = 4)\n"
             "func.func @f(%a: {0}, %b: tensor<32x16xf16>, "
             "%c: tensor<64x16xf16>) -> {1} {{\n"
             "  %r = overlap.{2} %a, %b, %c on @tp grid_axes = [0] "
             "{{overlap.plan = #overlap.plan{3}} : {0}, tensor<32x16xf16>, "
             "tensor<64x16xf16> -> {1}\n"
             "  return %r : {1}\n"
             "}\n",
             host.lhs, host.result, host.op, plan)
      .str();
}

/// The plan on the first op of @f that has one.
static Attribute planOf(ModuleOp module) {
  Attribute plan;
  module.walk([&](Operation *op) {
    if (!plan)
      plan = op->getAttr(mlir::overlap::OverlapDialect::getPlanAttrName());
  });
  return plan;
}

static void roundTrip(FuzzContext &fc, ModuleOp module, bool generic) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  OwningOpRef<ModuleOp> again = fc.parse(printed);
  if (!again)
    fc.fail(generic ? "the generic form does not parse back"
                    : "the printed module does not parse back",
            module);
  // Uniqued in the same context: the same plan is the same attribute.
  if (planOf(*again) != planOf(module))
    fc.fail("the plan printed and parsed back differs", module);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef plan(reinterpret_cast<const char *>(data), size);
  std::string lowering = "builtin.module(overlap-decompose";
  std::vector<mlir::overlap::compiler::Stage> stages =
      mlir::overlap::compiler::buildStages({});
  for (size_t i = 1; i < stages.size(); ++i)
    lowering += ", " + stages[i].text();
  lowering += ")";

  for (const Host &host : hosts) {
    FuzzContext fc;
    OwningOpRef<ModuleOp> module = fc.parse(moduleText(host, plan));
    if (!module)
      continue;
    roundTrip(fc, *module, /*generic=*/false);
    roundTrip(fc, *module, /*generic=*/true);
    (void)fc.run(*module, lowering);
  }
  return 0;
}
