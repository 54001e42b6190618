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

// ---------------------------------------------------------------------------------------------
// FaultInjectionEnv

namespace {
class FaultyFile : public WritableFile {
 public:
  FaultyFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base) : env_(env), base_(std::move(base)) {}
  bool Append(Bytes data, std::string* error) override {
    if (env_->Crashed(error)) return false;
    size_t n = data.size();
    bool ok = env_->ChargeWrite(path(), &n, error);
    // What was charged is handed on at once (the base may buffer too): these stand for write(2)
    // calls, whose bytes are in the file when they return.
    std::string ignored;
    if (n > 0 && !(base_->Append(data.first(n), ok ? error : &ignored) && base_->Flush(ok ? error : &ignored))) {
      return false;
    }
    return ok;
  }
  bool Flush(std::string* error) override { return !env_->Crashed(error) && base_->Flush(error); }
  bool Sync(std::string* error) override {
    return !env_->Crashed(error) && base_->Flush(error) && !env_->SyncFails(path(), error) && base_->Sync(error);
  }
  bool Close(std::string* error) override {
    // A crashed process's files are closed by the kernel; nothing more is written.
    std::string ignored;
    if (env_->Crashed(&ignored)) {
      base_->Close(&ignored);
      *error = path() + ": crashed";
      return false;
    }
    return base_->Close(error);
  }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<WritableFile> base_;
};
}  // namespace

namespace {

std::string ReadFaultError(const std::string& path, uint64_t at) {
  return path + ": read at byte " + std::to_string(at) + ": Input/output error (simulated)";
}

// An input read through FaultInjectionEnv: counted, and failing as its fault (if any) says.
class FaultyReadableFile : public ReadableFile {
 public:
  FaultyReadableFile(FaultInjectionEnv* env, std::unique_ptr<ReadableFile> base,
                     const FaultInjectionEnv::ReadFault* fault)
      : env_(env), base_(std::move(base)), fault_(fault) {}
  const std::string& path() const override { return base_->path(); }
  uint64_t size() const override { return base_->size(); }
  int64_t mtime_ms() const override { return base_->mtime_ms(); }
  bool in_capture() const override { return base_->in_capture(); }
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, uint64_t* got, std::string* error) override {
    env_->CountRead();
    if (fault_ == nullptr || pos + n <= fault_->at) return base_->Read(pos, n, out, got, error);
    *got = 0;
    const uint64_t before = pos < fault_->at ? fault_->at - pos : 0;
    if (before > 0) {
      if (!base_->Read(pos, before, out, got, error)) return false;
      if (*got < before) return true;  // the file itself ended first
    }
    if (fault_->shrink) return true;  // the end of the file, at `at`
    *error = ReadFaultError(path(), std::max(pos, fault_->at));
    return false;
  }
  bool Map(MappedRegion* region, std::string* error) override {
    return fault_ == nullptr && base_->Map(region, error);  // a faulty file is read, where the fault strikes
  }
  void AdviseSequential() override { base_->AdviseSequential(); }
  void DataRegions(std::vector<std::pair<uint64_t, uint64_t>>* regions) override { base_->DataRegions(regions); }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<ReadableFile> base_;
  const FaultInjectionEnv::ReadFault* fault_;
};

}  // namespace

const FaultInjectionEnv::ReadFault* FaultInjectionEnv::FindReadFault(const std::string& path) const {
  for (const ReadFault& f : read_faults_)
    if (path.ends_with(f.suffix)) return &f;
  return nullptr;
}

std::unique_ptr<ReadableFile> FaultInjectionEnv::NewReadableFile(const std::string& path, std::string* error,
                                                                 InputFailure* failure) {
  if (OpenFails(path, error, failure)) return nullptr;
  auto base = base_->NewReadableFile(path, error, failure);
  if (!base) return nullptr;
  ++files_opened_;
  return std::make_unique<FaultyReadableFile>(this, std::move(base), FindReadFault(path));
}

bool FaultInjectionEnv::ProbeReadableFile(const std::string& path, InputFileInfo* info, std::string* error,
                                          InputFailure* failure) {
  return !OpenFails(path, error, failure) && base_->ProbeReadableFile(path, info, error, failure);
}

