#include "cli/txn_log.h"

#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/partition_paths.h"

namespace klf::cli {

void AddTxnLogOptions(CLI::App* sub, TxnLogArgs* args) {
  sub->add_option("--txn-log", args->dirs,
                  "a __transaction_state-N directory, or a log dir holding some: the coordinator's records as "
                  "evidence (repeatable; default: those of the replicas' own log dirs)")
      ->allow_extra_args(false);  // one DIR per --txn-log: the PATHs after it stay PATHs
  sub->add_flag("--no-txn-log", args->none, "do not use the coordinator's records");
  sub->add_flag("--same-cluster", args->same_cluster, kSameClusterHelp);
}

std::string TxnLogDirsText(const TxnLog& t) {
  return fmt::format("{} __transaction_state partitions ({}{})", t.dirs.size(), t.dirs.front(),
                     t.dirs.size() > 1 ? ", ..." : "");
}

bool LoadTxnLog(const TxnLogArgs& args, const std::vector<std::string>& replica_paths, TxnLog* out,
                std::string* error) {
  namespace fs = std::filesystem;
  if (args.none) return true;
  const bool explicit_dirs = !args.dirs.empty();
  std::vector<std::string> where = args.dirs;
  if (!explicit_dirs) where = CandidateLogDirs(replica_paths);  // the replicas' log dirs
  std::vector<std::string> dirs = FindTransactionStateDirs(where);
  if (dirs.empty()) {
    if (explicit_dirs) {
      *error = fmt::format("--txn-log {}: no __transaction_state-N partition directory there", where.front());
      return false;
    }
    return true;
  }
  auto log = std::make_unique<CoordinatorLog>();
  CollectingSink sink;
  std::string load_error;
  if (!LoadCoordinatorLog(dirs, log.get(), &sink, &load_error)) {
    if (explicit_dirs) {
      *error = "--txn-log: " + load_error;
      return false;
    }
    out->warnings.push_back("the coordinator's records were not used: " + load_error);
    return true;
  }
  for (const Problem& p : sink.problems) {
    out->warnings.push_back(fmt::format("{}: position {}: {}", p.file, p.position, p.message));
  }
  log->same_cluster_vouched = args.same_cluster;
  out->dirs = std::move(dirs);
  out->log = std::move(log);
  return true;
}

}  // namespace klf::cli
