//===- Bootstrap.cpp - Launch detection and id rendezvous -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Rank, world size and local rank from the variables launchers set, and a
// file through which rank 0 hands an opaque id to the other ranks. No MPI
// library: only the environment and a directory that every rank sees.
//
// The file is the one thing several jobs may share by accident (a reused
// key), so it says whom it is for (key, world size), when it was written and
// by whom, and carries a checksum; rank 0 removes an old one before anything
// else, publishes by rename (never a partial file under the final name), and
// removes its own once every rank has read it. What stays racy is described
// in docs/cuda.md.
//
//===----------------------------------------------------------------------===//

#include "overlap/Runtime/Bootstrap.h"
#include "overlap/Runtime/Launchers.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace overlap::bootstrap;

//===----------------------------------------------------------------------===//
// Environment
//===----------------------------------------------------------------------===//

Env overlap::bootstrap::processEnv() {
  return [](const std::string &name) -> std::optional<std::string> {
    const char *value = std::getenv(name.c_str());
    if (!value)
      return std::nullopt;
    return std::string(value);
  };
}

Env overlap::bootstrap::mapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](
             const std::string &name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end())
      return std::nullopt;
    return it->second;
  };
}

namespace {

/// The value of `name`, nullopt when unset or empty.
std::optional<std::string> lookup(const Env &env, const char *name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty())
    return std::nullopt;
  return value;
}

/// A set variable that must hold a decimal integer in [0, INT_MAX].
bool parseCount(const char *name, const std::string &text, int &value,
                std::string &error) {
  bool ok = !text.empty() && text.size() <= 10 &&
            std::all_of(text.begin(), text.end(),
                        [](char c) { return c >= '0' && c <= '9'; });
  long long v = ok ? std::strtoll(text.c_str(), nullptr, 10) : -1;
  if (!ok || v > INT_MAX) {
    error = std::string(name) + "='" + text +
            "' is not a non-negative integer (at most " +
            std::to_string(INT_MAX) + ")";
    return false;
  }
  value = int(v);
  return true;
}

/// The variables one launcher sets in each process it starts.
struct LauncherVars {
  const char *name;
  const char *rank;
  /// The first set one is the world size.
  std::vector<const char *> sizes;
  std::vector<const char *> localRanks;
  std::vector<const char *> localSizes;
  /// When not empty, one of these must be set for the launcher to count
  /// (Slurm: only inside an srun step, not in a batch script's shell).
  std::vector<const char *> inside;
  /// Alternatives for the job key; one applies when its first variable is
  /// set, and the others of the alternative are added when set.
  std::vector<std::vector<const char *>> jobKeys;
};

