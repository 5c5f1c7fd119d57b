//===- Stages.cpp - The Overlap compile stages ------------------*- C++ -*-===//
//
// The stages, built in code from CompileOptions (as upstream's
// GPUToNVVMPipeline.cpp builds its pipeline), the registered pipeline
// `overlap-to-llvm` over the same builders, and CompileOptions' checks.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Stages.h"
#include "overlap/Compiler/Input.h"
#include "overlap/Conversion/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Planner/Profile.h"
#include "overlap/Planner/TilePlanner.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::overlap::compiler;

/// A control character (UTF-8 bytes of paths are not).
static bool isControl(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

/// The character of `text` at `at`, escaped for a message ("\\n", "{").
static std::string escapedChar(llvm::StringRef text, size_t at) {
  std::string shown;
  llvm::raw_string_ostream os(shown);
  os.write_escaped(text.substr(at, 1));
  return shown;
}

llvm::Error mlir::overlap::compiler::checkOptionValue(llvm::StringRef option,
                                                      llvm::StringRef value) {
  size_t bad = llvm::find_if(value,
                             [](char c) {
                               return llvm::StringRef("\"{}").contains(c) ||
                                      isControl(c);
                             }) -
               value.begin();
  if (bad == value.size())
    return llvm::Error::success();
  std::string shown = escapedChar(value, bad);
  return llvm::createStringError(
      "%s: the value contains '%s', which would change the structure of the "
      "pass pipeline it goes into (quotes, braces and control characters are "
      "refused)",
      option.str().c_str(), shown.c_str());
}

llvm::Error
mlir::overlap::compiler::checkPipelineOptionsText(llvm::StringRef text) {
  // Where the pair being read starts, for the option's name in messages.
  size_t pairStart = 0;
  auto key = [&](size_t end) {
    llvm::StringRef name = text.slice(pairStart, end).split('=').first.trim();
    return name.empty() ? std::string("?") : name.str();
  };
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    if (c == ' ' && !quoted)
      pairStart = i + 1;
    bool structural =
        quoted ? (c == '{' || c == '}') : llvm::StringRef("{}(),").contains(c);
    if (!structural && !isControl(c))
      continue;
    std::string shown = escapedChar(text, i);
    return llvm::createStringError(
        "option '%s': '%s' would change the structure of the pipeline "
        "(options are key=value pairs separated by spaces; a value may not "
        "hold braces or control characters, nor '(', ')' or ',' outside "
        "quotes)",
        key(i).c_str(), shown.c_str());
  }
  if (quoted)
    return llvm::createStringError("option '%s': the quote is not closed",
                                   key(text.size()).c_str());
  return llvm::Error::success();
}

llvm::Error CompileOptions::validate() const {
  auto oneOf =
      [](llvm::StringRef option, llvm::StringRef value,
         std::initializer_list<llvm::StringRef> accepted) -> llvm::Error {
    if (llvm::is_contained(accepted, value))
      return llvm::Error::success();
    std::string list;
    llvm::ListSeparator sep(", ");
    for (llvm::StringRef a : accepted)
      list += (llvm::Twine(sep) + a).str();
    return llvm::createStringError("%s: '%s' is not one of %s",
                                   option.str().c_str(), value.str().c_str(),
                                   list.c_str());
  };
  // The stages take the values as they are (built in code), but the same
  // options travel as text in `overlap-to-llvm{...}` and in what
  // --print-pipeline prints; MLIR's pipeline parser matches braces without
  // regard to quotes and has no escape for a quote, so these characters
  // would end the option early there and splice in passes.
  for (auto [option, value] :
       {std::pair<llvm::StringRef, llvm::StringRef>{"profile", profile},
        {"strategy", strategy},
        {"target", target},
        {"gpu-chip", gpuChip},
        {"gpu-features", gpuFeatures},
        {"gpu-format", gpuFormat}})
    if (llvm::Error err = checkOptionValue(option, value))
      return err;
  if (llvm::Error err = oneOf("target", target, {"host", "cuda"}))
    return err;
  if (llvm::Error err =
          oneOf("gpu-format", gpuFormat, {"fatbin", "bin", "isa"}))
    return err;
  if (profile.empty())
    return llvm::createStringError("profile: empty (a JSON path or the name "
                                   "of a shipped profile)");
  if (strategy.empty())
    return llvm::createStringError("strategy: empty (" OVERLAP_STRATEGY_LIST
                                   ")");
  // Checked before anything is compiled: a module with nothing to plan
  // must not hide a misspelt strategy or profile (the one wording of
  // every tool: planner::unknownProfileMessage).
  if (llvm::Error err = ::overlap::planner::checkStrategy(strategy))
    return err;
  std::string dir = ::overlap::planner::shippedProfilesDir();
  if (::overlap::planner::resolveProfilePath(profile, dir).empty())
    return llvm::createStringError(
        "--profile: " +
        ::overlap::planner::unknownProfileMessage(profile, dir));
  return llvm::Error::success();
}

