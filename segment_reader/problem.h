// Problems found in input files, and where they go.
//
// Corruption is an outcome, not an exception (LevelDB's log::Reader::Reporter): decoders report each
// problem to a ProblemSink and carry on where the framing allows. `dump`, `verify` and `repair` each
// interpret the same reports their own way. Every problem names the file, the byte position in it, the
// check that failed and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
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

// Reports one problem to `sink`; a null sink drops it.
void Report(ProblemSink* sink, Severity severity, const std::string& file, uint64_t position, const char* check,
            std::string message);

// The why of an error that names `file` first ("<file>: <why>", as the readers' errors do), for a
// problem whose `file` already names it; `error` itself when it does not start so.
std::string_view WithoutFile(std::string_view error, std::string_view file);

// Keeps every problem in order; the usual sink for tests and for commands that summarise.
class CollectingSink : public ProblemSink {
 public:
  void Report(const Problem& problem) override { problems.push_back(problem); }
  size_t ErrorCount() const;
  std::vector<Problem> problems;
};

// Passes problems on to another sink, at most `per_check` of each (file, check): a file of garbage
// (tens of MiB of index entries, millions of damaged batches) would otherwise make a formatted
// problem of every entry. Finish() reports, per capped (file, check), one problem saying how many
// more there were and where the first of them is.
class CappedSink : public ProblemSink {
 public:
  explicit CappedSink(ProblemSink* next, uint64_t per_check = 1000) : next_(next), per_check_(per_check) {}
  void Report(const Problem& problem) override;
  void Finish();

 private:
  struct Count {
    uint64_t reported = 0, more = 0;
    Problem first_more;
  };
  ProblemSink* next_;
  uint64_t per_check_;
  std::map<std::pair<std::string, std::string>, Count> counts_;
};

// Ignores everything (for callers that only want the data that decodes).
class NullSink : public ProblemSink {
 public:
  void Report(const Problem&) override {}
};

}  // namespace klf
