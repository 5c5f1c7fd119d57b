//===- CudaLaunchedTest.cpp - Contexts of launched jobs ---------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_cuda_context_create_launched. Without a device: malformed launch
// variables, a missing job key and bad options are refused before any
// exchange; a waiting rank reports the missing device; rank 0 without a
// device publishes its failure so that a waiting rank ends at once. With a
// device (skipped without one): one rank without a launcher, and two
// processes of this test binary bootstrapped through OVERLAP_RANK and a
// rendezvous file (a real two-rank NCCL job with two devices; with one,
// both ranks must get through the rendezvous and fail in ncclCommInitRank,
// never time out).
//
// The launch variables are set in the process environment (the function
// reads it), each test restoring what it changed; the variables of every
// launcher are cleared first so that running the tests under mpirun or srun
// changes nothing.
//
//===----------------------------------------------------------------------===//

#include "overlap/Runtime/Bootstrap.h"
#include "CudaTestSupport.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include "TempDir.h"
#include "gtest/gtest.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <optional>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace bs = overlap::bootstrap;

namespace {

using overlap::testing::TempDir;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

int devices() {
  const char *why = nullptr;
  return overlap_cuda_device_count(&why);
}

/// Clears every launcher's variables and sets `vars`; restores on exit.
class ScopedEnv {
public:
  explicit ScopedEnv(const std::map<std::string, std::string> &vars) {
    for (const char *name :
         {"OVERLAP_RANK", "OVERLAP_WORLD_SIZE", "OVERLAP_LOCAL_RANK",
          "OVERLAP_BOOTSTRAP_KEY", "OVERLAP_BOOTSTRAP_DIR",
          "OVERLAP_BOOTSTRAP_TIMEOUT_MS", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
          "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_NAMESPACE",
          "OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_jobid",
          "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
          "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE", "PMI_RANK",
          "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_LOCAL_RANK",
          "PMI_LOCAL_SIZE", "PMI_JOBID", "RANK", "WORLD_SIZE", "LOCAL_RANK",
          "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR",
          "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "SLURM_PROCID",
          "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID",
          "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_JOB_ID", "SLURM_JOBID",
          // Spawned ranks must not write the parent's gtest report.
          "GTEST_OUTPUT"})
      change(name, std::nullopt);
    for (const auto &[name, value] : vars)
      change(name, value);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }

private:
  void change(const std::string &name,
              const std::optional<std::string> &value) {
    const char *old = std::getenv(name.c_str());
    saved_.emplace_back(name,
                        old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// A key no other run of these tests uses.
std::string uniqueKey(const char *test) {
  return std::string("launched-test-") + test + "-" + std::to_string(getpid()) +
         "-" + std::to_string(bs::wallClockMs());
}

overlap_status createLaunched(overlap_context **ctx,
                              const overlap_cuda_options *opts = nullptr) {
  *ctx = reinterpret_cast<overlap_context *>(0x1);
  return overlap_cuda_context_create_launched(opts, ctx);
}

//===----------------------------------------------------------------------===//
// Without a device
//===----------------------------------------------------------------------===//

TEST(CudaLaunched, NullResultPointer) {
  EXPECT_EQ(overlap_cuda_context_create_launched(nullptr, nullptr),
            OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(overlap_cuda_create_error(), "null result pointer"))
      << overlap_cuda_create_error();
}

TEST(CudaLaunched, MalformedLaunchNamesTheVariable) {
  overlap_context *ctx = nullptr;
  {
    ScopedEnv env({{"OVERLAP_RANK", "0"}, {"OVERLAP_WORLD_SIZE", "two"}});
    EXPECT_EQ(createLaunched(&ctx), OVERLAP_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(ctx, nullptr);
    std::string error = overlap_cuda_create_error();
    EXPECT_EQ(error.rfind("overlap_cuda_context_create_launched: ", 0), 0u)
        << error;
    EXPECT_TRUE(contains(error, "OVERLAP_WORLD_SIZE='two'")) << error;
  }
  {
    ScopedEnv env(
        {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
    EXPECT_EQ(createLaunched(&ctx), OVERLAP_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(overlap_cuda_create_error(),
                         "OMPI_COMM_WORLD_RANK=3 is not below "
                         "OMPI_COMM_WORLD_SIZE=2"))
        << overlap_cuda_create_error();
  }
}

TEST(CudaLaunched, SeveralRanksNeedAJobKey) {
  ScopedEnv env({{"OVERLAP_RANK", "1"}, {"OVERLAP_WORLD_SIZE", "2"}});
  overlap_context *ctx = nullptr;
  EXPECT_EQ(createLaunched(&ctx), OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  std::string error = overlap_cuda_create_error();
  EXPECT_TRUE(contains(error, "rank 1 of 2 (OVERLAP_RANK)")) << error;
  EXPECT_TRUE(contains(error, "set OVERLAP_BOOTSTRAP_KEY")) << error;
}

TEST(CudaLaunched, BadOptionsAreRefusedBeforeAnyExchange) {
  TempDir dir("overlap-launched-test");
  ScopedEnv env({{"OVERLAP_RANK", "1"},
                 {"OVERLAP_WORLD_SIZE", "2"},
                 {"OVERLAP_BOOTSTRAP_KEY", uniqueKey("options")},
                 {"OVERLAP_BOOTSTRAP_DIR", dir.path()},
                 {"OVERLAP_BOOTSTRAP_TIMEOUT_MS", "60000"}});
  overlap_cuda_options opts;
  overlap_cuda_options_init(&opts);
  opts.num_streams = 1;
  overlap_context *ctx = nullptr;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(createLaunched(&ctx, &opts), OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(contains(overlap_cuda_create_error(), "2 streams"))
      << overlap_cuda_create_error();
}

TEST(CudaLaunched, WaitingRankTimesOutOrReportsNoDevice) {
  TempDir dir("overlap-launched-test");
  std::string key = uniqueKey("waiting");
  ScopedEnv env({{"OVERLAP_RANK", "1"},
                 {"OVERLAP_WORLD_SIZE", "2"},
                 {"OVERLAP_BOOTSTRAP_KEY", key},
                 {"OVERLAP_BOOTSTRAP_DIR", dir.path()},
                 {"OVERLAP_BOOTSTRAP_TIMEOUT_MS", "300"}});
  overlap_context *ctx = nullptr;
  overlap_status s = createLaunched(&ctx);
  EXPECT_EQ(ctx, nullptr);
  std::string error = overlap_cuda_create_error();
  if (devices() == 0) {
    // Refused before waiting: there is nothing to bootstrap.
    EXPECT_EQ(s, OVERLAP_ERROR_BACKEND) << error;
    EXPECT_TRUE(contains(error, "rank 1 of 2 (OVERLAP_RANK)")) << error;
    EXPECT_TRUE(contains(error, "cudaGetDeviceCount") ||
                contains(error, "no CUDA device"))
        << error;
    return;
  }
  EXPECT_EQ(s, OVERLAP_ERROR_TIMEOUT) << error;
  EXPECT_TRUE(contains(error, "rank 1 of 2")) << error;
  EXPECT_TRUE(contains(error, bs::rendezvousPath(dir.path(), key))) << error;
  EXPECT_TRUE(contains(error, "waited")) << error;
}

TEST(CudaLaunched, RankZeroWithoutADevicePublishesItsFailure) {
  if (devices() > 0) {
    // Rank 0 would publish an id and wait in ncclCommInitRank for a rank 1
    // that never comes; CudaLaunchedDevice.TwoProcesses covers it.
    SUCCEED() << "a device is present";
    return;
  }
  TempDir dir("overlap-launched-test");
  bs::RendezvousConfig config;
  config.directory = dir.path();
  config.key = uniqueKey("failure");
  config.timeoutMs = 20000;
  ScopedEnv env({{"OVERLAP_RANK", "0"},
                 {"OVERLAP_WORLD_SIZE", "2"},
                 {"OVERLAP_BOOTSTRAP_KEY", config.key},
                 {"OVERLAP_BOOTSTRAP_DIR", dir.path()}});
  // Rank 1, already waiting when rank 0 fails, ends at once with its reason.
  std::string waiterError;
  bool waiterOk = true, timedOut = true;
  std::thread waiter([&] {
    bs::Rendezvous rendezvous(config, 1, 2);
    uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES];
    waiterOk = rendezvous.await(id, sizeof(id), waiterError, &timedOut);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  overlap_context *ctx = nullptr;
  EXPECT_EQ(createLaunched(&ctx), OVERLAP_ERROR_BACKEND);
  EXPECT_EQ(ctx, nullptr);
  std::string error = overlap_cuda_create_error();
  EXPECT_TRUE(contains(error, "rank 0 of 2 (OVERLAP_RANK)")) << error;
  waiter.join();
  EXPECT_FALSE(waiterOk);
  EXPECT_FALSE(timedOut) << waiterError;
  EXPECT_TRUE(contains(waiterError, "rank 0 failed")) << waiterError;
  EXPECT_TRUE(contains(waiterError, "cudaGetDeviceCount") ||
              contains(waiterError, "no CUDA device"))
      << waiterError;
}

TEST(CudaLaunched, OneRankWithoutALauncher) {
  ScopedEnv env({});
  overlap_context *ctx = nullptr;
  overlap_status s = createLaunched(&ctx);
  if (devices() > 0) {
    ASSERT_EQ(s, OVERLAP_SUCCESS) << overlap_cuda_create_error();
    EXPECT_EQ(overlap_context_rank(ctx), 0);
    EXPECT_EQ(overlap_context_size(ctx), 1);
    EXPECT_EQ(overlap_cuda_device(ctx), 0);
    EXPECT_EQ(overlap_cuda_context_destroy(ctx), OVERLAP_SUCCESS);
    return;
  }
  EXPECT_EQ(s, OVERLAP_ERROR_BACKEND);
  EXPECT_EQ(ctx, nullptr);
  std::string error = overlap_cuda_create_error();
  EXPECT_TRUE(contains(error, "rank 0 of 1 (no launcher)")) << error;
}

//===----------------------------------------------------------------------===//
// With a device
//===----------------------------------------------------------------------===//

class CudaLaunchedDevice : public overlap::test::NeedsCudaDevice {};

/// One rank of TwoProcesses (run only by it, in a process of its own): an
/// all-reduce of rank + 1 on the launched context.
TEST(CudaLaunchedChild, DISABLED_Rank) {
  overlap_context *ctx = nullptr;
  ASSERT_EQ(overlap_cuda_context_create_launched(nullptr, &ctx),
            OVERLAP_SUCCESS)
      << overlap_cuda_create_error();
  int rank = overlap_context_rank(ctx);
  EXPECT_EQ(overlap_context_size(ctx), 2);
  EXPECT_EQ(rank, std::atoi(std::getenv("OVERLAP_RANK")));
  EXPECT_EQ(overlap_cuda_device(ctx), rank % devices());
  float *dev = nullptr;
  ASSERT_EQ(
      overlap_alloc(ctx, sizeof(float) * 4, reinterpret_cast<void **>(&dev)),
      OVERLAP_SUCCESS);
  float host[4] = {float(rank + 1), float(10 * (rank + 1)), -1.0f, 0.5f};
  EXPECT_EQ(
      overlap_memcpy(ctx, OVERLAP_STREAM_COMM, -1, dev, host, sizeof(host)),
      OVERLAP_SUCCESS);
  EXPECT_EQ(overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, -1, nullptr,
                               OVERLAP_F32, OVERLAP_SUM, dev, dev, 4),
            OVERLAP_SUCCESS);
  float out[4] = {-7, -7, -7, -7};
  EXPECT_EQ(overlap_memcpy(ctx, OVERLAP_STREAM_COMM, -1, out, dev, sizeof(out)),
            OVERLAP_SUCCESS);
  EXPECT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
      << overlap_last_error(ctx);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 30.0f);
  EXPECT_EQ(out[2], -2.0f);
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(overlap_free(ctx, dev), OVERLAP_SUCCESS);
  EXPECT_EQ(overlap_cuda_context_destroy(ctx), OVERLAP_SUCCESS);
}

std::string readAll(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(CudaLaunchedDevice, TwoProcesses) {
  TempDir dir("overlap-launched-test");
  std::string key = uniqueKey("two");
  const int count = devices();
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int rank = 0; rank < 2; ++rank) {
    ScopedEnv env({{"OVERLAP_RANK", std::to_string(rank)},
                   {"OVERLAP_WORLD_SIZE", "2"},
                   {"OVERLAP_BOOTSTRAP_KEY", key},
                   {"OVERLAP_BOOTSTRAP_DIR", dir.path()},
                   {"OVERLAP_BOOTSTRAP_TIMEOUT_MS", "60000"}});
    std::string log = dir.path() + "/rank" + std::to_string(rank) + ".log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::string self = "/proc/self/exe";
    std::string filter = "--gtest_filter=CudaLaunchedChild.DISABLED_Rank";
    std::string disabled = "--gtest_also_run_disabled_tests";
    char *argv[] = {&self[0], &filter[0], &disabled[0], nullptr};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << std::strerror(rc);
    pids.push_back(pid);
    logs.push_back(log);
  }
  // Bounded: a rank stuck in ncclCommInitRank is killed, never waited for
  // forever.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  std::vector<int> statuses(2, -1);
  for (size_t i = 0; i < pids.size(); ++i) {
    for (;;) {
      int status = 0;
      pid_t done = waitpid(pids[i], &status, WNOHANG);
      if (done == pids[i]) {
        statuses[i] = status;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &status, 0);
        ADD_FAILURE() << "rank " << i << " did not finish in 180 s:\n"
                      << readAll(logs[i]);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    std::string log = readAll(logs[i]);
    bool ok = statuses[i] >= 0 && WIFEXITED(statuses[i]) &&
              WEXITSTATUS(statuses[i]) == 0;
    EXPECT_FALSE(contains(log, "waited")) << "rank " << i << ":\n" << log;
    if (count >= 2 || ok) {
      EXPECT_TRUE(ok) << "rank " << i << ":\n" << log;
      EXPECT_TRUE(contains(log, "[  PASSED  ] 1 test")) << log;
    } else {
      // One device: NCCL refuses two ranks on it, but only after both got
      // the id through the file and met.
      EXPECT_TRUE(contains(log, "ncclCommInitRank")) << "rank " << i << ":\n"
                                                     << log;
    }
  }
  // Rank 0 removed the rendezvous file once both ranks had joined.
  EXPECT_NE(access(bs::rendezvousPath(dir.path(), key).c_str(), F_OK), 0);
}

} // namespace
