#!/usr/bin/env bash
# Measures the pod mutating webhook's scope with 1,000 SidecarSets on a real kube-apiserver
# (issue #39, ask 11); results in docs/benchmarks.md ("Pod webhook scope").
#
#   bash ../shared/realk8s/up.sh                       # once; KUBECONFIG=/tmp/realk8s/kubeconfig
#   cargo build --release -p kruise-manager --bin kruise-manager && cargo build --release -p benches --example pod_webhook_scope
#   bash benches/realk8s/pod_webhook_scope.sh > /tmp/scope.txt
#
# Modes, each with the manager restarted: no pod webhook at all (baseline), the catch-all
# (`--pod-webhook-scope=all`), the generated entries (`selected`, the default), and one entry
# whose CEL match condition is the union of every selector. For each: the configurations and
# their sizes, pod CREATE latency (server-side dry run, 200 serial and 10 in parallel) for a pod
# no SidecarSet selects and one ten select, and webhook calls per pod from the apiserver's
# metrics. Then, with the manager killed, the same two pods.
set -euo pipefail
export KUBECONFIG=${KUBECONFIG:-/tmp/realk8s/kubeconfig}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PROFILE=${PROFILE:-release}
MANAGER=$HERE/target/$PROFILE/kruise-manager
DRIVER=$HERE/target/$PROFILE/examples/pod_webhook_scope
PORT=${PORT:-19443}
SETS=${SETS:-1000}
WORK=$(mktemp -d)
pid=""
log() { echo "# $*"; }
stop_manager() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi; }
trap stop_manager EXIT
start_manager() {
  "$MANAGER" run --kubeconfig "$KUBECONFIG" --enable-leader-election=false --metrics-addr 0 \
    --health-probe-addr 0 --webhook-host 127.0.0.1 --webhook-port "$PORT" "$@" \
    > "$WORK/manager.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do
    kubectl get mutatingwebhookconfiguration kruise-mutating-webhook-configuration >/dev/null 2>&1 && break
    sleep 0.5
  done
  # Let the SidecarSet controller go through the 1,000 SidecarSets before measuring.
  sleep "${SETTLE:-15}"
}
measure() {
  "$DRIVER" sizes
  "$DRIVER" latency none
  "$DRIVER" latency app-7
}

kubectl create namespace kruise-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
"$MANAGER" crds --webhook-host 127.0.0.1 --webhook-port "$PORT" | kubectl apply --server-side -f - >/dev/null
kubectl wait --for condition=established crd/sidecarsets.apps.kruise.io >/dev/null
start_manager --pod-webhook-scope=all
"$DRIVER" setup "$SETS"
stop_manager

log "mode: none (no pod mutating webhook)"
kubectl delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration --ignore-not-found >/dev/null
kubectl delete mutatingwebhookconfiguration -l webhooks.kruise.io/pod-scope=generated --ignore-not-found >/dev/null
measure

log "mode: all (catch-all mpod.kb.io)"
start_manager --pod-webhook-scope=all
measure
"$DRIVER" edit
stop_manager
kubectl delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration >/dev/null

log "mode: selected (generated entries)"
started=$(date +%s%N)
SETTLE=0 start_manager
until kubectl get mutatingwebhookconfiguration -l webhooks.kruise.io/pod-scope=generated -o name 2>/dev/null | grep -q .; do sleep 0.1; done
log "generated configurations present $(( ($(date +%s%N) - started) / 1000000 )) ms after the manager started"
grep -E "pod webhook entries written" "$WORK/manager.log" | tail -2 || true
until ! kubectl get mutatingwebhookconfiguration kruise-mutating-webhook-configuration \
    -o jsonpath='{.webhooks[*].name}' | grep -qw mpod.kb.io; do sleep 0.1; done
log "catch-all mpod.kb.io gone $(( ($(date +%s%N) - started) / 1000000 )) ms after the manager started"
sleep 15
measure
"$DRIVER" edit
sleep 2
"$DRIVER" edit
"$DRIVER" sizes | grep pod-webhooks

log "mode: selected, manager killed"
stop_manager
"$DRIVER" latency none
"$DRIVER" latency app-7 || true

log "mode: cel-union (one entry, CEL union of every selector)"
start_manager
sleep 3
CA=$WORK/ca.pem
kubectl get mutatingwebhookconfiguration kruise-mutating-webhook-configuration \
  -o jsonpath='{.webhooks[0].clientConfig.caBundle}' | base64 -d > "$CA"
"$DRIVER" cel-union "https://127.0.0.1:$PORT" "$CA"
measure
stop_manager
kubectl delete mutatingwebhookconfiguration kruise-pod-webhooks-cel --ignore-not-found >/dev/null
