#include "core/rpc/grpc_target.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(GrpcTargetTest, SplitsAddressAndRest) {
  struct Case {
    const char* target;
    const char* address;
    const char* rest;
  };
  for (const Case& c : {
           Case{"grpc://localhost:2222", "localhost:2222", ""},
           Case{"grpc://127.0.0.1:1", "127.0.0.1:1", ""},
           Case{"grpc://host:65535/", "host:65535", ""},
           Case{"grpc://[::1]:7000", "[::1]:7000", ""},
           Case{"grpc://store:7000/run1", "store:7000", "run1"},
           Case{"grpc://writer:7070/exp1/train", "writer:7070", "exp1/train"},
           Case{"grpc://writer:7070/exp1/train/", "writer:7070", "exp1/train/"},
       }) {
    absl::StatusOr<GrpcTarget> parsed = ParseGrpcTarget(c.target);
    ASSERT_TRUE(parsed.ok()) << c.target << ": " << parsed.status();
    EXPECT_EQ(parsed->address, c.address) << c.target;
    EXPECT_EQ(parsed->rest, c.rest) << c.target;
  }
}

TEST(GrpcTargetTest, RefusesMalformedTargetsNamingThemAndWhy) {
  struct Case {
    const char* target;
    const char* why;
  };
  for (const Case& c : {
           Case{"", "does not start with grpc://"},
           Case{"localhost:2222", "does not start with grpc://"},
           Case{"http://localhost:2222", "does not start with grpc://"},
           Case{"GRPC://localhost:2222", "does not start with grpc://"},
           Case{"grpc:/localhost:2222", "does not start with grpc://"},
           Case{"grpc://", "host is empty"},
           Case{"grpc://:2222", "host is empty"},
           Case{"grpc:///run", "host is empty"},
           Case{"grpc://[]:2222", "host is empty"},
           Case{"grpc://localhost", "no port"},
           Case{"grpc://localhost/run", "no port"},
           Case{"grpc://[::1]", "no port"},
           Case{"grpc://[::1/run", "not closed"},
           Case{"grpc://localhost:", "port '' is not a number"},
           Case{"grpc://localhost:/run", "port '' is not a number"},
           Case{"grpc://localhost:http", "port 'http' is not a number"},
           Case{"grpc://localhost:0", "port '0' is not a number from 1 to 65535"},
           Case{"grpc://localhost:65536", "port '65536'"},
           Case{"grpc://localhost:-1", "port '-1'"},
           Case{"grpc://localhost:1:2", "port '1:2'"},
       }) {
    absl::StatusOr<GrpcTarget> parsed = ParseGrpcTarget(c.target);
    ASSERT_FALSE(parsed.ok()) << c.target;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.target;
    EXPECT_TRUE(absl::StrContains(parsed.status().message(), absl::StrCat("'", c.target, "'")))
        << parsed.status();
    EXPECT_TRUE(absl::StrContains(parsed.status().message(), c.why)) << parsed.status();
  }
}

TEST(GrpcTargetTest, AddressOfAServerTakesNoPath) {
  absl::StatusOr<std::string> address = ParseGrpcAddress("grpc://master:2222");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, "master:2222");
  address = ParseGrpcAddress("grpc://master:2222/");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, "master:2222");

  address = ParseGrpcAddress("grpc://master:2222/run");
  EXPECT_EQ(address.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(address.status().message(), "has a path after the port"))
      << address.status();
  EXPECT_EQ(ParseGrpcAddress("grpc://").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGrpcAddress("master:2222").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer
