//===- BootstrapIdExchangeTest.cpp - How ranks find NCCL's id ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// chooseIdExchange without a GPU: OVERLAP_COMM_ID / NCCL_COMM_ID first, then
// torchrun's MASTER_ADDR and MASTER_PORT, else the rendezvous file; the
// errors for malformed addresses and ports, each naming the variable and
// quoting its value printably.
//
//===----------------------------------------------------------------------===//

#include "overlap/Runtime/Bootstrap.h"

#include "gtest/gtest.h"

#include <map>
#include <string>

using namespace overlap::bootstrap;

static IdExchange exchangeOf(std::map<std::string, std::string> vars) {
  IdExchange e;
  std::string error;
  EXPECT_TRUE(chooseIdExchange(mapEnv(std::move(vars)), e, error)) << error;
  return e;
}

static std::string exchangeError(std::map<std::string, std::string> vars) {
  IdExchange e;
  std::string error;
  EXPECT_FALSE(chooseIdExchange(mapEnv(std::move(vars)), e, error));
  return error;
}

TEST(BootstrapIdExchange, NothingSetIsTheFile) {
  IdExchange e = exchangeOf({{"OMPI_COMM_WORLD_RANK", "1"}});
  EXPECT_EQ(e.kind, IdExchange::Kind::File);
  EXPECT_EQ(e.commId, "");
}

TEST(BootstrapIdExchange, OverlapCommIdFirst) {
  IdExchange e = exchangeOf({{"OVERLAP_COMM_ID", "10.0.0.1:29600"},
                             {"NCCL_COMM_ID", "10.0.0.2:1234"},
                             {"MASTER_ADDR", "node0"},
                             {"MASTER_PORT", "29500"}});
  EXPECT_EQ(e.kind, IdExchange::Kind::CommId);
  EXPECT_EQ(e.commId, "10.0.0.1:29600");
  EXPECT_EQ(e.source, "OVERLAP_COMM_ID");
}

TEST(BootstrapIdExchange, NcclCommIdThenTorchrun) {
  IdExchange e = exchangeOf(
      {{"NCCL_COMM_ID", "[fe80::1]:1234"}, {"MASTER_ADDR", "node0"}});
  EXPECT_EQ(e.commId, "[fe80::1]:1234");
  EXPECT_EQ(e.source, "NCCL_COMM_ID");
  e = exchangeOf({{"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(e.kind, IdExchange::Kind::CommId);
  // torchrun's agent serves its store on MASTER_PORT itself.
  EXPECT_EQ(e.commId, "node0:29501");
  EXPECT_EQ(e.source, "MASTER_ADDR and MASTER_PORT + 1");
  e = exchangeOf({{"MASTER_ADDR", "::1"}, {"MASTER_PORT", "80"}});
  EXPECT_EQ(e.commId, "[::1]:81");
  // One of the two is not enough: the file.
  EXPECT_EQ(exchangeOf({{"MASTER_ADDR", "node0"}}).kind,
            IdExchange::Kind::File);
}

TEST(BootstrapIdExchange, MalformedValuesNameTheVariable) {
  EXPECT_NE(exchangeError({{"OVERLAP_COMM_ID", "node0"}})
                .find("OVERLAP_COMM_ID='node0' is not host:port"),
            std::string::npos);
  EXPECT_NE(exchangeError({{"NCCL_COMM_ID", "node0:70000"}})
                .find("NCCL_COMM_ID='node0:70000' has no port in 1..65535"),
            std::string::npos);
  EXPECT_NE(exchangeError({{"NCCL_COMM_ID", "fe80::1:99"}}).find("brackets"),
            std::string::npos);
  EXPECT_NE(exchangeError({{"MASTER_ADDR", "n"}, {"MASTER_PORT", "65535"}})
                .find("MASTER_PORT='65535'"),
            std::string::npos);
  EXPECT_NE(exchangeError({{"MASTER_ADDR", "n"}, {"MASTER_PORT", "x"}})
                .find("MASTER_PORT='x'"),
            std::string::npos);
}

TEST(BootstrapIdExchange, HostsAreNamesOrAddressesAndQuotedSafely) {
  // Each of these was taken as an address before.
  EXPECT_NE(exchangeError({{"OVERLAP_COMM_ID", "no\x01" "de:29600"}})
                .find("OVERLAP_COMM_ID='no\\x01de:29600' has no host name"),
            std::string::npos)
      << exchangeError({{"OVERLAP_COMM_ID", "no\x01" "de:29600"}});
  EXPECT_NE(exchangeError({{"OVERLAP_COMM_ID", "[]:29600"}})
                .find("has no IPv6 address inside its brackets"),
            std::string::npos);
  EXPECT_NE(exchangeError({{"MASTER_ADDR", ":"}, {"MASTER_PORT", "29500"}})
                .find("MASTER_ADDR=':' has no IPv6 address"),
            std::string::npos)
      << exchangeError({{"MASTER_ADDR", ":"}, {"MASTER_PORT", "29500"}});
  std::string huge(100000, 'a');
  std::string error = exchangeError({{"OVERLAP_COMM_ID", huge + ":1"}});
  EXPECT_NE(error.find("(100002 bytes)"), std::string::npos) << error;
  EXPECT_LT(error.size(), 400u);
  EXPECT_NE(exchangeError({{"OVERLAP_COMM_ID", "node 0:29600"}})
                .find("has no host name"),
            std::string::npos);
  // Still taken: names, IPv4, IPv6 with a zone.
  EXPECT_EQ(exchangeOf({{"OVERLAP_COMM_ID", "node-0.cluster_a:1"}}).commId,
            "node-0.cluster_a:1");
  EXPECT_EQ(exchangeOf({{"OVERLAP_COMM_ID", "[fe80::1%eth0]:2"}}).commId,
            "[fe80::1%eth0]:2");
}
