#!/usr/bin/env bash
# Makes a local stand-in for the official node:20 image where no image registry can be reached:
# a minimal Debian bookworm (debootstrap, from apt's own mirror) with this machine's Node.js and
# npm copied in where the official image has them (/usr/local), and its `node` user (uid 1000).
# scripts/container-test.sh builds the Dockerfile from it (NODE_IMAGE). Needs root, podman,
# runc and debootstrap (apt-get install podman runc debootstrap uidmap fuse-overlayfs).
set -euo pipefail
IMAGE=${1:-localhost/sideport-node-base:20}
PODMAN=(podman --runtime /usr/sbin/runc)

if podman image exists "$IMAGE"; then
  echo "$IMAGE exists"
  exit 0
fi
# This machine's cgroup layout wants cgroupfs, and crun refuses it (hence runc above).
if [ ! -f /etc/containers/containers.conf ]; then
  mkdir -p /etc/containers
  printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n' > /etc/containers/containers.conf
fi

node_bin=$(command -v node)
npm_dir=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)
case "$("$node_bin" --version)" in
  v20.*) ;;
  *) echo "The official image is node:20; this machine has Node $("$node_bin" --version)." >&2; exit 1 ;;
esac

root=$(mktemp -d /tmp/sideport-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/node_modules"
cp "$node_bin" "$root/usr/local/bin/node"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# The official image's user: uid and gid 1000, home /home/node.
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# This machine's trust store, and Node told to use it: npm ci inside the build reaches the
# registry through whatever TLS setup this machine has.
mkdir -p "$root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
tar -C "$root" -c . | podman import --change 'CMD ["node"]' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' - "$IMAGE" >/dev/null
"${PODMAN[@]}" run --rm --network=none "$IMAGE" node --version
echo "made $IMAGE"
