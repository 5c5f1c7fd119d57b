//===- Json.h - Plans as JSON documents -------------------------*- C++ -*-===//
//
// The JSON documents of `overlap-plan --json` (one writer for the tool, the
// C API and the Python package), and a plan from a JSON request.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_JSON_H
#define OVERLAP_PLANNER_JSON_H

#include "overlap/Planner/ChainPlanner.h"
#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/Profile.h"
#include "overlap/Planner/TilePlanner.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace overlap {
namespace planner {

/// The document of a plan: `strategy`, `tiles` (integers), `bound`, the
/// times in µs as numbers, `problem`, `profile`, the cost model's sources,
/// `tasks` and the strategy's details. The one writer of a plan's JSON:
/// `overlap-plan matmul --json` prints it, `overlapPlanJSON` (Python's
/// `overlap.plan`) returns it, and the compiler's plan remarks carry it to
/// `overlapCompileResultPlansJSON` (Python's `overlap.compile(...).plans`).
void writePlanJSON(const Plan &plan, const MatmulProblem &problem,
                   const Profile &profile, const CostModel &model,
                   llvm::raw_ostream &os);

/// The same document as an object (for callers that add fields to it).
llvm::json::Object planToJSON(const Plan &plan, const MatmulProblem &problem,
                              const Profile &profile, const CostModel &model);

/// `overlap-plan chain --json`.
void writeChainPlanJSON(const ChainPlan &plan, llvm::raw_ostream &os);

/// Plans what `request` (a JSON object) asks and returns the document
/// overlap-plan --json prints. Matmul requests: {"kind": "matmul",
/// "collective", "side" (all-to-all only: dispatch, the default, or
/// combine), "experts" (all-to-all only, default 1), "m", "n", "k",
/// "ranks", "dtype" (f16), "profile" (the default profile), "strategy"
/// (auto)}; chain requests: {"kind": "chain", "dims": [...],
/// "fast_memory": Mf}. A request is strict: a field it does not know (a
/// misspelt one: "dtpye") or a value of the wrong type is an error naming
/// the field (and the closest known field). Errors name the field; a bad
/// request is std::errc::invalid_argument.
llvm::Expected<std::string> planFromJSON(llvm::StringRef request);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_JSON_H
