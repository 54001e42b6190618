// Loading replicas and printing diff findings in the diff and repair tests (header-only: only the test
// folders that link the diff library may use it, see replica_builder.h).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "diff/diff.h"
#include "diff/replica_state.h"

namespace klf::test {

// Loads one replica as a broker would after a restart; a load failure fails the test.
inline ReplicaState LoadOne(const std::string& dir) {
  ReplicaState r;
  std::string error;
  EXPECT_TRUE(LoadReplica(dir, {}, &r, &error)) << error;
  return r;
}

inline std::vector<ReplicaState> LoadAll(const std::vector<std::string>& dirs) {
  std::vector<ReplicaState> rs;
  for (const std::string& d : dirs) rs.push_back(LoadOne(d));
  return rs;
}

// One line per finding: kind [first,last] affected: labels evidence: ... impact: ...
inline std::string DescribeFindings(const DiffReport& report, const std::vector<ReplicaState>& rs) {
  std::string s;
  for (const Finding& f : report.findings) {
    s += std::string(FindingKindName(f.kind)) + " [" + std::to_string(f.first_offset) + "," +
         std::to_string(f.last_offset) + "] affected:";
    for (size_t i : f.affected) s += " " + rs[i].label;
    s += " evidence: " + f.evidence + " impact: " + f.impact + "\n";
  }
  return s;
}

// The findings that are divergences (not lag or missing ranges).
inline std::vector<const Finding*> Divergences(const DiffReport& report) {
  std::vector<const Finding*> out;
  for (const Finding& f : report.findings) {
    if (IsDivergence(f.kind)) out.push_back(&f);
  }
  return out;
}

}  // namespace klf::test