/// In order of precedence: our own, then the MPI launchers (which may run
/// inside a Slurm allocation and inherit its variables), then torchrun
/// (which may run once per node under srun), then Slurm.
const std::vector<LauncherVars> &launchers() {
  static const std::vector<LauncherVars> all = {
      {kOverlapLauncher,
       "OVERLAP_RANK",
       {"OVERLAP_WORLD_SIZE"},
       {},
       {},
       {},
       {}},
      {kOpenMpi,
       "OMPI_COMM_WORLD_RANK",
       {"OMPI_COMM_WORLD_SIZE"},
       {"OMPI_COMM_WORLD_LOCAL_RANK"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE"},
       {},
       {{"PMIX_NAMESPACE"},
        {"OMPI_MCA_orte_hnp_uri"},
        {"OMPI_MCA_ess_base_jobid"}}},
      {kMvapich,
       "MV2_COMM_WORLD_RANK",
       {"MV2_COMM_WORLD_SIZE"},
       {"MV2_COMM_WORLD_LOCAL_RANK"},
       {"MV2_COMM_WORLD_LOCAL_SIZE"},
       {},
       {}},
      {kMpichPmi,
       "PMI_RANK",
       {"PMI_SIZE"},
       {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"},
       {"MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"},
       {},
       {{"PMI_JOBID"}, {"PMIX_NAMESPACE"}}},
      {kTorchrun,
       "RANK",
       {"WORLD_SIZE"},
       {"LOCAL_RANK"},
       {"LOCAL_WORLD_SIZE"},
       {},
       {{"TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT",
         "TORCHELASTIC_RESTART_COUNT"},
        {"MASTER_PORT", "MASTER_ADDR"}}},
      {kSlurm,
       "SLURM_PROCID",
       {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"},
       {"SLURM_LOCALID"},
       {},
       {"SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NUM_TASKS"},
       {{"SLURM_JOB_ID", "SLURM_STEP_ID"}, {"SLURM_JOBID", "SLURM_STEPID"}}},
  };
  return all;
}

std::string joinNames(const std::vector<const char *> &names,
                      const char *separator) {
  std::string out;
  for (const char *name : names)
    out += (out.empty() ? "" : separator) + std::string(name);
  return out;
}

/// The first set variable of `names` (nullptr if none) and its value.
const char *firstSet(const Env &env, const std::vector<const char *> &names,
                     std::string &value) {
  for (const char *name : names)
    if (std::optional<std::string> v = lookup(env, name)) {
      value = *v;
      return name;
    }
  return nullptr;
}

bool isInside(const Env &env, const LauncherVars &l) {
  if (l.inside.empty())
    return true;
  std::string ignored;
  return firstSet(env, l.inside, ignored) != nullptr;
}

/// Rank and size of launcher `l`. `found` is false when it set neither.
bool readRankSize(const Env &env, const LauncherVars &l, bool &found, int &rank,
                  int &size, std::string &sizeName, std::string &error) {
  found = false;
  if (!isInside(env, l))
    return true;
  std::optional<std::string> rankText = lookup(env, l.rank);
  std::string sizeText;
  const char *sizeVar = firstSet(env, l.sizes, sizeText);
  if (!rankText && !sizeVar)
    return true;
  found = true;
  if (!sizeVar) {
    error = std::string(l.rank) + "=" + *rankText + " is set but " +
            joinNames(l.sizes, " or ") + " is not";
    return false;
  }
  if (!rankText) {
    error = std::string(sizeVar) + "=" + sizeText + " is set but " + l.rank +
            " is not";
    return false;
  }
  if (!parseCount(l.rank, *rankText, rank, error) ||
      !parseCount(sizeVar, sizeText, size, error))
    return false;
  sizeName = sizeVar;
  if (size < 1) {
    error = sizeName + "=" + sizeText + ": the world needs at least 1 rank";
    return false;
  }
  if (rank >= size) {
    error = std::string(l.rank) + "=" + *rankText + " is not below " +
            sizeName + "=" + sizeText;
    return false;
  }
  return true;
}

} // namespace

std::string Launch::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size) + " (" +
         (launcher.empty() ? "no launcher" : launcher) + ")";
}

