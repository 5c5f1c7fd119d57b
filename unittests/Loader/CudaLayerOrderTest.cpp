//===- CudaLayerOrderTest.cpp - A device layer's stream order -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA calls of one device-layer call (overlap.jax.jit on GPUs),
// recorded through a fake CUDA runtime table: every copy is a
// cudaMemcpyAsync on the caller's (XLA's) stream, never a cudaMemcpy on the
// legacy stream (which neither XLA's nor the context's non-blocking
// streams are ordered with); the context's streams wait for an event
// recorded after the inputs' copies; the caller's stream waits for each
// context stream before the outputs' copies; the results are freed only
// after the host has seen those copies end. No GPU: nothing here reaches
// libcudart. The same order on a GPU:
// test/Integration/device-layer-streams.test.
//
//===----------------------------------------------------------------------===//

#include "CudaLayerOrder.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace overlap::exec;
using namespace overlap::exec::layer_order;

namespace {

std::vector<std::string> calls;
cudaError_t failAt = cudaSuccess;
std::string failCall;

std::string name(const void *p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

cudaError_t result(const std::string &call) {
  calls.push_back(call);
  return call.rfind(failCall, 0) == 0 && !failCall.empty() ? failAt
                                                           : cudaSuccess;
}

// Handles are fake: distinct addresses that name themselves in the log.
char streamObjects[4], eventObjects[8];
int eventsMade = 0;
cudaStream_t stream(int i) {
  return reinterpret_cast<cudaStream_t>(&streamObjects[i]);
}
std::string streamName(cudaStream_t s) {
  for (int i = 0; i < 4; ++i)
    if (s == stream(i))
      return i == 3 ? "caller" : "s" + std::to_string(i);
  return s ? "?" : "legacy";
}
std::string eventName(cudaEvent_t e) {
  for (int i = 0; i < 8; ++i)
    if (reinterpret_cast<void *>(e) == &eventObjects[i])
      return "e" + std::to_string(i);
  return "?";
}

cudaError_t fakeMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind) {
  return result("cudaMemcpy " + name(dst) + " " + name(src) + " " +
                std::to_string(bytes));
}
cudaError_t fakeMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t s) {
  return result("cudaMemcpyAsync " + name(dst) + " " + name(src) + " " +
                std::to_string(bytes) +
                (kind == cudaMemcpyDeviceToDevice ? " d2d " : " ? ") +
                streamName(s));
}
cudaError_t fakeEventCreate(cudaEvent_t *event, unsigned flags) {
  *event = reinterpret_cast<cudaEvent_t>(&eventObjects[eventsMade++]);
  return result(std::string("cudaEventCreateWithFlags") +
                (flags & cudaEventDisableTiming ? " untimed" : " timed"));
}
cudaError_t fakeEventRecord(cudaEvent_t e, cudaStream_t s) {
  return result("cudaEventRecord " + eventName(e) + " " + streamName(s));
}
cudaError_t fakeStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  return result("cudaStreamWaitEvent " + streamName(s) + " " + eventName(e));
}
cudaError_t fakeEventSynchronize(cudaEvent_t e) {
  return result("cudaEventSynchronize " + eventName(e));
}
cudaError_t fakeEventDestroy(cudaEvent_t e) {
  return result("cudaEventDestroy " + eventName(e));
}
cudaError_t fakeStreamSynchronize(cudaStream_t s) {
  return result("cudaStreamSynchronize " + streamName(s));
}
cudaError_t fakeDeviceSynchronize() { return result("cudaDeviceSynchronize"); }
const char *fakeErrorName(cudaError_t) { return "cudaErrorFake"; }
const char *fakeErrorString(cudaError_t) { return "a fake failure"; }

CudaRt fakeTable() {
  CudaRt cu;
  cu.cudaMemcpy = fakeMemcpy;
  cu.cudaMemcpyAsync = fakeMemcpyAsync;
  cu.cudaEventCreateWithFlags = fakeEventCreate;
  cu.cudaEventRecord = fakeEventRecord;
  cu.cudaStreamWaitEvent = fakeStreamWaitEvent;
  cu.cudaEventSynchronize = fakeEventSynchronize;
  cu.cudaEventDestroy = fakeEventDestroy;
  cu.cudaStreamSynchronize = fakeStreamSynchronize;
  cu.cudaDeviceSynchronize = fakeDeviceSynchronize;
  cu.cudaGetErrorName = fakeErrorName;
  cu.cudaGetErrorString = fakeErrorString;
  return cu;
}

class CudaLayerOrder : public ::testing::Test {
protected:
  void SetUp() override {
    calls.clear();
    failCall.clear();
    failAt = cudaSuccess;
    eventsMade = 0;
  }
  CudaRt cu = fakeTable();
  std::vector<cudaStream_t> program{stream(0), stream(1)};
  cudaStream_t caller = stream(3);
  char in0[16], in1[16], arg0[16], arg1[16], res[16], out[16];
};

