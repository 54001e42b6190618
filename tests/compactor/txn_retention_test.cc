// CleanedTransactionMetadata (§7.2) and the record filter (§8), driven through the sequences of
// LogCleanerTest's transaction scenarios (cleaner-tests.md #8, #10, #13, #16, #18, #25).
#include "compactor/retention.h"
#include "compactor/txn_metadata.h"

#include <gtest/gtest.h>

namespace klf {
namespace {

BatchHeader Data(int64_t pid, int64_t base, int64_t last, bool txn = true) {
  BatchHeader b;
  b.producer_id = pid;
  b.producer_epoch = 0;
  b.base_offset = base;
  b.last_offset = last;
  b.is_transactional = txn;
  return b;
}
BatchHeader Marker(int64_t pid, int64_t offset) {
  BatchHeader b = Data(pid, offset, offset);
  b.is_control = true;
  return b;
}

// testBasicTransactionAwareCleaning: p1[1,2]@0-1, p2[2,3]@2-3, p1[3,4]@4-5, A(p1)@6, C(p2)@7, p1[2]@8, C(p1)@9.
TEST(TxnMetadataTest, AbortedAndCommitted) {
  CleanedTransactionMetadata t;
  std::vector<AbortedTxn> index;
  t.set_cleaned_index(&index);
  t.AddAbortedTransactions({AbortedTxn{0, 1, 0, 6, 2}});
  EXPECT_TRUE(t.OnBatchRead(Data(1, 0, 1)));
  EXPECT_FALSE(t.OnBatchRead(Data(2, 2, 3)));
  EXPECT_TRUE(t.OnBatchRead(Data(1, 4, 5)));
  EXPECT_FALSE(t.OnControlBatchRead(Marker(1, 6), ControlType::kAbort));  // data seen → kept, indexed
  ASSERT_EQ(index.size(), 1u);
  EXPECT_EQ(index[0].last_offset, 6);
  EXPECT_FALSE(t.OnControlBatchRead(Marker(2, 7), ControlType::kCommit));
  EXPECT_FALSE(t.OnBatchRead(Data(1, 8, 8)));
  EXPECT_FALSE(t.OnControlBatchRead(Marker(1, 9), ControlType::kCommit));
  // A second COMMIT without data in between is discardable; an empty control batch always is.
  EXPECT_TRUE(t.OnControlBatchRead(Marker(1, 10), ControlType::kCommit));
  EXPECT_TRUE(t.OnControlBatchRead(Marker(1, 11), std::nullopt));
  // Non-transactional data never counts.
  EXPECT_FALSE(t.OnBatchRead(Data(3, 12, 12, false)));
  EXPECT_TRUE(t.OnControlBatchRead(Marker(3, 13), ControlType::kCommit));
}

// An ABORT whose data is gone is discardable and drops its .txnindex entry (§7.2).
TEST(TxnMetadataTest, AbortWithoutObservedData) {
  CleanedTransactionMetadata t;
  std::vector<AbortedTxn> index;
  t.set_cleaned_index(&index);
  t.AddAbortedTransactions({AbortedTxn{0, 1, 0, 2, 3}});
  EXPECT_TRUE(t.OnControlBatchRead(Marker(1, 2), ControlType::kAbort));
  EXPECT_TRUE(index.empty());
}

TEST(RetentionTest, BatchRetentionRules) {
  LastRecords last;
  last[7] = LastRecord{5, 0};
  last[8] = LastRecord{std::nullopt, 3};
  // Producer 7's last data batch → RETAIN_EMPTY even if aborted.
  auto d = CheckBatchRetention(Data(7, 4, 5), true, last, 100, 0);
  EXPECT_EQ(d.retention, BatchRetention::kRetainEmpty);
  EXPECT_TRUE(d.discard_batch_records);
  // Aborted data otherwise → DELETE.
  d = CheckBatchRetention(Data(7, 2, 3), true, last, 100, 0);
  EXPECT_EQ(d.retention, BatchRetention::kDelete);
  // nextOffset == upper bound → RETAIN_EMPTY.
  d = CheckBatchRetention(Data(-1, 99, 99, false), false, last, 100, 0);
  EXPECT_EQ(d.retention, BatchRetention::kRetainEmpty);
  EXPECT_EQ(d.reason, BatchReason::kLastOfRound);
  // Producer without recorded data: its control batch with the current epoch is protected.
  BatchHeader m = Marker(8, 10);
  m.producer_epoch = 3;
  d = CheckBatchRetention(m, true, last, 100, 0);
  EXPECT_EQ(d.retention, BatchRetention::kRetainEmpty);
  EXPECT_TRUE(d.contains_marker_for_empty_txn);
  EXPECT_FALSE(d.discard_batch_records);  // no horizon yet
  // A discardable marker past its horizon → DELETE.
  BatchHeader m2 = Marker(9, 11);
  m2.delete_horizon_ms = 50;
  d = CheckBatchRetention(m2, true, last, 100, 50);
  EXPECT_EQ(d.retention, BatchRetention::kDelete);
  d = CheckBatchRetention(m2, true, last, 100, 49);
  EXPECT_EQ(d.retention, BatchRetention::kDeleteEmpty);
}

class ExactMap : public OffsetMap {  // Kafka's FakeOffsetMap
 public:
  int32_t slots() const override { return 1000; }
  using OffsetMap::Put;
  bool Put(Bytes key, int64_t offset, int64_t* previous) override {
    auto it = m_.find(std::string(AsStringView(key)));
    if (previous) *previous = it == m_.end() ? -1 : it->second;
    m_[std::string(AsStringView(key))] = offset;
    latest_ = offset;
    return true;
  }
  int64_t Get(Bytes key) const override {
    auto it = m_.find(std::string(AsStringView(key)));
    return it == m_.end() ? -1 : it->second;
  }
  void UpdateLatestOffset(int64_t o) override { latest_ = o; }
  void Clear() override { m_.clear(); }
  int32_t size() const override { return int32_t(m_.size()); }
  int64_t latest_offset() const override { return latest_; }

