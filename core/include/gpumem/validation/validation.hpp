#pragma once
// Scoring gpumem against measured points in the format of ../shared/validation/README.md:
// each point becomes a request (never keyed on its id, source or model name), and the
// estimate is compared with what was measured. This version scores the step-time model on the
// points that carry throughput.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gpumem {

struct scored_point {
  std::string id;
  std::string method;    // the point's parallel.method
  bool scored = false;   // false: skipped, see note
  std::string note;      // why skipped, or how the point was read
  std::string quantity;  // "tokens_per_s_per_gpu" or "step_time_s"
  double measured = 0;
  double estimated = 0;
  double relative_error = 0;  // (estimated - measured) / measured
};

// README "Scoring an estimator", step 3: count, median and nearest-rank 90th percentile of
// |relative error|, and the share within 10 %.
struct error_summary {
  std::size_t n = 0;
  double median_abs_rel_error = 0;
  double p90_abs_rel_error = 0;
  double within_10pct = 0;
  double within_25pct = 0;
};

error_summary summarize(const std::vector<double>& abs_relative_errors);

struct step_time_report {
  std::vector<scored_point> points;
  error_summary summary;
  std::vector<std::pair<std::string, error_summary>> by_method;
};

// `points`: the JSON array of validation points.
step_time_report validate_step_time(const nlohmann::ordered_json& points);

struct memory_point {
  std::string id;
  std::string kind;    // peak, oom_lower_bound, capacity_upper_bound
  std::string metric;  // allocated, reserved, nvml_used (unknown is read as allocated)
  std::string phase;
  std::string finetune;
  std::string trust;
  bool scored = false;
  std::string note;
  double measured_gib = 0;
  double estimated_gib = 0;
  double relative_error = 0;
  bool bound_correct = false;  // bounds only
  // Offloaded points with a measured host-RAM figure: the estimate per rank (offload.hpp).
  bool host_scored = false;
  double measured_host_gib = 0;
  double estimated_host_gib = 0;
  double host_relative_error = 0;
};

struct memory_report {
  std::vector<memory_point> points;
  error_summary summary;  // peak points
  std::size_t bounds_correct = 0;
  std::size_t bounds_total = 0;
  std::vector<std::pair<std::string, error_summary>> by_phase;
  std::vector<std::pair<std::string, error_summary>> by_finetune;
  std::vector<std::pair<std::string, error_summary>> by_trust;  // low-trust points apart
  error_summary host;  // host RAM of offloaded points, apart from the GPU figures
};

// Scores the detailed estimator's GPU peak on the points it models (single-GPU training and
// forward+backward so far); the others are listed with the reason they are skipped.
memory_report validate_memory(const nlohmann::ordered_json& points);

}  // namespace gpumem