TEST_F(CudaLayerOrder, EventsAreUntimed) {
  Events events;
  std::string error;
  ASSERT_TRUE(createEvents(cu, 2, events, error)) << error;
  EXPECT_EQ(calls, std::vector<std::string>(4, "cudaEventCreateWithFlags "
                                               "untimed"));
  ASSERT_EQ(events.programDone.size(), 2u);
  calls.clear();
  destroyEvents(cu, events);
  EXPECT_EQ(calls.size(), 4u);
  EXPECT_EQ(events.inputsIn, nullptr);
}

TEST_F(CudaLayerOrder, OneCallInStreamOrder) {
  Events events;
  std::string error;
  ASSERT_TRUE(createEvents(cu, 2, events, error)) << error;
  // e0: inputs in, e1: outputs out, e2 / e3: the program's streams done.
  calls.clear();
  ASSERT_TRUE(waitCopiesOut(cu, events, error)) << error;
  EXPECT_TRUE(calls.empty()) << "nothing to wait for before the first call";
  ASSERT_TRUE(copyIn(cu, caller, program, events,
                     {{arg0, in0, 16, "input a"}, {arg1, in1, 8, "input b"}},
                     error))
      << error;
  ASSERT_TRUE(
      copyOut(cu, caller, program, events, {{out, res, 12, "output"}}, error))
      << error;
  std::vector<std::string> want = {
      "cudaMemcpyAsync " + name(arg0) + " " + name(in0) + " 16 d2d caller",
      "cudaMemcpyAsync " + name(arg1) + " " + name(in1) + " 8 d2d caller",
      "cudaEventRecord e0 caller",
      "cudaStreamWaitEvent s0 e0",
      "cudaStreamWaitEvent s1 e0",
      // (the program runs here on s0 and s1)
      "cudaEventRecord e2 s0",
      "cudaEventRecord e3 s1",
      "cudaStreamWaitEvent caller e2",
      "cudaStreamWaitEvent caller e3",
      "cudaMemcpyAsync " + name(out) + " " + name(res) + " 12 d2d caller",
      "cudaEventRecord e1 caller",
  };
  EXPECT_EQ(calls, want);
  for (const std::string &call : calls) {
    EXPECT_EQ(call.rfind("cudaMemcpy ", 0), std::string::npos)
        << "a synchronous copy on the legacy stream: " << call;
    EXPECT_EQ(call.find("legacy"), std::string::npos) << call;
  }
  // The next call frees the results only after the host saw the copies
  // out end; once.
  calls.clear();
  ASSERT_TRUE(waitCopiesOut(cu, events, error)) << error;
  ASSERT_TRUE(waitCopiesOut(cu, events, error)) << error;
  EXPECT_EQ(calls, std::vector<std::string>{"cudaEventSynchronize e1"});
}

TEST_F(CudaLayerOrder, FailedCopyNamesTheBufferAndStops) {
  Events events;
  std::string error;
  ASSERT_TRUE(createEvents(cu, 2, events, error)) << error;
  calls.clear();
  failCall = "cudaMemcpyAsync";
  failAt = cudaErrorInvalidValue;
  EXPECT_FALSE(
      copyIn(cu, caller, program, events, {{arg0, in0, 16, "input x"}}, error));
  EXPECT_NE(error.find("cudaMemcpyAsync (input x): cudaErrorFake"),
            std::string::npos)
      << error;
  EXPECT_EQ(calls.size(), 1u) << "no event after a failed copy";
}

TEST_F(CudaLayerOrder, FailedWaitIsAnError) {
  Events events;
  std::string error;
  ASSERT_TRUE(createEvents(cu, 1, events, error)) << error;
  ASSERT_TRUE(
      copyOut(cu, caller, {stream(0)}, events, {{out, res, 4, "o"}}, error));
  failCall = "cudaEventSynchronize";
  failAt = cudaErrorLaunchFailure;
  EXPECT_FALSE(waitCopiesOut(cu, events, error));
  EXPECT_NE(error.find("the last call's copies out"), std::string::npos)
      << error;
}

TEST_F(CudaLayerOrder, TooFewEventsIsRefused) {
  Events events;
  std::string error;
  ASSERT_TRUE(createEvents(cu, 1, events, error)) << error;
  calls.clear();
  EXPECT_FALSE(copyOut(cu, caller, program, events, {}, error));
  EXPECT_NE(error.find("events for 1 streams, not 2"), std::string::npos)
      << error;
  EXPECT_TRUE(calls.empty());
}

} // namespace
