#!/usr/bin/env bash
# Installs the Debian packages klf needs, only those missing.
#   scripts/install-deps.sh build   what building and running klf needs (make, make demo)
#   scripts/install-deps.sh test    that plus the test tools: clang for libFuzzer and the sanitizers,
#                                   Python and its Kafka client for the end-to-end tests, Chromium for
#                                   the HTML report test, hyperfine for benchmarks, and what `make package`
#                                   needs, and Ansible for the fleet playbook test (make test, make bench)
#   scripts/install-deps.sh package the build set plus help2man (the man page) and dpkg-dev (make package)
# Safe to run repeatedly: when everything is present it does nothing and touches nothing.
set -euo pipefail

set_name=${1:-test}
packages=(
  build-essential cmake pkg-config ccache
  libcli11-dev libboost-iostreams-dev zlib1g-dev liblz4-dev libsnappy-dev libzstd-dev
  libisal-dev libssl-dev nlohmann-json3-dev libfmt-dev libarchive-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
package_tools=(help2man dpkg-dev binutils file)
case "$set_name" in
  build) ;;
  package) packages+=("${package_tools[@]}") ;;
  test)
    packages+=("${package_tools[@]}")
    packages+=(
      clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14
      python3 python3-kafka python3-lz4 python3-snappy python3-zstandard python3-xxhash
      chromium
      hyperfine time python3-crc32c zstd
      ansible
    )
    ;;
  *) echo "install-deps: unknown set '$set_name' (build, test or package)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
