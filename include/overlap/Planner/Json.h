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
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace overlap {
namespace planner {

/// `overlap-plan matmul --json`: the plan of `problem`, with the tasks of
/// its timeline and the strategy's details.
void writePlanJSON(const Plan &plan, const MatmulProblem &problem,
                   const Profile &profile, const CostModel &model,
                   llvm::raw_ostream &os);

/// `overlap-plan chain --json`.
void writeChainPlanJSON(const ChainPlan &plan, llvm::raw_ostream &os);

/// Plans what `request` (a JSON object) asks and returns the document
/// overlap-plan --json prints. Matmul requests: {"kind": "matmul",
/// "collective", "side" (all-to-all only: dispatch, the default, or
/// combine), "m", "n", "k", "ranks", "dtype" (f16), "profile" (the
/// default profile), "strategy" (auto)}; chain requests: {"kind": "chain",
/// "dims": [...], "fast_memory": Mf}. Errors name the field; a bad request
/// is std::errc::invalid_argument.
llvm::Expected<std::string> planFromJSON(llvm::StringRef request);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_JSON_H
