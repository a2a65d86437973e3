#!/usr/bin/env bash
# Cross-builds the release archives: bridge and bridgectl for each target,
# with the version stamped in (`bridge --version`, `bridgectl --version`),
# one archive per target and a SHA256SUMS file beside them.
#
# Usage: scripts/release.sh VERSION OUTDIR [GOOS/GOARCH ...]
#   default targets: linux, darwin and windows, each amd64 and arm64
#   linux and darwin archives are .tar.gz, windows ones .zip (needs zip)
# `make release` runs it with VERSION from git and OUTDIR dist/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}

if [ $# -lt 2 ]; then
  echo "usage: scripts/release.sh VERSION OUTDIR [GOOS/GOARCH ...]" >&2
  exit 2
fi
version=$1 out=$2
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
fi
case "$version" in
  "" | *[!A-Za-z0-9._+-]*) echo "release: VERSION $version: use letters, digits and . _ + - only" >&2; exit 2 ;;
esac

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# sha256 prints "HASH  FILE" lines, as sha256sum does (shasum on macOS).
sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi
}

archives=()
for t in "${targets[@]}"; do
  goos=${t%/*} goarch=${t#*/}
  name="deepseek-mcp-bridge_${version}_${goos}_${goarch}"
  dir="$work/$name"
  mkdir -p "$dir"
  ext=""
  [ "$goos" = windows ] && ext=.exe
  for cmd in bridge bridgectl; do
    echo "release: $goos/$goarch $cmd" >&2
    (cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch "$GO" build -trimpath \
      -ldflags "-s -w -X main.version=$version" -o "$dir/$cmd$ext" "./cmd/$cmd")
  done
  cp "$root/README.md" "$root/README.zh-CN.md" "$root/LICENSE" "$dir/"
  if [ "$goos" = windows ]; then
    command -v zip >/dev/null || { echo "release: the windows archives need zip (sudo apt-get install zip)" >&2; exit 1; }
    rm -f "$out/$name.zip"
    (cd "$work" && zip -qr "$out/$name.zip" "$name")
    archives+=("$name.zip")
  else
    tar -C "$work" -czf "$out/$name.tar.gz" "$name"
    archives+=("$name.tar.gz")
  fi
done

(cd "$out" && sha256 "${archives[@]}" >SHA256SUMS)
echo "release: ${#archives[@]} archives and SHA256SUMS in $out" >&2
