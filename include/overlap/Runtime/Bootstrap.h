//===- Bootstrap.h - Launch detection and id rendezvous ---------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What a process started by mpirun, srun or torchrun needs to join its peers
// without an MPI library: its rank, the world size and its rank on the node,
// read from the launcher's environment variables, and a rendezvous file
// through which rank 0 hands the other ranks an opaque id (an NCCL unique
// id). Plain C++17 and POSIX: no MPI, CUDA or MLIR, so it is unit-tested on
// any machine. overlap_cuda_context_create_launched is built on it;
// docs/cuda.md ("Creating a context") describes the rules.
//
// The environment is passed in as a lookup function, so tests (and callers
// with a different source of truth) need not change the process's
// environment.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_RUNTIME_BOOTSTRAP_H
#define OVERLAP_RUNTIME_BOOTSTRAP_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

struct stat;

namespace overlap {
namespace bootstrap {

/// Looks up an environment variable: nullopt if unset. An empty value counts
/// as unset everywhere below.
using Env = std::function<std::optional<std::string>(const std::string &)>;

/// The process environment (getenv).
Env processEnv();
/// A fixed set of variables (tests).
Env mapEnv(std::map<std::string, std::string> vars);

/// Where this process sits in the launched job.
struct Launch {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  /// The launcher the rank and size came from ("Open MPI", "Slurm", ...),
  /// "OVERLAP_RANK" for our own variables, "" when none was found.
  std::string launcher;
  /// The variable the local rank came from; "" when it defaulted to the
  /// rank (no launcher variable for it).
  std::string localRankVariable;

