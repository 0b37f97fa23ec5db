#include "harness/io/wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sdpa {
namespace {

TEST(Wire, EveryKindReadsBackToTheBit) {
  WireWriter out;
  out.u64(~uint64_t{0});
  out.i64(-3);
  out.f64(0.1 + 0.2);
  out.f64(-0.0);
  out.f64(std::numeric_limits<double>::quiet_NaN());
  out.boolean(true);
  out.str(std::string("a\0b", 3));
  out.strings({"", "Lq=1", std::string(40, 'x')});
  WireReader in(out.bytes(), "test message");
  EXPECT_EQ(in.u64(), ~uint64_t{0});
  EXPECT_EQ(in.i64(), -3);
  EXPECT_EQ(in.f64(), 0.1 + 0.2);
  EXPECT_TRUE(std::signbit(in.f64()));
  EXPECT_TRUE(std::isnan(in.f64()));
  EXPECT_TRUE(in.boolean());
  EXPECT_EQ(in.str(), std::string("a\0b", 3));
  EXPECT_EQ(in.strings(), (std::vector<std::string>{"", "Lq=1", std::string(40, 'x')}));
  EXPECT_NO_THROW(in.finish());
}

// A short, corrupt or overlong message is an error naming it, before any
// allocation a corrupt length would ask for.
TEST(Wire, BadBytesAreErrorsThatNameTheMessage) {
  WireWriter out;
  out.str("attention");
  const std::string good = out.bytes();
  for (size_t n = 0; n < good.size(); ++n) {
    WireReader in(std::string_view(good).substr(0, n), "worker reply");
    EXPECT_THROW(
        {
          try {
            in.str();
          } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("worker reply: truncated"), std::string::npos) << e.what();
            throw;
          }
        },
        std::runtime_error)
        << n;
  }
  WireWriter huge;
  huge.u64(uint64_t{1} << 60);  // a count no buffer holds: refused, not reserved
  WireReader counts(huge.bytes(), "worker reply");
  EXPECT_THROW(counts.strings(), std::runtime_error);
  WireWriter one_over;  // two strings' worth of count with room for one length
  one_over.u64(2);
  one_over.u64(0);
  WireReader over(one_over.bytes(), "worker reply");
  try {
    over.strings();
    ADD_FAILURE() << "a count past what is left was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a count of 2 with 8 bytes left"), std::string::npos) << e.what();
  }
  WireReader strings(huge.bytes(), "worker reply");
  EXPECT_THROW(strings.str(), std::runtime_error);
  WireWriter flag;
  flag.u8(2);
  WireReader b(flag.bytes(), "worker reply");
  EXPECT_THROW(b.boolean(), std::runtime_error);
  const std::string longer = good + "!";
  WireReader left(longer, "worker reply");
  EXPECT_EQ(left.str(), "attention");
  EXPECT_THROW(left.finish(), std::runtime_error);
}

}  // namespace
}  // namespace sdpa
