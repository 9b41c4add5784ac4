#!/usr/bin/env bash
# Rebuilds third_party/ from the Go module cache: the packages of Prometheus and
# go-dcgm that gpuwatch builds (its binary and its tests), byte for byte, less
# the few non-test files that import the testing package (Prometheus's
# tsdb/testutil.go and tsdb/tsdbutil/dir_locker_testutil.go, go-dcgm's
# pkg/dcgm/test_utils.go: helpers for their own tests). go.mod replaces the
# two modules with these copies, so the shipped binary links no test code.
# Run it after changing either version in go.mod (`make third-party`).
set -euo pipefail
export GOFLAGS=-mod=mod  # the scratch go.mod may need sums go.sum no longer holds
cd "$(dirname "$0")/.."

declare -A drop=(
  [github.com/prometheus/prometheus]="tsdb/testutil.go tsdb/tsdbutil/dir_locker_testutil.go"
  [github.com/NVIDIA/go-dcgm]="pkg/dcgm/test_utils.go"
)
declare -A dest=(
  [github.com/prometheus/prometheus]=third_party/prometheus
  [github.com/NVIDIA/go-dcgm]=third_party/go-dcgm
)

# The upstream modules, without the replacements, in a scratch go.mod.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '^replace .* => ./third_party/' go.mod > "$tmp/go.mod"
cp go.sum "$tmp/go.sum"

for mod in "${!dest[@]}"; do
  version=$(go list -modfile="$tmp/go.mod" -m -f '{{.Version}}' "$mod")
  src=$(go mod download -modfile="$tmp/go.mod" -json "$mod@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  out=${dest[$mod]}
  rm -rf "$out"
  mkdir -p "$out"
  cp "$src/go.mod" "$out/"
  for f in LICENSE NOTICE; do [ -f "$src/$f" ] && cp "$src/$f" "$out/"; done
  for pkg in $(go list -modfile="$tmp/go.mod" -deps -test ./... | grep "^$mod/" | sort -u); do
    rel=${pkg#"$mod"/}
    mkdir -p "$out/$rel"
    embeds=$(go list -modfile="$tmp/go.mod" -f '{{join .EmbedFiles " "}}' "$pkg")
    (cd "$src/$rel" && find . -maxdepth 1 -type f \( -name '*.go' ! -name '*_test.go' -o -name '*.c' -o -name '*.h' \) -exec cp {} "$OLDPWD/$out/$rel/" \;)
    for e in $embeds; do mkdir -p "$out/$rel/$(dirname "$e")"; cp "$src/$rel/$e" "$out/$rel/$e"; done
  done
  for f in ${drop[$mod]}; do rm -f "$out/$f"; done
  chmod -R u+w "$out"
  echo "$mod $version -> $out ($(find "$out" -type f | wc -l) files; dropped: ${drop[$mod]})"
done