bool FaultInjectionEnv::OpenFails(const std::string& path, std::string* error, InputFailure* failure) {
  for (const std::string& suffix : open_fault_suffixes_) {
    InputFileInfo info;
    std::string ignored;
    if (path.ends_with(suffix) && base_->ProbeReadableFile(path, &info, &ignored, nullptr)) {  // it is there
      *error = path + ": Permission denied (simulated)";
      if (failure) *failure = InputFailure::kUnreadable;
      return true;
    }
  }
  return false;
}

bool FaultInjectionEnv::Crashed(std::string* error) {
  if (crashed_) *error = "simulated crash";
  return crashed_;
}

bool FaultInjectionEnv::SyncFails(const std::string& path, std::string* error) {
  if (fail_sync_) *error = path + ": fsync: Input/output error (simulated)";
  return fail_sync_;
}

bool FaultInjectionEnv::ChargeWrite(const std::string& path, size_t* n, std::string* error) {
  ++write_calls_;
  bool ok = ChargeBytes(path, n, error);
  bytes_written_ += *n;
  return ok;
}

bool FaultInjectionEnv::ChargeBytes(const std::string& path, size_t* n, std::string* error) {
  if (short_write_ && (short_write_suffix_.empty() || path.ends_with(short_write_suffix_))) {
    *n /= 2;
    *error = path + ": short write (simulated)";
    return false;
  }
  if (limit_bytes_) {
    if (*n > bytes_left_) {
      *n = size_t(bytes_left_);
      bytes_left_ = 0;
      *error = path + ": write: No space left on device (simulated)";
      return false;
    }
    bytes_left_ -= *n;
  }
  return true;
}

std::unique_ptr<WritableFile> FaultInjectionEnv::NewWritableFile(const std::string& path, std::string* error) {
  if (Crashed(error)) return nullptr;
  auto base = base_->NewWritableFile(path, error);
  if (!base) return nullptr;
  // The buffer sits above the faults, so they strike the writes a buffered file really makes.
  return NewBufferedWritableFile(std::make_unique<FaultyFile>(this, std::move(base)), kWritableFileBufferBytes);
}

bool FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to, std::string* error) {
  if (Crashed(error)) return false;
  if (crash_on_rename_) {
    if (renames_left_ == 0) {
      crashed_ = true;
      *error = "simulated crash before rename of " + from;
      return false;
    }
    --renames_left_;
  }
  return base_->RenameFile(from, to, error);
}

bool FaultInjectionEnv::RemoveFile(const std::string& path, std::string* error) {
  return !Crashed(error) && base_->RemoveFile(path, error);
}
bool FaultInjectionEnv::CreateDir(const std::string& path, std::string* error) {
  return !Crashed(error) && base_->CreateDir(path, error);
}
bool FaultInjectionEnv::CreateUniqueDir(const std::string& prefix, std::string* path, std::string* error) {
  return !Crashed(error) && base_->CreateUniqueDir(prefix, path, error);
}
bool FaultInjectionEnv::RemoveDirRecursively(const std::string& path, std::string* error) {
  return !Crashed(error) && base_->RemoveDirRecursively(path, error);
}
bool FaultInjectionEnv::SyncDir(const std::string& path, std::string* error) {
  return !Crashed(error) && !SyncFails(path, error) && base_->SyncDir(path, error);
}
bool FaultInjectionEnv::SyncFileSystem(const std::string& path, std::string* error) {
  return !Crashed(error) && !SyncFails(path, error) && base_->SyncFileSystem(path, error);
}
bool FaultInjectionEnv::CopyFile(const std::string& from, const std::string& to, std::string* error) {
  if (Crashed(error)) return false;
  if (const ReadFault* f = FindReadFault(from)) {
    InputFileInfo info;
    if (!ProbeReadableFile(from, &info, error)) return false;
    if (f->at < info.size) {
      *error = f->shrink ? from + ": the file ended at byte " + std::to_string(f->at) + " while it was copied"
                         : ReadFaultError(from, f->at);
      return false;
    }
  }
  if (!base_->CopyFile(from, to, error)) return false;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(to, ec);
  size_t n = size_t(size);
  ++write_calls_;
  const bool ok = ChargeBytes(to, &n, error);
  bytes_written_ += n;
  if (!ok) std::filesystem::resize_file(to, n, ec);  // what fitted
  return ok;
}
bool FaultInjectionEnv::SetMtimeMs(const std::string& path, int64_t mtime_ms, std::string* error) {
  return !Crashed(error) && base_->SetMtimeMs(path, mtime_ms, error);
}

}  // namespace klf
