//===- HostContext.cpp - Host world, streams, signals, launch --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "HostBackend.h"
#include "Kernels.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace overlap::runtime;
using namespace overlap::host;

//===----------------------------------------------------------------------===//
// World
//===----------------------------------------------------------------------===//

World::World(int ranks, const Options &options)
    : ranks(ranks), options(options),
      worldShared(std::make_shared<GroupShared>()) {
  worldShared->id = 0;
  for (int r = 0; r < ranks; ++r)
    worldShared->members.push_back(r);
}

void World::abort(int rank, overlap_status status, const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rootRank_ < 0) {
      rootRank_ = rank;
      rootStatus_ = status;
      rootError_ = message;
    }
  }
  aborted.store(true, std::memory_order_release);
}

int World::rootRank() {
  std::lock_guard<std::mutex> lock(mutex_);
  return rootRank_;
}

overlap_status World::rootStatus() {
  std::lock_guard<std::mutex> lock(mutex_);
  return rootStatus_;
}

std::string World::rootError() {
  std::lock_guard<std::mutex> lock(mutex_);
  return rootError_;
}

std::string World::abandonedText() {
  std::lock_guard<std::mutex> lock(mutex_);
  return "abandoned: rank " + std::to_string(rootRank_) + " failed first (" +
         rootError_ + ")";
}

std::shared_ptr<GroupShared>
World::splitGroup(uint64_t parentId, uint64_t call, int color,
                  const std::vector<int> &members) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<GroupShared> &group = splits_[{parentId, call, color}];
  if (!group) {
    group = std::make_shared<GroupShared>();
    group->id = nextGroupId_++;
    group->members = members;
  }
  return group;
}

//===----------------------------------------------------------------------===//
// Stream
//===----------------------------------------------------------------------===//

Stream::Stream(HostContext &ctx, int index) : ctx_(ctx), index_(index) {
  const Options &options = ctx.world.options;
  // One chaos sequence per (seed, rank, stream), so streams do not move in
  // lockstep.
  std::seed_seq seq{static_cast<uint32_t>(options.chaosSeed),
                    static_cast<uint32_t>(options.chaosSeed >> 32),
                    static_cast<uint32_t>(ctx.rank),
                    static_cast<uint32_t>(index)};
  chaos_.seed(seq);
  worker_ = std::thread([this] { loop(); });
}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void Stream::enqueue(const Site &site, Work work, bool signals) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (signals) {
      if (!queue_.empty())
        queue_.back().producer = true;
      else
        producerSeq_ = enqueued_; // already taken by the worker
    }
    queue_.push_back(Task{site, std::move(work), ++enqueued_, false});
  }
  wake_.notify_one();
}

void Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return done_ == enqueued_; });
}

void Stream::loop() {
  for (;;) {
    Task task;
    bool producer = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping, and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      // A signal is enqueued right after the work it follows, maybe after
      // the worker took that work: under chaos, give the rank's thread a
      // moment to say whether this task is a producer.
      if (ctx_.world.options.chaos && queue_.empty())
        wake_.wait_for(lock, std::chrono::microseconds(200),
                       [&] { return stop_ || enqueued_ > task.seq; });
      producer = task.producer || producerSeq_ == task.seq;
    }
    run(task, producer);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++done_;
    }
    idle_.notify_all();
  }
}

std::chrono::microseconds Stream::chaosDelay(bool producer) {
  const uint64_t max =
      static_cast<uint64_t>(ctx_.world.options.chaosMaxDelayUs);
  if (producer)
    // Work a signal follows is what another stream waits for: always held
    // back, for half the longest delay to all of it, so that a consumer
    // that lacks its wait runs first and reads what is not written yet.
    return std::chrono::microseconds(max / 2 + chaos_() % (max - max / 2 + 1));
  // Everything else moves a little, once in four, to vary the interleaving.
  if (chaos_() % 4 != 0)
    return std::chrono::microseconds(0);
  return std::chrono::microseconds(chaos_() % (max / 4 + 1));
}

void Stream::sleepUnlessFailed(std::chrono::microseconds delay) {
  // Both are bounded (OVERLAP_MAX_CHAOS_DELAY_US), so no overflow.
  const Clock::time_point end = Clock::now() + delay;
  const World &world = ctx_.world;
  for (;;) {
    if (ctx_.status() != OVERLAP_SUCCESS ||
        world.aborted.load(std::memory_order_acquire))
      return;
    Clock::time_point now = Clock::now();
    if (now >= end)
      return;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(end - now, std::chrono::milliseconds(1)));
  }
}

