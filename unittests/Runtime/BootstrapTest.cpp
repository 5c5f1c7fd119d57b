//===- BootstrapTest.cpp - Launch detection and id rendezvous ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The MPI-free bootstrap of overlap_cuda_context_create_launched, without a
// GPU: launch detection from each launcher's variables (an Env map, never
// the process environment), the errors for malformed and inconsistent
// values, job keys, the record format, and the rendezvous between processes
// made with fork(): rank 0 late and early, stale and partial files from an
// earlier job, rank 0's failure, and the timeout's message.
//
//===----------------------------------------------------------------------===//

#include "overlap/Runtime/Bootstrap.h"

#include "TempDir.h"
#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace overlap::bootstrap;

namespace {

using overlap::testing::TempDir;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Environment variables, written as a shell line sets them:
/// "RANK=1 WORLD_SIZE=2" (a value may be empty but holds no space).
struct Vars : std::map<std::string, std::string> {
  using map::map;
  Vars() = default;
  Vars(const char *line) {
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      size_t equals = word.find('=');
      EXPECT_NE(equals, std::string::npos) << word;
      (*this)[word.substr(0, equals)] = word.substr(equals + 1);
    }
  }
};

Launch detect(Vars vars) {
  Launch launch;
  std::string error;
  EXPECT_TRUE(detectLaunch(mapEnv(std::move(vars)), launch, error)) << error;
  return launch;
}

