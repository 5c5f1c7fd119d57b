//===- Mpi.cpp - Joining an MPI job without linking MPI ---------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_process_launched reads the launcher's environment (Bootstrap.cpp,
// the same detection as the CUDA backend's launched contexts);
// overlap_process_init loads liboverlap_runtime_mpi.so beside this library
// and initializes MPI through it; gather and max are what a runner needs to
// report and to agree on an exit status.
//
//===----------------------------------------------------------------------===//

#include "ProcessBackend.h"
#include "overlap/Loader/ElfCheck.h"
#include "overlap/Loader/RegularFile.h"

#include "overlap/Runtime/Bootstrap.h"
#include "overlap/Runtime/Launchers.h"
#include "overlap/Runtime/overlap_runtime_process.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace overlap;
using namespace overlap::process;

namespace {

constexpr const char *kTransportLibrary = "liboverlap_runtime_mpi.so";
constexpr int kGatherTag = 1;
constexpr int kMaxTag = 2;
constexpr int kMaxReplyTag = 3;

std::mutex joinMutex;
Mpi *joined = nullptr;
bool finalized = false;
/// The transport that initialized MPI, if this library did: it finalizes
/// it, even when joining failed after MPI_Init_thread.
const overlap_mpi_transport *initializedBy = nullptr;

/// Why `path` cannot be a shared library to dlopen ("" when it may be):
/// read as the loader reads a program (exec::readRegularFile, which opens
/// without waiting for a writer, then exec::checkElfImage: a library cut
/// short by an interrupted copy raised SIGBUS inside dlopen). A path that
/// is not there is dlopen's to explain (with what to install).
std::string notALibrary(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "";
  std::string bytes, why;
  if (!exec::readRegularFile(path, bytes, "a shared library", why))
    return why;
  if (!exec::checkElfImage(
          reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size(),
          why))
    return "not a whole ELF shared library: " + why;
  return "";
}

/// $OVERLAP_MPI_TRANSPORT, else liboverlap_runtime_mpi.so in the directory
/// of the library that holds this code (liboverlap_runtime.so or
/// liboverlap_runtime_cuda.so; both are built into the same directory).
std::string transportPath() {
  if (const char *path = std::getenv("OVERLAP_MPI_TRANSPORT"))
    if (*path)
      return path;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&overlap_process_init), &info) &&
      info.dli_fname) {
    std::string self = info.dli_fname;
    size_t slash = self.rfind('/');
    if (slash != std::string::npos)
      return self.substr(0, slash + 1) + kTransportLibrary;
  }
  return kTransportLibrary;
}

overlap_status fail(overlap_status status, const std::string &text) {
  host::hostLaunchError() = text;
  return status;
}

void finalizeAtExit() { overlap_process_finalize(); }

/// One exchange of the job's processes outside a launch (gather, max)
/// with a deadline: $OVERLAP_BOOTSTRAP_TIMEOUT_MS, else 60000 ms, what they
/// may take to meet at bootstrap. A process that does not come in time
/// (stopped, looping, or running another program) ends the job with
/// MPI_Abort, naming it: a send still in flight would block MPI_Finalize,
/// and the processes that did come would wait for ever.
class Meeting {
public:
  Meeting(Mpi &mpi, const char *call) : mpi_(mpi), call_(call) {
    std::string error;
    if (!bootstrap::bootstrapTimeoutMs(bootstrap::processEnv(), timeoutMs_,
                                       error)) {
      status_ = fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                     std::string(call) + ": " + error);
      return;
    }
    deadline_ = host::Clock::now() + std::chrono::milliseconds(timeoutMs_);
  }

  bool ready() const { return status_ == OVERLAP_SUCCESS; }
  overlap_status status() const { return status_; }

  /// Every rank's `mine` to rank 0, which gets them in rank order in
  /// `parts` (the others get nothing).
  bool toRoot(int tag, const std::string &mine,
              std::vector<std::string> &parts) {
    parts.assign(mpi_.size, std::string());
    if (mpi_.rank != 0)
      return send(0, tag, mine);
    parts[0] = mine;
    for (int r = 1; r < mpi_.size; ++r)
      if (!receive(r, tag, parts[r]))
        return false;
    return true;
  }

  /// Rank 0's `value` to every rank.
  bool fromRoot(int tag, std::string &value) {
    if (mpi_.rank != 0)
      return receive(0, tag, value);
    for (int r = 1; r < mpi_.size; ++r)
      if (!send(r, tag, value))
        return false;
    return true;
  }