bool overlap::bootstrap::detectLaunch(const Env &env, Launch &launch,
                                      std::string &error) {
  launch = Launch();
  const LauncherVars *chosen = nullptr;
  std::string sizeName;
  for (const LauncherVars &l : launchers()) {
    bool found = false;
    if (!readRankSize(env, l, found, launch.rank, launch.size, sizeName, error))
      return false;
    if (found) {
      chosen = &l;
      launch.launcher = l.name;
      break;
    }
  }

  // The local rank: ours, else the chosen launcher's, else one from another
  // launcher that agrees on rank and size (srun --mpi=pmi2 sets PMI_RANK but
  // only Slurm's local id), else the rank (right for one node, and for
  // blocks of one rank per device on each node).
  std::string text;
  const char *localVar = nullptr;
  if (std::optional<std::string> v = lookup(env, "OVERLAP_LOCAL_RANK")) {
    localVar = "OVERLAP_LOCAL_RANK";
    text = *v;
  } else if (chosen) {
    localVar = firstSet(env, chosen->localRanks, text);
    for (const LauncherVars &l : launchers()) {
      if (localVar)
        break;
      if (&l == chosen || l.localRanks.empty())
        continue;
      bool found = false;
      int rank = 0, size = 0;
      std::string ignoredName, ignoredError;
      if (readRankSize(env, l, found, rank, size, ignoredName, ignoredError) &&
          found && rank == launch.rank && size == launch.size)
        localVar = firstSet(env, l.localRanks, text);
    }
  }
  launch.localRank = launch.rank;
  if (localVar) {
    if (!parseCount(localVar, text, launch.localRank, error))
      return false;
    launch.localRankVariable = localVar;
    if (launch.localRank >= launch.size) {
      error = std::string(localVar) + "=" + text +
              " is not below the world size " + std::to_string(launch.size) +
              (chosen ? " (" + sizeName + ")" : std::string());
      return false;
    }
  }

  // The launcher's ranks per node, where it says so, bound the local rank.
  std::string localSizeText;
  const char *localSizeVar =
      chosen ? firstSet(env, chosen->localSizes, localSizeText) : nullptr;
  if (localSizeVar) {
    int localSize = 0;
    if (!parseCount(localSizeVar, localSizeText, localSize, error))
      return false;
    if (localSize < 1 || localSize > launch.size) {
      error = std::string(localSizeVar) + "=" + localSizeText +
              " is not in [1, " + sizeName + "=" + std::to_string(launch.size) +
              "]";
      return false;
    }
    if (localVar && launch.localRank >= localSize) {
      error = std::string(localVar) + "=" + text + " is not below " +
              localSizeVar + "=" + localSizeText;
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Rendezvous settings and the file's name
//===----------------------------------------------------------------------===//
// Id exchange
//===----------------------------------------------------------------------===//

/// A TCP port in [1, 65535] written in decimal.
static bool parsePort(const std::string &text, int &port) {
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  port = std::atoi(text.c_str());
  return port >= 1 && port <= 65535;
}

/// `value` as an error message may quote it: at most 64 characters, control
/// characters and bytes above 0x7e as \xNN (a variable may hold anything).
static std::string printable(const std::string &value) {
  std::string out;
  for (size_t i = 0; i < value.size() && i < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > 64)
    out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

/// "host:port" or "[v6]:port", as NCCL_COMM_ID takes it; else the reason.
/// A host is a name or an IPv4 address (letters, digits, '.', '-', '_', at
/// most 253 characters) or a bracketed IPv6 address (hex digits, ':', '.',
/// a '%' zone; one inet_pton takes; at most 64 characters inside the
/// brackets).
static std::string checkAddress(const std::string &value) {
  size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return "is not host:port";
  std::string host = value.substr(0, colon);
  if (host.find(':') != std::string::npos &&
      !(host.front() == '[' && host.back() == ']'))
    return "has an IPv6 address without brackets ([addr]:port)";
  auto isIn = [](const std::string &text, const char *extra) {
    return std::all_of(text.begin(), text.end(), [&](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
             (c >= 'A' && c <= 'Z') || std::strchr(extra, c);
    });
  };
  if (host.front() == '[') {
    std::string inner = host.substr(1, host.size() - 2);
    std::string address = inner.substr(0, inner.find('%')); // no zone
    in6_addr parsed;
    if (inner.size() > 64 || !isIn(inner, ":.%") ||
        inet_pton(AF_INET6, address.c_str(), &parsed) != 1)
      return "has no IPv6 address inside its brackets";
  } else if (host.size() > 253 || !isIn(host, ".-_")) {
    return "has no host name or address (letters, digits, '.', '-', '_', "
           "at most 253 characters)";
  }
  int port = 0;
  if (!parsePort(value.substr(colon + 1), port))
    return "has no port in 1..65535";
  return "";
}

bool overlap::bootstrap::chooseIdExchange(const Env &env, IdExchange &exchange,
                                          std::string &error) {
  exchange = IdExchange();
  for (const char *name : {"OVERLAP_COMM_ID", "NCCL_COMM_ID"}) {
    std::optional<std::string> value = lookup(env, name);
    if (!value)
      continue;
    std::string why = checkAddress(*value);
    if (!why.empty()) {
      error = std::string(name) + "='" + printable(*value) + "' " + why;
      return false;
    }
    exchange.kind = IdExchange::Kind::CommId;
    exchange.commId = *value;
    exchange.source = name;
    return true;
  }
  std::optional<std::string> addr = lookup(env, "MASTER_ADDR"),
                             port = lookup(env, "MASTER_PORT");
  if (addr && port) {
    int p = 0;
    if (!parsePort(*port, p) || p == 65535) {
      error = "MASTER_PORT='" + printable(*port) +
              "' is not a port in 1..65534 (the id is served on the next "
              "port; set OVERLAP_COMM_ID=host:port to choose another)";
      return false;
    }
    std::string host = *addr;
    if (host.find(':') != std::string::npos && host.front() != '[')
      host = "[" + host + "]";
    exchange.kind = IdExchange::Kind::CommId;
    exchange.commId = host + ":" + std::to_string(p + 1);
    exchange.source = "MASTER_ADDR and MASTER_PORT + 1";
    std::string why = checkAddress(exchange.commId);
    if (!why.empty()) {
      error = "MASTER_ADDR='" + printable(*addr) + "' " + why;
      return false;
    }
    return true;
  }
  return true;
}

//===----------------------------------------------------------------------===//

static uint64_t fnv1a(const void *data, size_t bytes,
                      uint64_t hash = 0xcbf29ce484222325ull) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

static std::string hex(uint64_t value, int digits) {
  static const char table[] = "0123456789abcdef";
  std::string out(size_t(digits), '0');
  for (int i = digits - 1; i >= 0; --i, value >>= 4)
    out[size_t(i)] = table[value & 15];
  return out;
}

/// A job key from launcher `l`'s job id variables; "" if none is set.
static std::string keyFrom(const Env &env, const LauncherVars &l) {
  for (const std::vector<const char *> &alternative : l.jobKeys) {
    if (!lookup(env, alternative.front()))
      continue;
    std::string key;
    for (const char *name : alternative)
      if (std::optional<std::string> v = lookup(env, name))
        key += (key.empty() ? "" : ";") + std::string(name) + "=" + *v;
    return key;
  }
  return "";
}

bool overlap::bootstrap::bootstrapTimeoutMs(const Env &env, int64_t &ms,
                                            std::string &error) {
  ms = 60000;
  std::optional<std::string> t = lookup(env, "OVERLAP_BOOTSTRAP_TIMEOUT_MS");
  if (!t)
    return true;
  int value = 0;
  if (!parseCount("OVERLAP_BOOTSTRAP_TIMEOUT_MS", *t, value, error))
    return false;
  if (value == 0) {
    error = "OVERLAP_BOOTSTRAP_TIMEOUT_MS must be positive, got 0";
    return false;
  }
  ms = value;
  return true;
}

bool overlap::bootstrap::rendezvousConfig(const Env &env, const Launch &launch,
                                          RendezvousConfig &config,
                                          std::string &error) {
  config = RendezvousConfig();
  if (std::optional<std::string> dir = lookup(env, "OVERLAP_BOOTSTRAP_DIR")) {
    config.directory = *dir;
    config.privateDirectory = false;
  }
  if (!bootstrapTimeoutMs(env, config.timeoutMs, error))
    return false;
  if (std::optional<std::string> key = lookup(env, "OVERLAP_BOOTSTRAP_KEY")) {
    config.key = *key;
    return true;
  }
  // The launcher that gave the rank knows the job best; then any other (an
  // mpirun whose ranks carry no job id may still run in a Slurm step).
  std::vector<const LauncherVars *> order;
  for (const LauncherVars &l : launchers())
    if (l.name == launch.launcher)
      order.push_back(&l);
  for (const LauncherVars &l : launchers())
    if (l.name != launch.launcher)
      order.push_back(&l);
  std::vector<const char *> looked;
  for (const LauncherVars *l : order) {
    config.key = keyFrom(env, *l);
    if (!config.key.empty())
      return true;
    for (const std::vector<const char *> &alternative : l->jobKeys)
      if (std::find_if(looked.begin(), looked.end(), [&](const char *name) {
            return std::strcmp(name, alternative.front()) == 0;
          }) == looked.end())
        looked.push_back(alternative.front());
  }
  error = "no job key to name the rendezvous file: set "
          "OVERLAP_BOOTSTRAP_KEY to a string that is the same on every rank "
          "and unique to this job (none of " +
          joinNames(looked, ", ") + " is set)";
  return false;
}

std::string overlap::bootstrap::rendezvousPath(const std::string &directory,
                                               const std::string &key) {
  std::string safe;
  for (char c : key) {
    if (safe.size() == 40)
      break;
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    safe += plain ? c : '_';
  }
  std::string dir = directory.empty() ? "." : directory;
  if (dir.back() != '/')
    dir += '/';
  return dir + "overlap-bootstrap-" + safe + "-" +
         hex(fnv1a(key.data(), key.size()), 16);
}

//===----------------------------------------------------------------------===//
// Records
//===----------------------------------------------------------------------===//

namespace {

constexpr char kMagic[8] = {'O', 'V', 'L', 'P', 'B', 'O', 'O', 'T'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 56;
constexpr size_t kChecksumOffset = 48;
/// More than any id or error text; a larger file is not ours.
constexpr size_t kMaxFileBytes = size_t(1) << 20;

void put32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out += char((v >> (8 * i)) & 0xff);
}
void put64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out += char((v >> (8 * i)) & 0xff);
}
uint64_t get(const std::string &in, size_t offset, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(static_cast<unsigned char>(in[offset + size_t(i)]))
         << (8 * i);
  return v;
}

} // namespace

std::string overlap::bootstrap::encodeRecord(const Record &record) {
  // Layout (little-endian): magic[8], version, kind, world size, pid,
  // created ms (64), key bytes, host bytes, payload bytes, reserved,
  // checksum (64) over the whole file with this field zero; then key, host,
  // payload.
  std::string out(kMagic, sizeof(kMagic));
  put32(out, kVersion);
  put32(out, record.failed ? 1 : 0);
  put32(out, record.worldSize);
  put32(out, record.pid);
  put64(out, uint64_t(record.createdMs));
  put32(out, uint32_t(record.key.size()));
  put32(out, uint32_t(record.host.size()));
  put32(out, uint32_t(record.payload.size()));
  put32(out, 0);
  put64(out, 0);
  out += record.key;
  out += record.host;
  out += record.payload;
  uint64_t sum = fnv1a(out.data(), out.size());
  for (int i = 0; i < 8; ++i)
    out[kChecksumOffset + size_t(i)] = char((sum >> (8 * i)) & 0xff);
  return out;
}

bool overlap::bootstrap::decodeRecord(const std::string &bytes, Record &record,
                                      std::string &why) {
  if (bytes.size() < kHeaderBytes) {
    why = "truncated: " + std::to_string(bytes.size()) +
          " bytes, shorter than the header";
    return false;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    why = "not a rendezvous file (bad magic)";
    return false;
  }
  if (uint32_t version = uint32_t(get(bytes, 8, 4)); version != kVersion) {
    why = "format version " + std::to_string(version) + ", expected " +
          std::to_string(kVersion);
    return false;
  }
  uint64_t keyBytes = get(bytes, 32, 4), hostBytes = get(bytes, 36, 4),
           payloadBytes = get(bytes, 40, 4);
  uint64_t expected = kHeaderBytes + keyBytes + hostBytes + payloadBytes;
  if (bytes.size() != expected) {
    why = (bytes.size() < expected ? "truncated: " : "oversized: ") +
          std::to_string(bytes.size()) + " bytes, the header says " +
          std::to_string(expected);
    return false;
  }
  std::string zeroed = bytes;
  std::memset(&zeroed[kChecksumOffset], 0, 8);
  if (fnv1a(zeroed.data(), zeroed.size()) != get(bytes, kChecksumOffset, 8)) {
    why = "checksum mismatch (a corrupt file)";
    return false;
  }
  uint32_t kind = uint32_t(get(bytes, 12, 4));
  if (kind > 1) {
    why = "unknown record kind " + std::to_string(kind);
    return false;
  }
  record.failed = kind == 1;
  record.worldSize = uint32_t(get(bytes, 16, 4));
  record.pid = uint32_t(get(bytes, 20, 4));
  record.createdMs = int64_t(get(bytes, 24, 8));
  record.key = bytes.substr(kHeaderBytes, keyBytes);
  record.host = bytes.substr(kHeaderBytes + keyBytes, hostBytes);
  record.payload = bytes.substr(kHeaderBytes + keyBytes + hostBytes);
  return true;
}

int64_t overlap::bootstrap::wallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

//===----------------------------------------------------------------------===//
// The exchange
//===----------------------------------------------------------------------===//

static std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "?";
  return name;
}

static std::string errnoText(int error) { return std::strerror(error); }

Rendezvous::Rendezvous(RendezvousConfig config, int rank, int size)
    : config_(std::move(config)), rank_(rank), size_(size),
      path_(rendezvousPath(config_.directory, config_.key)) {}

bool Rendezvous::clear(std::string &error) {
  if (config_.privateDirectory &&
      !ensurePrivateDirectory(config_.directory, /*create=*/true, error)) {
    error = "rank 0: " + error;
    return false;
  }
  if (::unlink(path_.c_str()) == 0 || errno == ENOENT)
    return true;
  error = "rank 0 cannot remove the rendezvous file " + path_ +
          " left by an earlier job: " + errnoText(errno) +
          " (another user's? choose another OVERLAP_BOOTSTRAP_DIR or "
          "OVERLAP_BOOTSTRAP_KEY)";
  return false;
}

bool Rendezvous::write(const Record &record, std::string &error) {
  if (config_.privateDirectory &&
      !ensurePrivateDirectory(config_.directory, /*create=*/true, error)) {
    error = "rank 0: " + error;
    return false;
  }
  std::string data = encodeRecord(record);
  std::string temp = path_ + ".tmp." + std::to_string(record.pid) + "." +
                     hex(fnv1a(record.host.data(), record.host.size()), 8);
  auto failed = [&](const char *what, int fd, int code) {
    if (fd >= 0)
      ::close(fd);
    ::unlink(temp.c_str());
    error = "rank 0 cannot write the rendezvous file " + path_ + " (" + what +
            " " + temp + "): " + errnoText(code);
    return false;
  };
  // A file of this name that is not new (a crashed writer's, or another
  // user's in a shared directory, planted to read what is written) is
  // never written into: removed first, then created exclusively.
  ::unlink(temp.c_str());
  int fd = ::open(temp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return failed("open", -1, errno);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return failed("write", fd, n < 0 ? errno : EIO);
    done += size_t(n);
  }
  // Durable before it becomes visible under the final name (a shared file
  // system may otherwise show the name before the bytes).
  if (::fsync(fd) != 0)
    return failed("fsync", fd, errno);
  if (::close(fd) != 0)
    return failed("close", -1, errno);
  if (::rename(temp.c_str(), path_.c_str()) != 0)
    return failed("rename", -1, errno);
  published_ = std::move(data);
  return true;
}

bool Rendezvous::publish(const void *bytes, size_t count, std::string &error) {
  Record record;
  record.worldSize = uint32_t(size_);
  record.key = config_.key;
  record.payload.assign(static_cast<const char *>(bytes), count);
  record.createdMs = wallClockMs();
  record.pid = uint32_t(::getpid());
  record.host = hostName();
  return write(record, error);
}

bool Rendezvous::publishFailure(const std::string &why, std::string &error) {
  Record record;
  record.failed = true;
  record.worldSize = uint32_t(size_);
  record.key = config_.key;
  record.payload = why.substr(0, 4096);
  record.createdMs = wallClockMs();
  record.pid = uint32_t(::getpid());
  record.host = hostName();
  return write(record, error);
}

namespace {
enum class Read { Missing, Rejected, Ok };

/// Reads the file at `path`; `why` says what was wrong with it.
Read readFile(const std::string &path, std::string &bytes, std::string &why) {
  // O_NONBLOCK: a FIFO at the path (any local user can make one in a
  // shared directory) would block open() for ever, past the bootstrap
  // timeout; fstat then refuses anything but a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT)
      return Read::Missing;
    why = "cannot open it: " + errnoText(errno);
    return Read::Rejected;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why = "cannot stat it: " + errnoText(errno);
    ::close(fd);
    return Read::Rejected;
  }
  if (st.st_uid != ::geteuid()) {
    why = "it belongs to uid " + std::to_string(st.st_uid) +
          ", not to this user (uid " + std::to_string(::geteuid()) + ")";
    ::close(fd);
    return Read::Rejected;
  }
  if (!S_ISREG(st.st_mode) || size_t(st.st_size) > kMaxFileBytes) {
    why = "not a regular file of at most " + std::to_string(kMaxFileBytes) +
          " bytes";
    ::close(fd);
    return Read::Rejected;
  }
  bytes.clear();
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      why = "cannot read it: " + errnoText(errno);
      ::close(fd);
      return Read::Rejected;
    }
    if (n == 0)
      break;
    bytes.append(buffer, size_t(n));
    if (bytes.size() > kMaxFileBytes)
      break;
  }
  ::close(fd);
  return Read::Ok;
}
} // namespace

