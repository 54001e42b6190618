// The one check every output path goes through before klf writes anything (issue 15, README
// "Conventions"). A caller may rely on this:
//
//   * Paths are compared as real paths: every symlink (in the output path, in its parents, in the
//     inputs) is followed before comparing, so a link cannot smuggle an output into an input.
//   * An output is refused when it equals, contains, or lies inside any input. The inputs are the
//     paths the command reads, plus, for a directory input, its parent when that parent is a broker
//     log directory (klf reads its checkpoint files, so it is an input too).
//   * An existing output is replaced only when it is a previous klf output and `force` is set: a
//     directory holding the marker file kOutputMarkerName, or a file starting with the HTML marker
//     kHtmlOutputMarker. An empty directory (or an empty file, for a file output) may be used without
//     `force`: there is nothing in it to lose.
//   * Every refusal message names both paths (the output and the input or existing file it hits).
//
// The checks run before anything is written; StagedDirectory::Create runs them again, so a library
// caller that skips the command-line check is still guarded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace klf {

// Marker file klf writes into every output directory it creates. Kafka ignores it (LogManager loads
// only subdirectories of a log dir; LogLoader only files with Kafka's suffixes), and klf's readers
// skip it.
inline constexpr const char* kOutputMarkerName = ".klf-output";
// First line of the marker file, and the start of its content check.
inline constexpr std::string_view kOutputMarkerHeader = "klf-output 1";
// The first bytes of every digest klf writes (`klf digest`, digest/digest.h kDigestMagic).
inline constexpr std::string_view kDigestOutputMagic = "KLFDIGST";
// The comment on the second line of every HTML report klf writes (`klf diff --html`).
inline constexpr std::string_view kHtmlOutputMarker = "<!-- klf-output 1";

enum class OutputKind { kDirectory, kFile };

struct OutputRequest {
  std::string path;  // --out or --html as given
  OutputKind kind = OutputKind::kDirectory;
  std::vector<std::string> inputs;  // every path the command reads
  bool force = false;               // --force: replace a previous klf output
};

struct CheckedOutput {
  // Where to write: `path` as given, except when `path` itself is a symlink, then its real target
  // (renaming a new directory over the link would replace the link, not what it points to).
  std::string path;
  bool exists = false;  // something is there already (an empty dir/file, or a klf output with force)
};

// Checks `request`; false with *error (naming both paths) when the output must not be written.
// `checked` may be null.
bool CheckOutputPath(const OutputRequest& request, CheckedOutput* checked, std::string* error);

// The inputs as the guard compares them: each resolved, plus the parent broker log dir of each
// directory input whose parent holds Kafka's log-dir files (checkpoints, meta.properties).
std::vector<std::string> GuardedInputs(const std::vector<std::string>& inputs);

// realpath(3) that accepts a path whose tail does not exist yet: existing components have their
// symlinks resolved, the missing rest is appended with "." and ".." applied lexically.
std::string ResolvePath(const std::string& path);

// True when `inner` is `outer` or lies below it (both resolved paths).
bool IsSameOrInside(const std::string& inner, const std::string& outer);

// Whether `path` is a previous klf output of that kind (marker present).
bool IsKlfOutput(const std::string& path, OutputKind kind);

// The marker file's content for an output written by `command`.
std::string OutputMarkerContent(std::string_view command);

// Names built from data (a timeline's topic, a partition directory's name) become path components
// only through these. Kafka's topic rule (Topic.validate): 1..249 characters of [a-zA-Z0-9._-], and
// not "." or "..".
bool ValidateTopicName(std::string_view topic, std::string* error);
// A single path component that stays where it is put: non-empty, no '/', no NUL, not "." or "..".
bool ValidatePathComponent(std::string_view name, std::string* error);

}  // namespace klf
