//===- CollectiveTest.cpp - Collectives against a serial reference -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Every rank's inputs are a function of (seed, rank), so each rank can
// compute the serial reference itself: reduce in f32 over the group ranks in
// order, round once. Results must match it bit for bit on every rank.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>

using namespace overlap::test;

namespace {

const overlap_dtype kDtypes[] = {OVERLAP_F32, OVERLAP_F16, OVERLAP_BF16};
const overlap_reduce_op kOps[] = {OVERLAP_SUM, OVERLAP_PROD, OVERLAP_MAX,
                                  OVERLAP_MIN, OVERLAP_AVG};
const char *const kOpNames[] = {"sum", "prod", "max", "min", "avg"};

/// Input of world rank `rank` for one collective call.
Buffer input(overlap_dtype t, overlap_reduce_op op, size_t n, uint64_t seed,
             int rank) {
  Buffer b(t, n);
  // Products of many ranks stay in range near 1.
  if (op == OVERLAP_PROD)
    b.randomize(seed * 1000 + rank, 0.5f, 1.5f);
  else
    b.randomize(seed * 1000 + rank);
  return b;
}

float combine(overlap_reduce_op op, float acc, float v) {
  switch (op) {
  case OVERLAP_SUM:
  case OVERLAP_AVG:
    return acc + v;
  case OVERLAP_PROD:
    return acc * v;
  case OVERLAP_MAX:
    return v > acc ? v : acc;
  case OVERLAP_MIN:
    return v < acc ? v : acc;
  case OVERLAP_REDUCE_MAX_ENUM:
    break;
  }
  return acc;
}

/// Serial reference: element i reduced over `members` (world ranks, in
/// group order) of their inputs at `offset + i`.
Buffer reference(overlap_dtype t, overlap_reduce_op op,
                 const std::vector<Buffer> &inputs,
                 const std::vector<int> &members, size_t offset, size_t n) {
  Buffer out(t, n);
  for (size_t i = 0; i < n; ++i) {
    float acc = inputs[members[0]].get(offset + i);
    for (size_t p = 1; p < members.size(); ++p)
      acc = combine(op, acc, inputs[members[p]].get(offset + i));
    if (op == OVERLAP_AVG)
      acc /= static_cast<float>(members.size());
    out.set(i, acc);
  }
  return out;
}

/// Counts elements whose bits differ; reports the first few.
void compare(Failures &failures, const std::string &what, const Buffer &got,
             size_t gotOffset, const Buffer &want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got.bits(gotOffset + i) != want.bits(i)) {
      std::ostringstream os;
      os << what << " element " << i << ": got " << got.get(gotOffset + i)
         << ", want " << want.get(i);
      failures.add(os.str());
      return;
    }
  }
}

/// Where this rank stands in a group of `members` (world ranks): its world
/// rank, the group's size and its index in the group.
struct Place {
  int rank, size, groupRank;
};
Place placeIn(overlap_context *ctx, const std::vector<int> &members) {
  const int rank = overlap_context_rank(ctx);
  return {rank, static_cast<int>(members.size()),
          static_cast<int>(std::find(members.begin(), members.end(), rank) -
                           members.begin())};
}

