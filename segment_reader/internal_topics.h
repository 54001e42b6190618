// Decoders for the records of Kafka's internal topics: what kafka-dump-log.sh prints with
// --transaction-log-decoder, --offsets-decoder and --cluster-metadata-decoder (spec
// dump-log-segments.md §5), and the same content as JSON objects with Kafka's field names.
//
// - `__transaction_state`: key = int16 version (0) + TransactionLogKey; value = int16 version
//   (0, or 1 flexible with tagged PreviousProducerId, NextProducerId, ClientTransactionVersion)
//   + TransactionLogValue; a null value is a tombstone (an expired transactional id).
// - `__consumer_offsets`: key = int16 record type (0/1 OffsetCommit, 2 GroupMetadata, 3-8 KIP-848
//   consumer groups, 9-15 share groups) + the key message read at version = record type; value =
//   int16 version + the value message; a null value is a tombstone. A classic group's members carry
//   ConsumerProtocol subscription and assignment bytes, expanded as Kafka's decoder expands them.
// - `__cluster_metadata` (and KRaft `.checkpoint` snapshots): value = uvarint frame version (1) +
//   uvarint record type (apiKey) + uvarint version + the metadata record; keys are null. Control
//   batches carry the raft's own records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters),
//   each a message at version 0 with no version prefix.
// - `__remote_log_metadata` (tiered storage's TopicBasedRemoteLogMetadataManager): the same framing
//   (RemoteLogMetadataSerde: RemoteLogSegmentMetadata, its update, RemotePartitionDeleteMetadata and the
//   snapshot record); the text is the toString of what Kafka builds from it, as kafka-dump-log's
//   --remote-log-metadata-decoder prints it.
//
// Decoding is strict: an unknown record type or version, a short field, or a byte left over after a
// key or value fails with the reason; the caller reports it (with file and position) and shows the
// raw bytes. Lengths and counts are bounded by the bytes that remain, so hostile input cannot make a
// decoder allocate more than a small multiple of the record's size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "segment_reader/batch.h"
#include "segment_reader/kafka_message.h"

namespace klf {

enum class TopicDecoder { kNone, kOffsets, kTransactionLog, kClusterMetadata, kRemoteLogMetadata };

// "none", "offsets", "transaction-log", "cluster-metadata", "remote-log-metadata" (the --decoder values).
const char* TopicDecoderName(TopicDecoder d);
bool ParseTopicDecoder(std::string_view name, TopicDecoder* d);
// The decoder Kafka's own tools would use for records of `topic` (kNone for user topics).
TopicDecoder DecoderForTopic(std::string_view topic);

// A record decoded by one of the decoders above.
struct DecodedRecord {
  // kafka-dump-log's text: ` key: <key_text>` (when set) and ` payload: <value_text>` (when set;
  // "<DELETE>" for a tombstone). A control record sets `control_text` instead ("SnapshotHeader {...}").
  std::optional<std::string> key_text, value_text, control_text;
  // The "decoded" object of `klf dump --json`, e.g. {"keyVersion":0,"key":{...},"valueVersion":1,
  // "value":{...},"state":"Ongoing"}.
  OrderedJson json;
};

// Decodes a record of a data batch. Returns false with `error` when the record does not decode.
bool DecodeInternalRecord(TopicDecoder decoder, const Record& record, DecodedRecord* out, std::string* error);

// Decodes a KRaft control record (types 2-6 of a control batch). ABORT/COMMIT markers are not
// decoded here (ParseControlRecord does). LeaderChange sets no `control_text`: kafka-dump-log at the
// fixtures' commit prints it as `controlType: LEADER_CHANGE(2)`, and klf keeps that line.
bool DecodeRaftControlRecord(const Record& record, DecodedRecord* out, std::string* error);

// Kafka's TransactionState names by id: Empty, Ongoing, PrepareCommit, PrepareAbort,
// CompleteCommit, CompleteAbort, Dead, PrepareEpochFence; nullptr for an unknown id.
const char* TransactionStateName(int state);

// `quorum-state` (KRaft, FileQuorumStateStore): a JSON object such as {"leaderId":3001,
// "leaderEpoch":2,"votedId":-1,"votedDirectoryId":"...","data_version":1}. Returns false with the
// reason for anything else (invalid JSON, nesting deeper than a quorum state has, not an object).
bool ParseQuorumState(std::string_view text, OrderedJson* out, std::string* error);

}  // namespace klf
