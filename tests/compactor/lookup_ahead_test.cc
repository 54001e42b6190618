// LookupAhead: every answer it hands over is the map's own answer for that key, whichever records the
// caller asks about; it skips control batches and records beyond the map's latest offset.
#include "compactor/lookup_ahead.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "tests/support/replica_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

using test::Replica;
using test::TempDir;

struct Rec {
  int64_t offset;
  std::string key;
};

class LookupAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two segments: keyed records (1000 distinct keys, some tombstones), and a committed transaction
    // whose marker (a control batch) the look-ahead must skip.
    Replica a(tmp_.path(), "a"), b(tmp_.path(), "b");
    for (int64_t o = 0; o < 6000; o++) Add(a, o);
    for (int64_t o = 6000; o < 12000; o++) {
      if (o == 9000) {
        b.Txn(o, "txn-key", "v");
        b.Marker(o + 1, ControlType::kCommit);
        recs_.push_back({o, "txn-key"});
        o++;
        continue;
      }
      Add(b, o);
    }
    for (Replica* r : {&a, &b}) {
      std::string dir = r->Write();
      std::string path = dir + "/00000000000000000000.log";
      segments_.push_back({path, std::filesystem::file_size(path)});
    }
    std::string error;
    map_ = SkimpyOffsetMap::Create(1 << 20, &error);
    ASSERT_NE(map_, nullptr) << error;
    for (const Rec& r : recs_) map_->Put(AsBytes(r.key), r.offset);
    map_->UpdateLatestOffset(10000);  // records after it are not looked up
  }
  void Add(Replica& r, int64_t offset) {
    std::string key = "key-" + std::to_string(offset % 1000);
    if (offset % 7 == 0)
      r.Put(offset, key, std::nullopt);
    else
      r.Put(offset, key, "value-" + std::to_string(offset));
    recs_.push_back({offset, key});
  }

  TempDir tmp_;
  std::vector<Rec> recs_;
  std::vector<LookupAhead::Segment> segments_;
  std::unique_ptr<SkimpyOffsetMap> map_;
};

TEST_F(LookupAheadTest, EveryAnswerIsTheMapsOwn) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();  // the thread is ahead of every call below
  int64_t expected_answers = 0;
  for (const Rec& r : recs_) {
    if (r.offset > map_->latest_offset()) {
      EXPECT_EQ(ahead.Find(r.offset, AsBytes(r.key)), std::nullopt) << r.offset;
      continue;
    }
    std::optional<int64_t> got = ahead.Find(r.offset, AsBytes(r.key));
    ASSERT_TRUE(got.has_value()) << "offset " << r.offset;
    EXPECT_EQ(*got, map_->Get(AsBytes(r.key))) << "offset " << r.offset;
    expected_answers++;
  }
  EXPECT_EQ(ahead.answered(), expected_answers);
  EXPECT_EQ(expected_answers, 10000);  // offsets 0..10000 minus the marker
}

TEST_F(LookupAheadTest, CallerSkippingRecordsStillGetsTheRightAnswers) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  int64_t asked = 0;
  for (size_t i = 0; i < recs_.size(); i += 3) {
    const Rec& r = recs_[i];
    if (r.offset > map_->latest_offset()) break;
    std::optional<int64_t> got = ahead.Find(r.offset, AsBytes(r.key));
    ASSERT_TRUE(got.has_value()) << "offset " << r.offset;
    EXPECT_EQ(*got, map_->Get(AsBytes(r.key)));
    asked++;
  }
  EXPECT_EQ(ahead.answered(), asked);
}

TEST_F(LookupAheadTest, AnotherKeyAtTheSameOffsetIsNotAnswered) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  EXPECT_EQ(ahead.Find(5, AsBytes("not-the-key")), std::nullopt);
  EXPECT_EQ(ahead.Find(6, AsBytes("key-6")), std::optional<int64_t>(map_->Get(AsBytes("key-6"))));
}

TEST_F(LookupAheadTest, DamagedOrMissingSegmentEndsTheLookAheadQuietly) {
  // The second segment's path does not exist: answers for the first are still right; none after.
  segments_[1].path += ".missing";
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  for (const Rec& r : recs_) {
    std::optional<int64_t> got = ahead.Find(r.offset, AsBytes(r.key));
    if (r.offset < 6000) {
      ASSERT_TRUE(got.has_value()) << r.offset;
      EXPECT_EQ(*got, map_->Get(AsBytes(r.key)));
    } else {
      EXPECT_EQ(got, std::nullopt) << r.offset;
    }
  }
}

}  // namespace
}  // namespace klf
