//===- Launched.cpp - Contexts of jobs started by a launcher ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_cuda_context_create_launched: a rank of `mpirun -np N prog`,
// `srun prog` or torchrun makes its context without an MPI library. The
// launch comes from the environment; the NCCL unique id comes from NCCL's
// own TCP bootstrap when an address is known (OVERLAP_COMM_ID, NCCL_COMM_ID,
// torchrun's MASTER_ADDR/MASTER_PORT: every rank makes the same id), else it
// travels through a rendezvous file (overlap/Runtime/Bootstrap.h); then it
// is the ncclCommInitRank creation of overlap_cuda_context_create_rank.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "overlap/Runtime/Bootstrap.h"

#include <cstdlib>
#include <memory>
#include <optional>

using namespace overlap;
using namespace overlap::cuda;
namespace bs = overlap::bootstrap;

extern "C" overlap_status
overlap_cuda_context_create_launched(const overlap_cuda_options *opts,
                                     overlap_context **ctx) {
  const std::string function = "overlap_cuda_context_create_launched: ";
  if (!ctx)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        function + "null result pointer");
  *ctx = nullptr;
  bs::Env env = bs::processEnv();
  bs::Launch launch;
  std::string error;
  if (!bs::detectLaunch(env, launch, error))
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT, function + error);
  const std::string call = function + launch.describe() + ": ";
  Options options;
  if (!resolveOptions(opts, options, error))
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT, call + error);

  bs::IdExchange exchange;
  if (launch.size > 1 && !bs::chooseIdExchange(env, exchange, error))
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT, call + error);
  const bool byCommId = exchange.kind == bs::IdExchange::Kind::CommId;
  std::unique_ptr<bs::Rendezvous> rendezvous;
  if (launch.size > 1 && !byCommId) {
    bs::RendezvousConfig config;
    if (!bs::rendezvousConfig(env, launch, config, error))
      return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT, call + error);
    rendezvous =
        std::make_unique<bs::Rendezvous>(config, launch.rank, launch.size);
    // Before anything that takes time: the sooner an earlier job's file is
    // gone, the smaller the window in which a peer could read it.
    if (launch.rank == 0 && !rendezvous->clear(error))
      return createFailed(OVERLAP_ERROR_BACKEND, call + error);
  }
  // Until rank 0 has published, its failure is published instead, so that
  // the ranks already waiting fail now rather than at their timeout.
  auto failBeforePublish = [&](overlap_status status, const std::string &why) {
    if (rendezvous && launch.rank == 0) {
      std::string ignored;
      (void)rendezvous->publishFailure(why, ignored);
    }
    return createFailed(status, call + why);
  };

  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count)) {
    (void)cudaGetLastError();
    return failBeforePublish(OVERLAP_ERROR_BACKEND,
                             "cudaGetDeviceCount failed: " + describe(e));
  }
  if (count < 1)
    return failBeforePublish(OVERLAP_ERROR_BACKEND, "no CUDA device visible");
  const int device = launch.localRank % count;
  const std::string onDevice = "device " + std::to_string(device) +
                               " (local rank " +
                               std::to_string(launch.localRank) + ", " +
                               std::to_string(count) + " visible): ";

  if (launch.size == 1) {
    overlap_status s = overlap_cuda_context_create_single(device, opts, ctx);
    if (s != OVERLAP_SUCCESS)
      return createFailed(s, call + onDevice + overlap_cuda_create_error());
    return s;
  }

  uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES];
  // NCCL_COMM_ID as the process had it, put back once this context exists
  // (or failed): a later communicator of the process (the caller's own
  // NCCL) must not find our address in it.
  std::optional<std::string> previousCommId;
  if (const char *before = std::getenv("NCCL_COMM_ID"))
    previousCommId = before;
  struct RestoreCommId {
    bool armed = false;
    const std::optional<std::string> &previous;
    ~RestoreCommId() {
      if (!armed)
        return;
      if (previous)
        setenv("NCCL_COMM_ID", previous->c_str(), 1);
      else
        unsetenv("NCCL_COMM_ID");
    }
  } restoreCommId{byCommId, previousCommId};
  if (byCommId) {
    // NCCL reads NCCL_COMM_ID in ncclGetUniqueId (the id is the address and
    // a fixed magic, the same on every rank) and in ncclCommInitRank (rank 0
    // serves the bootstrap there).
    if (setenv("NCCL_COMM_ID", exchange.commId.c_str(), 1) != 0)
      return createFailed(OVERLAP_ERROR_BACKEND,
                          call + "cannot set NCCL_COMM_ID");
    if (overlap_status s = overlap_cuda_unique_id(id))
      return createFailed(s, call + "NCCL_COMM_ID=" + exchange.commId +
                                 " (from " + exchange.source + "): " +
                                 overlap_cuda_create_error());
  } else if (launch.rank == 0) {
    if (overlap_status s = overlap_cuda_unique_id(id))
      return failBeforePublish(s, overlap_cuda_create_error());
    if (!rendezvous->publish(id, sizeof(id), error))
      return failBeforePublish(OVERLAP_ERROR_BACKEND, error);
  } else {
    bool timedOut = false;
    if (!rendezvous->await(id, sizeof(id), error, &timedOut))
      // The text names the rank, the file and the time waited.
      return createFailed(timedOut ? OVERLAP_ERROR_TIMEOUT
                                   : OVERLAP_ERROR_ABORTED,
                          function + error + " [" + launch.launcher + "]");
  }
  // Bounded, so that when one rank fails before joining, the others fail
  // too (at the bound, saying so) instead of blocking in NCCL for ever.
  overlap_status s = createRankContext(id, launch.size, launch.rank, device,
                                       opts, initTimeoutMs(120000), ctx);
  // ncclCommInitRank has returned on rank 0 only once every rank joined,
  // so every rank has read the id: the file is no longer needed.
  if (launch.rank == 0 && rendezvous)
    rendezvous->withdraw();
  if (s != OVERLAP_SUCCESS)
    return createFailed(s, call + onDevice +
                               (byCommId ? "NCCL bootstrap at " +
                                               exchange.commId + " (from " +
                                               exchange.source + "): "
                                         : std::string()) +
                               overlap_cuda_create_error());
  return s;
}
