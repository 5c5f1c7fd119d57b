//===- PackTest.cpp - Pack/unpack of strided blocks, copies, memory -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

using namespace overlap::test;

namespace {

struct Block {
  int64_t n0, n1, n2, s0, s1;
};

const Block kBlocks[] = {
    {1, 5, 3, 0, 7},  // 2-D: 5 rows of 3 out of rows of 7
    {3, 4, 6, 40, 9}, // 3-D with gaps between rows and planes
    {2, 3, 4, 12, 4}, // contiguous: one copy
    {1, 1, 17, 0, 0}, // one row
    {4, 2, 1, 5, 2},  // single-element rows
};

TEST(Pack, PackThenUnpackMovesExactlyTheBlock) {
  for (int64_t elem : {1, 2, 4, 8, 12}) {
    for (const Block &blk : kBlocks) {
      int64_t span = (blk.n0 - 1) * blk.s0 + (blk.n1 - 1) * blk.s1 + blk.n2;
      std::vector<uint8_t> strided(size_t(span * elem)), packed,
          back(size_t(span * elem), 0xA5); // poison
      std::mt19937 rng(unsigned(elem * 100 + blk.n2));
      for (uint8_t &byte : strided)
        byte = uint8_t(rng() | 1); // never zero
      packed.assign(size_t(blk.n0 * blk.n1 * blk.n2 * elem), 0xA5);

      overlap_host_options opts = quietOptions();
      overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
        EXPECT_EQ(overlap_pack(ctx, 0, 0, elem, strided.data(), blk.n0, blk.n1,
                               blk.n2, blk.s0, blk.s1, packed.data()),
                  OVERLAP_SUCCESS);
        // The unpack is ordered after the pack by a signal on another stream.
        overlap_signals *sigs = nullptr;
        overlap_signals_create(ctx, 1, &sigs);
        overlap_signal(ctx, 0, sigs, 0);
        overlap_wait(ctx, 1, sigs, 0);
        EXPECT_EQ(overlap_unpack(ctx, 1, 0, elem, packed.data(), blk.n0, blk.n1,
                                 blk.n2, blk.s0, blk.s1, back.data()),
                  OVERLAP_SUCCESS);
        EXPECT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS);
      });
      ASSERT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();

      std::vector<bool> inBlock(size_t(span), false);
      size_t p = 0;
      int bad = 0;
      for (int64_t i0 = 0; i0 < blk.n0; ++i0)
        for (int64_t i1 = 0; i1 < blk.n1; ++i1)
          for (int64_t i2 = 0; i2 < blk.n2; ++i2, ++p) {
            int64_t at = i0 * blk.s0 + i1 * blk.s1 + i2;
            inBlock[size_t(at)] = true;
            for (int64_t byte = 0; byte < elem; ++byte)
              if (packed[p * elem + byte] != strided[at * elem + byte])
                ++bad;
          }
      for (int64_t at = 0; at < span; ++at)
        for (int64_t byte = 0; byte < elem; ++byte) {
          uint8_t want = inBlock[size_t(at)] ? strided[at * elem + byte] : 0xA5;
          if (back[at * elem + byte] != want)
            ++bad;
        }
      EXPECT_EQ(bad, 0) << "elem " << elem << " block " << blk.n0 << "x"
                        << blk.n1 << "x" << blk.n2;
    }
  }
}

TEST(Pack, UnpackRefusesOverlappingRows) {
  std::vector<float> packed(12, 1.0f), dst(64, 0.0f);
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    EXPECT_EQ(
        overlap_unpack(ctx, 1, 3, 4, packed.data(), 1, 3, 4, 0, 2, dst.data()),
        OVERLAP_ERROR_INVALID_ARGUMENT);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_unpack: rank 0, stream comm, tile 3: rows overlap: s1 "
               "(2) < n2 (4)");
}

TEST(Memory, AllocIsAlignedAndCopiesAreOrdered) {
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(2, &opts, [&](overlap_context *ctx) {
    void *a = nullptr, *b = nullptr;
    ASSERT_EQ(overlap_alloc(ctx, 1000, &a), OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_alloc(ctx, 1000, &b), OVERLAP_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    std::memset(a, 7, 1000);
    std::memset(b, 0, 1000);
    overlap_memcpy(ctx, 0, -1, b, a, 1000);
    overlap_stream_synchronize(ctx, 0);
    EXPECT_EQ(static_cast<uint8_t *>(b)[999], 7);
    overlap_free(ctx, a);
    overlap_free(ctx, b);
    void *none = &a;
    EXPECT_EQ(overlap_alloc(ctx, 0, &none), OVERLAP_SUCCESS);
    EXPECT_EQ(none, nullptr);
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  void *p = nullptr;
  EXPECT_EQ(overlap_alloc(nullptr, 10, &p), OVERLAP_SUCCESS);
  EXPECT_NE(p, nullptr);
  overlap_free(nullptr, p);
}

TEST(Memory, MemsetIsOrderedOnItsStreamAndChecksItsValue) {
  std::vector<uint8_t> buf(300, 9);
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    // In stream order after a copy that wrote the same bytes.
    std::vector<uint8_t> src(300, 3);
    ASSERT_EQ(overlap_memcpy(ctx, 0, 0, buf.data(), src.data(), 300),
              OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_memset(ctx, 0, 1, buf.data() + 100, 255, 100),
              OVERLAP_SUCCESS);
    ASSERT_EQ(overlap_stream_synchronize(ctx, 0), OVERLAP_SUCCESS);
    EXPECT_EQ(buf[99], 3);
    EXPECT_EQ(buf[100], 255);
    EXPECT_EQ(buf[199], 255);
    EXPECT_EQ(buf[200], 3);
    EXPECT_EQ(overlap_memset(ctx, 0, 2, nullptr, 0, 0), OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_memset(ctx, 0, 3, buf.data(), 256, 1),
              OVERLAP_ERROR_INVALID_ARGUMENT);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_memset: rank 0, stream compute, tile 3: value 256 is "
               "not a byte");
}

TEST(Launch, ContextQueriesAndOptions) {
  std::vector<int> ranks(5, -1);
  overlap_host_options opts = quietOptions();
  opts.num_streams = 4;
  overlap_status status = launch(5, &opts, [&](overlap_context *ctx) {
    ranks[overlap_context_rank(ctx)] = overlap_context_size(ctx);
    EXPECT_EQ(overlap_context_num_streams(ctx), 4);
    overlap_group *world = overlap_context_world(ctx);
    EXPECT_EQ(overlap_group_size(world), 5);
    EXPECT_EQ(overlap_group_rank(world), overlap_context_rank(ctx));
    EXPECT_EQ(overlap_context_status(ctx), OVERLAP_SUCCESS);
    EXPECT_STREQ(overlap_last_error(ctx), "");
  });
  EXPECT_EQ(status, OVERLAP_SUCCESS);
  EXPECT_STREQ(overlap_host_launch_error(), "");
  EXPECT_EQ(ranks, std::vector<int>(5, 5));

  EXPECT_EQ(launch(0, nullptr, [](overlap_context *) {}),
            OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_host_launch: ranks 0 is not in 1..4096");
  opts.num_streams = 17;
  EXPECT_EQ(launch(1, &opts, [](overlap_context *) {}),
            OVERLAP_ERROR_INVALID_ARGUMENT);
}

} // namespace
