//===- Host.cpp - The C API without MLIR: Planner and loader ----*- C++ -*-===//
//
// overlap-c/Planner.h and overlap-c/Loader.h over planner::planFromJSON and
// exec::runSession.
//
//===----------------------------------------------------------------------===//

#include "overlap-c/Loader.h"
#include "overlap-c/Planner.h"

#include "overlap/Loader/Session.h"
#include "overlap/Planner/Json.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

static char *copy(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

int overlapPlanJSON(const char *request, char **result, char **error) {
  if (result)
    *result = nullptr;
  if (error)
    *error = nullptr;
  if (!request) {
    if (error)
      *error = copy("request: null");
    return 2;
  }
  llvm::Expected<std::string> plan = overlap::planner::planFromJSON(request);
  if (plan) {
    if (result)
      *result = copy(*plan);
    return 0;
  }
  int status = 1;
  std::string message;
  llvm::handleAllErrors(plan.takeError(), [&](const llvm::ErrorInfoBase &e) {
    if (e.convertToErrorCode() ==
        std::make_error_code(std::errc::invalid_argument))
      status = 2;
    message += (message.empty() ? "" : "\n") + e.message();
  });
  if (error)
    *error = copy(message);
  return status;
}

void overlapFree(void *pointer) { std::free(pointer); }

OverlapRunOptions overlapRunOptionsDefault(void) {
  overlap::exec::SessionOptions defaults;
  OverlapRunOptions options;
  options.program = nullptr;
  options.reference = nullptr;
  options.backend = nullptr;
  options.ranks = defaults.ranks;
  options.seed = defaults.seed;
  options.iterations = defaults.iterations;
  options.rtol = defaults.tolerance.rtol;
  options.atol = defaults.tolerance.atol;
  options.waitTimeoutMs = defaults.waitTimeoutMs;
  return options;
}

int overlapRun(const OverlapRunOptions *options, char **report,
               char **messages) {
  std::string out, err;
  int status = 2;
  if (!options || !options->program) {
    err = "overlap: error: no program library given\n";
  } else if (options->iterations < 1 || options->ranks < 0 ||
             !(options->rtol >= 0) || !(options->atol >= 0) ||
             options->waitTimeoutMs < 0) {
    err = "overlap: error: iterations must be >= 1; ranks, tolerances and "
          "the wait timeout >= 0\n";
  } else {
    overlap::exec::SessionOptions session;
    session.tool = "overlap";
    session.program = options->program;
    if (options->reference)
      session.reference = options->reference;
    if (options->backend)
      session.backend = options->backend;
    session.ranks = options->ranks;
    session.seed = options->seed;
    session.iterations = options->iterations;
    session.tolerance.rtol = options->rtol;
    session.tolerance.atol = options->atol;
    session.waitTimeoutMs = options->waitTimeoutMs;
    overlap::exec::SessionOutput output;
    output.out = [&](const std::string &text) { out += text; };
    output.err = [&](const std::string &text) { err += text; };
    status = overlap::exec::runSession(session, output);
  }
  if (report)
    *report = copy(out);
  if (messages)
    *messages = copy(err);
  return status;
}
