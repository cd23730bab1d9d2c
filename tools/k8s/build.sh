#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler, kubectl, etcd and the benchmark's nullbinder (cmd/nullbinder)
# at the release pinned in go.mod into $1 (default: ../../.cache/k8s/bin). Go's module and build caches
# make rebuilds take seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../.cache/k8s/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version"
for cmd in etcd kube-apiserver kube-scheduler kubectl nullbinder; do
  if [ -x "$out/$cmd" ] && [ "$out/$cmd" -nt go.sum ] && [ "$out/$cmd" -nt "cmd/$cmd/main.go" ]; then
    continue
  fi
  echo "building $cmd ($version)" >&2
  CGO_ENABLED=0 go build -trimpath -tags selinux,notest -ldflags "$ldflags" -o "$out/$cmd" "./cmd/$cmd"
done
echo "$version" > "$out/VERSION"
