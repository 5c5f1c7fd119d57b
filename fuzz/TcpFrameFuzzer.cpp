//===- TcpFrameFuzzer.cpp - Fuzz the TCP transport's frame reader -*- C++ -*-=//
//
// Input: a first byte that picks how the rest is cut into reads (1 to 64
// bytes at a time, as recv may return them), then the bytes a peer sends
// on a joined connection (lib/Runtime/Process/TcpFrames.cpp). Any input
// must give frames or one "malformed" with a reason, never a crash, an
// exception or an allocation past the limit: every complete frame has a
// known kind, a payload only on Data, and exactly as many bytes as its
// header says.
//
//===----------------------------------------------------------------------===//

#include "TcpJob.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace overlap::process::tcp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const size_t chunk = 1 + data[0] % 64;
  ++data, --size;
  FrameReader reader;
  size_t at = 0;
  while (at < size) {
    size_t n = std::min({chunk, reader.wanted(), size - at});
    if (n == 0)
      std::abort(); // a reader that wants nothing would spin for ever
    std::memcpy(reader.room(), data + at, n);
    at += n;
    FrameReader::Result result = reader.received(n);
    if (result == FrameReader::Malformed) {
      if (reader.why().empty())
        std::abort();
      return 0;
    }
    if (result != FrameReader::Complete)
      continue;
    const Frame &frame = reader.frame();
    auto message = reader.take();
    if (frame.kind != Data && frame.kind != Ack && frame.kind != Bye &&
        frame.kind != Abort)
      std::abort();
    if (frame.bytes > kMaxFrameBytes || !message ||
        message->data.size() != frame.bytes ||
        (frame.kind != Data && frame.bytes))
      std::abort();
  }
  return 0;
}
