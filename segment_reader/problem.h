// Problems found in input files, and where they go.
//
// Corruption is an outcome, not an exception (LevelDB's log::Reader::Reporter): decoders report each
// problem to a ProblemSink and carry on where the framing allows. `dump`, `verify` and `repair` each
// interpret the same reports their own way. Every problem names the file, the byte position in it, the
// check that failed and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace klf {

enum class Severity { kError, kWarning, kInfo };

const char* SeverityName(Severity s);  // "error", "warning", "info"

struct Problem {
  Severity severity = Severity::kError;
  std::string file;       // path as given by the user (or derived from it)
  uint64_t position = 0;  // byte position in `file` where the problem starts
  std::string check;      // short stable identifier, e.g. "batch-crc", "record-count"
  std::string message;    // what was found and what was expected
};

class ProblemSink {
 public:
  virtual ~ProblemSink() = default;
  virtual void Report(const Problem& problem) = 0;
};

// Keeps every problem in order; the usual sink for tests and for commands that summarise.
class CollectingSink : public ProblemSink {
 public:
  void Report(const Problem& problem) override { problems.push_back(problem); }
  size_t ErrorCount() const;
  std::vector<Problem> problems;
};

// Ignores everything (for callers that only want the data that decodes).
class NullSink : public ProblemSink {
 public:
  void Report(const Problem&) override {}
};

}  // namespace klf
