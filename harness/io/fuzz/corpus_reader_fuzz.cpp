// libFuzzer target of the corpus reader: any bytes, read as a corpus file
// (bounded JSON parse, entry and case fields, validation, the case's
// runtime sizes), give an entry or an InputError; anything else (a crash,
// a sanitizer report, another exception, a hang) is a bug.
#include <cstdint>
#include <string>

#include "harness/case/case.h"
#include "harness/io/corpus.h"
#include "harness/io/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    sdpa::CorpusEntry e = sdpa::corpus_from_json(sdpa::parse_json_text(text, "input.json"), "input.json");
    for (const auto& at : e.c.runs()) sdpa::concrete_sizes(e.c, at);
  } catch (const sdpa::InputError&) {
  }
  return 0;
}
