//===- PlanRequestFuzzer.cpp - Fuzz the Planner's JSON entry ----*- C++ -*-===//
//
// Input: a plan request, as the C API's overlapPlanJSON and Python's
// overlap.plan_json pass it to planner::planFromJSON (docs/planner.md).
// Any text must give the plan document or an llvm::Error; a document must
// be JSON.
//
// A request names its profile, and a name with a `/` is a path: the fuzz
// target would read whatever file the fuzzer spells (/dev/zero never
// ends). Inputs with `/` or `\` (which could spell one in a JSON escape)
// are rejected, so that a profile is a shipped one, a file of the working
// directory (scripts/fuzz.sh runs the targets in an empty one) or none.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Json.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef request(reinterpret_cast<const char *>(data), size);
  if (request.find_first_of("/\\") != llvm::StringRef::npos)
    return -1;
  llvm::Expected<std::string> document =
      overlap::planner::planFromJSON(request);
  if (!document) {
    llvm::consumeError(document.takeError());
    return 0;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*document);
  if (!parsed) {
    llvm::errs() << "overlap fuzz: the plan document is not JSON: "
                 << llvm::toString(parsed.takeError()) << "\n"
                 << *document << "\n";
    std::abort();
  }
  return 0;
}
