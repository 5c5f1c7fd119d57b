//===- GroupCacheTest.cpp - overlap_group_split_cached ----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Compiled programs take their groups with overlap_group_split_cached at
// every entry call: the first call with a (parent, tag, color, key) splits,
// later ones return the same group without communicating; the tag tells
// partitions apart that give a rank the same color and key; destroying a
// cached group makes the next call split again. Host backend, so the tests
// run everywhere (Api.cpp holds the cache for both backends).
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

using namespace overlap::test;

namespace {

// Tags as the compiler would pass them: one per (grid shape, axes).
constexpr uint64_t kGrid4Axis0 = 0x1111;   // grid 4, axes [0]: the world
constexpr uint64_t kGrid2x2Axis1 = 0x2222; // grid 2x2, axes [1]: pairs

/// All-reduce (sum) of `rank + 1` over `group`, on the comm stream; the
/// result, or NaN after an error.
float sumOfRanks(overlap_context *ctx, overlap_group *group) {
  std::vector<float> v(33, float(overlap_context_rank(ctx) + 1));
  if (overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, group, OVERLAP_F32,
                         OVERLAP_SUM, v.data(), v.data(),
                         int64_t(v.size())) != OVERLAP_SUCCESS ||
      overlap_context_synchronize(ctx) != OVERLAP_SUCCESS)
    return nan();
  for (float x : v)
    if (x != v[0])
      return nan();
  return v[0];
}

std::string at(overlap_context *ctx) {
  return "rank " + std::to_string(overlap_context_rank(ctx)) + ": ";
}

TEST(GroupCache, SameTagSameGroupOtherTagOtherMembers) {
  // Rank 0 has color 0 and key 0 under both tags, but the groups differ: the
  // whole world (tag kGrid4Axis0) and the pair {0, 1} (kGrid2x2Axis1).
  expectRanksPass(4, 0, [](overlap_context *ctx, Failures &failures) {
    const int rank = overlap_context_rank(ctx);
    overlap_group *world = nullptr, *worldAgain = nullptr, *pair = nullptr,
                  *pairAgain = nullptr, *pairFromWorld = nullptr;
    if (overlap_group_split_cached(ctx, nullptr, kGrid4Axis0, 0, rank,
                                   &world) != OVERLAP_SUCCESS ||
        overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, rank / 2,
                                   rank % 2, &pair) != OVERLAP_SUCCESS ||
        overlap_group_split_cached(ctx, nullptr, kGrid4Axis0, 0, rank,
                                   &worldAgain) != OVERLAP_SUCCESS ||
        // NULL and the world group are the same parent.
        overlap_group_split_cached(ctx, overlap_context_world(ctx),
                                   kGrid2x2Axis1, rank / 2, rank % 2,
                                   &pairFromWorld) != OVERLAP_SUCCESS ||
        overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, rank / 2,
                                   rank % 2, &pairAgain) != OVERLAP_SUCCESS) {
      failures.add(at(ctx) + overlap_last_error(ctx));
      return;
    }
    if (worldAgain != world || pairAgain != pair || pairFromWorld != pair)
      failures.add(at(ctx) + "a repeated call returned another group");
    if (world == pair)
      failures.add(at(ctx) + "two tags gave one group");
    if (overlap_group_size(world) != 4 || overlap_group_rank(world) != rank ||
        overlap_group_size(pair) != 2 || overlap_group_rank(pair) != rank % 2)
      failures.add(at(ctx) + "wrong group rank or size");
    // Collectives over the cached groups: 1+2+3+4, and 1+2 or 3+4.
    const float wantWorld = 10.0f, wantPair = rank < 2 ? 3.0f : 7.0f;
    float gotWorld = sumOfRanks(ctx, worldAgain);
    float gotPair = sumOfRanks(ctx, pairAgain);
    if (gotWorld != wantWorld || gotPair != wantPair)
      failures.add(at(ctx) + "sums " + std::to_string(gotWorld) + ", " +
                   std::to_string(gotPair) + "; want " +
                   std::to_string(wantWorld) + ", " + std::to_string(wantPair));
  });
}

TEST(GroupCache, LaterCallsDoNotCommunicate) {
  // Rank 0 asks for the cached group again and again (and a rank without a
  // group for its NULL), the others do not. A split is a collective on the
  // parent: had any of those calls communicated, it would wait for ranks
  // that never come (timeout), or shift the parent's call count so that the
  // all-reduce below meets a split (a mismatch).
  expectRanksPass(4, 2000, [](overlap_context *ctx, Failures &failures) {
    const int rank = overlap_context_rank(ctx);
    const int color = rank == 3 ? OVERLAP_UNDEFINED_COLOR : rank / 2;
    overlap_group *first = nullptr;
    if (overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, color, rank % 2,
                                   &first) != OVERLAP_SUCCESS) {
      failures.add(at(ctx) + overlap_last_error(ctx));
      return;
    }
    if ((rank == 3) != (first == nullptr))
      failures.add(at(ctx) + "a group for OVERLAP_UNDEFINED_COLOR, or none");
    if (rank == 0 || rank == 3) {
      for (int again = 0; again < 3; ++again) {
        overlap_group *next = reinterpret_cast<overlap_group *>(1);
        if (overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, color,
                                       rank % 2, &next) != OVERLAP_SUCCESS ||
            next != first)
          failures.add(at(ctx) + "call " + std::to_string(again + 2) +
                       " gave another group: " + overlap_last_error(ctx));
      }
    }
    if (sumOfRanks(ctx, nullptr) != 10.0f)
      failures.add(at(ctx) + "world all-reduce: " + overlap_last_error(ctx));
  });
}

