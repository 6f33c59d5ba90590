#!/usr/bin/env bash
# Builds the kruise-manager container image without docker: an OCI image layout made with
# umoci from an already built binary, holding the binary, the shared libraries it links
# (as the Dockerfile's distroless base provides them) and nothing else. It runs as the
# distroless nonroot user (65532), as the Dockerfile's image does.
#
# Usage: scripts/oci-image.sh BINARY LAYOUT_DIR [TAG]
#   BINARY      e.g. target/release/kruise-manager (stripped into the image)
#   LAYOUT_DIR  the OCI layout to create or add to (`oci:LAYOUT_DIR:TAG` for skopeo)
#   TAG         default 0.1.0
# Push it with: skopeo copy oci:LAYOUT_DIR:TAG docker://REGISTRY/kruise-manager:TAG
# Needs umoci and binutils (objcopy); Debian: apt-get install umoci skopeo binutils.
set -euo pipefail
BINARY=${1:?binary}
LAYOUT=${2:?layout dir}
TAG=${3:-0.1.0}
NAME=$(basename "$BINARY")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -d "$LAYOUT" ] || umoci init --layout "$LAYOUT"
umoci new --image "$LAYOUT:$TAG"
umoci unpack --rootless --image "$LAYOUT:$TAG" "$WORK/bundle" >/dev/null
ROOT="$WORK/bundle/rootfs"
objcopy --strip-all "$BINARY" "$ROOT/$NAME"
chmod 0755 "$ROOT/$NAME"
# The dynamic loader and every library the binary links, at their own paths.
ldd "$BINARY" | awk '/=>/ {print $3} /^[ \t]*\/.*ld-linux/ {print $1}' | while read -r lib; do
  [ -n "$lib" ] && [ -e "$lib" ] || continue
  mkdir -p "$ROOT$(dirname "$lib")"
  cp -L "$lib" "$ROOT$lib"
done
mkdir -p "$ROOT/tmp" && chmod 1777 "$ROOT/tmp"
umoci repack --image "$LAYOUT:$TAG" "$WORK/bundle" >/dev/null
umoci config --image "$LAYOUT:$TAG" --config.user 65532:65532 \
  --config.entrypoint "/$NAME" --config.cmd run --config.workingdir / \
  --author kruise-rs --clear config.env --config.env PATH=/
echo "$LAYOUT:$TAG"
