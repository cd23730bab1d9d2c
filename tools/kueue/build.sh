#!/usr/bin/env bash
# Fetches Kueue at the release pinned in go.mod (a `tool` of this module) through the Go module proxy,
# copies its CRDs (config/components/crd/bases/ of the module) into $1/crds and, unless KUEUE_CRDS_ONLY=1,
# builds its controller manager (cmd/kueue) into $1/bin. $1 defaults to ../../.cache/kueue.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../.cache/kueue}
mkdir -p "$out/crds" "$out/bin"
out=$(cd "$out" && pwd)
cd "$here"
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/kueue)
dir=$(go mod download -json "sigs.k8s.io/kueue@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir/config/components/crd/bases" ]; then
  echo "sigs.k8s.io/kueue@$version: no CRDs in the module cache (dir: '$dir')" >&2
  exit 1
fi
for crd in "$dir"/config/components/crd/bases/*.yaml; do
  install -m 0644 "$crd" "$out/crds/"
done
echo "$version" > "$out/crds/VERSION"
if [ "${KUEUE_CRDS_ONLY:-0}" = 1 ]; then
  exit 0
fi
if [ -x "$out/bin/kueue" ] && [ "$out/bin/kueue" -nt go.sum ]; then
  exit 0
fi
echo "building kueue ($version)" >&2
pkg=sigs.k8s.io/kueue/pkg/version
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $pkg.GitVersion=$version" -o "$out/bin/kueue" sigs.k8s.io/kueue/cmd/kueue
echo "$version" > "$out/bin/VERSION"
