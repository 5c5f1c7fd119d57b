//===- ZeroSmSetup.h - The zero-SM path's set-up, rank by rank --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The order of the zero-SM all-gather's set-up steps and the decisions
// between them, apart from the calls that make them (ZeroSmAllGather.cpp
// runs them over NCCL; unittests/Runtime/CudaKnobsTest.cpp over fakes of
// several ranks). The rule it keeps: a step that may fail on one rank alone
// is followed by an agreement (a min all-reduce on the group's own
// communicator), and every decision is taken from the agreed value, so
// every rank of the group takes the same path. A rank that fell back alone
// would call ncclAllGather on the group's communicator while the others
// call it, or an agreement, on another: a hang.
//
// No CUDA or NCCL call here.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_CUDA_ZEROSMSETUP_H
#define OVERLAP_LIB_RUNTIME_CUDA_ZEROSMSETUP_H

#include <cstddef>
#include <string>

namespace overlap {
namespace cuda {

/// How a step ended on this rank.
enum class ZeroSmStep {
  Done,
  /// It failed here (`error` says why); the agreement decides what follows.
  Failed,
  /// The context failed (a stuck stream, a split past its deadline): stop.
  Fatal,
};

/// One rank's set-up steps. Those marked collective are called by every
/// rank of the group at the same point.
class ZeroSmSetupSteps {
public:
  virtual ~ZeroSmSetupSteps() = default;
  /// Why this rank cannot run the path (NCCL or driver version); "" if
  /// nothing rules it out. Local.
  virtual std::string prerequisiteProblem() = 0;
  /// This host's node key (zeroSmNodeKey). Local.
  virtual int nodeKey() = 0;
  /// Collective: the smallest `value` over the group's ranks. Failed: the
  /// agreement itself failed on this rank (`error`).
  virtual ZeroSmStep agreeMin(int value, int &lowest, std::string &error) = 0;
  /// Collective: ncclCommSplit of the zero-CTA communicator (held by the
  /// implementation until keepSplit or strandSplit).
  virtual ZeroSmStep split(std::string &error) = 0;
  /// The split succeeded on every rank: the communicator is the group's.
  virtual void keepSplit() = 0;
  /// The split succeeded here but not on every rank: the communicator is
  /// given up without an abort (it may share its parent's abort flag:
  /// aborting it would abort the group and the world) and without a
  /// destroy (its peers have none).
  virtual void strandSplit() = 0;
  /// Waits (bounded) until the old window is idle. Fatal or Done.
  virtual ZeroSmStep drainOldWindow() = 0;
  /// Deregisters the old window. Collective in NCCL.
  virtual ZeroSmStep deregisterOldWindow(std::string &error) = 0;
  /// The old window is gone on this rank: frees its memory.
  virtual void freeOldBuffer() = 0;
  /// Allocates `bytes` of window memory. Local.
  virtual ZeroSmStep allocate(size_t bytes, std::string &error) = 0;
  /// Frees what allocate made (it failed elsewhere).
  virtual void freeAllocation() = 0;
  /// Collective: registers the allocation as the symmetric window.
  virtual ZeroSmStep registerWindow(std::string &error) = 0;
  /// The window is registered everywhere and `bytes` long.
  virtual void keepWindow(size_t bytes) = 0;
  /// A window step failed on some rank: the zero-CTA communicator may hold
  /// a window some ranks lack; it is never deregistered nor aborted
  /// (zeroSmReleaseAction: stranded).
  virtual void markBroken() = 0;
  /// The path is off in this group, for `reason`.
  virtual void disable(const std::string &reason) = 0;
};

/// What a set-up ended in, the same on every rank (unless Fatal).
enum class ZeroSmSetUp { Ready, FellBack, Fatal };

/// The zero-CTA communicator of a group: prerequisites, one node, split,
/// each agreed across the group.
ZeroSmSetUp zeroSmSetUpCommunicator(ZeroSmSetupSteps &steps);

/// A window of `bytes` (`replacing` an old, smaller one): deregistration,
/// allocation and registration, each agreed across the group.
ZeroSmSetUp zeroSmSetUpWindow(ZeroSmSetupSteps &steps, size_t bytes,
                              bool replacing);

/// How a zero-CTA communicator is released.
enum class ZeroSmRelease {
  /// Deregister its window, destroy it, free its memory.
  Destroy,
  /// The context failed and aborts every communicator it owns, the parents
  /// included: abort this one too.
  Abort,
  /// Broken (a window step failed on some rank) in a context that goes
  /// on: never deregistered (a collective some ranks would not join),
  /// never aborted (it shares its parent's abort flag under splitShare:
  /// the group and the world would be aborted with it), its memory kept
  /// (still registered). Left as it is: a leak, not a hang or a crash.
  Strand,
};
ZeroSmRelease zeroSmReleaseAction(bool contextFailed, bool broken);

} // namespace cuda
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_CUDA_ZEROSMSETUP_H
