#include "harness/isolate/isolated_cases.h"

#include <climits>

#include "harness/case/case_json.h"
#include "harness/io/wire.h"
#include "harness/isolate/result_codec.h"

namespace sdpa {
namespace {

// A drawn case's reply. One the command only counts is binary, in the flat
// form (no object tree to build or read, once per case on both sides; the
// worker's frame carries it as it is); any other is an object with its case
// and its result as JSON.
nlohmann::json binary_of(std::string_view bytes) {
  return nlohmann::json::binary(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

nlohmann::json drawn_reply(const IsolatedCases::Drawn& drawn) {
  if (drawn.counted) {
    WireWriter out;
    out.str(drawn.variant);
    out.boolean(drawn.summary.has_value());
    out.str(drawn.summary.value_or(""));
    out.str(counted_result_to_bytes(drawn.result));
    return binary_of(out.bytes());
  }
  nlohmann::json reply = {{"variant", drawn.variant}, {"result", result_to_json(drawn.result)}};
  if (drawn.c) reply["case"] = case_to_json(*drawn.c);
  if (drawn.summary) reply["summary"] = binary_of(*drawn.summary);
  return nlohmann::json{{"drawn", std::move(reply)}};
}

std::string_view bytes_of(const nlohmann::json& j) {
  const auto& b = j.get_binary();
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A draw request's fields.
struct DrawRequest {
  uint64_t seed = 0;
  int size = 0;
  CheckOptions options;
};

DrawRequest read_draw(const nlohmann::json& d) {
  WireReader in(bytes_of(d), "draw request");
  DrawRequest r;
  r.seed = in.u64();
  const int64_t size = in.i64();
  if (size < 0 || size > INT_MAX) throw std::runtime_error("draw request: a size of " + std::to_string(size));
  r.size = static_cast<int>(size);
  r.options = read_check_options(in);
  in.finish();
  return r;
}

Worker::Handler case_handler(IsolatedCases::TargetLookup target_for, const ReferenceModel& reference,
                             IsolatedCases::DrawAndCheck draw) {
  return [target_for = std::move(target_for), &reference, draw = std::move(draw)](const nlohmann::json& request) {
    if (auto d = request.find("draw"); d != request.end()) {
      if (!draw) throw std::logic_error("isolated cases: a draw request without a DrawAndCheck");
      const DrawRequest r = read_draw(*d);
      return drawn_reply(draw(r.seed, r.size, r.options));
    }
    const Target& target =
        target_for(request.at("target").get<std::string>(), request.at("options").get<Options>());
    Case c = case_from_json(request.at("case"));
    return result_to_json(run_case(target, reference, c, check_options_from_json(request.at("check"))));
  };
}

// The worker's look at its held requests: the seeds and sizes of the draw
// requests at their front (up to the first other request), in order, to
// draw ahead. One that does not decode drops the whole look: each request
// is still answered on its own.
WorkerLookahead draw_lookahead(IsolatedCases::DrawAhead ahead) {
  if (!ahead.draw) return {};
  const size_t depth = ahead.depth;
  return {[ahead = std::move(ahead)](const std::vector<nlohmann::json>& requests) {
            std::vector<std::pair<uint64_t, int>> draws;
            for (const auto& request : requests) {
              auto d = request.find("draw");
              if (d == request.end()) break;
              const DrawRequest r = read_draw(*d);  // a bad one throws: the look is dropped, the request answers
              draws.emplace_back(r.seed, r.size);
            }
            ahead.draw(draws);
          },
          depth};
}

nlohmann::json case_request(const std::string& target, const Options& target_options, const Case& c,
                            const CheckOptions& options) {
  return {{"target", target},
          {"options", target_options},
          {"case", case_to_json(c)},
          {"check", check_options_to_json(options)}};
}

}  // namespace

IsolatedCases::IsolatedCases(TargetLookup target_for, const ReferenceModel& reference, WorkerLimits limits,
                             int jobs, DrawAndCheck draw, DrawAhead ahead)
    : worker_(case_handler(target_for, reference, nullptr), limits),
      pool_(jobs, case_handler(target_for, reference, std::move(draw)), limits, kCasesPerWorker, kReplyCoalesce,
            draw_lookahead(std::move(ahead))) {}

CaseResult IsolatedCases::result_of(std::variant<nlohmann::json, WorkerDeath> reply, bool& died) {
  died = false;
  if (auto* j = std::get_if<nlohmann::json>(&reply)) return result_from_json(*j);
  const WorkerDeath& death = std::get<WorkerDeath>(reply);
  died = true;
  CaseResult r;
  r.verdict = death.verdict;
  Finding f;
  f.verdict = death.verdict;
  f.check = Check::robustness;
  f.detail = death.detail;
  r.findings.push_back(f);
  return r;
}

CaseResult IsolatedCases::run(const std::string& target, const Options& target_options, const Case& c,
                              const CheckOptions& options) {
  last_died_ = false;
  return result_of(worker_.call(case_request(target, target_options, c, options)), last_died_);
}

void IsolatedCases::submit_draw(int64_t tag, uint64_t seed, int size, const CheckOptions& options) {
  WireWriter out;
  out.u64(seed);
  out.i64(size);
  write_check_options(out, options);
  pool_.submit(tag, {{"draw", binary_of(out.bytes())}});
}

IsolatedCases::Ran IsolatedCases::next() {
  WorkerPool::Reply reply = pool_.wait();
  Ran ran;
  ran.tag = reply.tag;
  auto* j = std::get_if<nlohmann::json>(&reply.reply);
  if (j && j->is_binary()) {
    ran.counted = true;
    WireReader in(bytes_of(*j), "worker reply");
    ran.variant = in.str();
    const bool has_summary = in.boolean();
    std::string summary = in.str();
    if (has_summary) ran.summary = std::move(summary);
    ran.result = counted_result_from_bytes(in.str());
    in.finish();
    return ran;
  }
  if (j && j->contains("drawn")) {
    nlohmann::json& drawn = j->at("drawn");
    if (drawn.contains("case")) ran.drawn = case_from_json(drawn.at("case"));
    ran.variant = drawn.at("variant").get<std::string>();
    if (drawn.contains("summary")) ran.summary = std::string(bytes_of(drawn.at("summary")));
    ran.result = result_from_json(drawn.at("result"));
    return ran;
  }
  ran.result = result_of(std::move(reply.reply), ran.died);
  return ran;
}

}  // namespace sdpa