/// The error of a detection that must fail.
std::string detectError(Vars vars) {
  Launch launch;
  std::string error;
  EXPECT_FALSE(detectLaunch(mapEnv(std::move(vars)), launch, error))
      << "detected " << launch.describe();
  return error;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// An id no test writes twice: nonzero, different per `seed`.
std::string makeId(int seed) {
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = char((seed * 131 + int(i) * 37 + 11) & 0xff);
  return id;
}

const char *const kKey = "test-job";

RendezvousConfig config(const TempDir &dir, int64_t timeoutMs,
                        const std::string &key = kKey) {
  RendezvousConfig c;
  c.directory = dir.path(); // as OVERLAP_BOOTSTRAP_DIR gives it
  c.privateDirectory = false;
  c.key = key;
  c.timeoutMs = timeoutMs;
  return c;
}

void writeFile(const std::string &path, const std::string &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path << ": " << std::strerror(errno);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// A forked process running one rank; its result comes back through a pipe.
struct Child {
  pid_t pid = -1;
  int fd = -1;
};

Child startChild(const std::function<std::string()> &body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out = body();
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0)
        break;
      done += size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  EXPECT_GT(pid, 0);
  return {pid, fds[0]};
}

/// Waits for the child and returns what it wrote.
std::string finish(Child child) {
  std::string out;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(child.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buffer, size_t(n));
  }
  close(child.fd);
  int status = 0;
  waitpid(child.pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "child died (status " + std::to_string(status) + "): " + out;
  return out;
}

/// Rank `rank` of `size` waiting for the id: "id:<bytes>", or
/// "timeout:<error>" / "error:<error>", then "|<ms waited>".
std::function<std::string()> waiter(RendezvousConfig c, int rank, int size) {
  return [c, rank, size] {
    auto start = std::chrono::steady_clock::now();
    Rendezvous rendezvous(c, rank, size);
    std::string id(128, '\0'), error;
    bool timedOut = false;
    bool ok = rendezvous.await(&id[0], id.size(), error, &timedOut);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    std::string head =
        ok ? "id:" + id : (timedOut ? "timeout:" : "error:") + error;
    return head + "|" + std::to_string(ms);
  };
}

std::string body(const std::string &result) {
  return result.substr(0, result.rfind('|'));
}
long long waitedMs(const std::string &result) {
  return std::atoll(result.substr(result.rfind('|') + 1).c_str());
}

/// Rank 0: clears, publishes `id`.
void publish(const RendezvousConfig &c, int size, const std::string &id,
             Rendezvous *keep = nullptr) {
  Rendezvous local(c, 0, size);
  Rendezvous &r = keep ? *keep : local;
  std::string error;
  ASSERT_TRUE(r.clear(error)) << error;
  ASSERT_TRUE(r.publish(id.data(), id.size(), error)) << error;
}

//===----------------------------------------------------------------------===//
// Detection
//===----------------------------------------------------------------------===//

/// Detection of `vars` must find `want`, every field of it.
void expectLaunch(Vars vars, const Launch &want) {
  SCOPED_TRACE("expected " + want.describe());
  Launch l = detect(std::move(vars));
  EXPECT_EQ(l.rank, want.rank);
  EXPECT_EQ(l.size, want.size);
  EXPECT_EQ(l.localRank, want.localRank);
  EXPECT_EQ(l.launcher, want.launcher);
  EXPECT_EQ(l.localRankVariable, want.localRankVariable);
}

/// Detection of `vars` must fail with an error that contains `part`.
void expectDetectError(Vars vars, const std::string &part) {
  std::string error = detectError(std::move(vars));
  EXPECT_TRUE(contains(error, part)) << error;
}

TEST(BootstrapDetect, NothingSetIsOneRank) {
  expectLaunch({}, {0, 1, 0, "", ""});
  EXPECT_EQ(detect({}).describe(), "rank 0 of 1 (no launcher)");
}

TEST(BootstrapDetect, OpenMpi) {
  Vars vars = "OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=8 "
              "OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=4";
  expectLaunch(vars, {5, 8, 1, "Open MPI", "OMPI_COMM_WORLD_LOCAL_RANK"});
  EXPECT_EQ(detect(vars).describe(), "rank 5 of 8 (Open MPI)");
}

TEST(BootstrapDetect, MpichHydraAndIntelMpi) {
  expectLaunch("PMI_RANK=3 PMI_SIZE=4 MPI_LOCALRANKID=3 MPI_LOCALNRANKS=4",
               {3, 4, 3, "MPICH/Intel MPI (PMI)", "MPI_LOCALRANKID"});
  // Cray PALS names the local rank PMI_LOCAL_RANK.
  expectLaunch("PMI_RANK=6 PMI_SIZE=8 PMI_LOCAL_RANK=2",
               {6, 8, 2, "MPICH/Intel MPI (PMI)", "PMI_LOCAL_RANK"});
}

TEST(BootstrapDetect, Mvapich) {
  expectLaunch(
      "MV2_COMM_WORLD_RANK=2 MV2_COMM_WORLD_SIZE=3 MV2_COMM_WORLD_LOCAL_RANK=0",
      {2, 3, 0, "MVAPICH", "MV2_COMM_WORLD_LOCAL_RANK"});
}

TEST(BootstrapDetect, SlurmStep) {
  expectLaunch("SLURM_PROCID=7 SLURM_NTASKS=16 SLURM_LOCALID=3 SLURM_STEP_ID=0 "
               "SLURM_JOB_ID=4242",
               {7, 16, 3, "Slurm", "SLURM_LOCALID"});
  // The step's task count wins over the allocation's.
  expectLaunch(
      "SLURM_PROCID=1 SLURM_NTASKS=16 SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=1",
      {1, 2, 1, "Slurm", "SLURM_LOCALID"});
}

TEST(BootstrapDetect, SlurmBatchShellIsNotALaunch) {
  // A batch script's own shell has SLURM_PROCID=0 and the allocation's
  // SLURM_NTASKS but no step: a program run there directly is one rank.
  expectLaunch(
      "SLURM_PROCID=0 SLURM_NTASKS=8 SLURM_LOCALID=0 SLURM_JOB_ID=4242",
      {0, 1, 0, "", ""});
}

TEST(BootstrapDetect, Torchrun) {
  expectLaunch("RANK=9 WORLD_SIZE=16 LOCAL_RANK=1 LOCAL_WORLD_SIZE=8",
               {9, 16, 1, "torchrun", "LOCAL_RANK"});
}

TEST(BootstrapDetect, OwnVariablesWin) {
  expectLaunch("OVERLAP_RANK=1 OVERLAP_WORLD_SIZE=2 OVERLAP_LOCAL_RANK=0 "
               "OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=8 "
               "OMPI_COMM_WORLD_LOCAL_RANK=5",
               {1, 2, 0, "OVERLAP_RANK", "OVERLAP_LOCAL_RANK"});
  // OVERLAP_LOCAL_RANK alone only moves the local rank (the device).
  expectLaunch("OVERLAP_LOCAL_RANK=2 OMPI_COMM_WORLD_RANK=5 "
               "OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=1",
               {5, 8, 2, "Open MPI", "OVERLAP_LOCAL_RANK"});
}

TEST(BootstrapDetect, MpiLauncherInsideSlurmAllocationWins) {
  // mpirun inside sbatch: the ranks inherit the batch step's Slurm view.
  expectLaunch("OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 "
               "OMPI_COMM_WORLD_LOCAL_RANK=3 SLURM_PROCID=0 SLURM_NTASKS=32 "
               "SLURM_STEP_ID=1 SLURM_LOCALID=0",
               {3, 4, 3, "Open MPI", "OMPI_COMM_WORLD_LOCAL_RANK"});
}

TEST(BootstrapDetect, TorchrunUnderSrunWins) {
  // srun starts one torchrun per node: SLURM_PROCID is the node's index.
  expectLaunch("RANK=13 WORLD_SIZE=16 LOCAL_RANK=5 SLURM_PROCID=1 "
               "SLURM_NTASKS=2 SLURM_STEP_ID=0 SLURM_LOCALID=0",
               {13, 16, 5, "torchrun", "LOCAL_RANK"});
}

TEST(BootstrapDetect, LocalRankFromAnAgreeingLauncher) {
  // srun --mpi=pmi2: PMI_RANK / PMI_SIZE, but only Slurm's local id.
  Vars vars = "PMI_RANK=5 PMI_SIZE=8 SLURM_PROCID=5 SLURM_NTASKS=8 "
              "SLURM_STEP_ID=0 SLURM_LOCALID=1";
  expectLaunch(vars, {5, 8, 1, "MPICH/Intel MPI (PMI)", "SLURM_LOCALID"});
  // A launcher that disagrees on the rank is not asked.
  vars["SLURM_PROCID"] = "0";
  expectLaunch(vars, {5, 8, 5, "MPICH/Intel MPI (PMI)", ""});
}

TEST(BootstrapDetect, LocalRankDefaultsToRank) {
  expectLaunch("OVERLAP_RANK=3 OVERLAP_WORLD_SIZE=4",
               {3, 4, 3, "OVERLAP_RANK", ""});
}

TEST(BootstrapDetect, EmptyValuesAreUnset) {
  expectLaunch("OMPI_COMM_WORLD_RANK= OMPI_COMM_WORLD_SIZE= RANK=1 "
               "WORLD_SIZE=2 LOCAL_RANK=",
               {1, 2, 1, "torchrun", ""});
}

TEST(BootstrapDetect, MalformedValuesNameTheVariable) {
  for (const char *bad :
       {"abc", "-1", "+1", "1.5", " 2", "2 ", "0x10", "99999999999"})
    expectDetectError(
        {{"OMPI_COMM_WORLD_RANK", bad}, {"OMPI_COMM_WORLD_SIZE", "4"}},
        "OMPI_COMM_WORLD_RANK='" + std::string(bad) +
            "' is not a non-negative integer");
  expectDetectError("SLURM_PROCID=0 SLURM_NTASKS=four SLURM_STEP_ID=0",
                    "SLURM_NTASKS='four'");
  expectDetectError("PMI_RANK=1 PMI_SIZE=4 MPI_LOCALRANKID=x",
                    "MPI_LOCALRANKID='x'");
  expectDetectError("OVERLAP_LOCAL_RANK=-3", "OVERLAP_LOCAL_RANK='-3'");
  expectDetectError("LOCAL_WORLD_SIZE=eight RANK=0 WORLD_SIZE=8",
                    "LOCAL_WORLD_SIZE='eight'");
}

TEST(BootstrapDetect, InconsistentValuesAreErrors) {
  expectDetectError("OMPI_COMM_WORLD_RANK=1",
                    "OMPI_COMM_WORLD_RANK=1 is set but OMPI_COMM_WORLD_SIZE");
  expectDetectError("WORLD_SIZE=4", "WORLD_SIZE=4 is set but RANK is not");
  expectDetectError("SLURM_PROCID=0 SLURM_STEP_ID=3",
                    "SLURM_STEP_NUM_TASKS or SLURM_NTASKS");
  expectDetectError("OVERLAP_RANK=0 OVERLAP_WORLD_SIZE=0",
                    "OVERLAP_WORLD_SIZE=0");
  expectDetectError("PMI_RANK=4 PMI_SIZE=4",
                    "PMI_RANK=4 is not below PMI_SIZE=4");
  expectDetectError("RANK=1 WORLD_SIZE=4 LOCAL_RANK=4",
                    "LOCAL_RANK=4 is not below the world size 4");
  expectDetectError("OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=8 "
                    "OMPI_COMM_WORLD_LOCAL_RANK=2 OMPI_COMM_WORLD_LOCAL_SIZE=2",
                    "OMPI_COMM_WORLD_LOCAL_RANK=2 is not below "
                    "OMPI_COMM_WORLD_LOCAL_SIZE=2");
  expectDetectError("RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=5",
                    "LOCAL_WORLD_SIZE=5 is not in [1, WORLD_SIZE=4]");
  expectDetectError("OVERLAP_LOCAL_RANK=1",
                    "OVERLAP_LOCAL_RANK=1 is not below the world size 1");
  // A malformed variable of a higher-precedence launcher is not skipped.
  expectDetectError(
      "RANK=zero WORLD_SIZE=2 SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_ID=0",
      "RANK='zero'");
}

//===----------------------------------------------------------------------===//
// Rendezvous settings
//===----------------------------------------------------------------------===//

RendezvousConfig configFrom(Vars vars) {
  Env env = mapEnv(std::move(vars));
  Launch launch;
  std::string error;
  EXPECT_TRUE(detectLaunch(env, launch, error)) << error;
  RendezvousConfig c;
  EXPECT_TRUE(rendezvousConfig(env, launch, c, error)) << error;
  return c;
}

TEST(BootstrapConfig, Defaults) {
  RendezvousConfig c = configFrom("OVERLAP_BOOTSTRAP_KEY=k");
  EXPECT_EQ(c.directory, "/tmp/overlap-" + std::to_string(::geteuid()));
  EXPECT_TRUE(c.privateDirectory);
  EXPECT_EQ(c.timeoutMs, 60000);
  EXPECT_EQ(c.key, "k");
  c = configFrom("OVERLAP_BOOTSTRAP_KEY=k OVERLAP_BOOTSTRAP_DIR=/shared/run "
                 "OVERLAP_BOOTSTRAP_TIMEOUT_MS=2500");
  EXPECT_FALSE(c.privateDirectory);
  EXPECT_EQ(c.directory, "/shared/run");
  EXPECT_EQ(c.timeoutMs, 2500);
}

TEST(BootstrapConfig, JobKeysFromLaunchers) {
  struct Case {
    Vars vars;
    const char *key;
  };
  const Case cases[] = {
      // The explicit key wins over any launcher's.
      {"OVERLAP_BOOTSTRAP_KEY=mine OMPI_COMM_WORLD_RANK=0 "
       "OMPI_COMM_WORLD_SIZE=2 PMIX_NAMESPACE=prterun-h-1@1",
       "mine"},
      {"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 "
       "PMIX_NAMESPACE=prterun-h-1@1 "
       "OMPI_MCA_orte_hnp_uri=123.0;tcp://1.2.3.4:5",
       "PMIX_NAMESPACE=prterun-h-1@1"},
      {"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 "
       "OMPI_MCA_orte_hnp_uri=123.0;tcp://1.2.3.4:5",
       "OMPI_MCA_orte_hnp_uri=123.0;tcp://1.2.3.4:5"},
      {"SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_ID=3 SLURM_JOB_ID=4242",
       "SLURM_JOB_ID=4242;SLURM_STEP_ID=3"},
      {"RANK=0 WORLD_SIZE=2 TORCHELASTIC_RUN_ID=run7 MASTER_ADDR=node1 "
       "MASTER_PORT=29500 TORCHELASTIC_RESTART_COUNT=1",
       "TORCHELASTIC_RUN_ID=run7;MASTER_ADDR=node1;MASTER_PORT=29500;"
       "TORCHELASTIC_RESTART_COUNT=1"},
      {"PMI_RANK=0 PMI_SIZE=2 PMI_JOBID=77.0", "PMI_JOBID=77.0"},
      // mpiexec (no job id of its own) inside an srun step: Slurm's ids.
      {"PMI_RANK=0 PMI_SIZE=2 SLURM_JOB_ID=4242 SLURM_STEP_ID=0",
       "SLURM_JOB_ID=4242;SLURM_STEP_ID=0"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(configFrom(c.vars).key, c.key);
}

TEST(BootstrapConfig, Errors) {
  Env env = mapEnv({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  Launch launch;
  std::string error;
  ASSERT_TRUE(detectLaunch(env, launch, error)) << error;
  RendezvousConfig c;
  EXPECT_FALSE(rendezvousConfig(env, launch, c, error));
  EXPECT_TRUE(contains(error, "set OVERLAP_BOOTSTRAP_KEY")) << error;
  EXPECT_TRUE(contains(error, "PMI_JOBID")) << error;
  EXPECT_TRUE(contains(error, "SLURM_JOB_ID")) << error;

  for (const char *bad : {"soon", "-5", "0"}) {
    env = mapEnv({{"OVERLAP_BOOTSTRAP_KEY", "k"},
                  {"OVERLAP_BOOTSTRAP_TIMEOUT_MS", bad}});
    EXPECT_FALSE(rendezvousConfig(env, launch, c, error)) << bad;
    EXPECT_TRUE(contains(error, "OVERLAP_BOOTSTRAP_TIMEOUT_MS")) << error;
  }
}

TEST(BootstrapConfig, PathNamesTheKeySafely) {
  std::string a = rendezvousPath("/tmp", "SLURM_JOB_ID=1;SLURM_STEP_ID=0");
  EXPECT_EQ(
      a.rfind("/tmp/overlap-bootstrap-SLURM_JOB_ID_1_SLURM_STEP_ID_0-", 0), 0u)
      << a;
  EXPECT_EQ(rendezvousPath("/tmp/", "k"), rendezvousPath("/tmp", "k"));
  // Keys that sanitize alike still get different files.
  EXPECT_NE(rendezvousPath("/tmp", "a/b"), rendezvousPath("/tmp", "a_b"));
  std::string longKey(500, 'x');
  std::string p = rendezvousPath("/d", longKey);
  EXPECT_LT(p.size(), 100u) << p;
  EXPECT_EQ(p.find('/', 3), std::string::npos) << p;
  EXPECT_EQ(rendezvousPath("/d", "../../etc/passwd").find("/..", 2),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Records
//===----------------------------------------------------------------------===//

TEST(BootstrapRecord, RoundTripAndDamage) {
  Record r{false, 8, "job", makeId(1), 1700000000123, 4321, "node7"};
  std::string bytes = encodeRecord(r);
  Record back;
  std::string why;
  ASSERT_TRUE(decodeRecord(bytes, back, why)) << why;
  EXPECT_FALSE(back.failed);
  EXPECT_EQ(back.worldSize, 8u);
  EXPECT_EQ(back.key, "job");
  EXPECT_EQ(back.payload, r.payload);
  EXPECT_EQ(back.createdMs, r.createdMs);
  EXPECT_EQ(back.pid, 4321u);
  EXPECT_EQ(back.host, "node7");

  r.failed = true;
  r.payload = "no device";
  ASSERT_TRUE(decodeRecord(encodeRecord(r), back, why)) << why;
  EXPECT_TRUE(back.failed);
  EXPECT_EQ(back.payload, "no device");

  EXPECT_FALSE(decodeRecord(bytes.substr(0, 20), back, why));
  EXPECT_TRUE(contains(why, "truncated")) << why;
  EXPECT_FALSE(decodeRecord(bytes.substr(0, bytes.size() - 1), back, why));
  EXPECT_TRUE(contains(why, "truncated")) << why;
  EXPECT_FALSE(decodeRecord(bytes + "x", back, why));
  EXPECT_TRUE(contains(why, "oversized")) << why;
  std::string flipped = bytes;
  flipped[bytes.size() - 5] ^= 1;
  EXPECT_FALSE(decodeRecord(flipped, back, why));
  EXPECT_TRUE(contains(why, "checksum")) << why;
  std::string alien = bytes;
  alien[0] = 'X';
  EXPECT_FALSE(decodeRecord(alien, back, why));
  EXPECT_TRUE(contains(why, "magic")) << why;
}

//===----------------------------------------------------------------------===//
// Exchange between processes
//===----------------------------------------------------------------------===//

/// Ranks 1 to size - 1 waiting for the id, each in its own process.
std::vector<Child> startWaiters(const RendezvousConfig &c, int size) {
  std::vector<Child> children;
  for (int rank = 1; rank < size; ++rank)
    children.push_back(startChild(waiter(c, rank, size)));
  return children;
}

/// What each waiter returned, in rank order.
std::vector<std::string> finishAll(const std::vector<Child> &children) {
  std::vector<std::string> results;
  for (Child child : children)
    results.push_back(finish(child));
  return results;
}

/// An earlier job left `leftover` at the rendezvous path; ranks 1 to
/// size - 1 start waiting and 200 ms later rank 0 publishes a new id, which
/// every one of them must get.
void expectLeftoverIgnored(const std::string &leftover, int64_t timeoutMs,
                           int size, int seed) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, timeoutMs);
  writeFile(rendezvousPath(c.directory, c.key), leftover);
  std::vector<Child> children = startWaiters(c, size);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string id = makeId(seed);
  publish(c, size, id);
  for (const std::string &result : finishAll(children))
    EXPECT_EQ(body(result), "id:" + id) << result;
}

TEST(BootstrapExchange, RankZeroLate) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 10000);
  std::vector<Child> children = startWaiters(c, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string id = makeId(2);
  Rendezvous zero(c, 0, 4);
  publish(c, 4, id, &zero);
  for (const std::string &result : finishAll(children)) {
    EXPECT_EQ(body(result), "id:" + id) << result;
    EXPECT_GE(waitedMs(result), 100) << "a waiter did not wait for rank 0";
  }
  // Every rank has the id: rank 0 removes the file; no temporary is left.
  EXPECT_TRUE(exists(zero.path()));
  zero.withdraw();
  EXPECT_FALSE(exists(zero.path()));
  EXPECT_TRUE(dir.files().empty());
}

TEST(BootstrapExchange, RankZeroEarly) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 10000);
  std::string id = makeId(3);
  publish(c, 3, id);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (const std::string &result : finishAll(startWaiters(c, 3))) {
    EXPECT_EQ(body(result), "id:" + id) << result;
    EXPECT_LT(waitedMs(result), 5000);
  }
}

TEST(BootstrapExchange, RanksInDifferentJobsDoNotMeet) {
  TempDir dir("overlap-bootstrap-test");
  std::string id = makeId(4);
  publish(config(dir, 10000, "job-a"), 2, id);
  std::string result =
      finish(startChild(waiter(config(dir, 300, "job-b"), 1, 2)));
  EXPECT_TRUE(contains(body(result), "timeout:")) << result;
  EXPECT_TRUE(contains(body(result), "never appeared")) << result;
}

// The leftover records below are {failed, worldSize, key, payload,
// createdMs, pid, host}.

TEST(BootstrapExchange, StaleFileOfAnotherWorldSizeIsIgnored) {
  expectLeftoverIgnored(
      encodeRecord({false, 8, kKey, makeId(5), wallClockMs(), 1, "earlier"}),
      10000, 4, 6);
}

TEST(BootstrapExchange, StaleFileOlderThanTheTimeoutIsIgnored) {
  expectLeftoverIgnored(encodeRecord({false, 2, kKey, makeId(7),
                                      wallClockMs() - 60000, 1, "earlier"}),
                        2000, 2, 8);
}

TEST(BootstrapExchange, StaleFileWithoutRankZeroTimesOutSayingWhy) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 300);
  std::string path = rendezvousPath(c.directory, c.key);
  writeFile(path, encodeRecord({false, 8, kKey, makeId(9), wallClockMs(), 99,
                                "earlier"}));
  std::string result = finish(startChild(waiter(c, 2, 4)));
  std::string text = body(result);
  EXPECT_EQ(text.rfind("timeout:", 0), 0u) << result;
  EXPECT_TRUE(contains(text, "rank 2 of 4")) << text;
  EXPECT_TRUE(contains(text, path)) << text;
  EXPECT_TRUE(contains(text, "ignored")) << text;
  EXPECT_TRUE(contains(text, "a world of 8 ranks, not 4")) << text;
  EXPECT_TRUE(contains(text, "pid 99 on earlier")) << text;
}

