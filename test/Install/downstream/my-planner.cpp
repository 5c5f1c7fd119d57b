// The Planner alone: a plan priced with a shipped profile, found in the
// installation (share/overlap/profiles) by name.
#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/Json.h"

#include "llvm/Support/raw_ostream.h"

int main() {
  auto plan = overlap::planner::planFromJSON(
      R"({"collective": "all-reduce", "m": 4096, "n": 8192, "k": 3072,
          "ranks": 8, "profile": "mc2-example", "strategy": "mc2"})");
  if (!plan) {
    llvm::errs() << llvm::toString(plan.takeError()) << "\n";
    return 1;
  }
  llvm::outs() << "profiles: " << overlap::planner::shippedProfilesDir()
               << "\n" << *plan;
  return 0;
}
