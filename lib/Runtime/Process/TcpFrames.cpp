//===- TcpFrames.cpp - The frames of a TCP connection -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// A header is checked before anything it claims is believed: a peer that
// claims 2^40 bytes, an unknown kind or a payload on a goodbye is a broken
// peer (its connection is dropped with the reason), never an allocation
// that throws in the reader thread; and a payload's buffer grows with the
// bytes that arrive (1 MiB at a time), not with what the header claims.
//
//===----------------------------------------------------------------------===//

#include "TcpJob.h"

#include <algorithm>

using namespace overlap::process::tcp;

/// The most payload one read takes: a frame's buffer grows as its bytes
/// arrive, so a header that claims more than it sends costs nothing.
constexpr size_t kChunk = size_t(1) << 20;

char *FrameReader::room() {
  if (!inPayload_)
    return reinterpret_cast<char *>(&frame_) + headerGot_;
  std::string &data = reading_->data;
  if (data.size() < payloadGot_ + wanted())
    data.resize(payloadGot_ + wanted());
  return &data[payloadGot_];
}

size_t FrameReader::wanted() const {
  if (!inPayload_)
    return sizeof frame_ - headerGot_;
  return std::min(static_cast<size_t>(frame_.bytes) - payloadGot_, kChunk);
}

FrameReader::Result FrameReader::received(size_t count) {
  if (inPayload_) {
    payloadGot_ += count;
    if (payloadGot_ < frame_.bytes)
      return More;
    reading_->data.resize(payloadGot_);
    inPayload_ = false;
    headerGot_ = 0;
    return Complete;
  }
  headerGot_ += count;
  if (headerGot_ < sizeof frame_)
    return More;
  const std::string header = "a frame of kind " + std::to_string(frame_.kind) +
                             " with " + std::to_string(frame_.bytes) + " bytes";
  if (frame_.kind != Data && frame_.kind != Ack && frame_.kind != Bye &&
      frame_.kind != Abort) {
    why_ = header + ": no such kind";
    return Malformed;
  }
  if (frame_.kind != Data && frame_.bytes) {
    why_ = header + ": only data carries bytes";
    return Malformed;
  }
  if (frame_.bytes > kMaxFrameBytes) {
    why_ = header + ": more than " + std::to_string(kMaxFrameBytes) +
           ", the most a message may have";
    return Malformed;
  }
  reading_ = std::make_unique<overlap_mpi_message_s>();
  payloadGot_ = 0;
  if (frame_.bytes) {
    inPayload_ = true;
    return More;
  }
  headerGot_ = 0;
  return Complete;
}
