//===- ZeroSmSetup.cpp - The zero-SM path's set-up, rank by rank -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "ZeroSmSetup.h"

#include "CudaBackend.h"

using namespace overlap;
using namespace overlap::cuda;

namespace {
/// Agrees on `ok` over the group: Done with `all` when every rank has it.
/// An agreement that failed here counts as "not all" (`why` set).
ZeroSmStep agree(ZeroSmSetupSteps &steps, bool ok, bool &all,
                 std::string &why) {
  int lowest = 0;
  ZeroSmStep s = steps.agreeMin(ok ? 1 : 0, lowest, why);
  all = s == ZeroSmStep::Done && lowest == 1;
  return s == ZeroSmStep::Fatal ? s : ZeroSmStep::Done;
}

/// The reason of a step that did not succeed everywhere.
std::string notEverywhere(const std::string &step, const std::string &why,
                          const std::string &error) {
  return zeroSmFallbackReason(step, !why.empty()     ? why
                                    : !error.empty() ? error
                                                     : std::string("it failed "
                                                                   "on another "
                                                                   "rank"));
}
} // namespace

ZeroSmSetUp overlap::cuda::zeroSmSetUpCommunicator(ZeroSmSetupSteps &steps) {
  bool all = false;
  std::string why;
  // The versions may differ across ranks (one node's driver, a rank with
  // another NCCL): agreed, never decided alone.
  const std::string problem = steps.prerequisiteProblem();
  if (agree(steps, problem.empty(), all, why) == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (!all) {
    steps.disable(!problem.empty()
                      ? problem + "; plain ncclAllGather"
                      : notEverywhere("the prerequisite check", why,
                                      "it ruled the path "
                                      "out on another rank"));
    return ZeroSmSetUp::FellBack;
  }
  // One node (NCCL's copy-engine collectives do not cross nodes; there the
  // zero-CTA policy would run CTAs, uncapped, without an error): the lowest
  // and the highest node key over the group, by two min all-reduces.
  const int node = steps.nodeKey();
  int lowest = node, negatedHighest = -node;
  std::string agreeWhy;
  if (steps.agreeMin(node, lowest, agreeWhy) == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  // Both agreements are made whatever the first gave, so that every rank
  // makes the same collectives.
  std::string secondWhy;
  if (steps.agreeMin(-node, negatedHighest, secondWhy) == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (agreeWhy.empty())
    agreeWhy = secondWhy;
  if (!agreeWhy.empty()) {
    steps.disable(zeroSmFallbackReason("the one-node check", agreeWhy));
    return ZeroSmSetUp::FellBack;
  }
  if (std::string p = zeroSmLocalityProblem(lowest, -negatedHighest);
      !p.empty()) {
    steps.disable(p);
    return ZeroSmSetUp::FellBack;
  }
  std::string error;
  ZeroSmStep split = steps.split(error);
  if (split == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (agree(steps, split == ZeroSmStep::Done, all, why) == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (!all) {
    if (split == ZeroSmStep::Done)
      steps.strandSplit();
    steps.disable(notEverywhere(
        "ncclCommSplit (CTAPolicy NCCL_CTA_POLICY_ZERO)", why, error));
    return ZeroSmSetUp::FellBack;
  }
  steps.keepSplit();
  return ZeroSmSetUp::Ready;
}

ZeroSmSetUp overlap::cuda::zeroSmSetUpWindow(ZeroSmSetupSteps &steps,
                                             size_t bytes, bool replacing) {
  bool all = false;
  std::string why, error;
  if (replacing) {
    // A bigger window, in lockstep on every rank (same counts, same
    // order): the old one is idle once this stream is.
    if (steps.drainOldWindow() == ZeroSmStep::Fatal)
      return ZeroSmSetUp::Fatal;
    ZeroSmStep gone = steps.deregisterOldWindow(error);
    if (gone == ZeroSmStep::Fatal)
      return ZeroSmSetUp::Fatal;
    if (gone == ZeroSmStep::Done)
      steps.freeOldBuffer();
    if (agree(steps, gone == ZeroSmStep::Done, all, why) == ZeroSmStep::Fatal)
      return ZeroSmSetUp::Fatal;
    if (!all) {
      if (gone != ZeroSmStep::Done)
        steps.markBroken();
      steps.disable(notEverywhere("ncclCommWindowDeregister", why, error));
      return ZeroSmSetUp::FellBack;
    }
  }
  ZeroSmStep allocated = steps.allocate(bytes, error);
  if (allocated == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (agree(steps, allocated == ZeroSmStep::Done, all, why) ==
      ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (!all) {
    if (allocated == ZeroSmStep::Done)
      steps.freeAllocation();
    steps.disable(notEverywhere(
        "ncclMemAlloc(" + std::to_string(bytes) + " bytes)", why, error));
    return ZeroSmSetUp::FellBack;
  }
  ZeroSmStep registered = steps.registerWindow(error);
  if (registered == ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (agree(steps, registered == ZeroSmStep::Done, all, why) ==
      ZeroSmStep::Fatal)
    return ZeroSmSetUp::Fatal;
  if (!all) {
    // Registered on some ranks only: never deregistered (a collective the
    // others would not join).
    steps.markBroken();
    steps.disable(notEverywhere(
        "ncclCommWindowRegister (NCCL_WIN_COLL_SYMMETRIC)", why, error));
    return ZeroSmSetUp::FellBack;
  }
  steps.keepWindow(bytes);
  return ZeroSmSetUp::Ready;
}

ZeroSmRelease overlap::cuda::zeroSmReleaseAction(bool contextFailed,
                                                 bool broken) {
  if (contextFailed)
    return ZeroSmRelease::Abort;
  return broken ? ZeroSmRelease::Strand : ZeroSmRelease::Destroy;
}
