#pragma once
/// Text into XML and HTML: escaping shared by the JUnit file and the HTML page.
#include <string>

namespace sdpa {

/// `text` as XML 1.0 character data or attribute value (also valid HTML):
/// & < > " ' as entities, control characters XML 1.0 forbids (all below
/// 0x20 but tab, newline, carriage return) as visible "\xNN", and bytes
/// that are not valid UTF-8 as U+FFFD.
std::string xml_escape(const std::string& text);

}  // namespace sdpa