void Stream::run(Task &task, bool producer) {
  World &world = ctx_.world;
  // After the first error on this rank, the rest of its work is dropped;
  // after one on another rank, it is dropped with an error of its own.
  auto dropped = [&] {
    if (ctx_.status() != OVERLAP_SUCCESS)
      return true;
    if (!world.aborted.load(std::memory_order_acquire))
      return false;
    ctx_.fail(OVERLAP_ERROR_ABORTED,
              formatError(task.site, ctx_.rank, world.abandonedText()));
    return true;
  };
  if (dropped())
    return;
  if (world.options.chaos) {
    sleepUnlessFailed(chaosDelay(producer));
    if (dropped())
      return;
  }
  std::string what;
  overlap_status status = task.work(what);
  if (status == OVERLAP_ERROR_ABORTED)
    what = world.abandonedText();
  if (status != OVERLAP_SUCCESS)
    ctx_.fail(status, formatError(task.site, ctx_.rank, what));
}

//===----------------------------------------------------------------------===//
// HostContext
//===----------------------------------------------------------------------===//

HostContext::HostContext(World &world, int rank)
    : overlap_context(rank, world.ranks, world.options.numStreams),
      world(world) {
  worldGroup_.rank = rank;
  worldGroup_.size = world.ranks;
  worldGroup_.shared = world.worldShared;
  for (int s = 0; s < numStreams; ++s)
    streams_.push_back(std::make_unique<Stream>(*this, s));
}

HostContext::~HostContext() {
  // Stream destructors drain their queues; they go first because queued
  // work may still refer to the groups and signals below.
  streams_.clear();
}

void HostContext::onFail() { world.abort(rank, status(), lastError()); }

overlap_status HostContext::synchronize(int stream) {
  if (stream >= 0) {
    streams_[stream]->synchronize();
  } else {
    for (auto &s : streams_)
      s->synchronize();
  }
  return status();
}

overlap_status HostContext::split(overlap_group *parentBase, int color, int key,
                                  overlap_group **group) {
  auto *parent = static_cast<HostGroup *>(parentBase);
  std::shared_ptr<GroupShared> shared;
  int groupRank = -1;
  std::string what;
  overlap_status status =
      runSplit(world, *parent, color, key, shared, groupRank, what);
  if (status == OVERLAP_ERROR_ABORTED)
    what = world.abandonedText();
  if (status != OVERLAP_SUCCESS)
    return fail(status,
                formatError(Site::thread("overlap_group_split"), rank, what));
  if (!shared)
    return OVERLAP_SUCCESS; // OVERLAP_UNDEFINED_COLOR
  auto result = std::make_unique<HostGroup>();
  result->rank = groupRank;
  result->size = static_cast<int>(shared->members.size());
  result->shared = std::move(shared);
  return adoptGroup(groups_, std::move(result), group);
}

void HostContext::destroyGroup(overlap_group *group) {
  // Queued collectives hold the shared state, so this is safe even before
  // they run.
  destroyOwnedGroup(groups_, group);
}

overlap_status HostContext::createSignals(int32_t n, overlap_signals **sigs) {
  auto set = std::make_unique<HostSignals>();
  set->count = n;
  set->flags = std::make_unique<std::atomic<uint64_t>[]>(n);
  for (int32_t i = 0; i < n; ++i)
    set->flags[i].store(0, std::memory_order_relaxed);
  *sigs = set.get();
  signals_.push_back(std::move(set));
  return OVERLAP_SUCCESS;
}

void HostContext::destroySignals(overlap_signals *sigs) {
  // Work that still refers to the set must have run: drain first.
  synchronize(-1);
  for (auto it = signals_.begin(); it != signals_.end(); ++it) {
    if (it->get() == sigs) {
      signals_.erase(it);
      return;
    }
  }
}

