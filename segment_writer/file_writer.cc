// POSIX Env, atomic files and staged directories (see file_writer.h).
#include "segment_writer/file_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "segment_writer/output_guard.h"
#include "segment_writer/scratch.h"

namespace klf {
namespace {

std::string ErrnoMessage(const std::string& path, const char* what, int err) {
  return path + ": " + what + ": " + std::strerror(err);
}

std::string ParentDir(const std::string& path) {
  std::filesystem::path p(path);
  std::string parent = p.parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string BaseName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// Written into every staging directory, so the committed output is recognisably klf's
// (output_guard.h): a later --force may replace it, nothing else may. Written directly (no rename):
// the staging directory as a whole is what is renamed into place.
bool WriteOutputMarker(Env* env, const std::string& dir, std::string* error) {
  auto f = env->NewWritableFile(dir + "/" + kOutputMarkerName, error);
  return f && f->Append(AsBytes(OutputMarkerContent("")), error) && f->Close(error);
}

}  // namespace

bool WriteFileAtomically(Env* env, const std::string& path, std::string_view data, std::string* error) {
  auto file = AtomicFile::Create(env, path, error);
  if (!file) return false;
  if (!file->Append(data, error)) return false;
  return file->Commit(error);
}

bool WriteUserFileAtomically(Env* env, const std::string& path, std::string_view data, std::string* error) {
  RemoveStaleScratch(ParentDir(path), BaseName(path) + ".tmp-");
  std::string tmp = ScratchPrefix(path + ".tmp-") + "XXXXXX";
  int fd = ::mkstemp(tmp.data());  // O_EXCL: a fresh name
  if (fd < 0) {
    *error = ErrnoMessage(tmp, "mkstemp", errno);
    return false;
  }
  ::fchmod(fd, 0644);  // mkstemp creates 0600; a report is as readable as any other output
  ::close(fd);
  RegisterScratch(tmp);
  auto file = env->NewWritableFile(tmp, error);
  bool ok = file && file->Append(AsBytes(data), error) && file->Sync(error) && file->Close(error) &&
            env->RenameFile(tmp, path, error);
  if (!ok) {
    std::string ignored;
    env->RemoveFile(tmp, &ignored);
  }
  UnregisterScratch(tmp);
  return ok && env->SyncDir(ParentDir(path), error);
}

std::unique_ptr<AtomicFile> AtomicFile::Create(Env* env, const std::string& path, std::string* error) {
  std::unique_ptr<AtomicFile> f(new AtomicFile());
  f->env_ = env;
  f->path_ = path;
  f->file_ = env->NewWritableFile(path + ".tmp", error);
  if (!f->file_) return nullptr;
  return f;
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  std::string ignored;
  if (file_) file_->Close(&ignored);
  env_->RemoveFile(path_ + ".tmp", &ignored);
}

bool AtomicFile::Append(Bytes data, std::string* error) {
  if (!file_->Append(data, error)) return false;
  size_ += data.size();
  return true;
}

bool AtomicFile::Commit(std::string* error) {
  if (!file_->Sync(error) || !file_->Close(error)) return false;
  if (!env_->RenameFile(path_ + ".tmp", path_, error)) return false;
  committed_ = true;
  return env_->SyncDir(ParentDir(path_), error);
}

std::unique_ptr<StagedDirectory> StagedDirectory::Create(Env* env, const std::string& out, const Options& options,
                                                         std::string* error) {
  std::string trimmed = out;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  // The one output guard (output_guard.h): not into, over or around an input; an existing directory
  // only if it is empty, or a previous klf output with --force.
  CheckedOutput checked;
  if (!CheckOutputPath({trimmed, OutputKind::kDirectory, options.inputs, options.force}, &checked, error)) {
    return nullptr;
  }
  trimmed = checked.path;
  // Leftovers of a killed run into the same --out (scratch.h).
  RemoveStaleScratch(ParentDir(trimmed), BaseName(trimmed) + ".tmp-");
  RemoveStaleScratch(ParentDir(trimmed), BaseName(trimmed) + ".old-");
  // Missing parent directories are created (mkdir -p), so `--out a/b/c` works on a fresh path.
  std::vector<std::string> missing;
  for (std::string p = ParentDir(trimmed); p != "." && p != "/" && !env->FileExists(p); p = ParentDir(p)) {
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!env->CreateDir(*it, error)) return nullptr;
  }
  std::unique_ptr<StagedDirectory> d(new StagedDirectory());
  d->env_ = env;
  d->out_ = trimmed;
  d->force_ = options.force;
  if (!env->CreateUniqueDir(ScratchPrefix(trimmed + ".tmp-"), &d->staging_, error)) return nullptr;
  RegisterScratch(d->staging_);
  if (!WriteOutputMarker(env, d->staging_, error)) return nullptr;
  return d;
}

StagedDirectory::~StagedDirectory() {
  if (committed_ || staging_.empty()) return;
  std::string ignored;
  env_->RemoveDirRecursively(staging_, &ignored);
  UnregisterScratch(staging_);
}

bool StagedDirectory::Commit(std::string* error) {
  if (!env_->SyncDir(staging_, error)) return false;
  std::string aside;
  if (env_->FileExists(out_)) {
    if (env_->IsNonEmptyDir(out_)) {
      // Checked again: something may have appeared there since Create.
      if (!force_ || !IsKlfOutput(out_, OutputKind::kDirectory)) {
        *error = out_ + ": appeared while writing and is not empty";
        return false;
      }
      // Move the old directory aside first so `out` is never a mix of old and new files.
      if (!env_->CreateUniqueDir(ScratchPrefix(out_ + ".old-"), &aside, error)) return false;
      RegisterScratch(aside);
      if (!env_->RenameFile(out_, aside + "/old", error)) return false;
    } else {
      // An empty directory (or a file in the way): rename() replaces an empty directory.
    }
  }
  if (!env_->RenameFile(staging_, out_, error)) return false;
  committed_ = true;
  UnregisterScratch(staging_);
  if (!env_->SyncDir(ParentDir(out_), error)) return false;
  if (aside.empty()) return true;
  bool removed = env_->RemoveDirRecursively(aside, error);
  UnregisterScratch(aside);
  return removed;
}

}  // namespace klf
