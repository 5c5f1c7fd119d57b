//===- ProcessRun.cpp - overlap-exec under mpirun ---------------*- C++ -*-===//
//
// The process executor: this process's rank runs through
// overlap_process_launch with the inputs every rank makes for itself (the
// seeds depend on the rank, so they are the threaded run's), and rank 0
// gathers the outputs of all ranks, contiguous, to compare and report them
// with the code the threaded run uses. Agreement on errors and exit status.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/ProcessRun.h"
#include "overlap/Loader/RuntimeApi.h"
#include "overlap/Loader/SessionAgreement.h"
#include "overlap/Runtime/Launchers.h"
#include "overlap/Support/EnumNames.h"

#include "overlap/Runtime/overlap_runtime_process.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

using namespace overlap;
using namespace overlap::exec;

/// Each mode and its name, once (EnumNames.h is header-only C++).
static const EnumName<RanksAs> kRanksAsNames[] = {
    {RanksAs::Threads, "threads"},
    {RanksAs::Processes, "processes"},
    {RanksAs::Auto, "auto"}};

bool overlap::exec::parseRanksAs(const std::string &text, RanksAs &mode) {
  std::optional<RanksAs> parsed = valueOf(kRanksAsNames, text);
  if (parsed)
    mode = *parsed;
  return parsed.has_value();
}

const char *overlap::exec::ranksAsName(RanksAs mode) {
  return nameOf(kRanksAsNames, mode);
}

bool overlap::exec::ranksAsProcesses(RanksAs mode, std::string &launcher,
                                     std::string &error) {
  launcher.clear();
  error.clear();
  if (mode != RanksAs::Auto)
    return mode == RanksAs::Processes;
  const char *name = nullptr;
  int size = 0;
  int launched = rt().overlap_process_launched(nullptr, &size, &name);
  if (launched < 0)
    error = rt().overlap_host_launch_error();
  if (launched != 1)
    return false;
  // One process of torchrun or srun is no job to join (`srun -n 1`, a
  // WORLD_SIZE of 1): it runs the grid as threads, as without a launcher.
  // mpirun -np 1 stays an MPI job of one process.
  const bootstrap::LauncherKind *kind = bootstrap::launcherKind(name);
  if (size == 1 && kind && !kind->oneProcessIsAJob)
    return false;
  launcher = name;
  return true;
}

int overlap::exec::agreeOnStatus(int status, std::string &error) {
  int64_t value = status;
  if (rt().overlap_process_max(&value) != OVERLAP_SUCCESS) {
    error = rt().overlap_host_launch_error();
    return 2;
  }
  return static_cast<int>(value);
}

namespace {

/// "MPI", or "TCP" for a job that joins over sockets (torchrun).
std::string transportName() {
  const char *transport = rt().overlap_process_transport();
  return transport && std::string(transport) == "tcp" ? "TCP" : "MPI";
}

/// This process's rank: what hostRankMain does for each thread.
void processRankMain(overlap_context *ctx, void *user) {
  run::Run &run = *static_cast<run::Run *>(user);
  int rank = rt().overlap_context_rank(ctx);
  run::RankData &data = run.ranks[rank];
  // Without its inputs this rank does not call the entry; execute reports
  // why (the other processes' collectives time out).
  if (!run::prepareRank(*run.sig, run.seed, rank, data,
                        run.given ? &(*run.given)[rank] : nullptr))
    return;
  std::vector<void *> values = run::entryValues(*run.sig, data, ctx);
  auto start = std::chrono::steady_clock::now();
  run::callGuarded(ctx, run.call, values); // a failed check fails the rank
  data.callMs = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
}

class ProcessExecutor : public HostRanksExecutor {
public:
  ProcessExecutor(int rank, int size, const overlap_host_options &options)
      : HostRanksExecutor(size, options,
                          ", one process each (" + transportName() + ")"),
        rank(rank) {}

  bool execute(const Library &lib, uint64_t seed, int iterations,
               Outcome &outcome, std::string &error) override {
    bindProgram(lib, seed, outcome);
    // As the host executor (runChecked); the time is the slowest process's.
    if (!runChecked(
            iterations, {&outcome}, [&] { release(lib, outcome); },
            [&](std::vector<double> &ms) {
              outcome.run.ranks.clear();
              outcome.run.ranks.resize(ranks);
              // Every process gets the same status and text (the runtime
              // agrees).
              overlap_status status = rt().overlap_process_launch(
                  ranks, &options, processRankMain, &outcome.run);
              if (!outcome.run.ranks[rank].error.empty()) {
                error = outcome.run.ranks[rank].error;
                return false;
              }
              if (status != OVERLAP_SUCCESS) {
                error = std::string(rt().overlap_status_name(status)) + ": " +
                        rt().overlap_host_launch_error();
                return false;
              }
              int64_t nanos =
                  std::llround(outcome.run.ranks[rank].callMs * 1e6);
              if (rt().overlap_process_max(&nanos) != OVERLAP_SUCCESS) {
                error = rt().overlap_host_launch_error();
                return false;
              }
              ms[0] = static_cast<double>(nanos) / 1e6;
              return true;
            }))
      return false;
    return gatherProcessOutputs(lib.sig, outcome, rank, ranks, nullptr, error);
  }

  void release(const Library &lib, Outcome &outcome) override {
    if (static_cast<size_t>(rank) < outcome.run.ranks.size())
      run::freeResults(lib.sig, outcome.run.ranks[rank]);
  }

private:
  int rank; // this process's; the job's size is `ranks`
};

} // namespace

