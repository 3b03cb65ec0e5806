#!/usr/bin/env bash
# Makes a real kube-apiserver and etcd available on this machine, from Debian's packages only,
# for the real-API-server test tier (npm run test:real). Prints the kube-apiserver binary's path
# on its last line of stdout; everything else goes to stderr.
#
# - etcd: Debian's `etcd-server` package.
# - kube-apiserver: built from Debian's `kubernetes` source package (1.20) with Debian's Go,
#   once; the binary is cached under ~/.cache/gateway-reconciler (or $KUBE_APISERVER_CACHE),
#   so later runs skip the build (10–20 minutes on two cores).
# - The vendored github.com/modern-go/reflect2 1.0.1 makes that server crash on the first
#   custom-resource write under Go >= 1.18 ("unexpected fault address"): it is replaced by
#   the source of Debian's golang-github-modern-go-reflect2-dev (1.0.2) before the build.
# - The vendored go-openapi/validate (and kube-openapi's fork of it) tells null from a value with
#   `reflect.DeepEqual(reflect.Zero(T), reflect.ValueOf(v))`, which compared two different
#   pointers under the Go that Kubernetes 1.20 was released with, and compares equal for
#   "", 0 and false under Go >= 1.18 (both point at the runtime's shared zero value): the
#   server would then refuse every empty string, zero or false in a custom resource with
#   `must be of type string: "null"`, which the released 1.20 never did. The check is made
#   the `data == nil` it meant (as later Kubernetes has it).
#
# Needs root for apt-get (as on CI and the developers' machines). Exits non-zero, with one line
# saying what failed, when a step fails.
set -euo pipefail

cache=${KUBE_APISERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gateway-reconciler}
# the folder names the recipe: a change of recipe builds anew
bin="$cache/kube-apiserver-1.20-r4/kube-apiserver"
say() { echo "kube-apiserver.sh: $*" >&2; }
fail() { say "$*"; exit 1; }

export DEBIAN_FRONTEND=noninteractive
updated=
apt_update() { [ -n "$updated" ] || { apt-get update -qq >&2 || fail "apt-get update failed"; updated=1; }; }
need_pkg() { # install the Debian packages not installed yet
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_update
  say "installing ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]} failed"
}

need_pkg etcd-server

if [ ! -x "$bin" ]; then
  need_pkg golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev make gcc libc6-dev
  # deb-src for Debian's main archive, when no source list is enabled yet
  if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "enabling deb-src for Debian's main archive"
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    cat > /etc/apt/sources.list.d/gateway-reconciler-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    updated=
  fi
  apt_update
  work=$(mktemp -d "${TMPDIR:-/tmp}/kube-apiserver-build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "fetching Debian's kubernetes source into $work"
  (cd "$work" && apt-get source -qq kubernetes >&2) || fail "apt-get source kubernetes failed"
  src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
  [ -n "$src" ] || fail "no kubernetes-* folder after apt-get source"
  reflect2=/usr/share/gocode/src/github.com/modern-go/reflect2
  [ -d "$reflect2" ] || fail "$reflect2 missing (golang-github-modern-go-reflect2-dev)"
  rm -rf "$src/vendor/github.com/modern-go/reflect2"
  cp -r "$reflect2" "$src/vendor/github.com/modern-go/reflect2"
  rm -f "$src/vendor/github.com/modern-go/reflect2/go.mod"
  zero_check='if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {'
  # both copies: go-openapi's and kube-openapi's fork (the one CRD validation uses)
  for validate in "$src/vendor/github.com/go-openapi/validate/type.go" "$src/vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go"; do
    grep -qF "$zero_check" "$validate" || fail "$validate: the zero-value check to mend is not there"
    sed -i 's/if data == nil || reflect\.DeepEqual(reflect\.Zero(reflect\.TypeOf(data)), reflect\.ValueOf(data)) {/if data == nil {/' "$validate"
    grep -qF "$zero_check" "$validate" && fail "$validate: could not mend the zero-value check"
  done
  say "building kube-apiserver ($(go version)); 10–20 minutes on two cores"
  (cd "$src" && make WHAT=cmd/kube-apiserver >&2) || fail "make WHAT=cmd/kube-apiserver failed"
  built=$(find "$src/_output" -type f -name kube-apiserver -perm -u+x | head -n 1)
  [ -n "$built" ] || fail "the build made no kube-apiserver binary"
  mkdir -p "$(dirname "$bin")"
  cp "$built" "$bin.tmp" && mv "$bin.tmp" "$bin"
fi

"$bin" --version >&2 || fail "$bin does not run"
command -v etcd >/dev/null || fail "etcd not on PATH after installing etcd-server"
echo "$bin"