TEST(BootstrapExchange, PartialFileIsIgnoredUntilReplaced) {
  std::string bytes =
      encodeRecord({false, 2, kKey, makeId(10), wallClockMs(), 0, ""});
  expectLeftoverIgnored(bytes.substr(0, bytes.size() - 40), 10000, 2, 11);
}

TEST(BootstrapExchange, TimeoutNamesRankFileAndTimeWaited) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 400);
  std::vector<Child> children = startWaiters(c, 3);
  Rendezvous probe(c, 0, 3);
  std::vector<std::string> results = finishAll(children);
  for (int rank = 1; rank < 3; ++rank) {
    const std::string &result = results[size_t(rank - 1)];
    std::string text = body(result);
    EXPECT_EQ(text.rfind("timeout:", 0), 0u) << result;
    EXPECT_TRUE(contains(text, "rank " + std::to_string(rank) + " of 3"))
        << text;
    EXPECT_TRUE(contains(text, probe.path())) << text;
    EXPECT_TRUE(contains(text, "waited ")) << text;
    EXPECT_TRUE(contains(text, "never appeared")) << text;
    long long reported =
        std::atoll(text.substr(text.find("waited ") + 7).c_str());
    EXPECT_GE(reported, 400) << text;
    EXPECT_GE(waitedMs(result), 400);
    EXPECT_LT(waitedMs(result), 400 + 3000);
  }
}

