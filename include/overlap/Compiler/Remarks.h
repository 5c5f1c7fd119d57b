//===- Remarks.h - Turning Overlap's remarks on -----------------*- C++ -*-===//
//
// Overlap's passes emit their decisions through MLIR's remark framework
// (overlap/Dialect/Overlap/Transforms/Remarks.h); nothing is printed unless
// the remark engine of the context is enabled. The tools enable it with the
// same flags as mlir-opt (--remarks-filter, --remark-format,
// --remarks-output-file); the driver collects the plans for compileToFiles.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_REMARKS_H
#define OVERLAP_COMPILER_REMARKS_H

#include "mlir/IR/Remarks.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;

namespace overlap {
namespace compiler {

/// How a tool reports remarks.
struct RemarkOptions {
  /// A regex over remark categories ("overlap" selects Overlap's); empty:
  /// remarks are off.
  std::string filter;
  /// "emit": printed as diagnostics (remark: ...); "yaml" or "bitstream":
  /// serialized to `outputFile`.
  std::string format = "emit";
  std::string outputFile;
};

/// Registers the tools' remark flags (--remarks-filter, --remark-format,
/// --remarks-output-file, as mlir-opt spells them) in `category`.
void registerRemarkCLOptions(llvm::cl::OptionCategory &category);

/// The values of those flags (defaults when they were not registered).
RemarkOptions remarkOptionsFromCL();

/// Enables the remark engine of `context` as `options` says; nothing when
/// the filter is empty. Fails with a message naming the flag.
llvm::Error enableRemarks(MLIRContext &context, const RemarkOptions &options);

/// What the Planner decided for one fused op (an "overlap" "plan" remark):
/// its location, the remark's text and its metrics (tiles, strategy, bound,
/// predicted_us, serial_us).
struct PlanRecord {
  std::string location;
  std::string summary;
  std::map<std::string, std::string> metrics;
};

/// A remark streamer that keeps the plan remarks.
class PlanCollector final : public remark::detail::MLIRRemarkStreamerBase {
public:
  void streamOptimizationRemark(const remark::detail::Remark &remark) override;
  /// The plans so far, in emission order; the collector is emptied.
  std::vector<PlanRecord> take();

private:
  std::mutex mutex;
  std::vector<PlanRecord> plans;
};

/// Enables the remark engine of `context` for Overlap's analysis remarks
/// with a PlanCollector, which the context owns.
PlanCollector *collectPlans(MLIRContext &context);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_REMARKS_H
