//===- ShiftTest.cpp - overlap_shift on host ranks --------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_shift moves bytes unchanged, so every dtype is checked as bytes:
// rank r's src is a function of (seed, world rank, byte), different for
// every rank and every element, and its dst must be exactly the src of
// group rank (r - shift) mod G, with the bytes after it untouched. A wrong
// peer, a wrong offset or a copy of the wrong length shows.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

using namespace overlap::test;

namespace {

const overlap_dtype kAllDtypes[] = {OVERLAP_F32, OVERLAP_F16, OVERLAP_BF16,
                                    OVERLAP_F64, OVERLAP_I8,  OVERLAP_I16,
                                    OVERLAP_I32, OVERLAP_I64};
const char *const kNames[] = {"f32", "f16", "bf16", "f64",
                              "i8",  "i16", "i32",  "i64"};
const unsigned char kPoison = 0xa5;
/// Bytes after each dst that no shift may write.
const size_t kGuard = 16;

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Byte `i` of world rank `rank`'s src for the call seeded `seed`.
unsigned char pattern(uint64_t seed, int rank, size_t i) {
  return static_cast<unsigned char>(
      mix(seed * 1000003u + uint64_t(rank) * 7919u + i) >> 56);
}

std::vector<unsigned char> srcOf(uint64_t seed, int rank, size_t bytes) {
  std::vector<unsigned char> out(bytes);
  for (size_t i = 0; i < bytes; ++i)
    out[i] = pattern(seed, rank, i);
  return out;
}

/// `dst` (with its guard) against `want`: the first wrong byte, if any.
void expectBytes(Failures &failures, const std::string &what,
                 const std::vector<unsigned char> &dst,
                 const std::vector<unsigned char> &want) {
  for (size_t i = 0; i < dst.size(); ++i) {
    unsigned char expected = i < want.size() ? want[i] : kPoison;
    if (dst[i] != expected) {
      failures.add(what + ": byte " + std::to_string(i) + " is " +
                   std::to_string(dst[i]) + ", want " +
                   std::to_string(expected) +
                   (i < want.size() ? "" : " (past the block)"));
      return;
    }
  }
}

int64_t mod(int64_t a, int64_t b) { return (a % b + b) % b; }

/// The shifts every group size is checked with: 0, 1, G-1, -1, G+1, and
/// ones far outside [0, G).
std::vector<int64_t> shiftsFor(int size) {
  return {0, 1, size - 1, -1, size + 1, -size - 2, 3 * int64_t(size) + 2};
}

/// Every shift, dtype and count on `group` (NULL: the world), whose world
/// ranks are `members` in group order; out of place, and in place where the
/// shift is 0 mod G. Several calls are in flight at once.
void checkShifts(overlap_context *ctx, overlap_group *group,
                 const std::vector<int> &members, uint64_t seed,
                 Failures &failures) {
  const int rank = overlap_context_rank(ctx);
  const int size = static_cast<int>(members.size());
  const int groupRank = static_cast<int>(
      std::find(members.begin(), members.end(), rank) - members.begin());
  const std::string who =
      "rank " + std::to_string(rank) + " group of " + std::to_string(size);
  for (int64_t shift : shiftsFor(size)) {
    for (overlap_dtype t : kAllDtypes) {
      const size_t elem = overlap_dtype_size(t);
      const size_t counts[] = {0, 1, 7, 1000};
      struct Call {
        size_t count;
        bool inPlace;
        std::vector<unsigned char> src, dst;
        uint64_t seed;
      };
      std::vector<Call> calls;
      for (size_t count : counts)
        for (bool inPlace : {false, true}) {
          if (inPlace && mod(shift, size) != 0)
            continue;
          uint64_t s = seed * 1000 + uint64_t(shift + 100) * 37 + t * 5 +
                       count + (inPlace ? 1 : 0);
          Call call{count, inPlace, srcOf(s, rank, count * elem),
                    std::vector<unsigned char>(count * elem + kGuard, kPoison),
                    s};
          if (inPlace && count) // memcpy of a null (empty) vector is UB
            std::memcpy(call.dst.data(), call.src.data(), count * elem);
          calls.push_back(std::move(call));
        }
      // Issued back to back on the comm stream before one synchronize.
      int64_t tile = 0;
      for (Call &call : calls) {
        const void *src = call.inPlace ? call.dst.data() : call.src.data();
        if (overlap_shift(ctx, OVERLAP_STREAM_COMM, tile++, group, t, shift,
                          src, call.dst.data(),
                          int64_t(call.count)) != OVERLAP_SUCCESS) {
          failures.add(who + ": " + overlap_last_error(ctx));
          return;
        }
      }
      if (overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
        failures.add(who + ": " + overlap_last_error(ctx));
        return;
      }
      const int from = members[mod(groupRank - shift, size)];
      for (const Call &call : calls)
        expectBytes(failures,
                    who + " " + kNames[t] + " shift " + std::to_string(shift) +
                        " count " + std::to_string(call.count) +
                        (call.inPlace ? " in place" : ""),
                    call.dst, srcOf(call.seed, from, call.count * elem));
    }
  }
}

class ShiftOnWorld : public ::testing::TestWithParam<int> {};

TEST_P(ShiftOnWorld, DstIsThePeersSrcBitForBit) {
  const int ranks = GetParam();
  std::vector<int> world;
  for (int r = 0; r < ranks; ++r)
    world.push_back(r);
  expectRanksPass(ranks, 0, [&](overlap_context *ctx, Failures &failures) {
    checkShifts(ctx, nullptr, world, 11, failures);
    checkShifts(ctx, overlap_context_world(ctx), world, 12, failures);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShiftOnWorld, ::testing::Values(1, 2, 3, 4, 5));

TEST(Shift, SubGroupsMapGroupRanksToTheirMembers) {
  // 6 ranks: rows of 3 (color rank / 3), columns of 2, and the world with
  // reversed keys, where group rank g is world rank 5 - g.
  Failures failures;
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(6, &opts, [&](overlap_context *ctx) {
    const int rank = overlap_context_rank(ctx);
    overlap_group *rows = nullptr, *cols = nullptr, *reversed = nullptr;
    overlap_group_split(ctx, nullptr, rank / 3, rank % 3, &rows);
    overlap_group_split(ctx, nullptr, rank % 3, rank / 3, &cols);
    overlap_group_split(ctx, nullptr, 0, -rank, &reversed);
    if (!rows || !cols || !reversed) {
      failures.add("split failed: " + std::string(overlap_last_error(ctx)));
      return;
    }
    std::vector<int> rowMembers, colMembers, reversedMembers;
    for (int j = 0; j < 3; ++j)
      rowMembers.push_back(rank / 3 * 3 + j);
    for (int i = 0; i < 2; ++i)
      colMembers.push_back(i * 3 + rank % 3);
    for (int g = 0; g < 6; ++g)
      reversedMembers.push_back(5 - g);
    checkShifts(ctx, rows, rowMembers, 21, failures);
    checkShifts(ctx, cols, colMembers, 22, failures);
    checkShifts(ctx, reversed, reversedMembers, 23, failures);
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u) << failures.text();
}

TEST(Shift, SrcIsNotReusedBeforeThePeerReadIt) {
  // Rank-major steps as the compiler issues them: shift, then overwrite
  // the src on the same stream for the next step. Under chaos (random
  // delays before every piece of stream work) a rank that left the shift
  // before its peer copied would hand the peer the next step's data.
  for (uint64_t seed : {1u, 2u, 3u}) {
    Failures failures;
    overlap_host_options opts = quietOptions();
    opts.chaos = OVERLAP_CHAOS_ON;
    opts.chaos_seed = seed;
    opts.chaos_max_delay_us = 2000;
    const int ranks = 4, steps = 6;
    const int64_t n = 257;
    overlap_status status = launch(ranks, &opts, [&](overlap_context *ctx) {
      const int rank = overlap_context_rank(ctx);
      std::vector<int32_t> src(n), dst(size_t(n) * steps, -1);
      for (int s = 0; s < steps; ++s) {
        // Step s's src: 1000 * s + 100 * rank + i, written on the stream.
        std::vector<int32_t> next(n);
        for (int64_t i = 0; i < n; ++i)
          next[size_t(i)] = int32_t(1000 * s + 100 * rank + i);
        auto *copy = new std::vector<int32_t>(next);
        overlap_memcpy(ctx, OVERLAP_STREAM_COMM, s, src.data(), copy->data(),
                       size_t(n) * 4);
        overlap_shift(ctx, OVERLAP_STREAM_COMM, s, nullptr, OVERLAP_I32, s + 1,
                      src.data(), dst.data() + s * n, n);
        overlap_launch_host_func(
            ctx, OVERLAP_STREAM_COMM,
            [](void *p) { delete static_cast<std::vector<int32_t> *>(p); },
            copy);
      }
      if (overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
        failures.add(overlap_last_error(ctx));
        return;
      }
      for (int s = 0; s < steps; ++s) {
        const int from = int(mod(rank - (s + 1), ranks));
        for (int64_t i = 0; i < n; ++i) {
          int32_t want = int32_t(1000 * s + 100 * from + i);
          if (dst[size_t(s * n + i)] != want) {
            failures.add("rank " + std::to_string(rank) + " step " +
                         std::to_string(s) + " element " + std::to_string(i) +
                         ": " + std::to_string(dst[size_t(s * n + i)]) +
                         ", want " + std::to_string(want));
            break;
          }
        }
      }
    });
    EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
    EXPECT_EQ(failures.count(), 0u) << "chaos seed " << seed << "\n"
                                    << failures.text();
  }
}


TEST(Shift, RefusesBadArguments) {
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8];
  const struct {
    int ranks;
    std::function<void(overlap_context *)> call;
    const char *error;
  } cases[] = {
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F32, 1, nullptr, b, 2);
       },
       "overlap_shift: rank 1, stream comm, tile 3: null buffer"},
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F32, 1, a, nullptr, 2);
       },
       "overlap_shift: rank 1, stream comm, tile 3: null buffer"},
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F32, 1, a, b, -1);
       },
       "overlap_shift: rank 1, stream comm, tile 3: negative count -1"},
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, overlap_dtype(9), 1, a, b, 2);
       },
       "overlap_shift: rank 1, stream comm, tile 3: unknown element type 9"},
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 5, 3, nullptr, OVERLAP_F32, 1, a, b, 2);
       },
       "overlap_shift: rank 1, stream 5, tile 3: no such stream (the context "
       "has 2)"},
      // In place is a copy to a peer: refused unless the shift is 0 mod G.
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F32, 1, a, a, 2);
       },
       "overlap_shift: rank 1, stream comm, tile 3: send and receive buffers "
       "overlap (8 bytes each, shift 1 in a group of 2)"},
      {3,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F32, -4, a, a + 1, 2);
       },
       "overlap_shift: rank 2, stream comm, tile 3: send and receive buffers "
       "overlap (8 bytes each, shift -4 in a group of 3)"},
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F16, 3, b + 1, b, 4);
       },
       "overlap_shift: rank 1, stream comm, tile 3: send and receive buffers "
       "overlap (8 bytes each, shift 3 in a group of 2)"},
      // Shift 0 (mod G) may be exactly in place, never partly.
      {2,
       [&](overlap_context *c) {
         overlap_shift(c, 1, 3, nullptr, OVERLAP_F32, 2, a, a + 1, 2);
       },
       "overlap_shift: rank 1, stream comm, tile 3: send and receive buffers "
       "overlap (8 bytes each, shift 2 in a group of 2: in place needs src == "
       "dst)"},
  };
  for (const auto &c : cases) {
    auto [status, error] = badCall(c.ranks, c.call);
    EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT) << c.error;
    EXPECT_EQ(error, c.error);
  }
  // Count 0 needs no buffers; buffers that merely touch are distinct.
  expectRanksPass(2, 0, [&](overlap_context *ctx, Failures &failures) {
    float own[8];
    const int rank = overlap_context_rank(ctx);
    for (int i = 0; i < 8; ++i)
      own[i] = float(10 * rank + i);
    if (overlap_shift(ctx, 1, 0, nullptr, OVERLAP_F32, 1, nullptr, nullptr,
                      0) != OVERLAP_SUCCESS ||
        overlap_shift(ctx, 1, 1, nullptr, OVERLAP_F32, 1, own, own + 4, 4) !=
            OVERLAP_SUCCESS ||
        overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
      failures.add(overlap_last_error(ctx));
      return;
    }
    for (int i = 0; i < 4; ++i)
      if (own[4 + i] != float(10 * (1 - rank) + i))
        failures.add("rank " + std::to_string(rank) + " element " +
                     std::to_string(i) + ": " + std::to_string(own[4 + i]));
  });
}

