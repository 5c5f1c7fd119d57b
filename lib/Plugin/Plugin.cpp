//===- Plugin.cpp - Overlap as a plugin of a stock mlir-opt -----*- C++ -*-===//
//
// OverlapPlugin.so for `mlir-opt --load-dialect-plugin=... --load-pass-plugin=...`
// (MLIR's DialectPlugin.h / PassPlugin.h, as upstream's standalone-plugin):
// the dialect plugin adds the Overlap dialect and its bufferization models
// (the host mlir-opt already has every upstream dialect and interface
// model), the pass plugin Overlap's passes and pipelines (`overlap-pipeline`,
// `overlap-to-llvm`). The code is libOverlapCompiler.so's, which the plugin
// links, so the plugin and the host share libMLIR.so's registries.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"
#include "overlap/Dialect/Overlap/Transforms/BufferizableOpInterfaceImpl.h"
#include "overlap/InitAllPasses.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Overlap", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            registry->insert<overlap::OverlapDialect>();
            overlap::registerBufferizableOpInterfaceExternalModels(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Overlap", LLVM_VERSION_STRING,
          []() { overlap::registerOverlapPassesAndPipelines(); }};
}
