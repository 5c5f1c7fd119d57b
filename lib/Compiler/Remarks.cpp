//===- Remarks.cpp - Turning Overlap's remarks on ---------------*- C++ -*-===//

#include "overlap/Compiler/Remarks.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Remark/RemarkStreamer.h"
#include "llvm/Remarks/RemarkFormat.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::overlap::compiler;

namespace {
struct RemarkCL {
  explicit RemarkCL(llvm::cl::OptionCategory &category)
      : filter("remarks-filter",
               llvm::cl::desc("Report the remarks whose category matches "
                              "this regex ('overlap': the passes' plans and "
                              "decisions); off by default"),
               llvm::cl::init(""), llvm::cl::cat(category)),
        format("remark-format",
               llvm::cl::desc("emit (printed as remarks), yaml or "
                              "bitstream (to --remarks-output-file)"),
               llvm::cl::init(RemarkOptions().format),
               llvm::cl::cat(category)),
        outputFile("remarks-output-file",
                   llvm::cl::desc("File for yaml or bitstream remarks"),
                   llvm::cl::init(""), llvm::cl::cat(category)) {}
  llvm::cl::opt<std::string> filter, format, outputFile;
};
RemarkCL *remarkCL = nullptr;
} // namespace

void mlir::overlap::compiler::registerRemarkCLOptions(
    llvm::cl::OptionCategory &category) {
  static RemarkCL options(category);
  remarkCL = &options;
}

RemarkOptions mlir::overlap::compiler::remarkOptionsFromCL() {
  if (!remarkCL)
    return {};
  return {remarkCL->filter, remarkCL->format, remarkCL->outputFile};
}

llvm::Error mlir::overlap::compiler::enableRemarks(MLIRContext &context,
                                                   const RemarkOptions &options) {
  if (options.filter.empty())
    return llvm::Error::success();
  std::string regexError;
  if (!llvm::Regex(options.filter).isValid(regexError))
    return llvm::createStringError("--remarks-filter: '%s' is not a regex: %s",
                                   options.filter.c_str(), regexError.c_str());
  // Each kind filtered by the same regex (the engine reads the kinds'
  // filters, not `all`).
  remark::RemarkCategories categories;
  categories.all = categories.passed = categories.missed =
      categories.analysis = categories.failed = options.filter;
  auto policy = std::make_unique<remark::RemarkEmittingPolicyAll>();
  if (options.format == "emit") {
    if (!options.outputFile.empty())
      return llvm::createStringError(
          "--remarks-output-file: needs --remark-format=yaml or bitstream");
    if (failed(remark::enableOptimizationRemarks(
            context, nullptr, std::move(policy), categories,
            /*printAsEmitRemarks=*/true)))
      return llvm::createStringError("cannot enable the remark engine");
    return llvm::Error::success();
  }
  llvm::remarks::Format format;
  if (options.format == "yaml")
    format = llvm::remarks::Format::YAML;
  else if (options.format == "bitstream")
    format = llvm::remarks::Format::Bitstream;
  else
    return llvm::createStringError(
        "--remark-format: '%s' is not one of emit, yaml, bitstream",
        options.format.c_str());
  if (options.outputFile.empty())
    return llvm::createStringError("--remark-format=%s: needs "
                                   "--remarks-output-file",
                                   options.format.c_str());
  if (failed(remark::enableOptimizationRemarksWithLLVMStreamer(
          context, options.outputFile, format, std::move(policy), categories)))
    return llvm::createStringError("--remarks-output-file: cannot write '%s'",
                                   options.outputFile.c_str());
  return llvm::Error::success();
}

void PlanCollector::streamOptimizationRemark(
    const remark::detail::Remark &remark) {
  if (remark.getCategoryName() != mlir::overlap::kRemarkCategory ||
      remark.getRemarkName() != mlir::overlap::kPlanRemarkName)
    return;
  PlanRecord record;
  llvm::raw_string_ostream loc(record.location);
  if (auto file = remark.getLocation()->findInstanceOf<FileLineColLoc>())
    loc << file.getFilename().getValue() << ":" << file.getLine() << ":"
        << file.getColumn();
  else
    loc << remark.getLocation();
  for (const remark::detail::Remark::Arg &arg : remark.getArgs()) {
    if (arg.key == "Remark")
      record.summary += arg.val;
    else
      record.metrics[arg.key] = arg.val;
  }
  std::lock_guard<std::mutex> lock(mutex);
  plans.push_back(std::move(record));
}

std::vector<PlanRecord> PlanCollector::take() {
  std::lock_guard<std::mutex> lock(mutex);
  return std::exchange(plans, {});
}

PlanCollector *mlir::overlap::compiler::collectPlans(MLIRContext &context) {
  auto collector = std::make_unique<PlanCollector>();
  PlanCollector *raw = collector.get();
  remark::RemarkCategories categories;
  categories.analysis = mlir::overlap::kRemarkCategory.str();
  if (failed(remark::enableOptimizationRemarks(
          context, std::move(collector),
          std::make_unique<remark::RemarkEmittingPolicyAll>(), categories)))
    return nullptr;
  return raw;
}
