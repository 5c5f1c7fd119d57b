//===- RemarkSetup.cpp - Turning Overlap's remarks on -----------*- C++ -*-===//

#include "overlap/Compiler/RemarkSetup.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Remark/RemarkStreamer.h"
#include "llvm/Remarks/RemarkFormat.h"
#include "llvm/Remarks/RemarkSerializer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <mutex>

using namespace mlir;
using namespace mlir::overlap::compiler;

namespace {
struct RemarkCL {
  explicit RemarkCL(llvm::cl::OptionCategory &category)
      : filter("remarks-filter",
               llvm::cl::desc("Report the remarks whose category matches "
                              "this regex ('overlap': the passes' plans and "
                              "decisions; 'overlap-plan' or "
                              "'overlap:overlap-plan': one pass's); off by "
                              "default"),
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

/// YAML or bitstream remarks to a file, as upstream's LLVMRemarkStreamer
/// writes them, except that a failed write is kept (and the stream's error
/// cleared) instead of ending the process when the stream is destroyed.
class RemarkFileStreamer final : public remark::detail::MLIRRemarkStreamerBase {
public:
  RemarkFileStreamer(std::string path, std::unique_ptr<llvm::raw_fd_ostream> os,
                     std::unique_ptr<llvm::remarks::RemarkSerializer> serializer)
      : path(std::move(path)), os(std::move(os)),
        serializer(std::move(serializer)) {}
  ~RemarkFileStreamer() override {
    finish();
    unregister(this);
  }

  void streamOptimizationRemark(const remark::detail::Remark &remark) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (!serializer || failed())
      return;
    serializer->emit(remark.generateRemark());
    check();
  }
  void finalize() override { finish(); }

  /// Finalizes the file once; the write error, if any, as a message.
  std::string finish() {
    std::lock_guard<std::mutex> lock(mutex);
    if (serializer) {
      if (!failed())
        serializer->finalize();
      serializer.reset();
      os->flush();
      check();
    }
    return why;
  }

  static void add(MLIRContext *context, RemarkFileStreamer *streamer) {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry()[context] = streamer;
  }
  static RemarkFileStreamer *find(MLIRContext *context) {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registry().find(context);
    return it == registry().end() ? nullptr : it->second;
  }

private:
  static std::map<MLIRContext *, RemarkFileStreamer *> &registry() {
    static std::map<MLIRContext *, RemarkFileStreamer *> map;
    return map;
  }
  static void unregister(RemarkFileStreamer *streamer) {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (auto it = registry().begin(); it != registry().end(); ++it)
      if (it->second == streamer) {
        registry().erase(it);
        return;
      }
  }
  bool failed() const { return !why.empty(); }
  void check() {
    if (!os->has_error())
      return;
    why = "--remarks-output-file: cannot write '" + path +
          "': " + os->error().message();
    os->clear_error();
  }

  static inline std::mutex registryMutex;
  std::mutex mutex;
  std::string path;
  std::unique_ptr<llvm::raw_fd_ostream> os;
  std::unique_ptr<llvm::remarks::RemarkSerializer> serializer;
  std::string why;
};
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
  std::error_code ec;
  auto os = std::make_unique<llvm::raw_fd_ostream>(
      options.outputFile, ec,
      format == llvm::remarks::Format::YAML ? llvm::sys::fs::OF_Text
                                            : llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError("--remarks-output-file: cannot write '%s': %s",
                                   options.outputFile.c_str(),
                                   ec.message().c_str());
  llvm::Expected<std::unique_ptr<llvm::remarks::RemarkSerializer>> serializer =
      llvm::remarks::createRemarkSerializer(format, *os);
  if (!serializer)
    return llvm::createStringError(
        "--remarks-output-file: %s",
        llvm::toString(serializer.takeError()).c_str());
  auto streamer = std::make_unique<RemarkFileStreamer>(
      options.outputFile, std::move(os), std::move(*serializer));
  RemarkFileStreamer *file = streamer.get();
  if (failed(remark::enableOptimizationRemarks(context, std::move(streamer),
                                               std::move(policy), categories)))
    return llvm::createStringError("--remarks-output-file: cannot write '%s'",
                                   options.outputFile.c_str());
  RemarkFileStreamer::add(&context, file);
  return llvm::Error::success();
}

llvm::Error mlir::overlap::compiler::finishRemarks(MLIRContext &context) {
  RemarkFileStreamer *file = RemarkFileStreamer::find(&context);
  if (!file)
    return llvm::Error::success();
  std::string why = file->finish();
  if (why.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
}

llvm::json::Value mlir::overlap::compiler::toJSON(const PlanRecord &record) {
  llvm::json::Object object = llvm::json::Object(record.plan);
  object["location"] = record.location;
  object["op"] = record.op;
  object["summary"] = record.summary;
  return std::move(object);
}

llvm::json::Value mlir::overlap::compiler::toJSON(const MissedRecord &record) {
  return llvm::json::Object{{"location", record.location},
                            {"pass", record.pass},
                            {"name", record.name},
                            {"reason", record.reason}};
}

/// file:line:col of a remark (its location printed when it has none).
static std::string remarkLocation(const remark::detail::Remark &remark) {
  std::string text;
  llvm::raw_string_ostream loc(text);
  if (auto file = remark.getLocation()->findInstanceOf<FileLineColLoc>())
    loc << file.getFilename().getValue() << ":" << file.getLine() << ":"
        << file.getColumn();
  else
    loc << remark.getLocation();
  return text;
}

void PlanCollector::streamOptimizationRemark(
    const remark::detail::Remark &remark) {
  if (remark.getRemarkType() == llvm::remarks::Type::Missed) {
    MissedRecord record;
    record.location = remarkLocation(remark);
    record.pass = remark.getCategoryName().str();
    llvm::StringRef combined = remark.getCombinedCategoryName();
    if (combined.contains(':'))
      record.pass = combined.rsplit(':').second.str();
    record.name = remark.getRemarkName().str();
    for (const remark::detail::Remark::Arg &arg : remark.getArgs())
      if (arg.key == "Remark" || arg.key == "Reason")
        record.reason += arg.val;
    std::lock_guard<std::mutex> lock(mutex);
    missed.push_back(std::move(record));
    return;
  }
  // The plan remark under any of the names it is emitted with
  // (Transforms/Remarks.h); collectPlans asks for category "overlap".
  llvm::StringRef category = remark.getCombinedCategoryName();
  if (remark.getRemarkName() != mlir::overlap::kPlanRemarkName ||
      (category != mlir::overlap::qualifiedRemarkCategory("overlap-plan") &&
       category != "overlap-plan"))
    return;
  PlanRecord record;
  llvm::raw_string_ostream loc(record.location);
  if (auto file = remark.getLocation()->findInstanceOf<FileLineColLoc>())
    loc << file.getFilename().getValue() << ":" << file.getLine() << ":"
        << file.getColumn();
  else
    loc << remark.getLocation();
  for (const remark::detail::Remark::Arg &arg : remark.getArgs()) {
    if (arg.key == "op") {
      record.op = arg.val;
    } else if (arg.key == "Remark") {
      record.summary += arg.val;
      // The Planner's document rides on the text (OverlapPlanPass): the
      // plan as the Planner wrote it, not its metrics read back.
      auto document = llvm::dyn_cast_if_present<StringAttr>(arg.getAttribute());
      if (!document)
        continue;
      llvm::Expected<llvm::json::Value> plan =
          llvm::json::parse(document.getValue());
      if (!plan) {
        llvm::consumeError(plan.takeError());
        continue;
      }
      if (llvm::json::Object *object = plan->getAsObject())
        record.plan = std::move(*object);
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  plans.push_back(std::move(record));
}

std::vector<PlanRecord> PlanCollector::take() {
  std::lock_guard<std::mutex> lock(mutex);
  return std::exchange(plans, {});
}

std::vector<MissedRecord> PlanCollector::takeMissed() {
  std::lock_guard<std::mutex> lock(mutex);
  return std::exchange(missed, {});
}

PlanCollector *mlir::overlap::compiler::collectPlans(MLIRContext &context) {
  auto collector = std::make_unique<PlanCollector>();
  PlanCollector *raw = collector.get();
  remark::RemarkCategories categories;
  categories.analysis = mlir::overlap::kRemarkCategory.str();
  categories.missed = mlir::overlap::kRemarkCategory.str();
  if (failed(remark::enableOptimizationRemarks(
          context, std::move(collector),
          std::make_unique<remark::RemarkEmittingPolicyAll>(), categories)))
    return nullptr;
  return raw;
}
