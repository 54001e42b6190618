// FaultInjectionEnv (fault_injection_env.h).
#include "tests/support/fault_injection_env.h"

#include <algorithm>
#include <filesystem>

namespace klf {

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