bool Rendezvous::await(void *bytes, size_t count, std::string &error,
                       bool *timedOut) {
  using Clock = std::chrono::steady_clock;
  if (timedOut)
    *timedOut = false;
  const std::string who =
      "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  const int64_t beganMs = wallClockMs();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(config_.timeoutMs);
  auto sleep = std::chrono::milliseconds(1);
  std::string rejected; // why the file there was ignored, at the last look
  for (;;) {
    std::string data, why;
    // The default directory, once there, must be private: another user's
    // (or an open) one fails at once, not at the timeout.
    struct stat dir;
    if (config_.privateDirectory &&
        ::lstat(config_.directory.c_str(), &dir) == 0 &&
        !ensurePrivateDirectory(config_.directory, /*create=*/false, why)) {
      error = who + ": " + why;
      return false;
    }
    Read read = readFile(path_, data, why);
    rejected.clear();
    Record record;
    if (read == Read::Rejected) {
      rejected = why;
    } else if (read == Read::Ok && !decodeRecord(data, record, why)) {
      rejected = why;
    } else if (read == Read::Ok) {
      std::string writer =
          "pid " + std::to_string(record.pid) + " on " + record.host;
      int64_t ageMs = beganMs - record.createdMs;
      if (record.key != config_.key) {
        rejected = "it was written by " + writer + " for the job key '" +
                   record.key + "', not '" + config_.key + "'";
      } else if (record.worldSize != uint32_t(size_)) {
        rejected = "it was written by " + writer + " for a world of " +
                   std::to_string(record.worldSize) + " ranks, not " +
                   std::to_string(size_) + " (left by an earlier job?)";
      } else if (record.failed && ageMs <= 0) {
        error = who + ": rank 0 failed (" + writer + ", reported in " + path_ +
                "): " + record.payload;
        return false;
      } else if (record.failed) {
        rejected = "it reports a failure of rank 0 (" + writer + ") written " +
                   std::to_string(ageMs) +
                   " ms before this rank began waiting, ignored as possibly "
                   "left by an earlier job: " +
                   record.payload;
      } else if (record.payload.size() != count) {
        rejected = "it was written by " + writer + " with " +
                   std::to_string(record.payload.size()) + " id bytes, not " +
                   std::to_string(count);
      } else if (ageMs > config_.timeoutMs) {
        rejected = "it was written by " + writer + " " + std::to_string(ageMs) +
                   " ms before this rank began waiting, longer ago than the "
                   "timeout (left by an earlier job?)";
      } else {
        std::memcpy(bytes, record.payload.data(), count);
        return true;
      }
    }
    auto now = Clock::now();
    if (now >= deadline) {
      auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - start)
              .count();
      error = who + ": waited " + std::to_string(waited) +
              " ms for rank 0's rendezvous file " + path_ + ": ";
      if (rejected.empty())
        error += "it never appeared (is rank 0 running, with the same "
                 "OVERLAP_BOOTSTRAP_DIR and job key? raise "
                 "OVERLAP_BOOTSTRAP_TIMEOUT_MS if it starts late)";
      else
        error += "the file there was ignored: " + rejected;
      if (timedOut)
        *timedOut = true;
      return false;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    std::this_thread::sleep_for(
        std::max(std::chrono::milliseconds(1), std::min(sleep, left)));
    sleep = std::min(sleep * 2, std::chrono::milliseconds(20));
  }
}

void Rendezvous::withdraw() {
  if (published_.empty())
    return;
  std::string published = std::move(published_);
  published_.clear();
  // Only our own record (its time and pid make it unique): a later job with
  // the same key may have replaced it, possibly reusing the inode.
  std::string bytes, why;
  if (readFile(path_, bytes, why) == Read::Ok && bytes == published)
    ::unlink(path_.c_str());
}