namespace mlir {
namespace overlap {
namespace compiler {

/// CUDA's libdevice (the __nv_* math functions that convert-gpu-to-nvvm
/// calls for math.exp and friends): linked into the kernels so that ptxas
/// finds them. The toolkit is the one whose ptxas compiles the kernels:
/// $CUDA_ROOT, $CUDA_HOME or $CUDA_PATH, else /usr/local/cuda. Empty when
/// there is none (kernels without math still compile).
static std::string findLibdevice() {
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(var); root && *root) {
      std::string path = std::string(root) + "/nvvm/libdevice/libdevice.10.bc";
      if (llvm::sys::fs::exists(path))
        return path;
    }
  std::string path = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  return llvm::sys::fs::exists(path) ? path : std::string();
}

/// The upstream passes that lower what is left on the host to LLVM, the
/// functions and control flow last.
/// bf16 on the host has no instructions: math ops on it are computed in
/// f32 (math-extend-to-supported-types), arith ops too
/// (arith-emulate-unsupported-floats: extf, the f32 op, truncf; correctly
/// rounded for +, -, *, /, as f32 has more than twice bf16's precision),
/// and arith-expand{include-bf16} turns the f32 <-> bf16 conversions into
/// integer arithmetic, so that no program imports the compiler-rt builtins
/// (__truncsfbf2) that Debian 12's libgcc lacks: an --emit=so program
/// would not load (bf16 arithmetic other than a cast once did; the link
/// now refuses any undefined symbol). `beforeFuncs` adds what must run
/// before the functions and control flow become LLVM (gpu-to-llvm with
/// target=cuda).
static void addHostToLLVM(OpPassManager &pm,
                          llvm::function_ref<void()> beforeFuncs = nullptr) {
  pm.addPass(math::createMathExtendToSupportedTypes());
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  // arith-expand{include-bf16} without its minimumf/maximumf expansion,
  // which lost the sign of zero (overlap-expand-arith).
  pm.addPass(createOverlapExpandArith());
  // Before expand-strided-metadata, which crashes on an expand_shape into
  // several dynamic dims (MLIR 22).
  pm.addPass(createOverlapExpandShapeViews());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Without pattern rollback: with it the conversion keeps every
  // replaced op until the end, which costs memory and time more than
  // linear in the module (76 % of the MLIR time of 96 layers).
  SCFToControlFlowPassOptions scfToCf;
  scfToCf.allowPatternRollback = false;
  pm.addPass(createSCFToControlFlowPass(scfToCf));
  // Before any cf.assert is lowered (by cf-to-llvm, or gpu-to-llvm with
  // target=cuda), which prints its message to stdout: lost when stdout is
  // buffered and the program aborts.
  // A host allocation of a size from the inputs: checked, not a null
  // block written through (before the asserts are lowered).
  pm.addPass(createOverlapCheckAllocations());
  pm.addPass(createOverlapAssertToStderr());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // The host's math functions are libm's (log1pf, expm1f, tanhf, ...):
  // convert-math-to-llvm alone computes log1p as log(1 + x) and expm1 as
  // exp(x) - 1, off by 57 % and 5.7 % at small x. What libm has no
  // function for (absf, fma, ...) is left to convert-math-to-llvm. The
  // kernels of target=cuda are binaries by now, with libdevice's.
  // rsqrt has no libm function (math-to-libm would call a missing
  // rsqrtf): 1 / sqrt(x) first.
  math::MathExpandOpsPassOptions expandMath;
  expandMath.opMnemonics = {"rsqrt"};
  pm.addPass(math::createMathExpandOpsPass(expandMath));
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  if (beforeFuncs)
    beforeFuncs();
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // What bf16 is left only moves bits: as i16, which no backend promotes
  // to f32 and back through __truncsfbf2 (a bf16 constant stored or
  // selected at -O1 and above on a generic x86).
  pm.addPass(createOverlapBF16AsI16());
}

/// What upstream's partitioning leaves that Overlap's passes do not take
/// as they are: TOSA ops (upstream's Shard examples, the Megatron MLP of
/// its partition tests) become linalg, arith and tensor ops, and
/// elementwise arith/math on whole tensors becomes linalg.generic (one-shot
/// bufferization has no model for arith on tensors). Both leave a program
/// without them unchanged. Then the run-time checks of dynamic slices.
static void addInputNormalization(OpPassManager &pm) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createOverlapTosaZeroPoints());
  func.addPass(tosa::createTosaToLinalgNamed());
  func.addPass(tosa::createTosaToLinalg());
  func.addPass(createTosaToArithPass());
  func.addPass(createTosaToTensorPass());
  func.addPass(createConvertElementwiseToLinalgPass());
  // The user's slices only (TOSA's included), before Overlap's passes add
  // their own: a dynamic offset or size is checked where it runs.
  func.addPass(createOverlapCheckSliceBounds());
}

