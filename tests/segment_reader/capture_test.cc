// Captures (segment_reader/capture.h): archives are built here with libarchive's writer API, then read
// back through the capture layer and file.h's readers; every hostile member is refused by name.
#include "segment_reader/capture.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "segment_reader/file.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

struct Member {
  Member(std::string n, std::string d = "", mode_t t = AE_IFREG, std::string l = "", bool h = false)
      : name(std::move(n)), data(std::move(d)), type(t), link(std::move(l)), hardlink(h) {}
  std::string name;
  std::string data;
  mode_t type = AE_IFREG;
  std::string link;  // symlink or hard link target
  bool hardlink = false;
};

enum class Kind { kTar, kTarGz, kTarZst, kZip };

// Writes `members` as an archive of `kind` at `path`.
void WriteArchive(const std::string& path, Kind kind, const std::vector<Member>& members) {
  struct archive* a = archive_write_new();
  if (kind == Kind::kZip) {
    archive_write_set_format_zip(a);
  } else {
    archive_write_set_format_pax_restricted(a);
    if (kind == Kind::kTarGz) archive_write_add_filter_gzip(a);
    if (kind == Kind::kTarZst) archive_write_add_filter_zstd(a);
  }
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const Member& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    if (m.hardlink) {
      archive_entry_set_hardlink(e, m.link.c_str());
    } else if (m.type == AE_IFLNK) {
      archive_entry_set_symlink(e, m.link.c_str());
    }
    if (m.type == AE_IFREG && !m.hardlink) archive_entry_set_size(e, la_int64_t(m.data.size()));
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (m.type == AE_IFREG && !m.data.empty()) archive_write_data(a, m.data.data(), m.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

class CaptureTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/klf-capture-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
};

std::string Ext(Kind k) {
  switch (k) {
    case Kind::kTar: return ".tar";
    case Kind::kTarGz: return ".tar.gz";
    case Kind::kTarZst: return ".tar.zst";
    case Kind::kZip: return ".zip";
  }
  return "";
}

std::string Big(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 7 + i / 251) & 0xff);
  return s;
}

void ListsAndReadsMembers(const std::string& path, Kind kind);

TEST_P(CaptureTest, ListsAndReadsMembers) { ListsAndReadsMembers(Path("cap" + Ext(GetParam())), GetParam()); }

// Nothing cached: compressed members are streamed by libarchive (re-opened when a reader goes back).
TEST_P(CaptureTest, ListsAndReadsMembersStreamed) {
  SetCaptureCacheMemberBytesForTesting(0);
  ListsAndReadsMembers(Path("streamed" + Ext(GetParam())), GetParam());
  SetCaptureCacheMemberBytesForTesting(kCaptureCacheMemberBytes);
}