/// All three collectives with every reduction, on `group` (NULL: world),
/// checked against the reference. `members` are the group's world ranks.
void checkCollectives(overlap_context *ctx, overlap_group *group,
                      const std::vector<int> &members, overlap_dtype t,
                      uint64_t seed, Failures &failures) {
  const auto [rank, size, groupRank] = placeIn(ctx, members);
  const size_t kCounts[] = {1, 7, 1000}; // fewer elements than ranks, too
  std::ostringstream prefix;
  prefix << "rank " << rank << " " << dtypeName(t) << " group of " << size;

  for (size_t count : kCounts) {
    for (int o = 0; o < 5; ++o) {
      overlap_reduce_op op = kOps[o];
      uint64_t s = seed * 97 + count * 7 + o;
      std::string tag =
          prefix.str() + " count " + std::to_string(count) + " " + kOpNames[o];
      std::vector<Buffer> all, allScatter;
      for (int r = 0; r < overlap_context_size(ctx); ++r) {
        all.push_back(input(t, op, count, s, r));
        allScatter.push_back(input(t, op, count * size, s + 1, r));
      }
      Buffer inPlace = all[rank];
      Buffer outOfPlace(t, count);
      outOfPlace.fill(nan());
      Buffer scatterDst(t, count);
      scatterDst.fill(nan());
      Buffer scatterInPlace = allScatter[rank];
      overlap_context *c = ctx;
      int32_t comm = OVERLAP_STREAM_COMM;
      overlap_all_reduce(c, comm, 0, group, t, op, inPlace.data(),
                         inPlace.data(), count);
      overlap_all_reduce(c, comm, 1, group, t, op, all[rank].data(),
                         outOfPlace.data(), count);
      overlap_reduce_scatter(c, comm, 2, group, t, op, allScatter[rank].data(),
                             scatterDst.data(), count);
      size_t elem = overlap_dtype_size(t);
      overlap_reduce_scatter(c, comm, 3, group, t, op, scatterInPlace.data(),
                             scatterInPlace.bytes() + groupRank * count * elem,
                             count);
      if (overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
        failures.add(tag + ": " + overlap_last_error(ctx));
        return;
      }
      Buffer want = reference(t, op, all, members, 0, count);
      compare(failures, tag + " all-reduce in place", inPlace, 0, want);
      compare(failures, tag + " all-reduce", outOfPlace, 0, want);
      Buffer wantScatter =
          reference(t, op, allScatter, members, groupRank * count, count);
      compare(failures, tag + " reduce-scatter", scatterDst, 0, wantScatter);
      compare(failures, tag + " reduce-scatter in place", scatterInPlace,
              groupRank * count, wantScatter);
    }

    // All-gather, out of place and in place.
    std::vector<Buffer> all;
    for (int r = 0; r < overlap_context_size(ctx); ++r)
      all.push_back(input(t, OVERLAP_SUM, count, seed + count, r));
    Buffer gathered(t, count * size), inPlace(t, count * size);
    gathered.fill(nan());
    inPlace.fill(nan());
    size_t bytes = count * overlap_dtype_size(t);
    std::memcpy(inPlace.bytes() + groupRank * bytes, all[rank].data(), bytes);
    overlap_all_gather(ctx, OVERLAP_STREAM_COMM, 4, group, t, all[rank].data(),
                       gathered.data(), count);
    overlap_all_gather(ctx, OVERLAP_STREAM_COMM, 5, group, t,
                       inPlace.bytes() + groupRank * bytes, inPlace.data(),
                       count);
    if (overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
      failures.add(prefix.str() + ": " + overlap_last_error(ctx));
      return;
    }
    for (int g = 0; g < size; ++g) {
      std::string tag = prefix.str() + " all-gather count " +
                        std::to_string(count) + " block " + std::to_string(g);
      compare(failures, tag, gathered, g * count, all[members[g]]);
      compare(failures, tag + " in place", inPlace, g * count, all[members[g]]);
    }
  }
}

/// All-to-all on `group`: rank r's send block j is a function of (seed, r,
/// j), so every rank knows what each block of its receive buffer must hold.
void checkAllToAll(overlap_context *ctx, overlap_group *group,
                   const std::vector<int> &members, overlap_dtype t,
                   uint64_t seed, Failures &failures) {
  const auto [rank, size, groupRank] = placeIn(ctx, members);
  auto block = [&](int worldRank, int to, size_t count) {
    return input(t, OVERLAP_SUM, count, seed * 131 + count * 17 + to,
                 worldRank);
  };
  for (size_t count : {size_t(1), size_t(7), size_t(1000)}) {
    Buffer send(t, count * size), recv(t, count * size);
    size_t bytes = count * overlap_dtype_size(t);
    for (int j = 0; j < size; ++j)
      std::memcpy(send.bytes() + j * bytes, block(rank, j, count).data(),
                  bytes);
    recv.fill(nan());
    if (overlap_all_to_all(ctx, OVERLAP_STREAM_COMM, 6, group, t, send.data(),
                           recv.data(), int64_t(count)) != OVERLAP_SUCCESS ||
        overlap_context_synchronize(ctx) != OVERLAP_SUCCESS) {
      failures.add("rank " + std::to_string(rank) + ": " +
                   overlap_last_error(ctx));
      return;
    }
    for (int j = 0; j < size; ++j)
      compare(failures,
              "rank " + std::to_string(rank) + " " + dtypeName(t) +
                  " all-to-all count " + std::to_string(count) + " block " +
                  std::to_string(j),
              recv, j * count, block(members[j], groupRank, count));
  }
}