std::vector<Stage> buildStages(const CompileOptions &options) {
  std::vector<Stage> stages;
  bool cuda = options.target == "cuda";
  // With target=cuda only the entry gets device memory and the context's
  // streams, so calls are inlined first.
  stages.push_back({"tensor",
                    "raise, reorder chains, plan and decompose on tensors",
                    [options, cuda](OpPassManager &pm) {
                      addInputNormalization(pm);
                      if (cuda)
                        pm.addPass(createInlinerPass());
                      OverlapPipelineOptions tensor;
                      tensor.profile = options.profile;
                      tensor.strategy = options.strategy;
                      buildOverlapPipeline(pm, tensor);
                    }});
  // Ownership-based deallocation runs before stream scheduling so that its
  // deallocations (after the last use of each buffer) are not tile work:
  // they end a concurrent region, whose end synchronizes the streams, so no
  // buffer is freed while a stream may still use it. The canonicalization
  // before buffer-deallocation-simplification is not optional: without it
  // the simplification crashes in BufferOriginAnalysis (MLIR 22) on a
  // single-tile all-gather. overlap-lower-deallocations lowers what is left
  // with no host bookkeeping buffers (target=cuda has none to give).
  stages.push_back(
      {"bufferize", "one-shot bufferization and buffer deallocation",
       [](OpPassManager &pm) {
         bufferization::OneShotBufferizePassOptions bufferize;
         bufferize.bufferizeFunctionBoundaries = true;
         // Loops (a scan imported from JAX) yield new tensors each step.
         bufferize.allowReturnAllocsFromLoops = true;
         bufferize.functionBoundaryTypeConversion =
             bufferization::LayoutMapOption::IdentityLayoutMap;
         // Chains of in-place elementwise ops (arith on tensors) fused
         // first: the analysis is cubic in an alias set's size.
         pm.addPass(createOverlapFoldElementwiseChains());
         pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
         pm.addPass(
             bufferization::createOwnershipBasedBufferDeallocationPass());
         pm.addPass(createCanonicalizerPass());
         pm.addPass(
             bufferization::createBufferDeallocationSimplificationPass());
         pm.addPass(createOverlapLowerDeallocations());
         pm.addPass(bufferization::createLowerDeallocationsPass());
         pm.addPass(createCSEPass());
         pm.addPass(createCanonicalizerPass());
       }});
  stages.push_back({"schedule", "compute and comm streams with signal/wait",
                    [options](OpPassManager &pm) {
                      OverlapScheduleStreamsOptions schedule;
                      schedule.testingDropWaits = options.testingDropWaits;
                      pm.addPass(createOverlapScheduleStreams(schedule));
                      OverlapCopyReportOptions report;
                      report.profile = options.profile;
                      pm.addPass(createOverlapCopyReport(report));
                    }});
  // With target=cuda the buffers are device memory: the linalg ops the
  // runtime has no call for become kernels, in place (so on their stream),
  // before the runtime lowering launches them. Clones (of a returned
  // argument) become alloc + copy first, so that the runtime lowering
  // turns them into overlap_alloc + overlap_memcpy.
  if (cuda)
    stages.push_back(
        {"kernels", "GPU kernels for the linalg ops without a runtime call",
         [options](OpPassManager &pm) {
           pm.addPass(createConvertBufferizationToMemRefPass());
           pm.addNestedPass<func::FuncOp>(createOverlapLinalgToGPU());
           pm.addNestedPass<func::FuncOp>(
               createGpuLaunchSinkIndexComputationsPass());
           pm.addPass(createGpuKernelOutliningPass());
           GpuNVVMAttachTargetOptions target;
           target.chip = options.gpuChip;
           target.features = options.gpuFeatures;
           target.optLevel = 3;
           if (std::string libdevice = findLibdevice(); !libdevice.empty())
             target.linkLibs.push_back(libdevice);
           pm.addPass(createGpuNVVMAttachTarget(target));
           // One module per kind of kernel, not per launch (compile time
           // linear in the layers).
           pm.addPass(createOverlapShareGpuKernels());
         }});
  stages.push_back({"runtime", "lowering to calls of the Overlap runtime",
                    [options](OpPassManager &pm) {
                      ConvertOverlapToRuntimeOptions runtime;
                      runtime.target = options.target;
                      pm.addPass(createConvertOverlapToRuntime(runtime));
                    }});
  if (!cuda)
    stages.push_back({"llvm",
                      "lowering of the remaining upstream dialects to LLVM",
                      [](OpPassManager &pm) {
                        pm.addPass(createConvertBufferizationToMemRefPass());
                        // One small shared function per kind of loop nest:
                        // compile time linear in the layers
                        // (overlap-outline-loops).
                        pm.addPass(createOverlapOutlineLoops());
                        pm.addPass(createConvertLinalgToLoopsPass());
                        addHostToLLVM(pm);
                      }});
  else
    // The kernels first (NVVM, then a binary for the chip), then the host
    // code; gpu-to-llvm turns the launches into mgpu* calls on the streams
    // convert-overlap-to-runtime gave them.
    stages.push_back(
        {"llvm", "kernels to NVVM and a GPU binary, host code to LLVM",
         [options](OpPassManager &pm) {
           pm.addPass(createConvertBufferizationToMemRefPass());
           OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
           kernels.addPass(memref::createExpandStridedMetadataPass());
           kernels.addPass(createLowerAffinePass());
           kernels.addPass(createSCFToControlFlowPass());
           kernels.addPass(createConvertGpuOpsToNVVMOps());
           kernels.addPass(createCanonicalizerPass());
           kernels.addPass(createCSEPass());
           kernels.addPass(createReconcileUnrealizedCastsPass());
           GpuModuleToBinaryPassOptions binary;
           binary.compilationTarget = options.gpuFormat;
           pm.addPass(createGpuModuleToBinaryPass(binary));
           addHostToLLVM(pm,
                         [&] { pm.addPass(createGpuToLLVMConversionPass()); });
         }});
  return stages;
}

