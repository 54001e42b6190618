#include "segment_reader/problem.h"

namespace klf {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "error";
}

size_t CollectingSink::ErrorCount() const {
  size_t n = 0;
  for (const auto& p : problems) n += p.severity == Severity::kError;
  return n;
}

void CappedSink::Report(const Problem& problem) {
  Count& c = counts_[{problem.file, problem.check}];
  if (c.reported < per_check_) {
    ++c.reported;
    next_->Report(problem);
    return;
  }
  if (c.more++ == 0) c.first_more = problem;
}

void CappedSink::Finish() {
  for (auto& [key, c] : counts_) {
    if (c.more == 0) continue;
    Problem p = c.first_more;
    p.message = std::to_string(c.more) + " more problems of this check in this file, the first of them here (" +
                p.message + "); only the first " + std::to_string(per_check_) + " are listed";
    next_->Report(p);
    c.more = 0;
  }
}

void Report(ProblemSink* sink, Severity severity, const std::string& file, uint64_t position, const char* check,
            std::string message) {
  if (sink != nullptr) sink->Report(Problem{severity, file, position, check, std::move(message)});
}

std::string_view WithoutFile(std::string_view error, std::string_view file) {
  if (error.size() > file.size() + 1 && error.starts_with(file) && error.substr(file.size(), 2) == ": ")
    error.remove_prefix(file.size() + 2);
  return error;
}

}  // namespace klf
