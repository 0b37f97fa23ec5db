#pragma once
/// A GoogleTest regression draft for one corpus entry: a .cpp to drop beside
/// the code under test that embeds the entry, replays it against every
/// registered target with the dual oracle and expects the recorded verdict.
#include <string>

#include "harness/io/corpus.h"

namespace sdpa {

/// "corpus/aten/aten-pass-dropout.json" -> "AtenPassDropout": a test name.
std::string gtest_name_for(const std::string& source);

/// The test's source text; `source` names the corpus file.
std::string gtest_repro_source(const CorpusEntry& e, const std::string& source);

}  // namespace sdpa
