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

}  // namespace klf
