//===- Driver.cpp - The Overlap compiler driver, in process -----*- C++ -*-===//
//
// The driver: context, input, entry selection, and compileModule /
// compileToFiles, which run the stages and write what was asked for
// through Emit.cpp's way out of MLIR.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Driver.h"
#include "overlap/Compiler/EntrySignature.h"
#include "overlap/Compiler/Input.h"
#include "overlap/Compiler/RemarkSetup.h"
#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <dlfcn.h>
#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::overlap::compiler;
namespace artifact = ::overlap::artifact;

namespace mlir {
namespace overlap {
namespace compiler {

llvm::Expected<std::string> selectEntry(ModuleOp module,
                                        llvm::StringRef entry) {
  std::string message;
  llvm::raw_string_ostream errs(message);
  SmallVector<func::FuncOp> candidates;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      candidates.push_back(func);
  auto listCandidates = [&]() {
    llvm::ListSeparator sep(", ");
    for (func::FuncOp func : candidates)
      errs << sep << "@" << func.getSymName();
    if (candidates.empty())
      errs << "none";
  };
  func::FuncOp chosen;
  if (entry.empty()) {
    if (candidates.size() != 1) {
      errs << "the module has " << candidates.size()
           << " public functions with a body (";
      listCandidates();
      errs << "); choose one with --entry";
      return llvm::createStringError(message);
    }
    chosen = candidates.front();
  } else {
    auto it = llvm::find_if(candidates, [&](func::FuncOp func) {
      return func.getSymName() == entry;
    });
    if (it == candidates.end()) {
      errs << "no public function @" << entry
           << " with a body; public functions: ";
      listCandidates();
      return llvm::createStringError(message);
    }
    chosen = *it;
  }
  for (func::FuncOp func : candidates)
    if (func != chosen)
      func.setPrivate();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.addPass(createSymbolDCEPass());
  if (failed(pm.run(module)))
    return llvm::createStringError("dropping the functions other than @" +
                                   chosen.getSymName() + " failed");
  return chosen.getSymName().str();
}

} // namespace compiler
} // namespace overlap
} // namespace mlir

std::unique_ptr<MLIRContext> mlir::overlap::compiler::createContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  auto context = std::make_unique<MLIRContext>(registry);
  auto *printOp =
      llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  if (!printOp || !printOp->getNumOccurrences())
    context->printOpOnDiagnostic(false);
  return context;
}

llvm::Expected<mlir::overlap::compiler::ParsedInput>
mlir::overlap::compiler::parseInput(StringRef path,
                                    const RemarkOptions &remarks) {
  ParsedInput parsed;
  parsed.context = createContext();
  MLIRContext &context = *parsed.context;
  if (llvm::Error err = enableRemarks(context, remarks))
    return std::move(err);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(path, &error);
  if (!input)
    return llvm::createStringError(error);
  parsed.source = std::make_shared<llvm::SourceMgr>();
  parsed.source->AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  parsed.diagnostics =
      std::make_unique<SourceMgrDiagnosticHandler>(*parsed.source, &context);
  parsed.module = parseCheckedSource(parsed.source, &context);
  if (!parsed.module)
    return llvm::createStringError("stage 'parse': cannot parse " + path.str());
  return parsed;
}

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Flushes and closes `os` and turns a write error (a full disk, /dev/full)
/// into an llvm::Error: raw_fd_ostream's destructor would otherwise end the
/// process with LLVM's fatal "IO failure on output stream".
static llvm::Error closeOutput(llvm::raw_fd_ostream &os, llvm::StringRef path) {
  os.flush();
  // "-" is stdout, which the stream does not own.
  if (!os.has_error() && path != "-")
    os.close();
  if (std::error_code ec = os.error()) {
    os.clear_error();
    return error("cannot write " +
                 (path == "-" ? llvm::Twine("to stdout") : "'" + path + "'") +
                 ": " + ec.message());
  }
  return llvm::Error::success();
}

/// closeOutput, then the file is kept.
static llvm::Error keepOutput(llvm::ToolOutputFile &file) {
  if (llvm::Error err = closeOutput(file.os(), file.outputFilename()))
    return err;
  file.keep();
  return llvm::Error::success();
}

llvm::Expected<Artifact>
mlir::overlap::compiler::compileToFiles(llvm::StringRef source,
                                        llvm::StringRef output,
                                        const DriverOptions &options) {
  std::unique_ptr<MLIRContext> context = createContext();
  // Diagnostics (with their locations in the source's name) go into the
  // message.
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          source, options.sourceName.empty() ? "input" : options.sourceName),
      llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticsOs(diagnostics);
  SourceMgrDiagnosticHandler collect(*sourceMgr, context.get(), diagnosticsOs);
  PlanCollector *plans = collectPlans(*context);
  OwningOpRef<ModuleOp> module = parseCheckedSource(sourceMgr, context.get());
  llvm::Expected<Artifact> artifact =
      module ? compileModule(*module, output, options)
             : llvm::Expected<Artifact>(error("stage 'parse': the input does "
                                              "not parse"));
  if (!artifact)
    return error(llvm::toString(artifact.takeError()) +
                 (diagnostics.empty() ? "" : "\n" + diagnostics));
  if (plans) {
    artifact->plans = plans->take();
    artifact->missed = plans->takeMissed();
  }
  // A compile that succeeded may still have said something (a pass's
  // warning): the caller gets it, not silence.
  if (!llvm::StringRef(diagnostics).trim().empty())
    artifact->warnings.push_back(llvm::StringRef(diagnostics).rtrim().str());
  return artifact;
}

