//===- ProcessContext.cpp - One rank per process: launch, groups -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_process_launch runs this process's rank as the threaded backend
// runs one of its threads, with three additions for ranks that no longer
// share memory: a failure is sent to every other rank (which aborts its
// World as the threaded backend's abort does, and says "abandoned: rank R
// failed first (...)"); when the rank is done, it takes whatever other ranks
// still send it until all of them are done (so no rank leaves a message
// unreceived, which would stall MPI_Finalize); and all ranks agree on the
// outcome, so every process returns the same status and text.
//
//===----------------------------------------------------------------------===//

#include "ProcessBackend.h"

#include "overlap/Runtime/overlap_runtime_process.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace overlap;
using namespace overlap::runtime;
using namespace overlap::process;

namespace {
/// Tags on the abort communicator: abort messages, then the final
/// agreement (after the drain, which leaves the latter alone).
constexpr int kAbortTag = 0;
constexpr int kAgreeTag = 1;

/// A failure as ranks send it: rank, status, then the text.
std::string encodeFailure(int rank, overlap_status status,
                          const std::string &text) {
  int32_t head[2] = {rank, static_cast<int32_t>(status)};
  std::string out(reinterpret_cast<const char *>(head), sizeof head);
  return out + text;
}

bool decodeFailure(const std::string &bytes, int &rank, overlap_status &status,
                   std::string &text) {
  int32_t head[2];
  if (bytes.size() < sizeof head)
    return false;
  std::memcpy(head, bytes.data(), sizeof head);
  rank = head[0];
  status = static_cast<overlap_status>(head[1]);
  text = bytes.substr(sizeof head);
  return true;
}
} // namespace

//===----------------------------------------------------------------------===//
// ProcessWorld
//===----------------------------------------------------------------------===//

ProcessWorld::ProcessWorld(Mpi &mpi, host::World &world)
    : mpi(mpi), world(world) {}

ProcessWorld::~ProcessWorld() {
  stop_.store(true);
  if (monitor_.joinable())
    monitor_.join();
  // After drain() nothing is pending; a failed drain ended the job.
  for (overlap_mpi_comm comm : comms_)
    mpi.api->commFree(comm);
  if (abortComm_)
    mpi.api->commFree(abortComm_);
  if (worldComm_)
    mpi.api->commFree(worldComm_);
}

bool ProcessWorld::open(std::string &error) {
  if (int rc = mpi.api->dupWorld(&worldComm_)) {
    error = mpi.error("MPI_Comm_dup", rc);
    return false;
  }
  if (int rc = mpi.api->dupWorld(&abortComm_)) {
    error = mpi.error("MPI_Comm_dup", rc);
    return false;
  }
  worldState_ = std::make_shared<GroupState>();
  worldState_->comm = worldComm_;
  worldState_->rank = mpi.rank;
  for (int r = 0; r < mpi.size; ++r)
    worldState_->members.push_back(r);
  return true;
}

int ProcessWorld::tagOf(uint64_t call) const {
  return static_cast<int>(call % (uint64_t(mpi.tagUpperBound) + 1));
}

void ProcessWorld::keep(overlap_mpi_comm comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.push_back(comm);
}

void ProcessWorld::keep(overlap_mpi_request request,
                        std::shared_ptr<std::string> buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back({request, std::move(buffer)});
}

void ProcessWorld::broadcastAbort(overlap_status status,
                                  const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (abortSent_)
    return;
  abortSent_ = true;
  auto buffer =
      std::make_shared<std::string>(encodeFailure(mpi.rank, status, message));
  for (int r = 0; r < mpi.size; ++r) {
    if (r == mpi.rank)
      continue;
    overlap_mpi_request request = nullptr;
    // A rank that cannot be told times out instead.
    if (mpi.api->issend(abortComm_, r, kAbortTag, buffer->data(),
                        static_cast<int>(buffer->size()), &request) == 0)
      kept_.push_back({request, buffer});
  }
}

bool ProcessWorld::pollAbort(bool record) {
  for (;;) {
    int found = 0, source = 0, tag = 0, bytes = 0;
    overlap_mpi_message message = nullptr;
    if (mpi.api->improbe(abortComm_, -1, kAbortTag, &found, &message, &source,
                         &tag, &bytes))
      return false;
    if (!found)
      return true;
    std::string text(static_cast<size_t>(bytes), '\0');
    if (mpi.api->mrecv(message, &text[0], bytes))
      return false;
    int rank = source;
    overlap_status status = OVERLAP_ERROR_INTERNAL;
    std::string what;
    if (record && decodeFailure(text, rank, status, what))
      world.abort(rank, status, what);
  }
}