class CollectivesOnWorld : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesOnWorld, MatchReferenceBitForBit) {
  const int ranks = GetParam();
  std::vector<int> world;
  for (int r = 0; r < ranks; ++r)
    world.push_back(r);
  for (overlap_dtype t : kDtypes) {
    Failures failures;
    overlap_host_options opts = quietOptions();
    overlap_status status = launch(ranks, &opts, [&](overlap_context *ctx) {
      // Half the calls name the world group, half pass NULL.
      overlap_group *group =
          t == OVERLAP_F16 ? nullptr : overlap_context_world(ctx);
      checkCollectives(ctx, group, world, t, 17 + t, failures);
      checkAllToAll(ctx, group, world, t, 23 + t, failures);
    });
    EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
    EXPECT_EQ(failures.count(), 0u) << failures.text();
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesOnWorld,
                         ::testing::Values(1, 2, 3, 4, 8));

/// Grid coordinates of `rank` in a row-major grid.
std::vector<int> coords(int rank, const std::vector<int> &shape) {
  std::vector<int> c(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    c[d] = rank % shape[d];
    rank /= shape[d];
  }
  return c;
}

TEST(Collectives, SubGroupsOfGridAxes) {
  // shard.grid @tp(shape = 2x4): axes [1] gives 2 groups of 4, axes [0]
  // gives 4 groups of 2; a reversed key reverses the group order.
  const std::vector<int> shape = {2, 4};
  Failures failures;
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(8, &opts, [&](overlap_context *ctx) {
    int rank = overlap_context_rank(ctx);
    std::vector<int> c = coords(rank, shape);
    overlap_group *rows = nullptr, *cols = nullptr, *reversed = nullptr;
    overlap_group *none = reinterpret_cast<overlap_group *>(1);
    EXPECT_EQ(overlap_group_split(ctx, nullptr, c[0], c[1], &rows),
              OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_group_split(ctx, nullptr, c[1], c[0], &cols),
              OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_group_split(ctx, rows, 0, -c[1], &reversed),
              OVERLAP_SUCCESS);
    // Only rank 0 joins: everybody else gets no group.
    EXPECT_EQ(overlap_group_split(ctx, nullptr,
                                  rank == 0 ? 0 : OVERLAP_UNDEFINED_COLOR, 0,
                                  &none),
              OVERLAP_SUCCESS);
    if (!rows || !cols || !reversed) {
      failures.add("split failed: " + std::string(overlap_last_error(ctx)));
      return;
    }
    std::vector<int> rowMembers, colMembers, reversedMembers;
    for (int j = 0; j < 4; ++j)
      rowMembers.push_back(c[0] * 4 + j);
    for (int i = 0; i < 2; ++i)
      colMembers.push_back(i * 4 + c[1]);
    reversedMembers.assign(rowMembers.rbegin(), rowMembers.rend());
    if (overlap_group_size(rows) != 4 || overlap_group_rank(rows) != c[1] ||
        overlap_group_size(cols) != 2 || overlap_group_rank(cols) != c[0] ||
        overlap_group_rank(reversed) != 3 - c[1])
      failures.add("rank " + std::to_string(rank) + ": wrong group rank/size");
    if ((rank == 0) != (none != nullptr))
      failures.add("rank " + std::to_string(rank) + ": undefined color");
    checkCollectives(ctx, rows, rowMembers, OVERLAP_F32, 3, failures);
    checkCollectives(ctx, cols, colMembers, OVERLAP_BF16, 4, failures);
    checkCollectives(ctx, reversed, reversedMembers, OVERLAP_F16, 5, failures);
    checkAllToAll(ctx, rows, rowMembers, OVERLAP_BF16, 7, failures);
    checkAllToAll(ctx, reversed, reversedMembers, OVERLAP_F32, 8, failures);
    if (none)
      checkCollectives(ctx, none, {0}, OVERLAP_F32, 6, failures);
    EXPECT_EQ(overlap_group_destroy(ctx, cols), OVERLAP_SUCCESS);
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u) << failures.text();
}

TEST(Collectives, ConcurrentGroupsOnSeveralStreams) {
  // Two groups' all-reduces run at once on streams 1 and 2, and a barrier
  // orders stream 0; the results must not mix.
  Failures failures;
  overlap_host_options opts = quietOptions();
  opts.num_streams = 3;
  overlap_status status = launch(4, &opts, [&](overlap_context *ctx) {
    int rank = overlap_context_rank(ctx);
    overlap_group *half = nullptr;
    overlap_group_split(ctx, nullptr, rank / 2, rank, &half);
    std::vector<float> a(513, float(rank + 1)), b(513, float(10 * (rank + 1)));
    overlap_all_reduce(ctx, 1, 0, nullptr, OVERLAP_F32, OVERLAP_SUM, a.data(),
                       a.data(), 513);
    overlap_all_reduce(ctx, 2, 1, half, OVERLAP_F32, OVERLAP_SUM, b.data(),
                       b.data(), 513);
    overlap_barrier(ctx, 0, 2, nullptr);
    overlap_context_synchronize(ctx);
    float wantB = rank < 2 ? 30.0f : 70.0f;
    for (int i = 0; i < 513; ++i)
      if (a[i] != 10.0f || b[i] != wantB) {
        failures.add("rank " + std::to_string(rank) + " element " +
                     std::to_string(i));
        break;
      }
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u) << failures.text();
}


TEST(Collectives, AllToAllRefusesBadArguments) {
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8];
  const struct {
    std::function<void(overlap_context *)> call;
    const char *error;
  } cases[] = {
      {[&](overlap_context *c) {
         overlap_all_to_all(c, 1, 3, nullptr, OVERLAP_F32, nullptr, b, 2);
       },
       "overlap_all_to_all: rank 1, stream comm, tile 3: null buffer"},
      {[&](overlap_context *c) {
         overlap_all_to_all(c, 1, 3, nullptr, OVERLAP_F32, a, b, -1);
       },
       "overlap_all_to_all: rank 1, stream comm, tile 3: negative count -1"},
      {[&](overlap_context *c) {
         overlap_all_to_all(c, 1, 3, nullptr, overlap_dtype(9), a, b, 2);
       },
       "overlap_all_to_all: rank 1, stream comm, tile 3: unknown element "
       "type 9"},
      {[&](overlap_context *c) {
         overlap_all_to_all(c, 1, 3, nullptr, OVERLAP_F32, a, a + 3, 2);
       },
       "overlap_all_to_all: rank 1, stream comm, tile 3: send and receive "
       "buffers overlap (16 bytes each)"},
  };
  for (const auto &c : cases) {
    auto [status, error] = badCall(2, c.call);
    EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT) << c.error;
    EXPECT_EQ(error, c.error);
  }
  // Buffers that merely touch are distinct.
  overlap_host_options opts = quietOptions();
  EXPECT_EQ(launch(1, &opts,
                   [&](overlap_context *ctx) {
                     EXPECT_EQ(overlap_all_to_all(ctx, 1, 0, nullptr,
                                                  OVERLAP_F32, a, a + 4, 4),
                               OVERLAP_SUCCESS);
                     overlap_context_synchronize(ctx);
                   }),
            OVERLAP_SUCCESS);
  EXPECT_EQ(a[4], 1.0f);
  EXPECT_EQ(a[7], 4.0f);
}

TEST(Collectives, AllToAllAgainstAnotherCollectiveIsAMismatch) {
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(2, &opts, [&](overlap_context *ctx) {
    float send[4] = {1, 2, 3, 4}, recv[4];
    if (overlap_context_rank(ctx) == 0)
      overlap_all_to_all(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32,
                         send, recv, 2);
    else
      overlap_all_gather(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32,
                         send, recv, 2);
    overlap_context_synchronize(ctx);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  std::string error = overlap_host_launch_error();
  EXPECT_NE(error.find("overlap_all_to_all(f32, count 2)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("overlap_all_gather(f32, count 2)"), std::string::npos)
      << error;
}

TEST(Collectives, ASumOfNegativeZerosIsPositiveZero) {
  // From +0.0, as XLA's CPU all-reduce (jax.lax.psum on CPU devices): the
  // sign shows in 1/x and rsqrt, where -inf and +inf differ.
  Failures failures;
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(3, &opts, [&](overlap_context *ctx) {
    float v[1] = {-0.0f};
    overlap_all_reduce(ctx, 1, 0, nullptr, OVERLAP_F32, OVERLAP_SUM, v, v, 1);
    overlap_context_synchronize(ctx);
    if (v[0] != 0.0f || std::signbit(v[0]))
      failures.add("rank " + std::to_string(overlap_context_rank(ctx)));
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u) << failures.text();
}

TEST(Collectives, NaNPropagatesThroughSumsAndIsSkippedByMaxAndMin) {
  // Sum, product and average propagate a NaN of one rank. Max and min skip
  // it, as XLA's CPU all-reduce (jax.lax.pmax on CPU devices) does, and
  // give -inf (+inf) where every rank has NaN.
  Failures failures;
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(3, &opts, [&](overlap_context *ctx) {
    int rank = overlap_context_rank(ctx);
    for (overlap_reduce_op op : kOps) {
      bool skips = op == OVERLAP_MAX || op == OVERLAP_MIN;
      float v[3] = {rank == 1 ? nan() : 2.0f + rank, 2.0f, nan()};
      overlap_all_reduce(ctx, 1, 0, nullptr, OVERLAP_F32, op, v, v, 3);
      overlap_context_synchronize(ctx);
      bool first =
          skips ? v[0] == (op == OVERLAP_MAX ? 4.0f : 2.0f) : std::isnan(v[0]);
      bool last = skips ? v[2] == (op == OVERLAP_MAX ? -INFINITY : INFINITY)
                        : std::isnan(v[2]);
      if (!first || std::isnan(v[1]) || !last)
        failures.add("op " + std::to_string(op) + " on rank " +
                     std::to_string(rank) + ": " + std::to_string(v[0]) + " " +
                     std::to_string(v[1]) + " " + std::to_string(v[2]));
    }
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(failures.count(), 0u) << failures.text();
}

} // namespace
