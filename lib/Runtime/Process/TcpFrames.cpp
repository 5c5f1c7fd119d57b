//===- TcpFrames.cpp - The frames of a TCP connection -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// A header is checked before anything it claims is believed: a peer that
// claims 2^40 bytes, an unknown kind or a payload on a goodbye is a broken
// peer (its connection is dropped with the reason), never an allocation
// that throws in the reader thread.
//
//===----------------------------------------------------------------------===//

#include "TcpJob.h"

#include <new>

using namespace overlap::process::tcp;

char *FrameReader::room() {
  if (!inPayload_)
    return reinterpret_cast<char *>(&frame_) + headerGot_;
  return &reading_->data[payloadGot_];
}

size_t FrameReader::wanted() const {
  if (!inPayload_)
    return sizeof frame_ - headerGot_;
  return static_cast<size_t>(frame_.bytes) - payloadGot_;
}

FrameReader::Result FrameReader::received(size_t count) {
  if (inPayload_) {
    payloadGot_ += count;
    if (payloadGot_ < frame_.bytes)
      return More;
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
  try {
    reading_->data.resize(static_cast<size_t>(frame_.bytes));
  } catch (const std::bad_alloc &) {
    why_ = header + ": no memory for them";
    reading_.reset();
    return Malformed;
  }
  payloadGot_ = 0;
  if (frame_.bytes) {
    inPayload_ = true;
    return More;
  }
  headerGot_ = 0;
  return Complete;
}
