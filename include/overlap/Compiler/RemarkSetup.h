//===- RemarkSetup.h - Turning Overlap's remarks on -------------*- C++ -*-===//
//
// Overlap's passes emit their decisions through MLIR's remark framework
// (overlap/Dialect/Overlap/Transforms/Remarks.h); nothing is printed unless
// the remark engine of the context is enabled. The tools enable it with the
// same flags as mlir-opt (--remarks-filter, --remark-format,
// --remarks-output-file); the driver collects the plans for compileToFiles.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_REMARKSETUP_H
#define OVERLAP_COMPILER_REMARKSETUP_H

#include "mlir/IR/Remarks.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <mutex>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;

namespace overlap {
namespace compiler {

/// How a tool reports remarks.
struct RemarkOptions {
  /// A regex over remark categories ("overlap" selects Overlap's, a pass
  /// name such as "overlap-plan", or "overlap:overlap-plan" as remarks show
  /// it, that pass's); empty: remarks are off.
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
/// the filter is empty. Fails with a message naming the flag. Serialized
/// remarks go to the file through a streamer of ours, which never ends the
/// process on a write error (LLVM's ends it with "IO failure on output
/// stream"): finishRemarks reports it.
llvm::Error enableRemarks(MLIRContext &context, const RemarkOptions &options);

/// Flushes the remark file `context` writes to (--remarks-output-file), if
/// any, and fails naming the file and the reason when a write to it failed
/// (a full disk, /dev/full). The tools call it once their passes have run.
llvm::Error finishRemarks(MLIRContext &context);

/// What the Planner decided for one fused op (an "overlap" "plan" remark).
struct PlanRecord {
  /// Where the op is (file:line:col).
  std::string location;
  /// The fused op's name (overlap.matmul_all_reduce, ...).
  std::string op;
  /// The remark's text.
  std::string summary;
  /// The Planner's document of the plan, as `overlap-plan --json` prints it
  /// and `overlapPlanJSON` returns it (planner::planToJSON): "tiles" a list
  /// of integers, times in µs as numbers, "problem", "tasks", ...
  llvm::json::Object plan;
};

/// `record.plan` with "location", "op" and "summary" added: one element of
/// `overlapCompileResultPlansJSON` (and of Python's Compiled.plans).
llvm::json::Value toJSON(const PlanRecord &record);

/// Why an op was not overlapped (an "overlap" missed remark: not raised,
/// not planned, lowered unsplit, not scheduled on streams).
struct MissedRecord {
  /// Where the op is (file:line:col).
  std::string location;
  /// The pass that said so (overlap-raise, overlap-lower-collectives, ...).
  std::string pass;
  /// The remark's name (not-raised, not-overlapped, ...).
  std::string name;
  /// The remark's text: the reason.
  std::string reason;
};

/// {"location", "pass", "name", "reason"}: one element of
/// `overlapCompileResultMissedJSON` (Python's Compiled.missed).
llvm::json::Value toJSON(const MissedRecord &record);

/// A remark streamer that keeps the plan remarks.
class PlanCollector final : public remark::detail::MLIRRemarkStreamerBase {
public:
  void streamOptimizationRemark(const remark::detail::Remark &remark) override;
  /// The plans so far, in emission order; the collector is emptied.
  std::vector<PlanRecord> take();
  /// The missed remarks so far, in emission order; emptied.
  std::vector<MissedRecord> takeMissed();

private:
  std::mutex mutex;
  std::vector<PlanRecord> plans;
  std::vector<MissedRecord> missed;
};

/// Enables the remark engine of `context` for Overlap's analysis and missed
/// remarks with a PlanCollector, which the context owns.
PlanCollector *collectPlans(MLIRContext &context);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_REMARKSETUP_H
