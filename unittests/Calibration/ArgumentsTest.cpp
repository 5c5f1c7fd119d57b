//===- ArgumentsTest.cpp - Command lines of the measuring tools -----------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Arguments.h"
#include "overlap/Calibration/Knobs.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

namespace {

/// Parses `words` (without the program name) with the knobs and a few
/// options; the parsed Args.
Args parsed(std::vector<const char *> words, bool &ok) {
  words.insert(words.begin(), "tool");
  Args args({{"--iters", "N", "timed runs"},
             {"--name", "NAME", "a name"},
             {"--pack", "", "a switch"}});
  for (const std::string &knob : cudaKnobFlags())
    args.add({knob, "V", ""});
  ok = args.parse(int(words.size()), words.data());
  return args;
}

TEST(Arguments, GemmShapes) {
  auto shapes = parseGemmShapes("4096x8192x3072,1x2x3");
  ASSERT_TRUE(shapes);
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ((*shapes)[0].m, 4096);
  EXPECT_EQ((*shapes)[0].n, 8192);
  EXPECT_EQ((*shapes)[0].k, 3072);
  EXPECT_EQ((*shapes)[1].k, 3);
  for (const char *bad :
       {"", "1x2", "1x2x3x", "1x2x3junk", "0x2x3", "-1x2x3", "1x2x3,", ",1x2x3",
        "1 x2x3", "1x2x3,,4x5x6", "99999999999999999999x1x1"})
    EXPECT_FALSE(parseGemmShapes(bad)) << bad;
}

TEST(Arguments, Collectives) {
  auto one = parseCollectives("reduce-scatter");
  ASSERT_TRUE(one);
  EXPECT_EQ(*one, std::vector<Collective>{Collective::ReduceScatter});
  auto all = parseCollectives("all-gather,all-reduce,reduce-scatter");
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, (std::vector<Collective>{Collective::AllGather,
                                           Collective::AllReduce,
                                           Collective::ReduceScatter}));
  for (const char *bad : {"", "all-reduce,all-reduce", "allreduce",
                          "all-reduce,", "all-reduce, all-gather"})
    EXPECT_FALSE(parseCollectives(bad)) << bad;
}

TEST(Arguments, NkPairs) {
  auto pairs = parseNkPairs("8192x3072,1x2");
  ASSERT_TRUE(pairs);
  EXPECT_EQ(*pairs,
            (std::vector<std::pair<int64_t, int64_t>>{{8192, 3072}, {1, 2}}));
  for (const char *bad :
       {"", "8192", "8192x", "x3", "1x2x3", "1x2,", "0x2", "1x-2", "1x2 "})
    EXPECT_FALSE(parseNkPairs(bad)) << bad;
}

TEST(Arguments, DefaultSweep) {
  std::vector<GemmShape> shapes = defaultShapes();
  EXPECT_EQ(shapes.size(), 24u);
  EXPECT_EQ(defaultNkPairs().size(), 6u);
  bool hasReference = false;
  for (const GemmShape &s : shapes)
    hasReference |= s.m == 4096 && s.n == 8192 && s.k == 3072;
  EXPECT_TRUE(hasReference);
}

TEST(Arguments, Dtypes) {
  EXPECT_EQ(parseDtype("f16"), OVERLAP_F16);
  EXPECT_EQ(parseDtype("bf16"), OVERLAP_BF16);
  EXPECT_EQ(parseDtype("f32"), OVERLAP_F32);
  EXPECT_FALSE(parseDtype("F16"));
  EXPECT_FALSE(parseDtype("fp16"));
  EXPECT_EQ(elementBytes(OVERLAP_F32), 4u);
  EXPECT_EQ(elementBytes(OVERLAP_BF16), 2u);
  EXPECT_EQ(plannerDtype(OVERLAP_BF16), planner::DType::BF16);
  EXPECT_EQ(plannerDtype(OVERLAP_F32), planner::DType::F32);
}