TEST(BootstrapExchange, AFifoAtThePathDoesNotBlockPastTheTimeout) {
  // A FIFO at the rendezvous path blocked every non-zero rank in open()
  // for ever, ignoring the timeout.
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 400);
  Rendezvous probe(c, 0, 2);
  ASSERT_EQ(mkfifo(probe.path().c_str(), 0600), 0) << std::strerror(errno);
  std::string result = finish(startChild(waiter(c, 1, 2)));
  EXPECT_EQ(body(result).rfind("timeout:", 0), 0u) << result;
  EXPECT_TRUE(contains(body(result), "not a regular file")) << result;
  EXPECT_LT(waitedMs(result), 400 + 3000) << result;
}

TEST(BootstrapExchange, RankZeroFailureEndsTheWaitAtOnce) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 20000);
  std::vector<Child> children = startWaiters(c, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Rendezvous zero(c, 0, 3);
  std::string error;
  ASSERT_TRUE(zero.clear(error)) << error;
  ASSERT_TRUE(zero.publishFailure("no CUDA device visible", error)) << error;
  for (const std::string &result : finishAll(children)) {
    std::string text = body(result);
    EXPECT_EQ(text.rfind("error:", 0), 0u) << result;
    EXPECT_TRUE(contains(text, "rank 0 failed")) << text;
    EXPECT_TRUE(contains(text, "no CUDA device visible")) << text;
    EXPECT_LT(waitedMs(result), 10000);
  }
}