private:
  bool send(int to, int tag, const std::string &data) {
    overlap_mpi_request request = nullptr;
    if (int rc = mpi_.api->issend(mpi_.utility, to, tag, data.data(),
                                  static_cast<int>(data.size()), &request))
      return error("MPI_Issend", rc);
    Backoff backoff;
    for (int done = 0; !done; backoff.idle()) {
      if (int rc = mpi_.api->test(&request, &done))
        return error("MPI_Test", rc);
      if (!done && host::Clock::now() >= deadline_)
        late(to, to == 0 ? "did not take this rank's message (it takes them "
                           "in rank order: a lower rank may be the one "
                           "missing)"
                         : "did not take rank 0's message");
    }
    return true;
  }

  bool receive(int from, int tag, std::string &out) {
    Backoff backoff;
    for (int found = 0; !found; backoff.idle()) {
      int source = 0, gotTag = 0, count = 0;
      overlap_mpi_message message = nullptr;
      if (int rc = mpi_.api->improbe(mpi_.utility, from, tag, &found, &message,
                                     &source, &gotTag, &count))
        return error("MPI_Improbe", rc);
      if (!found) {
        if (host::Clock::now() >= deadline_)
          late(from, "did not come");
        continue;
      }
      out.resize(static_cast<size_t>(count));
      if (int rc = mpi_.api->mrecv(message, count ? &out[0] : nullptr, count))
        return error("MPI_Mrecv", rc);
    }
    return true;
  }

  /// A failed exchange (a peer whose connection closed, over TCP) leaves
  /// the other processes waiting for this one's part: end the job, as for
  /// a late peer, rather than let them wait for the timeout.
  [[noreturn]] bool error(const char *what, int rc) {
    std::fprintf(stderr, "overlap: rank %d: %s: %s; ending the job with %s\n",
                 mpi_.rank, call_, mpi_.error(what, rc).c_str(),
                 mpi_.abortName());
    std::fflush(stderr);
    mpi_.api->abort(2);
    std::_Exit(2);
  }

  [[noreturn]] void late(int rank, const char *what) {
    std::fprintf(stderr,
                 "overlap: rank %d: %s: rank %d %s within %lld ms "
                 "(OVERLAP_BOOTSTRAP_TIMEOUT_MS; is it stopped, still "
                 "running, or running another program?); ending the job "
                 "with %s\n",
                 mpi_.rank, call_, rank, what,
                 static_cast<long long>(timeoutMs_), mpi_.abortName());
    std::fflush(stderr);
    mpi_.api->abort(2);
    std::_Exit(2); // MPI_Abort does not return; should it, do not wait
  }

  Mpi &mpi_;
  const char *call_;
  overlap_status status_ = OVERLAP_SUCCESS;
  int64_t timeoutMs_ = 60000;
  host::Clock::time_point deadline_;
};

} // namespace

std::string Mpi::error(const char *call, int code) const {
  char text[512];
  api->errorString(code, text, sizeof text);
  std::string name = call;
  if (tcp && name.rfind("MPI_", 0) == 0)
    name = name.substr(4);
  return name + ": " + text;
}

Mpi *overlap::process::joinedMpi() {
  std::lock_guard<std::mutex> lock(joinMutex);
  return finalized ? nullptr : joined;
}

void Backoff::idle() {
  // A few yields, then sleeps growing from 10 us to 640 us.
  if (idle_ < 8) {
    ++idle_;
    std::this_thread::yield();
    return;
  }
  int step = std::min(idle_ - 8, 6);
  ++idle_;
  std::this_thread::sleep_for(std::chrono::microseconds(10 << step));
}