// Streamed members read in archive order, in reverse, interleaved and backwards within a member: a reader
// that is done leaves its stream for a later member (capture.cc's parked streams); every byte is the
// member's whatever stream serves it.
TEST_P(CaptureTest, StreamedMembersInAnyOrderReadTheirOwnBytes) {
  SetCaptureCacheMemberBytesForTesting(0);
  const std::string path = Path("order" + Ext(GetParam()));
  std::vector<Member> members;
  std::vector<std::string> data;
  for (int i = 0; i < 6; ++i) {
    data.push_back(Big(size_t(200000 + i * 1000)));
    data.back()[0] = char('a' + i);  // each member's bytes differ from the first
    members.emplace_back(fmt::format("b/foo-0/{:020}.log", i), data.back());
  }
  WriteArchive(path, GetParam(), members);
  std::string error;
  std::shared_ptr<const Capture> c = OpenCapture(path, &error);
  ASSERT_TRUE(c) << error;
  auto read_all = [&](int i) {
    const CaptureMember* m = c->Find(members[size_t(i)].name);
    if (m == nullptr) return std::string("missing");
    std::unique_ptr<CaptureMemberReader> r = OpenCaptureMember(c, *m, &error);
    if (!r) return error;
    std::string got(m->size, '\0');
    // The second half, then the first: a read that goes backwards.
    const uint64_t half = m->size / 2;
    if (!r->Read(half, m->size - half, reinterpret_cast<uint8_t*>(got.data() + half), &error)) return error;
    if (!r->Read(0, half, reinterpret_cast<uint8_t*>(got.data()), &error)) return error;
    return got;
  };
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(read_all(i) == data[size_t(i)]) << "in order, member " << i;
    for (int i = 5; i >= 0; --i) EXPECT_TRUE(read_all(i) == data[size_t(i)]) << "reverse, member " << i;
    for (int i : {3, 0, 4, 1, 5, 2}) EXPECT_TRUE(read_all(i) == data[size_t(i)]) << "interleaved, member " << i;
  }
  // Two readers open at once, each on its own stream.
  const CaptureMember* m1 = c->Find(members[1].name);
  const CaptureMember* m4 = c->Find(members[4].name);
  ASSERT_TRUE(m1 && m4);
  auto r1 = OpenCaptureMember(c, *m1, &error);
  auto r4 = OpenCaptureMember(c, *m4, &error);
  ASSERT_TRUE(r1 && r4) << error;
  std::string a(100, '\0'), b(100, '\0');
  ASSERT_TRUE(r4->Read(0, 100, reinterpret_cast<uint8_t*>(b.data()), &error)) << error;
  ASSERT_TRUE(r1->Read(0, 100, reinterpret_cast<uint8_t*>(a.data()), &error)) << error;
  EXPECT_EQ(a, data[1].substr(0, 100));
  EXPECT_EQ(b, data[4].substr(0, 100));
  SetCaptureCacheMemberBytesForTesting(kCaptureCacheMemberBytes);
}

void ListsAndReadsMembers(const std::string& path, Kind kind) {
  const std::string big = Big(3u << 20);  // several MappedFile / StreamedFile chunks
  WriteArchive(path, kind,
               {{"./broker1/", "", AE_IFDIR},
                {"./broker1/meta.properties", "node.id=1\n"},
                {"./broker1/foo-0/00000000000000000000.log", big},
                {"broker1/foo-0/00000000000000000000.index", ""},
                {"broker2/bar-3/leader-epoch-checkpoint", "0\n1\n0 0\n"}});
  std::string error;
  std::shared_ptr<const Capture> c = OpenCapture(path, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->in_place(), kind == Kind::kTar);

  // The tree: implied directories exist; `./` is dropped.
  std::vector<InputDirEntry> entries;
  ASSERT_TRUE(ListInputDir(path, &entries, &error)) << error;
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "broker1");
  EXPECT_EQ(entries[1].name, "broker2");
  EXPECT_EQ(entries[1].kind, InputKind::kDir);
  ASSERT_TRUE(ListInputDir(path + "/broker1/foo-0", &entries, &error)) << error;
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(StatInput(path + "/broker1/foo-0/00000000000000000000.log").size, big.size());
  EXPECT_EQ(StatInput(path + "/broker1/foo-0/00000000000000000000.log").mtime_ms, int64_t(1700000000) * 1000);
  EXPECT_EQ(StatInput(path + "/broker1/foo-0/").kind, InputKind::kDir);
  EXPECT_EQ(StatInput(path + "/broker2/bar-3").kind, InputKind::kDir);
  EXPECT_EQ(StatInput(path + "/broker9").kind, InputKind::kMissing);
  EXPECT_EQ(StatInput(path).kind, InputKind::kDir);

  // ReadSmallFile, MappedFile and StreamedFile read the same bytes.
  std::string text;
  ASSERT_TRUE(ReadSmallFile(path + "/broker1/meta.properties", 1 << 20, &text, &error)) << error;
  EXPECT_EQ(text, "node.id=1\n");
  InputFailure failure;
  EXPECT_FALSE(ReadSmallFile(path + "/broker1/meta.properties", 4, &text, &error, &failure));
  EXPECT_EQ(failure, InputFailure::kTooLarge);
  EXPECT_FALSE(ReadSmallFile(path + "/broker1/nope", 1 << 20, &text, &error, &failure));
  EXPECT_EQ(failure, InputFailure::kMissing);
  const std::string log = path + "/broker1/foo-0/00000000000000000000.log";
  auto mapped = MappedFile::Open(log, &error);
  ASSERT_TRUE(mapped) << error;
  ASSERT_EQ(mapped->size(), big.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(mapped->data().data()), mapped->size()), big);
  ReleaseMappedPages(mapped->data().data(), mapped->data().data() + mapped->size());  // pages come back alike
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(mapped->data().data()), mapped->size()), big);
  auto streamed = StreamedFile::Open(log, &error, 64 << 10);
  ASSERT_TRUE(streamed) << error;
  for (uint64_t pos : {uint64_t(0), uint64_t(100000), uint64_t(5), uint64_t(big.size() - 10)}) {  // and backwards
    const uint8_t* p = streamed->Fetch(pos, 10, &error);
    ASSERT_NE(p, nullptr) << error;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(p), 10), big.substr(pos, 10));
  }
  EXPECT_EQ(streamed->Fetch(big.size() - 5, 10, &error), nullptr);
  auto empty = MappedFile::Open(path + "/broker1/foo-0/00000000000000000000.index", &error);
  ASSERT_TRUE(empty) << error;
  EXPECT_EQ(empty->size(), 0u);
  // No descriptor for a member; a directory is no file.
  InputFileInfo info;
  EXPECT_LT(OpenInputFile(log, &info, &error), 0);
  EXPECT_NE(error.find("a member of a capture"), std::string::npos) << error;
  EXPECT_FALSE(MappedFile::Open(path + "/broker1", &error));
  EXPECT_NE(error.find("a directory"), std::string::npos) << error;
  EXPECT_TRUE(ProbeInputFile(log, &info, &error));
  EXPECT_EQ(info.size, big.size());
}

