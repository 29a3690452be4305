#!/bin/sh
# Regenerates the go_*.hex fixtures with the official Go client's encoder.
# Usage: pkg/remoting/testdata/gen/gen.sh   (needs the client in the module cache)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
version=v2.1.3-0.20251226070945-2173d070fd1b
client=$(go env GOMODCACHE)/github.com/apache/rocketmq-client-go/v2@$version
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/main.go" "$tmp/"
cd "$tmp"
# A module path under the client's may import its internal packages.
go mod init github.com/apache/rocketmq-client-go/v2/fixturegen >/dev/null 2>&1
go mod edit -require=github.com/apache/rocketmq-client-go/v2@$version -replace=github.com/apache/rocketmq-client-go/v2=$client
go mod tidy -e >/dev/null 2>&1 || true
GOFLAGS=-mod=mod go run . -out "$here/.."