TEST(Arguments, OptionsAndTheirErrors) {
  bool ok = false;
  Args args = parsed({"--iters", "7", "--pack", "--name", "x"}, ok);
  ASSERT_TRUE(ok) << args.error();
  EXPECT_TRUE(args.has("--pack"));
  EXPECT_EQ(args.getInt("--iters", 20), 7);
  EXPECT_EQ(args.getInt("--warmup", 5), 5);
  EXPECT_EQ(args.get("--name", ""), "x");
  EXPECT_TRUE(args.error().empty());

  args = parsed({"--iters", "0"}, ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(args.getInt("--iters", 20), 20);
  EXPECT_NE(args.error().find("--iters needs a positive integer"),
            std::string::npos)
      << args.error();
  // The first error is kept.
  args.fail("later");
  EXPECT_EQ(args.error().find("later"), std::string::npos);

  for (std::vector<const char *> bad :
       {std::vector<const char *>{"--unknown", "1"}, {"--iters"}}) {
    Args a = parsed(bad, ok);
    EXPECT_FALSE(ok);
    EXPECT_NE(a.error().find(bad[0]), std::string::npos) << a.error();
  }
}

//===----------------------------------------------------------------------===//
// The CUDA backend's knobs
//===----------------------------------------------------------------------===//

/// Options as overlap_cuda_options_init leaves them, without calling the
/// CUDA library: zeros, the size, and comm_sms at its own default.
overlap_cuda_options initialized() {
  overlap_cuda_options opts;
  std::memset(&opts, 0, sizeof(opts));
  opts.struct_size = sizeof(opts);
  opts.comm_sms = OVERLAP_CUDA_COMM_SMS_DEFAULT;
  return opts;
}

TEST(Knobs, EveryFlagSetsItsField) {
  bool ok = false;
  Args args = parsed({"--comm-sms", "0", "--comm-priority", "normal", "--flags",
                      "host", "--sync", "event", "--gemm-cache", "off",
                      "--gemm-autotune", "4", "--alloc", "sync",
                      "--nccl-cta-cap", "off", "--zero-sm-all-gather", "on"},
                     ok);
  ASSERT_TRUE(ok) << args.error();
  CudaKnobs k = readCudaKnobs(args);
  EXPECT_TRUE(args.error().empty()) << args.error();
  overlap_cuda_options opts = initialized();
  applyCudaKnobs(k, /*profileCommSms=*/12, opts);
  EXPECT_EQ(opts.comm_sms, 0); // the flag wins over the profile
  EXPECT_EQ(opts.comm_priority, OVERLAP_CUDA_KNOB_OFF);
  EXPECT_EQ(opts.device_flags, OVERLAP_CUDA_KNOB_OFF);
  EXPECT_EQ(opts.sync, OVERLAP_CUDA_SYNC_EVENT);
  EXPECT_EQ(opts.gemm_cache, OVERLAP_CUDA_KNOB_OFF);
  EXPECT_EQ(opts.gemm_autotune, 4);
  EXPECT_EQ(opts.stream_ordered_alloc, OVERLAP_CUDA_KNOB_OFF);
  EXPECT_EQ(opts.nccl_cta_cap, OVERLAP_CUDA_KNOB_OFF);
  EXPECT_EQ(opts.zero_sm_all_gather, OVERLAP_CUDA_KNOB_ON);
  EXPECT_EQ(describeCudaKnobs(k),
            "--comm-sms 0 --comm-priority normal --flags host --sync event "
            "--gemm-cache off --gemm-autotune 4 --alloc sync "
            "--nccl-cta-cap off --zero-sm-all-gather on");

  args = parsed({"--comm-priority", "high", "--flags", "device", "--sync",
                 "spin", "--gemm-cache", "on", "--alloc", "pool",
                 "--nccl-cta-cap", "on", "--zero-sm-all-gather", "off"},
                ok);
  k = readCudaKnobs(args);
  opts = initialized();
  applyCudaKnobs(k, std::nullopt, opts);
  EXPECT_EQ(opts.comm_priority, OVERLAP_CUDA_KNOB_ON);
  EXPECT_EQ(opts.device_flags, OVERLAP_CUDA_KNOB_ON);
  EXPECT_EQ(opts.sync, OVERLAP_CUDA_SYNC_SPIN);
  EXPECT_EQ(opts.gemm_cache, OVERLAP_CUDA_KNOB_ON);
  EXPECT_EQ(opts.stream_ordered_alloc, OVERLAP_CUDA_KNOB_ON);
  EXPECT_EQ(opts.nccl_cta_cap, OVERLAP_CUDA_KNOB_ON);
  EXPECT_EQ(opts.zero_sm_all_gather, OVERLAP_CUDA_KNOB_OFF);
  args = parsed({"--sync", "memop"}, ok);
  EXPECT_EQ(readCudaKnobs(args).sync, OVERLAP_CUDA_SYNC_MEMOP);
}

TEST(Knobs, UnsetFlagsLeaveTheRuntimeDefaults) {
  bool ok = false;
  Args args = parsed({}, ok);
  CudaKnobs k = readCudaKnobs(args);
  overlap_cuda_options opts = initialized(), before = opts;
  applyCudaKnobs(k, std::nullopt, opts);
  EXPECT_EQ(std::memcmp(&opts, &before, sizeof(opts)), 0);
  EXPECT_EQ(describeCudaKnobs(k), "");
  // A profile's comm_sms is the default of --comm-sms.
  applyCudaKnobs(k, 16, opts);
  EXPECT_EQ(opts.comm_sms, 16);
  applyCudaKnobs(k, 0, opts);
  EXPECT_EQ(opts.comm_sms, 0);
}

TEST(Knobs, TheCopyEngineLegReservesNoSms) {
  // Its copies take no SM: the tile GEMMs keep all of them, whatever the
  // profile says; the sm-copy and nccl legs keep the profile's budget.
  EXPECT_EQ(legDefaultCommSms(Leg::CopyEngine, 16), std::optional<int64_t>(0));
  EXPECT_EQ(legDefaultCommSms(Leg::CopyEngine, std::nullopt),
            std::optional<int64_t>(0));
  EXPECT_EQ(legDefaultCommSms(Leg::SmCopy, 16), std::optional<int64_t>(16));
  EXPECT_EQ(legDefaultCommSms(Leg::Nccl, std::nullopt), std::nullopt);
  EXPECT_EQ(legDefaultCommSms(std::nullopt, 8), std::optional<int64_t>(8));
  // --comm-sms still wins on the copy-engine leg.
  bool ok = false;
  Args args = parsed({"--comm-sms", "24"}, ok);
  ASSERT_TRUE(ok);
  overlap_cuda_options opts = initialized();
  applyCudaKnobs(readCudaKnobs(args), legDefaultCommSms(Leg::CopyEngine, 16),
                 opts);
  EXPECT_EQ(opts.comm_sms, 24);
}

TEST(Knobs, BadValuesNameTheFlagAndWhatItAccepts) {
  const std::vector<std::pair<std::vector<const char *>, const char *>> cases =
      {{{"--comm-sms", "-1"}, "--comm-sms: expected a number of SMs >= 0"},
       {{"--comm-sms", "lots"}, "--comm-sms: expected"},
       {{"--comm-sms", "99999999999"}, "--comm-sms: expected"},
       {{"--comm-priority", "low"},
        "--comm-priority: expected high or normal, got 'low'"},
       {{"--flags", "pinned"}, "--flags: expected device or host, got"},
       {{"--sync", "poll"}, "--sync: expected memop, spin or event, got"},
       {{"--gemm-cache", "yes"}, "--gemm-cache: expected on or off, got"},
       {{"--gemm-autotune", "0"},
        "--gemm-autotune: expected a number of "
        "algorithms from 1 to 16, got '0'"},
       {{"--gemm-autotune", "17"}, "--gemm-autotune: expected"},
       {{"--alloc", "async"}, "--alloc: expected pool or sync, got 'async'"},
       {{"--nccl-cta-cap", "yes"},
        "--nccl-cta-cap: expected on or off, got 'yes'"},
       {{"--zero-sm-all-gather", "ce"},
        "--zero-sm-all-gather: expected on or off, got 'ce'"}};
  for (const auto &[words, message] : cases) {
    bool ok = false;
    Args args = parsed(words, ok);
    ASSERT_TRUE(ok);
    CudaKnobs k = readCudaKnobs(args);
    EXPECT_NE(args.error().find(message), std::string::npos)
        << words[0] << " " << words[1] << ": " << args.error();
    EXPECT_EQ(args.error().find('\n'), std::string::npos);
    // The knob keeps its default.
    overlap_cuda_options opts = initialized(), before = opts;
    applyCudaKnobs(k, std::nullopt, opts);
    EXPECT_EQ(std::memcmp(&opts, &before, sizeof(opts)), 0) << words[0];
  }
}

} // namespace
