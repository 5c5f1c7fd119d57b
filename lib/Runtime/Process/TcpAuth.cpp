//===- TcpAuth.cpp - SHA-256, HMAC and nonces of the TCP join ----*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "TcpAuth.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace overlap::process::tcp;

namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/// FIPS 180-4's running state over 64-byte blocks.
struct Sha256 {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block[64];
  size_t used = 0;
  uint64_t total = 0;

  void compress() {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
             uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5],
             g = h[6], k = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
                    ((e & f) ^ (~e & g)) + kRound[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
                    ((a & b) ^ (a & c) ^ (b & c));
      k = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d;
    h[4] += e, h[5] += f, h[6] += g, h[7] += k;
  }

  void add(const void *bytes, size_t count) {
    const uint8_t *p = static_cast<const uint8_t *>(bytes);
    total += count;
    while (count) {
      size_t take = std::min(count, sizeof block - used);
      std::memcpy(block + used, p, take);
      used += take, p += take, count -= take;
      if (used == sizeof block) {
        compress();
        used = 0;
      }
    }
  }

  Digest finish() {
    uint64_t bits = total * 8;
    uint8_t pad = 0x80;
    add(&pad, 1);
    uint8_t zero = 0;
    while (used != 56)
      add(&zero, 1);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = uint8_t(bits >> (56 - 8 * i));
    add(length, 8);
    Digest out;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j)
        out[size_t(4 * i + j)] = uint8_t(h[i] >> (24 - 8 * j));
    return out;
  }
};

} // namespace

Digest overlap::process::tcp::sha256(const void *bytes, size_t count) {
  Sha256 state;
  state.add(bytes, count);
  return state.finish();
}

Digest overlap::process::tcp::hmacSha256(const void *key, size_t keyBytes,
                                         const void *message,
                                         size_t messageBytes) {
  uint8_t padded[64] = {};
  if (keyBytes > sizeof padded) {
    Digest shortened = sha256(key, keyBytes);
    std::memcpy(padded, shortened.data(), shortened.size());
  } else if (keyBytes) {
    std::memcpy(padded, key, keyBytes);
  }
  uint8_t inner[64], outer[64];
  for (int i = 0; i < 64; ++i) {
    inner[i] = padded[i] ^ 0x36;
    outer[i] = padded[i] ^ 0x5c;
  }
  Sha256 first;
  first.add(inner, sizeof inner);
  first.add(message, messageBytes);
  Digest innerDigest = first.finish();
  Sha256 second;
  second.add(outer, sizeof outer);
  second.add(innerDigest.data(), innerDigest.size());
  return second.finish();
}

bool overlap::process::tcp::sameDigest(const Digest &a, const Digest &b) {
  uint8_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i)
    differ |= a[i] ^ b[i];
  return differ == 0;
}

bool overlap::process::tcp::randomBytes(void *bytes, size_t count) {
  uint8_t *p = static_cast<uint8_t *>(bytes);
  while (count) {
    ssize_t n = ::getrandom(p, count, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    count -= static_cast<size_t>(n);
  }
  return true;
}

std::string overlap::process::tcp::toHex(const void *bytes, size_t count) {
  static const char digits[] = "0123456789abcdef";
  const uint8_t *p = static_cast<const uint8_t *>(bytes);
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

Digest overlap::process::tcp::jobKey(const std::string &secret,
                                     const std::string &key, int size) {
  std::string message = "overlap-tcp 2";
  message += '\0';
  message += key;
  message += '\0';
  message += std::to_string(size);
  return hmacSha256(secret.data(), secret.size(), message.data(),
                    message.size());
}

namespace {

bool readSecretFile(const std::string &path, std::string &secret,
                    std::string &why) {
  const std::string what = "OVERLAP_JOB_SECRET_FILE=" + path;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = what + ": " + std::strerror(errno) +
          (errno == ELOOP ? " (a symbolic link: give the file itself)" : "");
    return false;
  }
  struct stat st;
  std::string wrong;
  if (::fstat(fd, &st) != 0)
    wrong = std::string("cannot stat it: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    wrong = "is not a regular file";
  else if (std::string mine = overlap::bootstrap::notThisUsersAlone(
               st, "group or others may read it (chmod 600 it)");
           !mine.empty())
    wrong = mine;
  else if (st.st_size > 4096)
    wrong = "has more than 4096 bytes";
  if (wrong.empty()) {
    secret.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < secret.size()) {
      ssize_t n = ::read(fd, &secret[got], secret.size() - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += static_cast<size_t>(n);
    }
    secret.resize(got);
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r'))
      secret.pop_back();
  }
  ::close(fd);
  if (!wrong.empty()) {
    why = what + " " + wrong;
    return false;
  }
  return true;
}

} // namespace

bool overlap::process::tcp::givenSecret(const bootstrap::Env &env,
                                        std::string &secret, bool &found,
                                        std::string &why) {
  found = false;
  std::string variable = "OVERLAP_JOB_SECRET";
  if (std::optional<std::string> given = env(variable);
      given && !given->empty())
    secret = *given;
  else if (std::optional<std::string> path = env("OVERLAP_JOB_SECRET_FILE");
           path && !path->empty()) {
    variable = "OVERLAP_JOB_SECRET_FILE";
    if (!readSecretFile(*path, secret, why))
      return false;
  } else
    return true;
  found = true;
  if (secret.size() < kMinSecretBytes) {
    why = variable + ": a secret of " + std::to_string(secret.size()) +
          " bytes is guessable; give at least " +
          std::to_string(kMinSecretBytes) +
          " random ones (e.g. head -c 32 /dev/urandom | od -An -tx1 | tr -d "
          "' \\n')";
    return false;
  }
  return true;
}
