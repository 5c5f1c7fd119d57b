//===- TcpAuth.h - Who may join a TCP job -----------------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The TCP transport admits a connection only when the other side proves it
// holds the job's secret (docs/runtime.md, "Who can join a TCP job"): both
// sides send a fresh random nonce and answer with an HMAC-SHA-256 over both
// nonces, keyed by the job's key (derived from the secret, the job key and
// the world size). Nothing that travels before the proof says anything of
// the job. SHA-256 (FIPS 180-4) and HMAC (RFC 2104) are written here so the
// runtime links no crypto library; their unit tests use the standards'
// vectors.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_PROCESS_TCPAUTH_H
#define OVERLAP_LIB_RUNTIME_PROCESS_TCPAUTH_H

#include "overlap/Runtime/Bootstrap.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace overlap {
namespace process {
namespace tcp {

using Digest = std::array<uint8_t, 32>;

/// SHA-256 of `bytes`.
Digest sha256(const void *bytes, size_t count);
/// HMAC-SHA-256 of `message` under `key`.
Digest hmacSha256(const void *key, size_t keyBytes, const void *message,
                  size_t messageBytes);
inline Digest hmacSha256(const Digest &key, const std::string &message) {
  return hmacSha256(key.data(), key.size(), message.data(), message.size());
}
/// Compares in time independent of where the two first differ.
bool sameDigest(const Digest &a, const Digest &b);
/// `count` bytes from the kernel's random source (getrandom); false if it
/// cannot give them.
bool randomBytes(void *bytes, size_t count);
/// Lower-case hex of `bytes`.
std::string toHex(const void *bytes, size_t count);

/// The key both sides of a connection prove: HMAC(secret, "overlap-tcp 2"
/// || job key || world size). Jobs with one secret but another key or size
/// do not admit each other's ranks.
Digest jobKey(const std::string &secret, const std::string &key, int size);

/// The fewest bytes a secret the user gives may have.
constexpr size_t kMinSecretBytes = 16;

/// The job's secret as the user gave it: $OVERLAP_JOB_SECRET, else the
/// content of the file $OVERLAP_JOB_SECRET_FILE (a regular file of this
/// user's that group and others cannot read; a final newline is not part
/// of it). `found` is false when neither is set. False with `why` naming the
/// variable when what is set cannot be a secret.
bool givenSecret(const bootstrap::Env &env, std::string &secret, bool &found,
                 std::string &why);

} // namespace tcp
} // namespace process
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_PROCESS_TCPAUTH_H
