//===- TcpAuthTest.cpp - The TCP transport's proofs and frames --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// SHA-256 and HMAC-SHA-256 against the vectors of FIPS 180-4's examples and
// RFC 4231; the job key's dependence on secret, key and size; the secret
// variables' checks; the frame reader against headers that lie.
//
//===----------------------------------------------------------------------===//

#include "TcpAuth.h"
#include "TcpJob.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace overlap::process::tcp;

namespace {

std::string hexOf(const Digest &d) { return toHex(d.data(), d.size()); }

std::string hashOf(const std::string &text) {
  return hexOf(sha256(text.data(), text.size()));
}

TEST(TcpAuth, Sha256MatchesTheStandardsExamples) {
  EXPECT_EQ(hashOf(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hashOf("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hashOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hashOf(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(TcpAuth, HmacMatchesRfc4231) {
  std::string key1(20, '\x0b'), data1 = "Hi There";
  EXPECT_EQ(
      hexOf(hmacSha256(key1.data(), key1.size(), data1.data(), data1.size())),
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  std::string key2 = "Jefe", data2 = "what do ya want for nothing?";
  EXPECT_EQ(
      hexOf(hmacSha256(key2.data(), key2.size(), data2.data(), data2.size())),
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first.
  std::string key6(131, '\xaa'),
      data6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  EXPECT_EQ(
      hexOf(hmacSha256(key6.data(), key6.size(), data6.data(), data6.size())),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(TcpAuth, TheJobKeyDependsOnSecretKeyAndSize) {
  Digest base = jobKey("0123456789abcdef", "job", 4);
  EXPECT_TRUE(sameDigest(base, jobKey("0123456789abcdef", "job", 4)));
  EXPECT_FALSE(sameDigest(base, jobKey("0123456789abcdeg", "job", 4)));
  EXPECT_FALSE(sameDigest(base, jobKey("0123456789abcdef", "jobs", 4)));
  EXPECT_FALSE(sameDigest(base, jobKey("0123456789abcdef", "job", 2)));
}

TEST(TcpAuth, NoncesAreFresh) {
  uint8_t a[32], b[32];
  ASSERT_TRUE(randomBytes(a, sizeof a));
  ASSERT_TRUE(randomBytes(b, sizeof b));
  EXPECT_NE(std::memcmp(a, b, sizeof a), 0);
}

bool secretOf(std::map<std::string, std::string> vars, std::string &secret,
              bool &found, std::string &why) {
  return givenSecret(overlap::bootstrap::mapEnv(std::move(vars)), secret, found,
                     why);
}

TEST(TcpAuth, GivenSecretsAreChecked) {
  std::string secret, why;
  bool found = true;
  ASSERT_TRUE(secretOf({}, secret, found, why));
  EXPECT_FALSE(found);
  ASSERT_TRUE(secretOf({{"OVERLAP_JOB_SECRET", "a long enough secret"}}, secret,
                       found, why));
  EXPECT_TRUE(found);
  EXPECT_EQ(secret, "a long enough secret");
  EXPECT_FALSE(secretOf({{"OVERLAP_JOB_SECRET", "none"}}, secret, found, why));
  EXPECT_NE(why.find("OVERLAP_JOB_SECRET: a secret of 4 bytes is guessable"),
            std::string::npos)
      << why;

  char dir[] = "/tmp/overlap-secret-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/secret";
  FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("0123456789abcdef0123\n", f);
  std::fclose(f);
  ::chmod(path.c_str(), 0600);
  ASSERT_TRUE(secretOf({{"OVERLAP_JOB_SECRET_FILE", path}}, secret, found, why))
      << why;
  EXPECT_EQ(secret, "0123456789abcdef0123"); // the newline is not part of it
  ::chmod(path.c_str(), 0644);
  EXPECT_FALSE(
      secretOf({{"OVERLAP_JOB_SECRET_FILE", path}}, secret, found, why));
  EXPECT_NE(why.find("has mode 0644: group or others may read it"),
            std::string::npos)
      << why;
  ::chmod(path.c_str(), 0600);
  std::string link = std::string(dir) + "/link";
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  EXPECT_FALSE(
      secretOf({{"OVERLAP_JOB_SECRET_FILE", link}}, secret, found, why));
  EXPECT_NE(why.find("a symbolic link"), std::string::npos) << why;
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(
        secretOf({{"OVERLAP_JOB_SECRET_FILE", path}}, secret, found, why));
    EXPECT_NE(why.find("belongs to uid 65534"), std::string::npos) << why;
  }
  ::unlink(link.c_str());
  ::unlink(path.c_str());
  ::rmdir(dir);
}

/// Feeds `bytes` to a reader `chunk` bytes at a time; the results in order.
std::vector<FrameReader::Result> feed(FrameReader &reader,
                                      const std::string &bytes, size_t chunk) {
  std::vector<FrameReader::Result> results;
  size_t at = 0;
  while (at < bytes.size()) {
    size_t n = std::min({chunk, reader.wanted(), bytes.size() - at});
    std::memcpy(reader.room(), bytes.data() + at, n);
    at += n;
    results.push_back(reader.received(n));
    if (results.back() == FrameReader::Malformed)
      break;
  }
  return results;
}

std::string header(uint32_t kind, uint64_t bytes, int32_t tag = 7) {
  Frame frame;
  frame.kind = kind;
  frame.tag = tag;
  frame.bytes = bytes;
  return std::string(reinterpret_cast<const char *>(&frame), sizeof frame);
}

TEST(TcpFrames, FramesArriveWholeWhateverTheChunks) {
  for (size_t chunk : {size_t(1), size_t(3), size_t(4096)}) {
    FrameReader reader;
    std::string bytes = header(Data, 5) + "hello" + header(Bye, 0);
    auto results = feed(reader, bytes, chunk);
    ASSERT_FALSE(results.empty());
    int complete = 0;
    for (auto r : results)
      complete += r == FrameReader::Complete;
    EXPECT_EQ(complete, 2) << "chunk " << chunk;
    EXPECT_EQ(reader.frame().kind, uint32_t(Bye));
  }
  FrameReader reader;
  auto results = feed(reader, header(Data, 5) + "hello", 64);
  ASSERT_EQ(results.back(), FrameReader::Complete);
  EXPECT_EQ(reader.frame().tag, 7);
  EXPECT_EQ(reader.take()->data, "hello");
}

TEST(TcpFrames, HeadersThatLieAreMalformedNotThrown) {
  struct Case {
    std::string bytes;
    const char *why;
  } cases[] = {
      {header(Data, uint64_t(1) << 36), "more than 2147483647"},
      {header(Data, uint64_t(1) << 62), "more than 2147483647"},
      {header(Data, ~uint64_t(0)), "more than 2147483647"},
      {header(9, 0), "no such kind"},
      {header(Bye, 16), "only data carries bytes"},
      {header(Abort, 1), "only data carries bytes"},
  };
  for (const Case &c : cases) {
    FrameReader reader;
    auto results = feed(reader, c.bytes, 4096);
    ASSERT_EQ(results.back(), FrameReader::Malformed) << c.why;
    EXPECT_NE(reader.why().find(c.why), std::string::npos) << reader.why();
  }
}

} // namespace