TEST(Shift, DifferentShiftsAreAMismatch) {
  // Group of 3: rank 1 shifts by 2, the others by 1.
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(3, &opts, [&](overlap_context *ctx) {
    float send[2] = {1, 2}, recv[2];
    const int rank = overlap_context_rank(ctx);
    overlap_shift(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32,
                  rank == 1 ? 2 : 1, send, recv, 2);
    overlap_context_synchronize(ctx);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  std::string error = overlap_host_launch_error();
  EXPECT_NE(error.find("mismatched collectives as call 0 on the group"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("overlap_shift(f32, shift 1, count 2)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("overlap_shift(f32, shift 2, count 2)"),
            std::string::npos)
      << error;
}

TEST(Shift, ShiftsEqualModGAreTheSameCall) {
  // -1, 2 and 5 are one permutation of a group of 3.
  expectRanksPass(3, 5000, [&](overlap_context *ctx, Failures &failures) {
    const int rank = overlap_context_rank(ctx);
    int32_t send[3] = {rank, 10 + rank, 20 + rank}, recv[3] = {-1, -1, -1};
    const int64_t shift = rank == 0 ? -1 : rank == 1 ? 2 : 5;
    if (overlap_shift(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_I32, shift,
                      send, recv, 3) != OVERLAP_SUCCESS ||
        overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
      failures.add(overlap_last_error(ctx));
      return;
    }
    const int from = (rank + 1) % 3;
    if (recv[0] != from || recv[1] != 10 + from || recv[2] != 20 + from)
      failures.add("rank " + std::to_string(rank) + ": got " +
                   std::to_string(recv[0]) + " " + std::to_string(recv[1]) +
                   " " + std::to_string(recv[2]));
  });
}

TEST(Shift, AgainstAnotherCollectiveIsAMismatch) {
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(2, &opts, [&](overlap_context *ctx) {
    float send[4] = {1, 2, 3, 4}, recv[4];
    if (overlap_context_rank(ctx) == 0)
      overlap_shift(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32, 1, send,
                    recv, 2);
    else
      overlap_all_to_all(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32,
                         send, recv, 1);
    overlap_context_synchronize(ctx);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  std::string error = overlap_host_launch_error();
  EXPECT_NE(error.find("overlap_shift(f32, shift 1, count 2)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("overlap_all_to_all(f32, count 1)"), std::string::npos)
      << error;
}

} // namespace

// overlap_fuse_begin / overlap_fuse_end: the host backends run the calls
// between as they come, so fused shifts give what the same shifts give
// alone; the pairs nest per stream, and an end without a begin is refused.
TEST(Shift, FusedShiftsAreTheShiftsInOrder) {
  expectRanksPass(4, 0, [&](overlap_context *ctx, Failures &failures) {
    const int rank = overlap_context_rank(ctx);
    float src[3][4], dst[3][4];
    for (int s = 0; s < 3; ++s)
      for (int i = 0; i < 4; ++i) {
        src[s][i] = float(100 * rank + 10 * s + i);
        dst[s][i] = -1;
      }
    bool ok = overlap_fuse_begin(ctx, 1) == OVERLAP_SUCCESS &&
              overlap_fuse_begin(ctx, 1) == OVERLAP_SUCCESS; // nested
    for (int s = 0; s < 3 && ok; ++s)
      ok = overlap_shift(ctx, 1, s, nullptr, OVERLAP_F32, s + 1, src[s],
                         dst[s], 4) == OVERLAP_SUCCESS;
    ok = ok && overlap_fuse_end(ctx, 1) == OVERLAP_SUCCESS &&
         overlap_fuse_end(ctx, 1) == OVERLAP_SUCCESS &&
         overlap_stream_synchronize(ctx, 1) == OVERLAP_SUCCESS;
    if (!ok) {
      failures.add("a fused call failed: " +
                   std::string(overlap_last_error(ctx)));
      return;
    }
    for (int s = 0; s < 3; ++s) {
      int from = int(mod(rank - (s + 1), 4));
      for (int i = 0; i < 4; ++i)
        if (dst[s][i] != float(100 * from + 10 * s + i))
          failures.add("rank " + std::to_string(rank) + " shift " +
                       std::to_string(s + 1) + ": element " +
                       std::to_string(i) + " is " + std::to_string(dst[s][i]));
    }
  });
  auto [status, error] = badCall(2, [](overlap_context *c) {
    overlap_fuse_end(c, 1);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "overlap_fuse_end: rank 1, stream comm: no "
                   "overlap_fuse_begin open on this stream");
}