 private:
  std::map<std::string, int64_t> m_;
  int64_t latest_ = -1;
};

TEST(RetentionTest, RecordRules) {
  ExactMap map;
  std::string k1 = "k1", k2 = "k2", v = "v";
  map.Put(AsBytes(k1), 4);
  map.Put(AsBytes(k2), 1);
  map.UpdateLatestOffset(4);
  BatchHeader b = Data(-1, 0, 0, false);
  BatchDecision bd;
  Record r;
  r.key = AsBytes(k1);
  r.value = AsBytes(v);
  r.offset = 0;
  EXPECT_EQ(ShouldRetainRecord(b, bd, r, map, 0, true), RecordDecision::kRemovedSuperseded);
  r.offset = 4;
  r.value.reset();
  EXPECT_EQ(ShouldRetainRecord(b, bd, r, map, 0, true), RecordDecision::kKeptTombstone);
  b.delete_horizon_ms = 10;
  EXPECT_EQ(ShouldRetainRecord(b, bd, r, map, 9, true), RecordDecision::kKeptTombstone);
  EXPECT_EQ(ShouldRetainRecord(b, bd, r, map, 10, true), RecordDecision::kRemovedPastHorizon);
  r.offset = 5;  // beyond the mapped range
  EXPECT_EQ(ShouldRetainRecord(b, bd, r, map, 10, true), RecordDecision::kKeptBeyondMap);
  r.offset = 3;
  r.key.reset();
  EXPECT_EQ(ShouldRetainRecord(b, bd, r, map, 0, true), RecordDecision::kRemovedNoKey);
  // Legacy tombstones follow the segment mtime rule.
  BatchHeader legacy = b;
  legacy.magic = 1;
  legacy.delete_horizon_ms.reset();
  r.key = AsBytes(k1);
  r.offset = 4;
  EXPECT_EQ(ShouldRetainRecord(legacy, bd, r, map, 0, true), RecordDecision::kKeptTombstone);
  EXPECT_EQ(ShouldRetainRecord(legacy, bd, r, map, 0, false), RecordDecision::kRemovedLegacyTombstone);
}

}  // namespace
}  // namespace klf
