#include "recipes/jobs/job_record.hpp"

#include <nlohmann/json.hpp>

namespace dlock {
namespace {

std::int64_t epoch_ms(std::chrono::system_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
}

std::optional<JobState> state_named(const std::string& name) {
  for (auto state : {JobState::Running, JobState::Succeeded, JobState::Failed, JobState::Skipped}) {
    if (name == to_string(state)) return state;
  }
  return std::nullopt;
}

// Throws nlohmann::json::exception for a field of the wrong type.
JobRecord record_from(const nlohmann::json& json, JobState state) {
  JobRecord record;
  record.period = json.at("period").get<std::int64_t>();
  record.state = state;
  record.by = json.value("by", std::string());
  record.started = std::chrono::system_clock::time_point(std::chrono::milliseconds(json.value("started_ms", 0LL)));
  record.finished = record.started;
  record.duration = std::chrono::milliseconds(json.value("duration_ms", 0LL));
  record.fencing_token = json.value("token", 0LL);
  record.attempt = json.value("attempt", 0);
  record.error = json.value("error", std::string());
  record.period_length = std::chrono::milliseconds(json.value("length_ms", 0LL));
  record.period_offset = std::chrono::milliseconds(json.value("offset_ms", 0LL));
  return record;
}

}  // namespace

namespace detail {

std::string job_record_json(const JobRecord& record) {
  nlohmann::json json = {{"period", record.period},
                         {"state", to_string(record.state)},
                         {"by", record.by},
                         {"started_ms", epoch_ms(record.started)},
                         {"duration_ms", record.duration.count()},
                         {"token", record.fencing_token},
                         {"attempt", record.attempt},
                         {"length_ms", record.period_length.count()},
                         {"offset_ms", record.period_offset.count()}};
  if (!record.error.empty()) json["error"] = record.error;
  // Invalid UTF-8 in an exception's what() is replaced rather than refused.
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace detail

std::optional<JobRecord> parse_job_record(std::string_view text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("period") || !json["period"].is_number_integer() || !json.contains("state") ||
      !json["state"].is_string()) {
    return std::nullopt;
  }
  const auto state = state_named(json["state"].get<std::string>());
  if (!state) return std::nullopt;
  try {
    return record_from(json, *state);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace dlock
