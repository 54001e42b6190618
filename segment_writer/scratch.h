// Scratch space (staging directories `<out>.tmp-…`, `klf simulate`'s tmpfs work directory, temporary
// files) is removed on every exit path:
//   * by its owner when a function returns (StagedDirectory, RunSimulation's cleanup);
//   * on SIGINT, SIGTERM or SIGHUP by a handler that removes every registered path, then lets the
//     signal terminate the process as it would have (the exit status still says "killed by");
//   * after a SIGKILL (which no handler sees) by the next run: scratch names carry the owning pid
//     (`<prefix><pid>-XXXXXX`), and RemoveStaleScratch removes those whose process is gone.
#pragma once

#include <string>

namespace klf {

// Registers `path` (a directory or a file) for removal if a signal ends the process. At most
// kMaxScratchPaths at once (klf holds two or three); further ones are simply not registered.
inline constexpr int kMaxScratchPaths = 16;
void RegisterScratch(const std::string& path);
// The owner removed (or renamed into place) the path: the handler must not touch it any more.
void UnregisterScratch(const std::string& path);

// `prefix` + this process's pid + "-": a scratch name prefix for CreateUniqueDir, recognisable by
// RemoveStaleScratch.
std::string ScratchPrefix(const std::string& prefix);

// Removes `dir`/`name_prefix`<pid>-XXXXXX entries (exactly that shape) owned by this user whose
// process no longer exists: leftovers of a klf run that was killed. Best effort, never fails.
void RemoveStaleScratch(const std::string& dir, const std::string& name_prefix);

// Removes a directory tree (or a file) with system calls only, safe inside a signal handler.
void RemoveTreeSignalSafe(const char* path);

}  // namespace klf