extern "C" {

int overlap_process_launched(int *rank, int *size, const char **launcher) {
  bootstrap::Launch launch;
  std::string error;
  host::hostLaunchError().clear();
  if (!bootstrap::detectLaunch(bootstrap::processEnv(), launch, error)) {
    host::hostLaunchError() =
        "overlap_process_launched: the launcher's variables are malformed: " +
        error;
    return -1;
  }
  // The launchers whose processes make one job (Launchers.h): the MPI
  // launchers and Slurm (srun, whose processes MPI_Init joins through PMI),
  // and torchrun (over TCP). Only OVERLAP_RANK set by hand is not one.
  const bootstrap::LauncherKind *kind =
      bootstrap::launcherKind(launch.launcher);
  if (!kind || !kind->job)
    return 0;
  if (rank)
    *rank = launch.rank;
  if (size)
    *size = launch.size;
  if (launcher)
    *launcher = kind->name;
  return 1;
}

const char *overlap_process_transport(void) {
  if (const char *given = std::getenv("OVERLAP_PROCESS_TRANSPORT"))
    if (*given)
      return given;
  const char *launcher = nullptr;
  if (overlap_process_launched(nullptr, nullptr, &launcher) == 1)
    return bootstrap::launcherKind(launcher)->transport;
  return "mpi";
}

overlap_status overlap_process_init(int *rank, int *size) {
  host::hostLaunchError().clear();
  std::lock_guard<std::mutex> lock(joinMutex);
  const std::string call = "overlap_process_init: ";
  if (finalized)
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                call + "MPI was finalized (overlap_process_finalize); a "
                       "process joins its job once");
  if (!joined) {
    const std::string transport = overlap_process_transport();
    const overlap_mpi_transport *api = nullptr;
    if (transport == "tcp") {
      api = tcpTransport();
    } else if (transport != "mpi") {
      return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                  call + "OVERLAP_PROCESS_TRANSPORT=" + transport +
                      " is no transport: mpi or tcp");
    } else {
      const std::string path = transportPath();
      // A FIFO would block dlopen for ever (orphaning the job's other
      // ranks), a truncated library SIGBUS inside it: the path must be a
      // regular file holding a whole ELF shared library.
      if (std::string why = notALibrary(path); !why.empty())
        return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                    call + "cannot load the MPI transport " + path + ": " +
                        why);
      void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!handle)
        return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                    call + "ranks as processes need the MPI transport " +
                        kTransportLibrary +
                        ", which is built when CMake finds MPI (install "
                        "libopenmpi-dev and reconfigure; "
                        "$OVERLAP_MPI_TRANSPORT names another file; "
                        "OVERLAP_PROCESS_TRANSPORT=tcp needs no MPI): " +
                        dlerror());
      auto get = reinterpret_cast<overlap_mpi_transport_fn>(
          dlsym(handle, OVERLAP_MPI_TRANSPORT_SYMBOL));
      api = get ? get() : nullptr;
      if (!api || api->version != OVERLAP_MPI_TRANSPORT_VERSION)
        return fail(
            OVERLAP_ERROR_INVALID_ARGUMENT,
            call + path + " is not an MPI transport of this runtime (" +
                (api ? "version " + std::to_string(api->version) +
                           ", expected " +
                           std::to_string(OVERLAP_MPI_TRANSPORT_VERSION)
                     : std::string("no ") + OVERLAP_MPI_TRANSPORT_SYMBOL) +
                ")");
    }
    auto mpi = std::make_unique<Mpi>();
    mpi->api = api;
    mpi->tcp = transport == "tcp";
    int multiple = 0, initialized = 0;
    if (int rc = api->init(&mpi->rank, &mpi->size, &multiple,
                           &mpi->tagUpperBound, &initialized))
      return fail(OVERLAP_ERROR_INTERNAL,
                  call + mpi->error(transport == "tcp" ? "joining over TCP"
                                                       : "MPI_Init_thread",
                                    rc));
    if (initialized) {
      initializedBy = api;
      std::atexit(finalizeAtExit);
    }
    char library[256];
    api->libraryVersion(library, sizeof library);
    mpi->library = library;
    if (!multiple)
      return fail(OVERLAP_ERROR_INTERNAL,
                  call + mpi->library +
                      " does not provide MPI_THREAD_MULTIPLE, which ranks as "
                      "processes need (collectives run on stream threads)");
    int launchedRank = 0, launchedSize = 0;
    const char *launcher = nullptr;
    if (overlap_process_launched(&launchedRank, &launchedSize, &launcher) &&
        (launchedRank != mpi->rank || launchedSize != mpi->size))
      return fail(OVERLAP_ERROR_INTERNAL,
                  call + launcher + " started this process as rank " +
                      std::to_string(launchedRank) + " of " +
                      std::to_string(launchedSize) + " but " + mpi->library +
                      " says rank " + std::to_string(mpi->rank) + " of " +
                      std::to_string(mpi->size) +
                      " (is libmpi the launcher's MPI?)");
    if (int rc = api->dupWorld(&mpi->utility))
      return fail(OVERLAP_ERROR_INTERNAL,
                  call + mpi->error("MPI_Comm_dup", rc));
    joined = mpi.release();
  }
  if (rank)
    *rank = joined->rank;
  if (size)
    *size = joined->size;
  return OVERLAP_SUCCESS;
}