INSTANTIATE_TEST_SUITE_P(Kinds, CaptureTest, ::testing::Values(Kind::kTar, Kind::kTarGz, Kind::kTarZst, Kind::kZip),
                         [](const ::testing::TestParamInfo<Kind>& i) {
                           std::string e = Ext(i.param).substr(1);
                           for (char& c : e) c = c == '.' ? '_' : c;
                           return e;
                         });

class HostileCaptureTest : public CaptureTest {};

struct Hostile {
  const char* what;
  std::vector<Member> members;
  const char* named;  // the member the message names (escaped)
  const char* why;
};

TEST_F(HostileCaptureTest, EachHostileMemberIsRefusedByName) {
  const std::vector<Hostile> cases = {
      {"dotdot", {{"b1/foo-0/../../../etc/x", "x"}}, "b1/foo-0/../../../etc/x", "'..'"},
      {"absolute", {{"/etc/passwd", "x"}}, "/etc/passwd", "absolute"},
      {"symlink",
       {{"b1/foo-0/00000000000000000000.log", "", AE_IFLNK, "/etc/shadow"}},
       "b1/foo-0/00000000000000000000.log",
       "symbolic link to \"/etc/shadow\""},
      {"hardlink", {{"b1/a", "x"}, {"b1/b", "", AE_IFREG, "b1/a", true}}, "b1/b", "hard link"},
      {"fifo", {{"b1/p", "", AE_IFIFO}}, "b1/p", "FIFO"},
      {"chardev", {{"b1/c", "", AE_IFCHR}}, "b1/c", "character device"},
      {"duplicate", {{"b1/a", "x"}, {"b1//a", "y"}}, "b1//a", "second member"},
      {"file-as-dir", {{"b1", "x"}, {"b1/a", "y"}}, "b1/a", "which is a file"},
      {"control", {{"b1/a\x1b[2Jb", "x"}}, "b1/a\\x1b[2Jb", "control"},
      {"backslash", {{"b1\\..\\..\\x", "x"}}, "b1\\x5c..\\x5c..\\x5cx", "backslash"},
  };
  for (const Hostile& h : cases) {
    const std::string path = Path(std::string(h.what) + ".tar");
    WriteArchive(path, Kind::kTar, h.members);
    std::string error;
    EXPECT_FALSE(OpenCapture(path, &error)) << h.what;
    EXPECT_NE(error.find(std::string("member \"") + h.named + "\""), std::string::npos) << h.what << ": " << error;
    EXPECT_NE(error.find(h.why), std::string::npos) << h.what << ": " << error;
    EXPECT_NE(error.find("refused"), std::string::npos) << h.what << ": " << error;
    EXPECT_EQ(error.find('\x1b'), std::string::npos) << h.what;
    // Every reader sees the refusal, never a member.
    EXPECT_EQ(StatInput(path + "/b1").kind, InputKind::kUnreadable) << h.what;
    std::string text;
    InputFailure failure;
    EXPECT_FALSE(ReadSmallFile(path + "/b1/a", 1 << 20, &text, &error, &failure)) << h.what;
    EXPECT_EQ(failure, InputFailure::kUnreadable) << h.what;
  }
  // A zip member escaping with `../`.
  const std::string zip = Path("evil.zip");
  WriteArchive(zip, Kind::kZip, {{"../evil", "x"}});
  std::string error;
  EXPECT_FALSE(OpenCapture(zip, &error));
  EXPECT_NE(error.find("member \"../evil\""), std::string::npos) << error;
  // Nothing was written beside the archives.
  EXPECT_FALSE(fs::exists(dir_ + "/../evil"));
  EXPECT_FALSE(fs::exists(dir_ + "/b1"));
}