  /// "rank 3 of 8 (Open MPI)", for messages.
  std::string describe() const;
};

/// Detects the launch from the variables of (in this order) OVERLAP_RANK /
/// OVERLAP_WORLD_SIZE, Open MPI, MVAPICH, MPICH / Intel MPI (PMI), torchrun
/// (RANK / WORLD_SIZE) and Slurm: the first whose rank or size variable is
/// set wins. OVERLAP_LOCAL_RANK overrides any local rank. No variable at all
/// is one rank. A malformed value, a rank without a size, a rank or local
/// rank out of range is an error naming the variable.
bool detectLaunch(const Env &env, Launch &launch, std::string &error);

/// How the ranks of a launched job agree on NCCL's unique id.
struct IdExchange {
  enum class Kind {
    /// NCCL's own TCP bootstrap: NCCL_COMM_ID=host:port on every rank; each
    /// rank makes the same id with ncclGetUniqueId and rank 0's
    /// ncclCommInitRank serves the bootstrap at that address. Nothing
    /// shared between the nodes but the network.
    CommId,
    /// The rendezvous file below (a directory every rank sees).
    File,
  };
  Kind kind = Kind::File;
  /// CommId: "host:port", "[v6]:port".
  std::string commId;
  /// Where commId came from, for messages: "OVERLAP_COMM_ID",
  /// "NCCL_COMM_ID", "MASTER_ADDR and MASTER_PORT + 1".
  std::string source;
};

/// Chooses the id exchange of a job of more than one rank, in this order:
/// $OVERLAP_COMM_ID (host:port), then $NCCL_COMM_ID, then $MASTER_ADDR and
/// $MASTER_PORT as torchrun sets them (the port after MASTER_PORT: torchrun's
/// agent serves its own store on MASTER_PORT itself), else the rendezvous
/// file. A malformed address or port is an error naming the variable.
bool chooseIdExchange(const Env &env, IdExchange &exchange, std::string &error);

/// "/tmp/overlap-<uid>": a directory of this user's only.
std::string defaultRendezvousDirectory();

/// Why a file or directory whose status is `st` is not this user's alone
/// ("" when it is): another uid owns it ("belongs to uid N, not to this
/// user (uid M)"), or group or others have a permission ("has mode 0644: "
/// + `risk`).
std::string notThisUsersAlone(const struct stat &st, const std::string &risk);

/// Checks (and with `create`, first makes, mode 0700) a directory only this
/// user can use: a directory, not a symbolic link, owned by this user, no
/// permission for group or others. False, with `error` naming what is
/// wrong and what to do, otherwise.
bool ensurePrivateDirectory(const std::string &directory, bool create,
                            std::string &error);

/// Where and for how long the ranks of one job meet.
struct RendezvousConfig {
  /// $OVERLAP_BOOTSTRAP_DIR, else defaultRendezvousDirectory().
  std::string directory = defaultRendezvousDirectory();
  /// True for the default directory: made owner-only (0700) by rank 0, and
  /// refused by every rank when it is not a directory of this user that no
  /// one else can write (another user could otherwise put a FIFO or a file
  /// of their own under the job's predictable name). A directory given in
  /// $OVERLAP_BOOTSTRAP_DIR is used as it is; the files in it are still
  /// checked (regular, this user's).
  bool privateDirectory = true;
  /// $OVERLAP_BOOTSTRAP_KEY, else the launcher's job id variables
  /// ("NAME=value;..."): the same on every rank of a job, different between
  /// jobs that may run at the same time.
  std::string key;
  /// $OVERLAP_BOOTSTRAP_TIMEOUT_MS, else 60000.
  int64_t timeoutMs = 60000;
};

/// $OVERLAP_BOOTSTRAP_TIMEOUT_MS, else 60000: how long the processes of a
/// job may take to meet (the rendezvous, and the exchanges of
/// overlap_process_gather / _max). A malformed or zero value is an error
/// naming the variable.
bool bootstrapTimeoutMs(const Env &env, int64_t &ms, std::string &error);

/// Reads the rendezvous settings for `launch`. Fails (naming the variables it
/// looked for) when no job key can be found, or on a malformed timeout.
/// The job key comes from the launcher that gave the rank first, then from
/// any other launcher's job id variables.
bool rendezvousConfig(const Env &env, const Launch &launch,
                      RendezvousConfig &config, std::string &error);

/// The rendezvous file of `key` in `directory`: "overlap-bootstrap-" + the
/// key's characters that are safe in a file name (at most 40) + "-" + 16 hex
/// digits of a hash of the whole key.
std::string rendezvousPath(const std::string &directory,
                           const std::string &key);

/// The content of a rendezvous file: a fixed header (magic, format version,
/// kind, world size, byte counts, writer pid, host and wall-clock time, a
/// checksum), then the key and the payload. Exposed for tests.
struct Record {
  bool failed = false; ///< payload is rank 0's error text, not an id
  uint32_t worldSize = 0;
  std::string key;
  std::string payload;
  int64_t createdMs = 0; ///< writer's wall clock, ms since the epoch
  uint32_t pid = 0;
  std::string host;
};
std::string encodeRecord(const Record &record);
/// False with the reason (bad magic, truncated, checksum...) in `why`.
bool decodeRecord(const std::string &bytes, Record &record, std::string &why);

/// Wall clock in ms since the epoch, as records carry it.
int64_t wallClockMs();

/// Rank 0's and the other ranks' side of one exchange through the file
/// rendezvousPath(config.directory, config.key).
class Rendezvous {
public:
  Rendezvous(RendezvousConfig config, int rank, int size);

  const std::string &path() const { return path_; }

  /// Rank 0, first thing: removes a file an earlier job with the same key
  /// left behind, so that the other ranks stop seeing it as early as
  /// possible.
  bool clear(std::string &error);
  /// Rank 0: writes `bytes` atomically (a temporary file in the same
  /// directory, fsync, rename over the path).
  bool publish(const void *bytes, size_t count, std::string &error);
  /// Rank 0: records that it failed, so that ranks already waiting fail at
  /// once with `why` instead of at the timeout.
  bool publishFailure(const std::string &why, std::string &error);
  /// Other ranks: polls until rank 0's record for this key and world size
  /// with exactly `count` bytes appears, and copies it to `bytes`. Fails at
  /// the timeout (then `timedOut` is set) naming the rank, the file, the time
  /// waited and what was wrong with the file if there was one, or at once
  /// when rank 0 reports a failure written after this call began. A record
  /// written more than the timeout before this call began is ignored as
  /// stale.
  bool await(void *bytes, size_t count, std::string &error,
             bool *timedOut = nullptr);
  /// Rank 0, once every rank has read the id (its ncclCommInitRank
  /// returned): removes the file it published, unless another writer has
  /// replaced it since.
  void withdraw();

private:
  bool write(const Record &record, std::string &error);

  RendezvousConfig config_;
  int rank_;
  int size_;
  std::string path_;
  /// The bytes this object last published ("" if none).
  std::string published_;
};

} // namespace bootstrap
} // namespace overlap

#endif // OVERLAP_RUNTIME_BOOTSTRAP_H