llvm::Expected<Artifact> mlir::overlap::compiler::compileModule(
    ModuleOp module, llvm::StringRef output, const DriverOptions &options,
    llvm::StringRef stopAfter,
    llvm::function_ref<LogicalResult(PassManager &)> configure) {
  if (llvm::Error err = options.compile.validate())
    return std::move(err);
  if (options.optLevel > 3)
    return error("-O" + llvm::Twine(options.optLevel) +
                 ": the level is 0 to 3");
  if (llvm::Error err = checkHostCPU(options.cpu))
    return std::move(err);
  if (!stopAfter.empty() && options.emit != Emit::MLIR)
    return error("--stop-after-stage needs --emit=mlir");
  if (!stopAfter.empty() &&
      llvm::none_of(buildStages(options.compile),
                    [&](const Stage &s) { return s.name == stopAfter; }))
    return error("--stop-after-stage: unknown stage '" + stopAfter +
                 "' for --target=" + options.compile.target + " (" +
                 stageNames(options.compile) + ")");

  Artifact artifact;
  artifact.path = output.str();
  if (!options.entry.empty())
    if (llvm::Expected<std::string> selected =
            selectEntry(module, options.entry);
        !selected)
      return selected.takeError();
  std::string why;

  // Objects and libraries carry their entry's signature, so that
  // overlap-exec runs them without MLIR. A module it cannot describe still
  // compiles (a C program may call it), with a warning.
  std::optional<artifact::Signature> signature;
  if (options.emit == Emit::Object || options.emit == Emit::SharedLibrary) {
    llvm::Expected<std::string> entryName =
        options.entry.empty() ? soleEntry(module)
                              : llvm::Expected<std::string>(options.entry);
    std::optional<artifact::Signature> sig;
    if (!entryName) {
      why = llvm::toString(entryName.takeError());
    } else {
      if (failed(repairInput(module)))
        return error("stage 'input' (the entry signatures) failed");
      boxEntryScalars(module, *entryName);
      llvm::Expected<artifact::Signature> described =
          describeEntry(module, *entryName, "overlap-exec");
      if (described)
        sig = std::move(*described);
      else
        why = llvm::toString(described.takeError());
    }
    // A signature that describes the entry but cannot be written as one
    // (a name that would add a line to the text, a buffer no machine
    // holds) is an error: the library would be refused by every loader.
    if (sig) {
      if (llvm::Error err = checkEmbeddable(*sig))
        return error("stage 'signature': " + llvm::toString(std::move(err)));
      sig->target = options.compile.target;
      sig->strategy = options.compile.strategy;
      sig->profile = options.compile.profile;
      signature = std::move(*sig);
    } else {
      artifact.warnings.push_back(
          "no " + std::string(artifact::kSignatureSymbol) +
          " embedded (overlap-exec cannot run the output): " + why);
    }
  }

  std::string stageErrors;
  llvm::raw_string_ostream stageOs(stageErrors);
  if (failed(runStages(module, options.compile, stopAfter, "", stageOs,
                       configure)))
    return error(llvm::StringRef(stageErrors).rtrim());

  std::string fileError;
  if (options.emit == Emit::MLIR) {
    auto file = openOutputFile(output, &fileError);
    if (!file)
      return error(fileError);
    module.print(file->os());
    file->os() << "\n";
    if (llvm::Error err = keepOutput(*file))
      return std::move(err);
    return artifact;
  }
  std::string cpu =
      options.cpu == "native" ? llvm::sys::getHostCPUName().str() : options.cpu;
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createdTm =
      createHostTargetMachine(cpu, options.optLevel);
  if (!createdTm)
    return error("stage 'codegen': " + llvm::toString(createdTm.takeError()));
  std::unique_ptr<llvm::TargetMachine> tm = std::move(*createdTm);
  llvm::LLVMContext llvmContext;
  llvm::Expected<std::unique_ptr<llvm::Module>> translated =
      translateToLLVMIR(module, llvmContext, *tm, options.optLevel);
  if (!translated)
    return error("stage 'translate': " +
                 llvm::toString(translated.takeError()));
  std::unique_ptr<llvm::Module> llvmModule = std::move(*translated);
  if (options.emit == Emit::LLVM) {
    auto file = openOutputFile(output, &fileError);
    if (!file)
      return error(fileError);
    llvmModule->print(file->os(), nullptr);
    if (llvm::Error err = keepOutput(*file))
      return std::move(err);
    return artifact;
  }
  if (signature)
    embedSignature(*llvmModule, *signature);
  if (options.emit == Emit::Object) {
    auto file = openOutputFile(output, &fileError);
    if (!file)
      return error(fileError);
    if (llvm::Error err = emitObject(*llvmModule, *tm, file->os())) {
      file->os().clear_error();
      return error("stage 'codegen': " + llvm::toString(std::move(err)));
    }
    if (llvm::Error err = keepOutput(*file))
      return std::move(err);
    return artifact;
  }
  llvm::SmallString<128> objectPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "overlap-compile", "o", fd, objectPath))
    return error("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObject(objectPath);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    if (llvm::Error err = emitObject(*llvmModule, *tm, os)) {
      os.clear_error();
      return error("stage 'codegen': " + llvm::toString(std::move(err)));
    }
    if (llvm::Error err = closeOutput(os, objectPath))
      return std::move(err);
  }
  bool needsRunnerUtils = llvmModule->getFunction("memrefCopy") != nullptr;
  if (llvm::Error err =
          linkSharedLibrary(objectPath, output, options.compile.target,
                            needsRunnerUtils, options.cc))
    return std::move(err);
  return artifact;
}