overlap_status HostContext::gemm(const Site &site, const GemmArgs &args) {
  enqueue(site, [args](std::string &) {
    gemmKernel(args);
    return OVERLAP_SUCCESS;
  });
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::collective(const Site &site, overlap_group *group,
                                       const CollectiveArgs &args) {
  auto *hostGroup = static_cast<HostGroup *>(group);
  std::shared_ptr<GroupShared> shared = hostGroup->shared;
  int groupRank = hostGroup->rank;
  uint64_t call = hostGroup->nextCall++;
  World *w = &world;
  const char *name = site.call;
  enqueue(site, [w, shared, groupRank, call, name, args](std::string &what) {
    return runCollective(*w, *shared, groupRank, call, name, args, what);
  });
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::pack(const Site &site, const PackArgs &args) {
  enqueue(site, [args](std::string &) {
    packKernel(args);
    return OVERLAP_SUCCESS;
  });
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::copy(const Site &site, void *dst, const void *src,
                                 size_t bytes) {
  enqueue(site, [dst, src, bytes](std::string &) {
    std::memmove(dst, src, bytes);
    return OVERLAP_SUCCESS;
  });
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::fill(const Site &site, void *dst, uint8_t value,
                                 size_t bytes) {
  enqueue(site, [dst, value, bytes](std::string &) {
    std::memset(dst, value, bytes);
    return OVERLAP_SUCCESS;
  });
  return OVERLAP_SUCCESS;
}

// The host backends run every call as it comes: a fused group of calls is
// those calls in order.
overlap_status HostContext::fuseCalls(const Site &, bool) { return status(); }

overlap_status HostContext::hostFunc(const Site &site, void (*fn)(void *),
                                     void *user) {
  enqueue(site, [fn, user](std::string &) {
    fn(user);
    return OVERLAP_SUCCESS;
  });
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::signal(const Site &site, overlap_signals *sigs,
                                   int32_t index) {
  auto *set = static_cast<HostSignals *>(sigs);
  uint64_t epoch = set->epoch;
  enqueue(
      site,
      [set, index, epoch](std::string &) {
        {
          std::lock_guard<std::mutex> lock(set->mutex);
          // Never lower a flag: a late signal of an old epoch must not undo
          // a newer one.
          if (set->flags[index].load(std::memory_order_relaxed) < epoch)
            set->flags[index].store(epoch, std::memory_order_release);
        }
        set->cv.notify_all();
        return OVERLAP_SUCCESS;
      },
      /*signals=*/true);
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::wait(const Site &site, overlap_signals *sigs,
                                 int32_t index) {
  auto *set = static_cast<HostSignals *>(sigs);
  uint64_t epoch = set->epoch;
  World *w = &world;
  enqueue(site, [w, set, index, epoch](std::string &what) {
    Clock::time_point deadline = w->deadline();
    std::unique_lock<std::mutex> lock(set->mutex);
    overlap_status status = w->waitUntil(lock, set->cv, deadline, [&] {
      return set->flags[index].load(std::memory_order_acquire) >= epoch;
    });
    if (status == OVERLAP_ERROR_TIMEOUT)
      what = "not signalled within " +
             std::to_string(w->options.waitTimeoutMs) + " ms (epoch " +
             std::to_string(epoch) + ", flag at " +
             std::to_string(set->flags[index].load()) +
             "); a slow step (a large host GEMM) reads the same as a rank "
             "that never signals: for a large program raise the timeout "
             "(--wait-timeout-ms, wait_timeout_ms, OVERLAP_WAIT_TIMEOUT_MS)";
    return status;
  });
  return OVERLAP_SUCCESS;
}

overlap_status HostContext::alloc(size_t bytes, void **ptr) {
  size_t rounded = (bytes + 63) / 64 * 64;
  *ptr = std::aligned_alloc(64, rounded);
  if (*ptr)
    return OVERLAP_SUCCESS;
  return fail(
      OVERLAP_ERROR_OUT_OF_MEMORY,
      formatError(Site::thread("overlap_alloc"), rank,
                  "cannot allocate " + std::to_string(bytes) + " bytes"));
}

void HostContext::free(void *ptr) { std::free(ptr); }

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

namespace {
thread_local std::string launchError;
} // namespace

std::string &overlap::host::hostLaunchError() { return launchError; }

overlap_status overlap::host::resolveHostOptions(const char *caller,
                                                 const overlap_host_options *in,
                                                 Options &out) {
  overlap_host_options opts;
  overlap_host_options_init(&opts);
  if (in) {
    if (in->struct_size < sizeof(uint32_t) ||
        in->struct_size > sizeof(overlap_host_options)) {
      launchError = std::string(caller) + ": options.struct_size is " +
                    std::to_string(in->struct_size) +
                    "; call overlap_host_options_init first";
      return OVERLAP_ERROR_INVALID_ARGUMENT;
    }
    std::memcpy(&opts, in, in->struct_size);
  }
  auto bad = [caller](const std::string &what) {
    launchError = std::string(caller) + ": " + what;
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  };

  if (opts.num_streams < 0 || opts.num_streams > 16)
    return bad("num_streams " + std::to_string(opts.num_streams) +
               " is not in 0..16");
  out.numStreams = opts.num_streams ? opts.num_streams : 2;

  std::string error;
  if (!resolveWaitTimeoutMs(opts.wait_timeout_ms, out.waitTimeoutMs, error))
    return bad(error);

  bool present;
  uint64_t value = 0;

  if (opts.chaos == OVERLAP_CHAOS_ON) {
    out.chaos = true;
    out.chaosSeed = opts.chaos_seed;
  } else if (opts.chaos == OVERLAP_CHAOS_FROM_ENV) {
    if (!overlap::runtime::readEnvUnsigned("OVERLAP_HOST_CHAOS", present,
                                           value))
      return bad("OVERLAP_HOST_CHAOS must be a seed (an unsigned integer)");
    out.chaos = present;
    out.chaosSeed = value;
  } else if (opts.chaos != OVERLAP_CHAOS_OFF) {
    return bad("unknown chaos mode " + std::to_string(opts.chaos));
  }

  const std::string chaosLimit = std::to_string(OVERLAP_MAX_CHAOS_DELAY_US);
  if (opts.chaos_max_delay_us < 0 ||
      opts.chaos_max_delay_us > OVERLAP_MAX_CHAOS_DELAY_US)
    return bad("chaos_max_delay_us is " +
               std::to_string(opts.chaos_max_delay_us) +
               ", expected 0 (the default) to " + chaosLimit +
               " us (OVERLAP_MAX_CHAOS_DELAY_US)");
  out.chaosMaxDelayUs = opts.chaos_max_delay_us;
  if (!out.chaosMaxDelayUs) {
    if (!overlap::runtime::readEnvUnsigned("OVERLAP_HOST_CHAOS_MAX_US", present,
                                           value) ||
        value > uint64_t(OVERLAP_MAX_CHAOS_DELAY_US))
      return bad("OVERLAP_HOST_CHAOS_MAX_US must be an unsigned integer of at "
                 "most " +
                 chaosLimit + " (us)");
    out.chaosMaxDelayUs = present ? static_cast<int64_t>(value) : 1000;
  }
  return OVERLAP_SUCCESS;
}

extern "C" {

void overlap_host_options_init(overlap_host_options *opts) {
  if (!opts)
    return;
  std::memset(opts, 0, sizeof(*opts));
  opts->struct_size = sizeof(*opts);
  opts->chaos = OVERLAP_CHAOS_FROM_ENV;
}

const char *overlap_host_launch_error(void) { return launchError.c_str(); }

overlap_status overlap_host_launch(int ranks, const overlap_host_options *opts,
                                   void (*fn)(overlap_context *, void *),
                                   void *user) {
  launchError.clear();
  if (ranks < 1 || ranks > 4096) {
    launchError = "overlap_host_launch: ranks " + std::to_string(ranks) +
                  " is not in 1..4096";
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  }
  if (!fn) {
    launchError = "overlap_host_launch: null rank function";
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  }
  Options options;
  if (overlap_status status =
          resolveHostOptions("overlap_host_launch", opts, options))
    return status;

  World world(ranks, options);
  std::vector<std::unique_ptr<HostContext>> contexts;
  for (int r = 0; r < ranks; ++r)
    contexts.push_back(std::make_unique<HostContext>(world, r));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    HostContext *ctx = contexts[r].get();
    threads.emplace_back([ctx, fn, user] {
      fn(ctx, user);
      ctx->synchronize(-1);
    });
  }
  for (std::thread &t : threads)
    t.join();
  contexts.clear();

  overlap_status status = world.rootStatus();
  if (status != OVERLAP_SUCCESS)
    launchError = world.rootError();
  return status;
}

} // extern "C"