TEST_F(HostileCaptureTest, NotAnArchiveAndTruncated) {
  const std::string junk = Path("junk.tar.gz");
  {
    FILE* f = std::fopen(junk.c_str(), "wb");
    std::fputs("this is no archive", f);
    std::fclose(f);
  }
  std::string error;
  EXPECT_FALSE(OpenCapture(junk, &error));
  EXPECT_NE(error.find(junk), std::string::npos) << error;
  // A compressed tar cut in the middle of a member's data: refused or read short, never more.
  const std::string cut = Path("cut.tar.zst");
  WriteArchive(cut, Kind::kTarZst, {{"b1/foo-0/00000000000000000000.log", Big(1 << 20)}, {"b1/x", "y"}});
  fs::resize_file(cut, fs::file_size(cut) / 2);
  std::shared_ptr<const Capture> c = OpenCapture(cut, &error);
  if (c) {
    // Indexed (the headers it reached were whole): reading the cut member fails, naming it.
    auto m = MappedFile::Open(cut + "/b1/foo-0/00000000000000000000.log", &error);
    if (!m) {
      EXPECT_NE(error.find("00000000000000000000.log"), std::string::npos) << error;
    }
  } else {
    EXPECT_NE(error.find(cut), std::string::npos) << error;
  }
}

TEST(CapturePathTest, SplitsAtTheArchive) {
  char tmpl[] = "/tmp/klf-capture-split-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  WriteArchive(dir + "/a.TAR.ZST", Kind::kTarZst, {{"x/y", "z"}});
  std::string archive, member;
  ASSERT_TRUE(SplitCapturePath(dir + "/a.TAR.ZST/./x//y/", &archive, &member));
  EXPECT_EQ(archive, dir + "/a.TAR.ZST");
  EXPECT_EQ(member, "x/y");
  ASSERT_TRUE(SplitCapturePath(dir + "/a.TAR.ZST", &archive, &member));
  EXPECT_EQ(member, "");
  EXPECT_FALSE(SplitCapturePath(dir + "/missing.tar/x", &archive, &member));  // no such file: a real path
  EXPECT_FALSE(SplitCapturePath(dir, &archive, &member));
  // The extension in any case, after other dots in the path.
  WriteArchive(dir + "/v1.2.ZiP", Kind::kZip, {{"m", "n"}});
  ASSERT_TRUE(SplitCapturePath(dir + "/v1.2.ZiP/m", &archive, &member));
  EXPECT_EQ(archive, dir + "/v1.2.ZiP");
  EXPECT_EQ(member, "m");
  EXPECT_FALSE(SplitCapturePath(dir + "/v1.2.ZiP.d/m", &archive, &member));  // no such file either
  EXPECT_TRUE(HasCaptureExtension("c.tgz"));
  EXPECT_TRUE(HasCaptureExtension("c.zip"));
  EXPECT_FALSE(HasCaptureExtension(".tar"));
  EXPECT_FALSE(HasCaptureExtension("c.tar.xz"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace klf
