//===- ProcessCollectives.cpp - Collectives over MPI messages --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Every collective is one exchange of messages on the group's communicator,
// tagged with the call number (the n-th call each rank issued on the group,
// as the threaded backend matches them), then the threaded backend's
// arithmetic on what arrived: an all-reduce gathers every rank's buffer and
// reduces element i over group ranks 0, 1, 2, ... with the same reduceKernel,
// so every rank gets the bits the threaded backend gives. Each message starts
// with the call as the ranks must agree on it ("overlap_all_reduce(f32, sum,
// count 8)"): ranks whose calls differ fail with the threaded backend's
// message instead of mixing buffers. A shift sends its payload to one peer
// and an empty message (the call alone) to the others.
//
// Messages are synchronous sends (MPI_Issend), polled with MPI_Improbe and
// MPI_Test against the wait timeout and the world's abort flag, so a missing
// rank is a timeout that names it and another rank's failure ends the wait
// at once; no call blocks inside MPI.
//
//===----------------------------------------------------------------------===//

#include "ProcessBackend.h"

#include "Host/Kernels.h"

#include <chrono>
#include <climits>
#include <cstring>

using namespace overlap::runtime;
using namespace overlap::process;

namespace {

constexpr uint32_t kMagic = 0x4f564c50; // "OVLP"

/// magic, kind length, call; the kind; padding to 16 bytes so that the
/// payload is aligned for the kernels.
constexpr size_t kFixedHeader = 16;

size_t headerBytes(size_t kindBytes) {
  return (kFixedHeader + kindBytes + 15) / 16 * 16;
}

std::shared_ptr<std::string> encode(uint64_t call, const std::string &kind,
                                    const void *payload, size_t bytes) {
  auto message = std::make_shared<std::string>(headerBytes(kind.size()), '\0');
  uint32_t magic = kMagic, kindBytes = static_cast<uint32_t>(kind.size());
  std::memcpy(&(*message)[0], &magic, 4);
  std::memcpy(&(*message)[4], &kindBytes, 4);
  std::memcpy(&(*message)[8], &call, 8);
  std::memcpy(&(*message)[kFixedHeader], kind.data(), kind.size());
  message->append(static_cast<const char *>(payload), bytes);
  return message;
}

/// Splits a message into its call, kind and payload; false if malformed.
bool decode(std::string &message, uint64_t &call, std::string &kind) {
  uint32_t magic = 0, kindBytes = 0;
  if (message.size() < kFixedHeader)
    return false;
  std::memcpy(&magic, &message[0], 4);
  std::memcpy(&kindBytes, &message[4], 4);
  std::memcpy(&call, &message[8], 8);
  if (magic != kMagic || message.size() < headerBytes(kindBytes))
    return false;
  kind.assign(&message[kFixedHeader], kindBytes);
  message.erase(0, headerBytes(kindBytes));
  return true;
}

std::string joinRanks(const std::vector<int> &ranks) {
  std::string text;
  for (int r : ranks)
    text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

} // namespace

overlap_status
overlap::process::exchange(ProcessWorld &process, const GroupState &group,
                           uint64_t call, const std::string &kind,
                           Exchange &messages, std::string &what) {
  const overlap_mpi_transport &mpi = *process.mpi.api;
  host::World &world = process.world;
  const int size = group.size(), me = group.rank;
  const int tag = process.tagOf(call);
  messages.received.assign(size, std::string());

  // One message per distinct payload (an all-gather sends one to all).
  std::vector<std::shared_ptr<std::string>> out(size);
  for (int p = 0; p < size; ++p) {
    if (p == me)
      continue;
    for (int q = 0; q < p && !out[p]; ++q)
      if (q != me && messages.payloads[q] == messages.payloads[p])
        out[p] = out[q];
    if (out[p])
      continue;
    size_t bytes = messages.payloads[p].second;
    if (bytes > size_t(INT_MAX) - headerBytes(kind.size())) {
      what = "a message of " + std::to_string(bytes) +
             " bytes to one rank: the process backend sends at most " +
             std::to_string(INT_MAX - headerBytes(kind.size())) +
             " bytes to each rank per call";
      return OVERLAP_ERROR_INVALID_ARGUMENT;
    }
    out[p] = encode(call, kind, messages.payloads[p].first, bytes);
  }

  std::vector<overlap_mpi_request> sends(size, nullptr);
  // Sends that never completed keep their buffers until the launch ends.
  auto abandon = [&](overlap_status status) {
    for (int p = 0; p < size; ++p)
      if (sends[p])
        process.keep(sends[p], out[p]);
    return status;
  };
  for (int p = 0; p < size; ++p) {
    if (p == me)
      continue;
    if (int rc = mpi.issend(group.comm, p, tag, out[p]->data(),
                            static_cast<int>(out[p]->size()), &sends[p])) {
      what = process.mpi.error("MPI_Issend", rc);
      return abandon(OVERLAP_ERROR_INTERNAL);
    }
  }

  std::vector<std::string> kinds(size);
  kinds[me] = kind;
  std::vector<char> got(size, 0);
  got[me] = 1;
  const host::Clock::time_point deadline = world.deadline();
  Backoff backoff;
  for (;;) {
    bool moved = false, done = true;
    for (int p = 0; p < size; ++p) {
      if (got[p])
        continue;
      int found = 0, source = 0, gotTag = 0, bytes = 0;
      overlap_mpi_message message = nullptr;
      if (int rc = mpi.improbe(group.comm, p, tag, &found, &message, &source,
                               &gotTag, &bytes)) {
        what = process.mpi.error("MPI_Improbe", rc);
        return abandon(OVERLAP_ERROR_INTERNAL);
      }
      if (!found) {
        done = false;
        continue;
      }
      std::string &text = messages.received[p];
      text.resize(static_cast<size_t>(bytes));
      if (int rc = mpi.mrecv(message, &text[0], bytes)) {
        what = process.mpi.error("MPI_Mrecv", rc);
        return abandon(OVERLAP_ERROR_INTERNAL);
      }
      uint64_t theirCall = 0;
      if (!decode(text, theirCall, kinds[p]) || theirCall != call) {
        what = "a malformed message from rank " +
               std::to_string(group.members[p]) + " (tag " +
               std::to_string(tag) + ") where call " + std::to_string(call) +
               " on the group was expected";
        return abandon(OVERLAP_ERROR_INTERNAL);
      }
      got[p] = 1;
      moved = true;
    }
    for (int p = 0; p < size; ++p) {
      if (!sends[p])
        continue;
      int complete = 0;
      if (int rc = mpi.test(&sends[p], &complete)) {
        what = process.mpi.error("MPI_Test", rc);
        return abandon(OVERLAP_ERROR_INTERNAL);
      }
      moved |= complete != 0;
      done &= complete != 0;
    }
    if (done)
      break;
    if (world.aborted.load(std::memory_order_acquire))
      return abandon(OVERLAP_ERROR_ABORTED);
    if (host::Clock::now() >= deadline) {
      std::vector<int> missing, unread;
      for (int p = 0; p < size; ++p) {
        if (!got[p])
          missing.push_back(group.members[p]);
        else if (sends[p])
          unread.push_back(group.members[p]);
      }
      std::string within = " within " +
                           std::to_string(world.options.waitTimeoutMs) +
                           " ms (group of " + std::to_string(size) + ", call " +
                           std::to_string(call) + " on the group)";
      what = !missing.empty()
                 ? "rank(s) " + joinRanks(missing) + " did not join" + within
                 : "rank(s) " + joinRanks(unread) +
                       " did not take this rank's message" + within;
      return abandon(OVERLAP_ERROR_TIMEOUT);
    }
    if (moved)
      backoff.progress();
    else
      backoff.idle();
  }

  // Every rank's call is known: they must all be this one.
  for (int p = 0; p < size; ++p) {
    if (kinds[p] == kind)
      continue;
    what = "mismatched collectives as call " + std::to_string(call) +
           " on the group: this rank issued " + kind + ", group rank " +
           std::to_string(p) + " issued " + kinds[p];
    return OVERLAP_ERROR_INVALID_ARGUMENT;
  }
  // The same call sends what this rank expects: as much as it sends back,
  // unless the call says otherwise (a shift sends to one peer only).
  for (int p = 0; p < size; ++p) {
    const size_t expected = messages.expected.empty()
                                ? messages.payloads[p].second
                                : messages.expected[p];
    if (p == me || messages.received[p].size() == expected)
      continue;
    what = "rank " + std::to_string(group.members[p]) + " sent " +
           std::to_string(messages.received[p].size()) + " bytes for " + kind +
           ", expected " + std::to_string(expected);
    return OVERLAP_ERROR_INTERNAL;
  }
  return OVERLAP_SUCCESS;
}

overlap_status
overlap::process::runCollective(ProcessWorld &process, const GroupState &group,
                                uint64_t call, const char *callName,
                                const CollectiveArgs &args, std::string &what) {
  const int size = group.size(), me = group.rank;
  const size_t elem = overlap_dtype_size(args.dtype);
  const size_t bytes = static_cast<size_t>(args.count) * elem;
  const char *src = static_cast<const char *>(args.src);
  char *dst = static_cast<char *>(args.dst);

  // A shift's peers: src goes to shiftTo, dst comes from shiftFrom
  // (Api.cpp took the shift mod G).
  const int shiftTo = static_cast<int>((me + args.shift) % size);
  const int shiftFrom = static_cast<int>((me - args.shift + size) % size);

  Exchange messages;
  messages.payloads.assign(size, {nullptr, 0});
  if (args.kind == CollectiveKind::Shift) {
    // Only shiftTo gets the payload and only shiftFrom sends one here; every
    // other rank an empty message, which still carries the call for the
    // agreement (a rank with another shift fails as a mismatch).
    messages.expected.assign(size, 0);
    if (shiftTo != me)
      messages.payloads[shiftTo] = {src, bytes};
    if (shiftFrom != me)
      messages.expected[shiftFrom] = bytes;
  }
  for (int p = 0; p < size; ++p) {
    switch (args.kind) {
    case CollectiveKind::Barrier:
    case CollectiveKind::Shift:
      break;
    case CollectiveKind::AllReduce:
    case CollectiveKind::AllGather:
      messages.payloads[p] = {src, bytes};
      break;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll:
      messages.payloads[p] = {src + p * bytes, bytes};
      break;
    }
  }
  // The messages are copies: from here on, writing the destination (in
  // place, too) cannot change what the peers receive.
  if (overlap_status status =
          exchange(process, group, call,
                   host::describeCollective(callName, args), messages, what))
    return status;

  /// Group rank p's contribution: this rank's own buffer at `offset`, or
  /// what p sent.
  auto from = [&](int p, size_t offset) -> const void * {
    return p == me ? static_cast<const void *>(src + offset)
                   : messages.received[p].data();
  };
  std::vector<const void *> srcs(size);
  switch (args.kind) {
  case CollectiveKind::Barrier:
    return OVERLAP_SUCCESS;

  case CollectiveKind::AllReduce:
  case CollectiveKind::ReduceScatter: {
    // Element i is op over group ranks 0, 1, ..., G-1 in that order, in f32,
    // rounded once: reduceKernel, as the threaded backend calls it.
    size_t own = args.kind == CollectiveKind::AllReduce ? 0 : me * bytes;
    for (int p = 0; p < size; ++p)
      srcs[p] = from(p, own);
    std::vector<char> result(bytes);
    host::reduceKernel(args.dtype, args.op, srcs.data(), size, args.count,
                       result.data());
    if (bytes)
      std::memcpy(dst, result.data(), bytes);
    return OVERLAP_SUCCESS;
  }

  case CollectiveKind::AllGather:
    if (bytes && dst + me * bytes != src)
      std::memmove(dst + me * bytes, src, bytes);
    for (int p = 0; p < size; ++p)
      if (p != me && bytes)
        std::memcpy(dst + p * bytes, messages.received[p].data(), bytes);
    return OVERLAP_SUCCESS;

  case CollectiveKind::AllToAll:
    for (int p = 0; p < size; ++p)
      if (bytes)
        std::memcpy(dst + p * bytes, from(p, me * bytes), bytes);
    return OVERLAP_SUCCESS;

  case CollectiveKind::Shift:
    // shift 0: this rank's own src (in place: nothing to copy).
    if (bytes && (shiftFrom != me || dst != src))
      std::memmove(dst,
                   shiftFrom == me ? src : messages.received[shiftFrom].data(),
                   bytes);
    return OVERLAP_SUCCESS;
  }
  return OVERLAP_ERROR_INTERNAL;
}