TEST(BootstrapExchange, OldFailureReportIsNotBelieved) {
  // A failure written before this rank began waiting may be an earlier
  // job's: it only shows up in the timeout's message.
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 300);
  Rendezvous zero(c, 0, 2);
  std::string error;
  ASSERT_TRUE(zero.publishFailure("earlier failure", error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string result = finish(startChild(waiter(c, 1, 2)));
  std::string text = body(result);
  EXPECT_EQ(text.rfind("timeout:", 0), 0u) << result;
  EXPECT_TRUE(contains(text, "earlier failure")) << text;
  EXPECT_TRUE(contains(text, "possibly left by an earlier job")) << text;
}

TEST(BootstrapExchange, ClearRemovesAnEarlierJobsFile) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 1000);
  publish(c, 2, makeId(12));
  Rendezvous zero(c, 0, 2);
  ASSERT_TRUE(exists(zero.path()));
  std::string error;
  EXPECT_TRUE(zero.clear(error)) << error;
  EXPECT_FALSE(exists(zero.path()));
  EXPECT_TRUE(zero.clear(error)) << "clearing nothing is fine: " << error;
}

TEST(BootstrapExchange, WithdrawKeepsAFileSomeoneElseWrote) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 1000);
  Rendezvous first(c, 0, 2);
  publish(c, 2, makeId(13), &first);
  publish(c, 2, makeId(14)); // another writer replaced it
  first.withdraw();
  EXPECT_TRUE(exists(first.path()));
}