overlap_status overlap_process_gather(const void *data, size_t bytes,
                                      void **all, size_t *sizes) {
  host::hostLaunchError().clear();
  Mpi *mpi = joinedMpi();
  if (!mpi)
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                "overlap_process_gather: call overlap_process_init first");
  if (!all || (bytes && !data) || (mpi->rank == 0 && !sizes))
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                "overlap_process_gather: null pointer");
  if (bytes > size_t(INT_MAX))
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                "overlap_process_gather: " + std::to_string(bytes) +
                    " bytes, at most " + std::to_string(INT_MAX));
  *all = nullptr;
  Meeting meeting(*mpi, "overlap_process_gather");
  if (!meeting.ready())
    return meeting.status();
  std::vector<std::string> parts;
  if (!meeting.toRoot(kGatherTag,
                      std::string(static_cast<const char *>(data), bytes),
                      parts))
    return meeting.status();
  if (mpi->rank != 0)
    return OVERLAP_SUCCESS;
  size_t total = 0;
  for (const std::string &part : parts)
    total += part.size();
  char *out = static_cast<char *>(std::malloc(total ? total : 1));
  if (!out)
    return fail(OVERLAP_ERROR_OUT_OF_MEMORY,
                "overlap_process_gather: cannot allocate " +
                    std::to_string(total) + " bytes");
  size_t offset = 0;
  for (int r = 0; r < mpi->size; ++r) {
    if (!parts[r].empty())
      std::memcpy(out + offset, parts[r].data(), parts[r].size());
    sizes[r] = parts[r].size();
    offset += parts[r].size();
  }
  *all = out;
  return OVERLAP_SUCCESS;
}

overlap_status overlap_process_max(int64_t *value) {
  host::hostLaunchError().clear();
  Mpi *mpi = joinedMpi();
  if (!mpi)
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                "overlap_process_max: call overlap_process_init first");
  if (!value)
    return fail(OVERLAP_ERROR_INVALID_ARGUMENT,
                "overlap_process_max: null pointer");
  // Gathered on rank 0 and sent back, each message against the deadline
  // (MPI_Allreduce would block for ever on a rank that never comes).
  Meeting meeting(*mpi, "overlap_process_max");
  if (!meeting.ready())
    return meeting.status();
  std::vector<std::string> parts;
  std::string mine(reinterpret_cast<const char *>(value), sizeof *value);
  if (!meeting.toRoot(kMaxTag, mine, parts))
    return meeting.status();
  if (mpi->rank == 0) {
    for (const std::string &part : parts) {
      int64_t theirs = 0;
      std::memcpy(&theirs, part.data(), std::min(part.size(), sizeof theirs));
      *value = std::max(*value, theirs);
    }
    mine.assign(reinterpret_cast<const char *>(value), sizeof *value);
  }
  if (!meeting.fromRoot(kMaxReplyTag, mine))
    return meeting.status();
  std::memcpy(value, mine.data(), std::min(mine.size(), sizeof *value));
  return OVERLAP_SUCCESS;
}

void overlap_process_finalize(void) {
  std::lock_guard<std::mutex> lock(joinMutex);
  if (finalized || (!joined && !initializedBy))
    return;
  finalized = true;
  if (joined && joined->utility) {
    joined->api->commFree(joined->utility);
    joined->utility = nullptr;
  }
  if (initializedBy)
    initializedBy->finalize();
}

} // extern "C"
