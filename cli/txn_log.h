// The coordinator's log (`__transaction_state`) as evidence for diff, lso and repair: one option and one
// loader, so the three commands take it alike.
//   --txn-log DIR   a `__transaction_state-N` directory, or a broker log dir holding some (repeatable);
//   --no-txn-log    do not look for one;
//   neither         the `__transaction_state-N` directories of the replicas' own log dirs (a PATH that
//                   is a log dir, or the parent of a PATH that is a partition dir) are used when there are.
// The records are evidence only by txn/coordinator.h's rules; a log that cannot be read is reported
// (explicit: an error; found on its own: a warning, and the command goes on without it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "txn/coordinator.h"

namespace CLI {
class App;
}

namespace klf::cli {

struct TxnLogArgs {
  std::vector<std::string> dirs;
  bool none = false;
  bool same_cluster = false;  // CoordinatorLog::same_cluster_vouched
};
// The help of --same-cluster, which every command that takes the coordinator's records offers.
inline constexpr const char* kSameClusterHelp =
    "vouch that the coordinator's records (__transaction_state) and the data partitions come from one cluster, "
    "where no meta.properties shows it and they are not in one log dir (producer ids repeat across clusters: "
    "without it the coordinator's word is suspected, not certain)";
void AddTxnLogOptions(CLI::App* sub, TxnLogArgs* args);

struct TxnLog {
  std::vector<std::string> dirs;  // the directories read (empty: none)
  std::unique_ptr<CoordinatorLog> log;
  std::vector<std::string> warnings;  // problems of the records, or why an auto-found log was not used
  const CoordinatorLog* get() const { return log.get(); }
};

// "N __transaction_state partitions (FIRST, ...)": how the text reports name the directories read.
std::string TxnLogDirsText(const TxnLog& t);

// `replica_paths`: the PATHs as given. False with *error (which names the directory) only when an
// explicit --txn-log cannot be used.
bool LoadTxnLog(const TxnLogArgs& args, const std::vector<std::string>& replica_paths, TxnLog* out, std::string* error);

}  // namespace klf::cli