TEST(BootstrapExchange, PublishReportsAMissingDirectory) {
  TempDir dir("overlap-bootstrap-test");
  RendezvousConfig c = config(dir, 1000);
  c.directory = dir.path() + "/missing";
  Rendezvous zero(c, 0, 2);
  std::string id = makeId(15), error;
  EXPECT_FALSE(zero.publish(id.data(), id.size(), error));
  EXPECT_TRUE(contains(error, zero.path())) << error;
  EXPECT_TRUE(contains(error, "No such file")) << error;
}

// The default directory is this user's only: made 0700 by rank 0; one that
// others can write in, or that is a link, fails every rank at once (not at
// the timeout), naming it. Before, the files sat in /tmp itself under a
// name any local user could guess and occupy.
TEST(BootstrapExchange, DefaultDirectoryIsPrivate) {
  TempDir dir;
  RendezvousConfig c = config(dir, 5000);
  c.directory = dir.path() + "/private";
  c.privateDirectory = true;
  publish(c, 2, std::string(128, 'p'));
  struct stat st;
  ASSERT_EQ(::lstat(c.directory.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(body(waiter(c, 1, 2)()), "id:" + std::string(128, 'p'));

  ASSERT_EQ(::chmod(c.directory.c_str(), 0777), 0);
  Rendezvous rank0(c, 0, 2);
  std::string error;
  EXPECT_FALSE(rank0.clear(error));
  EXPECT_NE(error.find("has mode 0777: other users could write in it"),
            std::string::npos)
      << error;
  std::string waited = waiter(c, 1, 2)();
  EXPECT_EQ(waited.rfind("error:rank 1 of 2: the rendezvous directory " +
                             c.directory + " has mode 0777",
                         0),
            0u)
      << waited;
  EXPECT_LT(waitedMs(waited), 1000);

  if (DIR *d = ::opendir(c.directory.c_str())) {
    while (dirent *entry = ::readdir(d))
      ::unlink((c.directory + "/" + entry->d_name).c_str());
    ::closedir(d);
  }
  ASSERT_EQ(::rmdir(c.directory.c_str()), 0);
  ASSERT_EQ(::symlink(dir.path().c_str(), c.directory.c_str()), 0);
  EXPECT_FALSE(rank0.publish("x", 1, error));
  EXPECT_NE(error.find("is a symbolic link"), std::string::npos) << error;
  ::unlink(c.directory.c_str());
}

} // namespace