TEST(GroupCache, DestroyedGroupIsSplitAgain) {
  // Rank 0 destroys its cached group and asks again, while the other ranks
  // make a plain split of the same partition at that point: the two meet
  // only if rank 0's call splits again (a stale entry would return at once
  // and leave the others waiting until the timeout). The new group works.
  expectRanksPass(4, 2000, [](overlap_context *ctx, Failures &failures) {
    const int rank = overlap_context_rank(ctx);
    overlap_group *pair = nullptr;
    if (overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, rank / 2,
                                   rank % 2, &pair) != OVERLAP_SUCCESS) {
      failures.add(at(ctx) + overlap_last_error(ctx));
      return;
    }
    overlap_group *again = nullptr;
    overlap_status s;
    if (rank == 0) {
      EXPECT_EQ(overlap_group_destroy(ctx, pair), OVERLAP_SUCCESS);
      s = overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, 0, 0, &again);
    } else {
      s = overlap_group_split(ctx, nullptr, rank / 2, rank % 2, &again);
    }
    if (s != OVERLAP_SUCCESS || !again) {
      failures.add(at(ctx) + "second split: " + overlap_last_error(ctx));
      return;
    }
    if (overlap_group_size(again) != 2 || overlap_group_rank(again) != rank % 2)
      failures.add(at(ctx) + "wrong group rank or size after the re-split");
    const float want = rank < 2 ? 3.0f : 7.0f;
    if (sumOfRanks(ctx, again) != want)
      failures.add(at(ctx) +
                   "all-reduce over the new group: " + overlap_last_error(ctx));
    // From now on rank 0's cache holds the new group.
    if (rank == 0) {
      overlap_group *third = nullptr;
      overlap_group_split_cached(ctx, nullptr, kGrid2x2Axis1, 0, 0, &third);
      if (third != again)
        failures.add(at(ctx) + "the re-split was not cached");
    }
  });
}

TEST(GroupCache, SplitsOfADestroyedParentAreForgotten) {
  // Each round makes a new parent (halves {0, 1}, {2, 3}, then {0, 2},
  // {1, 3}, ...), takes the cached split of all of it (tag 7, color 0) and
  // destroys the parent only. The allocator tends to give the next parent
  // the address of the last: a cache that kept splits of a destroyed parent
  // would then return the last round's group, whose sum is the other
  // partition's.
  Failures failures;
  int reused = 0;
  std::mutex mutex;
  overlap_host_options opts = quietOptions(2000);
  overlap_status status = launch(4, &opts, [&](overlap_context *ctx) {
    const int rank = overlap_context_rank(ctx);
    overlap_group *last = nullptr;
    for (int round = 0; round < 6; ++round) {
      const bool byRows = round % 2 == 0;
      overlap_group *half = nullptr, *all = nullptr;
      overlap_group_split(ctx, nullptr, byRows ? rank / 2 : rank % 2, rank,
                          &half);
      if (!half ||
          overlap_group_split_cached(ctx, half, 7, 0, overlap_group_rank(half),
                                     &all) != OVERLAP_SUCCESS) {
        failures.add(at(ctx) + overlap_last_error(ctx));
        return;
      }
      if (half == last) {
        std::lock_guard<std::mutex> lock(mutex);
        ++reused;
      }
      last = half;
      const float want =
          byRows ? (rank < 2 ? 3.0f : 7.0f) : (rank % 2 ? 6.0f : 4.0f);
      if (sumOfRanks(ctx, all) != want)
        failures.add(at(ctx) + "round " + std::to_string(round) +
                     ": the cached split is not of this round's parent " +
                     overlap_last_error(ctx));
      overlap_group_destroy(ctx, half);
    }
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u)
      << failures.text() << "(parents at a reused address: " << reused << ")";
}

TEST(GroupCache, RefusesBadArguments) {
  std::string error = refusalOnOneRank([](overlap_context *ctx) {
    overlap_group *g = nullptr;
    EXPECT_EQ(overlap_group_split_cached(ctx, nullptr, 1, -5, 0, &g),
              OVERLAP_ERROR_INVALID_ARGUMENT);
  });
  EXPECT_NE(error.find("overlap_group_split_cached: rank 0: color -5 is "
                       "negative but not OVERLAP_UNDEFINED_COLOR"),
            std::string::npos)
      << error;
  EXPECT_EQ(overlap_group_split_cached(nullptr, nullptr, 1, 0, 0, nullptr),
            OVERLAP_ERROR_INVALID_ARGUMENT);
}

} // namespace