bool ProcessWorld::testKept() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < kept_.size();) {
    int done = 0;
    if (mpi.api->test(&kept_[i].request, &done) == 0 && done) {
      kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
  return kept_.empty();
}

void ProcessWorld::startMonitor() {
  monitor_ = std::thread([this] { monitor(); });
}

void ProcessWorld::monitor() {
  // A rank blocked inside MPI (a split whose peers gave up) cannot see the
  // abort; after this long it ends the job rather than hang. Long enough
  // for any rank to finish the task it was running when the run failed.
  const auto grace = endGrace();
  host::Clock::time_point failedAt{};
  bool failed = false;
  while (!stop_.load()) {
    pollAbort(/*record=*/true);
    testKept();
    if (world.aborted.load(std::memory_order_acquire)) {
      host::Clock::time_point now = host::Clock::now();
      if (!failed) {
        failed = true;
        failedAt = now;
      } else if (now - failedAt > grace) {
        std::fprintf(stderr,
                     "overlap: rank %d is not done %lld ms after rank %d "
                     "failed (%s); ending the job with %s\n",
                     mpi.rank, static_cast<long long>(grace.count()),
                     world.rootRank(), world.rootError().c_str(),
                     mpi.abortName());
        std::fflush(stderr);
        mpi.api->abort(2);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::chrono::milliseconds ProcessWorld::endGrace() const {
  return std::chrono::milliseconds(
      std::max<int64_t>(2 * world.options.waitTimeoutMs, 30000));
}

std::string ProcessWorld::lateText() const {
  return " within " + std::to_string(endGrace().count()) +
         " ms of this rank's end (max(2 x the wait timeout, 30 s)): stopped, "
         "hung or unreachable";
}

bool ProcessWorld::drain(host::Clock::time_point by, std::string &error) {
  overlap_mpi_request barrier = nullptr;
  bool entered = false;
  Backoff backoff;
  for (;;) {
    if (host::Clock::now() > by) {
      error = "the job's ranks did not all reach the end of the launch" +
              lateText();
      return false;
    }
    bool moved = false;
    std::vector<overlap_mpi_comm> comms;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      comms = comms_;
    }
    comms.push_back(worldComm_);
    for (overlap_mpi_comm comm : comms) {
      for (;;) {
        int found = 0, source = 0, tag = 0, bytes = 0;
        overlap_mpi_message message = nullptr;
        if (int rc = mpi.api->improbe(comm, -1, -1, &found, &message, &source,
                                      &tag, &bytes)) {
          error = mpi.error("MPI_Improbe", rc);
          return false;
        }
        if (!found)
          break;
        std::string ignored(static_cast<size_t>(bytes), '\0');
        if (int rc = mpi.api->mrecv(message, &ignored[0], bytes)) {
          error = mpi.error("MPI_Mrecv", rc);
          return false;
        }
        moved = true;
      }
    }
    if (!pollAbort(/*record=*/false)) {
      error = "MPI_Improbe failed on the abort communicator";
      return false;
    }
    // Synchronous sends complete once received: when every rank's have,
    // the barrier (on the abort communicator, where no split is in flight)
    // completes, and nothing is left in flight for anyone.
    if (testKept() && !entered) {
      if (int rc = mpi.api->ibarrier(abortComm_, &barrier)) {
        error = mpi.error("MPI_Ibarrier", rc);
        return false;
      }
      entered = true;
    }
    if (entered) {
      int done = 0;
      if (int rc = mpi.api->test(&barrier, &done)) {
        error = mpi.error("MPI_Test", rc);
        return false;
      }
      if (done)
        break;
    }
    if (moved)
      backoff.progress();
    else
      backoff.idle();
  }
  stop_.store(true);
  if (monitor_.joinable())
    monitor_.join();
  return true;
}

bool ProcessWorld::agree(host::Clock::time_point by, overlap_status &status,
                         std::string &text, std::string &error) {
  // Every rank sends every other its own root cause, if it is one, and all
  // pick the lowest rank's.
  bool own = world.rootRank() == mpi.rank;
  auto record = std::make_shared<std::string>(
      encodeFailure(mpi.rank, own ? world.rootStatus() : OVERLAP_SUCCESS,
                    own ? world.rootError() : std::string()));
  std::vector<overlap_mpi_request> sends;
  for (int r = 0; r < mpi.size; ++r) {
    if (r == mpi.rank)
      continue;
    sends.emplace_back();
    if (int rc =
            mpi.api->issend(abortComm_, r, kAgreeTag, record->data(),
                            static_cast<int>(record->size()), &sends.back())) {
      error = mpi.error("MPI_Issend", rc);
      return false;
    }
  }
  std::vector<std::string> records(mpi.size);
  records[mpi.rank] = *record;
  Backoff backoff;
  auto late = [&](const char *what) {
    std::string missing;
    for (int r = 0; r < mpi.size; ++r)
      if (r != mpi.rank && records[r].empty())
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    error = std::string(what) +
            (missing.empty() ? "" : " (no outcome from rank " + missing + ")") +
            lateText();
    return false;
  };
  for (int r = 0; r < mpi.size; ++r) {
    for (int found = r == mpi.rank; !found; backoff.idle()) {
      if (host::Clock::now() > by)
        return late("the job's ranks did not all send their outcome");
      int source = 0, tag = 0, bytes = 0;
      overlap_mpi_message message = nullptr;
      if (int rc = mpi.api->improbe(abortComm_, r, kAgreeTag, &found, &message,
                                    &source, &tag, &bytes)) {
        error = mpi.error("MPI_Improbe", rc);
        return false;
      }
      if (!found)
        continue;
      records[r].resize(static_cast<size_t>(bytes));
      if (int rc = mpi.api->mrecv(message, &records[r][0], bytes)) {
        error = mpi.error("MPI_Mrecv", rc);
        return false;
      }
    }
  }
  for (overlap_mpi_request &request : sends) {
    for (int done = 0; !done; backoff.idle()) {
      if (host::Clock::now() > by)
        return late("the job's ranks did not all receive this rank's "
                    "outcome");
      if (int rc = mpi.api->test(&request, &done)) {
        error = mpi.error("MPI_Test", rc);
        return false;
      }
    }
  }
  status = OVERLAP_SUCCESS;
  text.clear();
  for (int r = 0; r < mpi.size; ++r) {
    int rank = r;
    overlap_status theirs = OVERLAP_SUCCESS;
    std::string what;
    if (!decodeFailure(records[r], rank, theirs, what)) {
      error = "a malformed outcome from rank " + std::to_string(r);
      return false;
    }
    if (theirs != OVERLAP_SUCCESS) {
      status = theirs;
      text = what;
      break;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// ProcessContext
//===----------------------------------------------------------------------===//

ProcessContext::ProcessContext(ProcessWorld &process, host::World &world,
                               int rank)
    : HostContext(world, rank), process_(process) {
  worldGroup_.rank = rank;
  worldGroup_.size = world.ranks;
  worldGroup_.state = process.worldState();
}

ProcessContext::~ProcessContext() {
  // Queued collectives hold their group's state; the streams drain before
  // HostContext's destructor returns.
  synchronize(-1);
}

void ProcessContext::onFail() {
  HostContext::onFail();
  // Only the root cause is sent: the aborts it causes are the other ranks'
  // own business.
  if (world.rootRank() == rank)
    process_.broadcastAbort(status(), lastError());
}

overlap_status ProcessContext::split(overlap_group *parentBase, int color,
                                     int key, overlap_group **group) {
  auto *parent = static_cast<ProcessGroup *>(parentBase);
  const Site site = Site::thread("overlap_group_split");
  auto failed = [&](overlap_status status, std::string what) {
    if (status == OVERLAP_ERROR_ABORTED)
      what = world.abandonedText();
    return fail(status, formatError(site, rank, what));
  };
  if (world.aborted.load(std::memory_order_acquire))
    return failed(OVERLAP_ERROR_ABORTED, "");
  const GroupState &shared = *parent->state;
  const uint64_t call = parent->nextCall++;

  // Every rank's color and key, checked as a call on the parent (a split
  // counts as one), with a timeout: MPI_Comm_split, which blocks, starts
  // only once every rank of the parent is known to be in this split.
  int32_t mine[2] = {color, key};
  Exchange messages;
  messages.payloads.assign(shared.size(), {mine, sizeof mine});
  std::string what;
  if (overlap_status status = exchange(process_, shared, call,
                                       "overlap_group_split", messages, what))
    return failed(status, what);

  overlap_mpi_comm comm = nullptr;
  if (int rc = process_.mpi.api->split(
          shared.comm, color == OVERLAP_UNDEFINED_COLOR ? -1 : color, key,
          &comm))
    return failed(OVERLAP_ERROR_INTERNAL,
                  process_.mpi.error("MPI_Comm_split", rc));
  if (color == OVERLAP_UNDEFINED_COLOR)
    return OVERLAP_SUCCESS;
  if (!comm)
    return failed(OVERLAP_ERROR_INTERNAL, "MPI_Comm_split gave no group");
  process_.keep(comm);

  // Members of this color ordered by (key, parent rank), as MPI orders them.
  std::vector<int> order;
  std::vector<int32_t> keys(shared.size());
  for (int p = 0; p < shared.size(); ++p) {
    int32_t theirs[2] = {color, key};
    if (p != shared.rank)
      std::memcpy(theirs, messages.received[p].data(), sizeof theirs);
    keys[p] = theirs[1];
    if (theirs[0] == color)
      order.push_back(p);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return keys[x] < keys[y]; });
  auto state = std::make_shared<GroupState>();
  state->comm = comm;
  for (size_t i = 0; i < order.size(); ++i) {
    state->members.push_back(shared.members[order[i]]);
    if (order[i] == shared.rank)
      state->rank = static_cast<int>(i);
  }
  int mpiRank = -1;
  process_.mpi.api->commRank(comm, &mpiRank);
  if (mpiRank != state->rank)
    return failed(OVERLAP_ERROR_INTERNAL,
                  "MPI_Comm_split made this rank " + std::to_string(mpiRank) +
                      " of its group, expected " + std::to_string(state->rank));

  auto result = std::make_unique<ProcessGroup>();
  result->rank = state->rank;
  result->size = state->size();
  result->state = std::move(state);
  return adoptGroup(groups_, std::move(result), group);
}

void ProcessContext::destroyGroup(overlap_group *group) {
  // The communicator lives until the launch ends (ProcessWorld::keep).
  destroyOwnedGroup(groups_, group);
}

overlap_status ProcessContext::collective(const Site &site,
                                          overlap_group *group,
                                          const CollectiveArgs &args) {
  auto *processGroup = static_cast<ProcessGroup *>(group);
  std::shared_ptr<GroupState> state = processGroup->state;
  uint64_t call = processGroup->nextCall++;
  ProcessWorld *process = &process_;
  const char *name = site.call;
  enqueue(site, [process, state, call, name, args](std::string &what) {
    return runCollective(*process, *state, call, name, args, what);
  });
  return OVERLAP_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

extern "C" overlap_status
overlap_process_launch(int ranks, const overlap_host_options *opts,
                       void (*fn)(overlap_context *, void *), void *user) {
  std::string &launchError = host::hostLaunchError();
  launchError.clear();
  Mpi *mpi = joinedMpi();
  if (!mpi) {
    launchError = "overlap_process_launch: this process has not joined an "
                  "MPI job (overlap_process_init)";
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  }
  // Refusals are agreed on before anything collective starts, so that no
  // rank waits in MPI for one that returned.
  overlap_status refused = OVERLAP_SUCCESS;
  host::Options options;
  if (ranks != mpi->size) {
    launchError = "overlap_process_launch: ranks " + std::to_string(ranks) +
                  ", but the job has " + std::to_string(mpi->size) +
                  " processes (one rank per process)";
    refused = OVERLAP_ERROR_INVALID_ARGUMENT;
  } else if (!fn) {
    launchError = "overlap_process_launch: null rank function";
    refused = OVERLAP_ERROR_INVALID_ARGUMENT;
  } else {
    refused = host::resolveHostOptions("overlap_process_launch", opts, options);
  }
  int64_t anyRefused = refused != OVERLAP_SUCCESS;
  if (int rc = mpi->api->allreduceMax(mpi->utility, &anyRefused)) {
    launchError = "overlap_process_launch: " + mpi->error("MPI_Allreduce", rc);
    return OVERLAP_ERROR_INTERNAL;
  }
  if (refused)
    return refused;
  if (anyRefused) {
    launchError = "overlap_process_launch: another rank refused its "
                  "arguments or options";
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  }

  host::World world(ranks, options);
  ProcessWorld process(*mpi, world);
  std::string error;
  auto broken = [&](const std::string &why) {
    // The other ranks cannot finish their launch without this one: end the
    // job rather than leave them waiting.
    std::fprintf(stderr,
                 "overlap: rank %d: overlap_process_launch: %s; "
                 "ending the job with %s\n",
                 mpi->rank, why.c_str(), mpi->abortName());
    std::fflush(stderr);
    mpi->api->abort(2);
    launchError = "overlap_process_launch: " + why;
    return OVERLAP_ERROR_INTERNAL;
  };
  if (!process.open(error))
    return broken(error);
  process.startMonitor();
  {
    ProcessContext ctx(process, world, mpi->rank);
    fn(&ctx, user);
    ctx.synchronize(-1);
  }
  overlap_status status = OVERLAP_SUCCESS;
  std::string text;
  // A rank stopped now (SIGSTOP, a debugger, a hung driver) would hold the
  // others here for ever: the end has the monitor's grace, then ends the
  // job naming what did not come.
  const host::Clock::time_point endBy = host::Clock::now() + process.endGrace();
  if (!process.drain(endBy, error) ||
      !process.agree(endBy, status, text, error))
    return broken(error);
  launchError = text;
  return status;
}
