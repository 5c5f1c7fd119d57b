//===- ProfileFuzzer.cpp - Fuzz the profile parser --------------*- C++ -*-===//
//
// Input: the text of a profile (profiles/*.json, docs/profiles.md). Any text
// must give a Profile or an llvm::Error. A profile that parses is then
// used as the Planner uses it: every curve evaluated at the edges of its
// range and far outside it, and the problems its own curves describe
// priced and planned with the strategies whose work does not depend on the
// profile's numbers (none, uniform:4, mc2, ficco). Planning may refuse a
// problem with an error; it must not crash, and a plan it gives must keep
// the Planner's promise (docs/planner.md, "Limits"): tiles that are
// positive and sum to M, predicted times finite and at most kMaxPlanUs.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/Limits.h"
#include "overlap/Planner/Profile.h"
#include "overlap/Planner/TilePlanner.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>

using namespace overlap::planner;

static void evalEverywhere(const Curve &curve) {
  const double far = std::numeric_limits<double>::max();
  for (double x : {-far, -1.0, 0.0, 0.5, 1.0, 128.0, 1e9, far})
    (void)curve.eval(x);
  for (const Curve::Piece &piece : curve.getPieces()) {
    (void)curve.eval(piece.from);
    (void)curve.eval(piece.to);
  }
  for (const auto &point : curve.getPoints())
    (void)curve.eval(point.first);
}

[[noreturn]] static void broken(const Plan &plan, const char *what) {
  llvm::errs() << "overlap fuzz: a " << plan.strategy << " plan " << what
               << "\n";
  std::abort();
}

static void checkPlan(const Plan &plan, const MatmulProblem &problem) {
  int64_t rows = 0;
  for (int64_t t : plan.tiles) {
    if (t <= 0)
      broken(plan, "has a tile that is not positive");
    rows += t;
  }
  if (plan.tiles.empty() || rows != problem.m)
    broken(plan, "has tiles that do not sum to M");
  for (double us :
       {plan.predictedUs, plan.serialUs, plan.idealUs, plan.lowerBoundUs})
    if (!std::isfinite(us) || us < 0 || us > kMaxPlanUs)
      broken(plan, "predicts a time that is not in [0, kMaxPlanUs]");
  if (!std::isfinite(plan.efficiency))
    broken(plan, "has an efficiency that is not finite");
}

static void plan(const Profile &profile, const MatmulProblem &problem) {
  llvm::Expected<CostModel> model = CostModel::create(profile, problem);
  if (!model) {
    llvm::consumeError(model.takeError());
    return;
  }
  (void)model->serialUs();
  (void)model->idealUs();
  (void)model->describeGemmSource();
  (void)model->describeCommSource();
  for (llvm::StringRef strategy : {"none", "uniform:4", "mc2", "ficco"}) {
    llvm::Expected<Plan> p = planTiles(profile, problem, strategy);
    if (!p)
      llvm::consumeError(p.takeError());
    else
      checkPlan(*p, problem);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<Profile> profile = parseProfile(text, "fuzz.json");
  if (!profile) {
    llvm::consumeError(profile.takeError());
    return 0;
  }
  for (const GemmCurve &g : profile->gemmCurves)
    evalEverywhere(g.curve);
  for (const CommCurve &c : profile->commCurves)
    evalEverywhere(c.curve);

  // The problems the profile's curves were measured for, with the group
  // size of each collective curve; a few curves are enough.
  size_t planned = 0;
  for (const GemmCurve &g : profile->gemmCurves) {
    for (const CommCurve &c : profile->commCurves) {
      if (planned++ == 4)
        return 0;
      MatmulProblem problem;
      problem.collective = c.collective;
      problem.n = g.n;
      problem.k = g.k;
      problem.dtype = g.dtype;
      problem.ranks = c.ranks;
      problem.m = 8192;
      plan(*profile, problem);
    }
  }
  // A roofline-only profile: a problem no curve describes.
  if (profile->gemmCurves.empty() && !profile->commCurves.empty()) {
    MatmulProblem problem;
    problem.collective = profile->commCurves.front().collective;
    problem.ranks = profile->commCurves.front().ranks;
    problem.m = problem.n = problem.k = 1024;
    plan(*profile, problem);
  }
  return 0;
}