bool overlap::exec::gatherProcessOutputs(
    const run::Signature &sig, Outcome &outcome, int rank, int size,
    const std::vector<run::OutputView> *hostViews, std::string &error) {
  std::vector<const run::BufferSpec *> specs = run::outputSpecs(sig);
  std::vector<run::OutputView> views;
  std::string why;
  std::string blob;
  bool have = hostViews
                  ? (views = *hostViews, true)
                  : run::outputViews(sig, outcome.run.ranks[rank], views, why);
  if (have) {
    blob = "1";
    std::vector<char> contiguous;
    for (size_t i = 0; i < specs.size(); ++i) {
      run::copyContiguous(*specs[i], views[i], contiguous);
      blob.append(contiguous.data(), contiguous.size());
    }
  } else {
    blob = "0" + why;
  }

  std::vector<std::string> parts;
  if (!gatherStrings(size, blob, parts, error))
    return false;
  blob.clear();
  int64_t failed = 0;
  if (rank == 0) {
    size_t expected = 1;
    for (const run::BufferSpec *spec : specs)
      expected += static_cast<size_t>(spec->numElements()) * spec->elemBytes();
    outcome.outputs.assign(size, {});
    for (int r = 0; r < size && !failed; ++r) {
      const std::string &part = parts[r];
      if (part.empty() || part[0] != '1' || part.size() != expected) {
        error = "rank " + std::to_string(r) + ": " +
                (!part.empty() && part[0] == '0'
                     ? part.substr(1)
                     : "sent " + std::to_string(part.size()) +
                           " bytes of outputs, expected " +
                           std::to_string(expected));
        failed = 1;
        break;
      }
      run::RankData &data = outcome.run.ranks[r];
      size_t offset = 1;
      for (const run::BufferSpec *spec : specs) {
        size_t bytes =
            static_cast<size_t>(spec->numElements()) * spec->elemBytes();
        data.copies.emplace_back(bytes);
        if (!data.copies.back().data) {
          error = "rank " + std::to_string(r) + ": cannot allocate " +
                  std::to_string(bytes) + " bytes for " + spec->name;
          failed = 1;
          break;
        }
        if (bytes)
          std::memcpy(data.copies.back().data, part.data() + offset, bytes);
        offset += bytes;
        run::OutputView view;
        view.base = data.copies.back().data;
        view.sizes = spec->shape;
        view.strides.assign(spec->shape.size(), 1);
        for (size_t d = spec->shape.size(); d-- > 1;)
          view.strides[d - 1] = view.strides[d] * spec->shape[d];
        outcome.outputs[r].push_back(std::move(view));
      }
    }
  } else {
    failed = !have;
  }
  // Rank 0 says why; the others fail with it, silently.
  if (rt().overlap_process_max(&failed) != OVERLAP_SUCCESS) {
    error = rt().overlap_host_launch_error();
    return false;
  }
  if (failed && rank != 0)
    error.clear();
  return !failed;
}

std::unique_ptr<Executor>
overlap::exec::createProcessExecutor(int rank, int size,
                                     const overlap_host_options &options) {
  return std::make_unique<ProcessExecutor>(rank, size, options);
}

bool overlap::exec::gatherStrings(int size, const std::string &mine,
                                  std::vector<std::string> &all,
                                  std::string &error) {
  all.clear();
  void *buffer = nullptr;
  std::vector<size_t> sizes(size);
  if (rt().overlap_process_gather(mine.data(), mine.size(), &buffer,
                                  sizes.data()) != OVERLAP_SUCCESS) {
    error = rt().overlap_host_launch_error();
    return false;
  }
  if (!buffer)
    return true; // not rank 0
  size_t at = 0;
  for (int r = 0; r < size; ++r) {
    all.emplace_back(static_cast<const char *>(buffer) + at, sizes[r]);
    at += sizes[r];
  }
  std::free(buffer);
  return true;
}

int overlap::exec::finishProcesses(
    int rank, int size, int status, const std::vector<std::string> &errors,
    const std::function<void(const std::string &)> &report) {
  // Each error ends with a NUL.
  std::string blob;
  for (const std::string &text : errors)
    blob += text + '\0';
  std::vector<std::string> parts;
  std::string why;
  if (!gatherStrings(size, blob, parts, why)) {
    // No one else can say this process's errors.
    for (const std::string &text : errors)
      report(text);
    report(why);
    return 2;
  }
  int agreed = agreeOnStatus(status, why);
  if (!why.empty() && rank == 0)
    report(why);
  if (rank != 0)
    return agreed;

  // Each different text once, in the order of the first rank that had it.
  std::vector<std::string> texts;
  std::map<std::string, std::vector<int>> ranksOf;
  for (int r = 0; r < size; ++r) {
    const std::string &part = parts[r];
    for (size_t begin = 0; begin < part.size();) {
      size_t end = part.find('\0', begin);
      if (end == std::string::npos)
        end = part.size();
      std::string text = part.substr(begin, end - begin);
      std::vector<int> &ranks = ranksOf[text];
      if (ranks.empty())
        texts.push_back(text);
      if (ranks.empty() || ranks.back() != r)
        ranks.push_back(r);
      begin = end + 1;
    }
  }
  for (const std::string &text : texts) {
    const std::vector<int> &ranks = ranksOf[text];
    report((static_cast<int>(ranks.size()) != size ? rankList(ranks) + ": "
                                                   : std::string()) +
           text);
  }
  return agreed;
}

bool overlap::exec::anyProcessFailed(bool failed, bool &any,
                                     std::string &error) {
  int64_t flag = failed ? 1 : 0;
  if (rt().overlap_process_max(&flag) != OVERLAP_SUCCESS) {
    error = rt().overlap_host_launch_error();
    return false;
  }
  any = flag != 0;
  return true;
}
