//===- overlap-opt.cpp - Overlap's mlir-opt ---------------------*- C++ -*-===//
//
// mlir-opt with Overlap's dialects and passes (InitAllDialects.h,
// InitAllPasses.h); everything else is MlirOptMain's, including the remark
// flags (--remarks-filter=overlap, --remark-format, --remarks-output-file).
// Before MlirOptMain parses the input, the input checks of the other tools
// (compiler::checkNestingDepth, checkGridExtents) refuse what would crash
// upstream's parser or verifier.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Input.h"
#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"

#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

using namespace mlir;

/// The checks on the input text and on each chunk (--split-input-file)
/// parsed without verification; diagnostics to stderr. A chunk that does
/// not parse is left to MlirOptMain, which reports it.
static LogicalResult checkInput(const llvm::MemoryBuffer &input,
                                DialectRegistry &registry,
                                const MlirOptMainConfig &config) {
  {
    MLIRContext context(registry);
    llvm::SourceMgr source;
    source.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(
                                  input.getBuffer(), input.getBufferIdentifier(),
                                  /*RequiresNullTerminator=*/false),
                              llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(source, &context);
    if (failed(overlap::compiler::checkNestingDepth(source, &context)))
      return failure();
  }
  if (!input.getBuffer().contains("shard.grid"))
    return success();
  std::string unused;
  llvm::raw_string_ostream sink(unused);
  return splitAndProcessBuffer(
      llvm::MemoryBuffer::getMemBuffer(input.getBuffer(),
                                       input.getBufferIdentifier(),
                                       /*RequiresNullTerminator=*/false),
      [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
          const llvm::MemoryBufferRef &, raw_ostream &) -> LogicalResult {
        if (!chunk->getBuffer().contains("shard.grid"))
          return success();
        MLIRContext context(registry);
        context.allowUnregisteredDialects(
            config.shouldAllowUnregisteredDialects());
        context.printOpOnDiagnostic(false);
        auto source = std::make_shared<llvm::SourceMgr>();
        source->AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
        // In a module, as MlirOptMain parses it (a bare Operation * would
        // take one top-level op only).
        OwningOpRef<ModuleOp> parsed;
        {
          ScopedDiagnosticHandler quiet(&context,
                                        [](Diagnostic &) { return success(); });
          parsed = parseSourceFile<ModuleOp>(source,
                                             ParserConfig(&context, false));
        }
        if (!parsed)
          return success();
        SourceMgrDiagnosticHandler handler(*source, &context);
        return overlap::compiler::checkGridExtents(*parsed);
      },
      sink, config.inputSplitMarker());
}

/// A `--flag` no option has. LLVM's parser would try it as grouped
/// one-letter options ("for the -o option: may not occur within a group!",
/// "Did you mean '-o'?", as in mlir-opt) and exit 1; this names the flag
/// and the nearest long option, and exits 2 as the other tools do. Run
/// after every option is registered, before they are parsed; skipped when
/// a plugin may register more while parsing.
static bool checkLongFlags(int argc, char **argv) {
  auto &options =
      llvm::cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i)
    if (llvm::StringRef(argv[i]).contains("-plugin"))
      return true;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    llvm::StringRef name = arg.drop_front(2).split('=').first;
    if (!arg.starts_with("--") || name.size() < 2 || options.count(name))
      continue;
    llvm::StringRef nearest;
    unsigned best = 4;
    for (const auto &entry : options) {
      llvm::StringRef key = entry.first;
      if (key.size() < 2 || entry.second->getOptionHiddenFlag() ==
                                llvm::cl::ReallyHidden)
        continue;
      unsigned distance = name.edit_distance(key, true, best);
      if (distance < best) {
        best = distance;
        nearest = key;
      }
    }
    llvm::errs() << "overlap-opt: error: unknown option '--" << name << "'";
    if (!nearest.empty())
      llvm::errs() << "; did you mean '--" << nearest << "'?";
    llvm::errs() << " (overlap-opt --help lists the options)\n";
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  DialectRegistry registry;
  overlap::registerAllDialects(registry);
  overlap::registerAllPasses();
  // What registerAndParseCLIOptions registers (each once: a second call
  // finds them registered), so that checkLongFlags sees every option.
  MlirOptMainConfig::registerCLOptions(registry);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tracing::DebugCounter::registerCLOptions();
  if (!checkLongFlags(argc, argv))
    return 2;
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "Overlap optimizer: compute/communication overlap for "
      "tensor-parallel matmuls\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(checkInput(*input, registry, config)))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