/// `pm` as mlir-opt's --pass-pipeline text: "builtin.module(...)".
static std::string printPipeline(const OpPassManager &pm) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return text;
}

std::string Stage::text() const {
  OpPassManager pm(ModuleOp::getOperationName());
  populate(pm);
  std::string printed = printPipeline(pm);
  llvm::StringRef body(printed);
  body.consume_front("builtin.module(");
  body.consume_back(")");
  return body.str();
}

std::string describePipeline(const CompileOptions &options) {
  OpPassManager pm(ModuleOp::getOperationName());
  for (const Stage &stage : buildStages(options))
    stage.populate(pm);
  return printPipeline(pm);
}

LogicalResult runStages(ModuleOp module, const CompileOptions &options,
                        llvm::StringRef stopAfter, llvm::StringRef tool,
                        llvm::raw_ostream &errs,
                        function_ref<LogicalResult(PassManager &)> configure) {
  std::string prefix = tool.empty() ? "" : (tool + ": error: ").str();
  if (failed(repairInput(module))) {
    errs << prefix << "stage 'input' (the entry signatures) failed\n";
    return failure();
  }
  for (const Stage &stage : buildStages(options)) {
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    stage.populate(pm);
    if (configure && failed(configure(pm)))
      return failure();
    if (failed(pm.run(module))) {
      errs << prefix << "stage '" << stage.name << "' (" << stage.description
           << ") failed\n";
      return failure();
    }
    if (stage.name == stopAfter)
      break;
  }
  return success();
}

std::string stageNames(const CompileOptions &options) {
  std::string names;
  llvm::ListSeparator sep(", ");
  for (const Stage &stage : buildStages(options))
    names += (llvm::Twine(sep) + stage.name).str();
  return names;
}

llvm::Error buildPipeline(OpPassManager &pm, const CompileOptions &options,
                          llvm::StringRef stopAfter) {
  if (llvm::Error err = options.validate())
    return err;
  std::vector<Stage> stages = buildStages(options);
  if (!stopAfter.empty() && llvm::none_of(stages, [&](const Stage &s) {
        return s.name == stopAfter;
      }))
    return llvm::createStringError(
        "stop-after-stage: unknown stage '" + stopAfter +
        "' for target=" + options.target + " (" + stageNames(options) + ")");
  for (const Stage &stage : stages) {
    stage.populate(pm);
    if (stage.name == stopAfter)
      break;
  }
  return llvm::Error::success();
}

CompileOptions CompilePipelineOptions::toCompileOptions() const {
  CompileOptions options;
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  options.FIELD = FIELD;
#include "overlap/Compiler/CompileOptions.def"
  return options;
}

void registerCompilerPipelines() {
  // A bad option value fails the pipeline's parsing with a message
  // instead of building a wrong one.
  registerModulePipeline<CompilePipelineOptions>(
      "overlap-to-llvm",
      "The whole Overlap compiler: raise, plan, decompose, bufferize, "
      "schedule streams, lower to runtime calls and to the LLVM dialect",
      [](OpPassManager &pm, const CompilePipelineOptions &options) {
        return buildPipeline(pm, options.toCompileOptions(), options.stopAfter);
      });
}

} // namespace compiler
} // namespace overlap
} // namespace mlir
