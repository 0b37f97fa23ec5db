#include "reports/markup.h"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

TEST(XmlEscape, EscapesTheFiveMarkupCharacters) {
  EXPECT_EQ(xml_escape("a<b && c>\"d\" 'e'"), "a&lt;b &amp;&amp; c&gt;&quot;d&quot; &#39;e&#39;");
}

TEST(XmlEscape, KeepsWhitespaceAndValidUtf8) {
  EXPECT_EQ(xml_escape("k\u1d40\tx\n\r \xC2\xB7"), "k\u1d40\tx\n\r \xC2\xB7");
}

TEST(XmlEscape, ShowsForbiddenControlCharacters) {
  EXPECT_EQ(xml_escape(std::string("a\x01" "b\x1f", 4)), "a\\x01b\\x1f");
  EXPECT_EQ(xml_escape(std::string("\0", 1)), "\\x00");
}

TEST(XmlEscape, ReplacesInvalidUtf8) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_escape("a\xFF" "b"), "a" + replacement + "b");
  EXPECT_EQ(xml_escape("\xC3"), replacement);                  // truncated sequence
  EXPECT_EQ(xml_escape("\xC0\xAF"), replacement + replacement);  // overlong '/'
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), replacement + replacement + replacement);  // a surrogate
}

}  // namespace
}  // namespace sdpa
