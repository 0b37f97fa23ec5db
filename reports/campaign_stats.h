#pragma once
/// What a campaign covered and how close kernels came to their bounds,
/// collected per case through CampaignOptions::on_case, or summarize and
/// on_summary (the HTML report).
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/campaign/campaign.h"

namespace sdpa {

/// The boundary classes a case hits ("Lq=1", "gqa", "mask:bool", ...). The
/// CLI passes generators' boundary_classes; reports/ does not depend on generators/.
using CaseClassifier = std::function<std::vector<std::string>(const Case&)>;

/// Error ratios |C - G| / bound in decade buckets, upper edge included so
/// that every ratio <= 1 (within the bound) falls below bucket kRatioFirstFailing:
/// bucket 0 is [0, 1e-6], bucket b is (10^(b-7), 10^(b-6)], the last (1e3, inf].
constexpr int kRatioBuckets = 11;
constexpr int kRatioFirstFailing = 7;
int ratio_bucket(double ratio);
/// The upper edge of bucket b < kRatioBuckets - 1: "1e-6" for bucket 0, "1e0" for 6.
std::string ratio_edge_label(int bucket);

/// End-to-end errors in output LSB in octave buckets, upper edge included:
/// bucket 0 is [0, 1/2], then (1/2, 1], (1, 2], ... (32, 64], the last (64, inf].
constexpr int kLsbBuckets = 9;
int lsb_bucket(double lsb);
/// The upper edge of bucket b < kLsbBuckets - 1: "0.5", "1", "2", ... "64".
std::string lsb_edge_label(int bucket);

/// Lengths in log2 buckets: bucket k holds [2^k, 2^(k+1)); bucket -1 holds 0.
int length_bucket(int64_t len);
std::string length_bucket_label(int bucket);  // "0", "1", "2-3", "4-7"

/// "MHA" (Hq == Hkv), "MQA" (Hkv == 1 < Hq) or "GQA".
std::string head_layout(const Case& c);
/// "none", "causal", "bool", "additive": is_causal and the attn_mask's
/// kind; a causal call with a mask has two.
std::vector<std::string> mask_kinds(const Case& c);
/// The data classes of Coverage::data a case falls in.
std::vector<std::string> data_kinds(const Case& c);

/// What CampaignStats counts of a case apart from its result. Made where
/// the case is drawn (a worker, with --jobs), so the command need not read
/// the case back to count it.
struct CaseSummary {
  std::vector<std::string> classes;      // the classifier's
  int lq_bucket = -1, lkv_bucket = -1;   // length_bucket of Lq and Lkv at the first runtime size
  std::string head_layout, dtype;
  std::vector<std::string> mask_kinds, data;  // mask_kinds, data_kinds
};
CaseSummary summarize_case(const Case& c, const CaseClassifier& classify);
/// The summary as CampaignOptions::summarize carries it (harness/io/wire.h),
/// and back; summary_from_bytes throws std::runtime_error on other bytes.
std::string summary_to_bytes(const CaseSummary& s);
CaseSummary summary_from_bytes(std::string_view bytes);

struct Coverage {
  /// (Lq bucket, Lkv bucket) at the first runtime size -> cases.
  std::map<std::pair<int, int>, int64_t> lengths;
  std::map<std::string, int64_t> head_layouts, mask_kinds, dtypes;
  /// The data a case holds (data_kinds): "finite", "nan", "+inf", "-inf",
  /// "overflow", "huge", and "empty" for a zero-size dim at the first runtime size.
  std::map<std::string, int64_t> data;
  /// Every boundary class of the classifier -> cases that hit it (a case
  /// counts in each of its classes): "tile-edge:1025", "mask:block-sparse",
  /// "empty-tile:64", "empty-tile:left-padding:513", ...
  std::map<std::string, int64_t> classes;
};

struct TargetStats {
  int64_t cases = 0;
  std::map<std::string, int64_t> verdicts;
  /// (dtype, kernel set) -> counts per ratio bucket (kRatioBuckets entries).
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> ratios;
  /// (dtype, kernel set) -> counts per LSB bucket (kLsbBuckets entries), for
  /// kernel sets whose output is int8 (AccuracySample::error_lsb).
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> lsb;
  /// case class -> deciding rule ("accept" or the first failed rule) -> decisions.
  std::map<std::string, std::map<std::string, int64_t>> guard;
  Coverage coverage;

  /// Adds `other`'s counts: the statistics of two disjoint sets of cases
  /// sum to those of their union (sdpacheck merge).
  void merge(const TargetStats& other);
};

/// As JSON, every count exact: maps with pair keys as [[key, value], ...].
/// A field missing from `j` reads as empty (a file written before it).
nlohmann::json coverage_to_json(const Coverage& c);
nlohmann::json target_stats_to_json(const TargetStats& t);
/// Throws InputError naming `source` when `j` is not statistics.
TargetStats target_stats_from_json(const nlohmann::json& j, const std::string& source);

class CampaignStats {
 public:
  explicit CampaignStats(CaseClassifier classify);

  /// Counts one case of `target`: add_summary of its summary.
  void add(const std::string& target, const Case& c, const CaseResult& r);
  /// A CampaignOptions::on_case hook that adds the cases of `target`.
  std::function<void(const Case&, const CaseResult&)> collector(const std::string& target);

  /// summarize_case with this object's classifier.
  CaseSummary summary(const Case& c) const { return summarize_case(c, classify_); }
  /// Counts one case of `target` from its summary.
  void add_summary(const std::string& target, const CaseSummary& summary, const CaseResult& r);
  /// CampaignOptions::summarize and on_summary hooks that add the cases of
  /// `target`: summary_to_bytes of summary(c), read back by the collector.
  std::function<std::string(const Case&)> summarizer() const;
  std::function<void(const std::string&, const CaseResult&)> summary_collector(const std::string& target);

  /// Per target, in name order.
  const std::map<std::string, TargetStats>& targets() const { return targets_; }

  /// Adds the statistics of another target or run (TargetStats::merge).
  void merge(const std::string& target, const TargetStats& stats);
  /// {target: target_stats_to_json}; read back with merge().
  nlohmann::json to_json() const;

 private:
  CaseClassifier classify_;
  std::map<std::string, TargetStats> targets_;
};

}  // namespace sdpa
