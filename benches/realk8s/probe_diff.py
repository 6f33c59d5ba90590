#!/usr/bin/env python3
"""Replays the kubectl runs of kruise-sim's tests against a real kube-apiserver and prints
where the answers differ.

1. Record what kruise-sim answered (each kubectl run of the e2e tests becomes a JSON line):

       KRUISE_SIM_PROBE_LOG=/tmp/probes.jsonl cargo test -p kruise-sim --test e2e -- --test-threads 1

2. Start the real control plane (../shared/realk8s/up.sh).

3. Replay and compare:

       python3 benches/realk8s/probe_diff.py /tmp/probes.jsonl --kubeconfig /tmp/realk8s/kubeconfig

Before the first test the replay installs the Kruise CRDs that kruise-sim preloads, those of
them the server lacks (`--crds`: a directory of CRD manifests; by default the insta snapshots of
`kruise_api::crds()` in kruise-api/tests/snapshots, which are exactly what kruise-sim installs
with `Config::with_kruise_crds`, without conversion webhooks; `--crds ''` installs none).
kruise-sim preloads them only for some tests: a test that creates a Kruise CRD itself gets it
deleted first, and kubectl's warning that `sts` also matches the Kruise StatefulSet is dropped
where kruise-sim did not give it.

Each test runs in a fresh namespace on the real server (its runs get `-n <namespace>` unless
they name a namespace themselves; what kruise-sim's tests call the `default` namespace in
manifests, raw paths and service-account names is rewritten to it). The replay waits for
kube-controller-manager to give that namespace, and each namespace a test creates, its
`default` ServiceAccount and kube-root-ca.crt, which kruise-sim makes at once. Repeated reads
in a row (a test polling until something holds) are replayed once, compared with the last
answer kruise-sim gave; repeated writes are replayed each time. Outputs are compared after
masking what differs between any two clusters: uids, timestamps, resourceVersions (also inside
escaped JSON), ages, generated name suffixes and hashes, IP addresses, the namespace name, the
server's address, and the clock, pid, durations and auth header of `kubectl -v` logs. From the
real answers it also cuts the openshift-service-ca.crt source that microshift's kube-apiserver
(an OpenShift build) adds to pods' token volumes.

After each test the replay cleans up: it snapshots, before the first test, the cluster-scoped
objects of every kind that `kubectl api-resources --namespaced=false --verbs=list,delete` lists
(one `kubectl get` of all kinds), and after each test deletes the test's namespace and every
cluster-scoped object the test added (namespaces it made, webhook configurations and admission
policies first, CRDs, ClusterRoles, Nodes, PriorityClasses, ...), then waits for them to go
(`--cleanup-timeout`); what is still there then has its pods force-deleted and the finalizers
of its objects removed. Kruise CRDs that a test changed or deleted are put back as installed.
IPAddresses are left to the API server, which frees them with their Services.

What cannot match: tests that use kruise-sim's simulated nodes (the real control plane has
no kubelets), its fault injection, or objects made through its Rust API rather than kubectl.
Their differences are printed like any other; `--test` narrows the replay to tests whose
name contains a string.
"""

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import time
from collections import OrderedDict

MASKS = [
    # kubectl -v=N: klog headers (date, time, pid) and the kubeconfig's path.
    (re.compile(r"(?m)^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ "), r"\1<klog> "),
    (re.compile(r"(Config loaded from file:\s+)\S+"), r"\1<kubeconfig>"),
    (re.compile(r"(Response Status: .* in )\d+ milliseconds"), r"\1<n> milliseconds"),
    (re.compile(r"(round_trippers\.go:\d+\]\s+Date: ).*"), r"\1<date>"),
    # kruise-sim's test kubeconfig carries a token, realk8s's a client certificate.
    (re.compile(r"(?m)^.*round_trippers\.go:\d+\]\s+Authorization: Bearer <masked>\n?"), ""),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"), "<time>"),
    (re.compile(r'("resourceVersion":\s*)"\d+"'), r'\1"<rv>"'),
    (re.compile(r"(resourceVersion:\s*)\"?\d+\"?"), r"\1<rv>"),
    (re.compile(r'(\\+"resourceVersion\\+":\s*\\+")\d+'), r"\1<rv>"),
    (re.compile(r"\b\d+(\.\d+)?(ms|s|m|h|d)(\d+(s|m|h))?\b"), "<age>"),
    (re.compile(r"\b(\d{1,3}\.){3}\d{1,3}(:\d+)?\b"), "<ip>"),
    (re.compile(r"https://[^\s\"']+"), "<server>"),
    (re.compile(r"-[a-z0-9]{5}\b"), "-<rand>"),
    (re.compile(r"\b[0-9a-f]{8,10}\b"), "<hash>"),
    # pod-template-hash and controller-revision-hash suffixes (rand.SafeEncodeString's
    # alphabet: no vowels), and the hashes of /openapi/v3's discovery.
    (re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{8,10}\b"), "-<hash>"),
    (re.compile(r"\?hash=[0-9A-F]+"), "?hash=<hash>"),
]

# What kruise-sim's tests call the `default` namespace, in manifests, raw API paths and
# service-account user names: rewritten to the test's namespace on the real server.
LOCALIZE = [
    (re.compile(r"(/namespaces/)default(?=[/?\s]|$)"), r"\1{ns}"),
    (re.compile(r"(system:serviceaccounts?:)default(?=:|$)"), r"\1{ns}"),
    (re.compile(r"(\bnamespace:\s*)default(?=\s*[,}\n]|\s*$)"), r"\1{ns}"),
    (re.compile(r'("namespace"\s*:\s*)"default"'), r'\1"{ns}"'),
    (re.compile(r'(\\"namespace\\"\s*:\s*)\\"default\\"'), r'\1\\"{ns}\\"'),
]

CLUSTER_SCOPED_DELETE_WARNING = re.compile(
    r"(?m)^Warning: deleting cluster-scoped resources, not scoped to the provided namespace\n?"
)

KRUISE_SHORT_NAME_WARNING = re.compile(
    r'(?m)^Warning: short name "[^"]*" could also match lower priority resource \S+\.kruise\.io\n?'
)

# Cluster-scoped kinds the replay never deletes: the API server allocates and frees
# IPAddresses with Services itself.
KEEP_KINDS = {"ipaddresses.networking.k8s.io"}
# Deleted first: a webhook or policy left pointing nowhere would refuse the other deletions.
FIRST_KINDS = ("webhookconfiguration.", "admissionpolicy.", "admissionpolicybinding.")

SNAPSHOT_COLUMNS = "A:.apiVersion,K:.kind,N:.metadata.name,RV:.metadata.resourceVersion"


# The real control plane is built from the Kubernetes that openshift/microshift vendors, whose
# ServiceAccount admission adds openshift-service-ca.crt to every pod's token volume: not
# kube-apiserver's behaviour, so it is cut from the real answers.
OPENSHIFT_SERVICE_CA = [
    re.compile(
        r',\n\s*\{\n\s*"configMap": \{\n\s*"items": \[\n\s*\{\n\s*"key": "service-ca\.crt",'
        r'\n\s*"path": "service-ca\.crt"\n\s*\}\n\s*\],\n\s*"name": "openshift-service-ca\.crt"'
        r"\n\s*\}\n\s*\}"
    ),
    re.compile(
        r'(?m)^(\s*)- configMap:\n\1    items:\n\1    - key: service-ca\.crt\n\1      path: '
        r"service-ca\.crt\n\1    name: openshift-service-ca\.crt\n"
    ),
    re.compile(
        r',\{"configMap":\{"items":\[\{"key":"service-ca\.crt","path":"service-ca\.crt"\}\],'
        r'"name":"openshift-service-ca\.crt"\}\}'
    ),
]


def mask(text, namespace):
    if namespace:
        text = text.replace(namespace, "default")
        for pattern in OPENSHIFT_SERVICE_CA:
            text = pattern.sub("", text)
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text.strip()


def localize(text, namespace):
    if not text:
        return text
    for pattern, repl in LOCALIZE:
        text = pattern.sub(repl.replace("{ns}", namespace), text)
    return text


def made_namespaces(args, stdin):
    """The namespaces a run creates (`kubectl create namespace X`, or a Namespace manifest)."""
    names = []
    if len(args) >= 3 and args[0] == "create" and args[1] in ("namespace", "ns"):
        if not any(a.startswith("--dry-run") and a != "--dry-run=none" for a in args):
            names.append(args[2])
    if stdin and re.search(r"kind:\s*\"?Namespace\b", stdin):
        names += re.findall(r"kind:\s*\"?Namespace\"?[\s\S]*?name:\s*\"?([a-z0-9-]+)", stdin)
    return names


def wait_for_service_account(kubeconfig, namespace, timeout):
    """kube-controller-manager makes a namespace's `default` ServiceAccount (and
    kube-root-ca.crt) soon after the namespace; kruise-sim at once. Pods need the former."""
    kubectl(
        kubeconfig,
        ["wait", "--for=create", "-n", namespace, "serviceaccount/default",
         "configmap/kube-root-ca.crt", f"--timeout={timeout:g}s"],
        None,
        timeout + 5,
    )


def names_namespace(args):
    for i, a in enumerate(args):
        if a in ("-n", "--namespace", "-A", "--all-namespaces") or a.startswith("--namespace="):
            return True
        if a.startswith("-n") and len(a) > 2:
            return True
    return False


# kubectl verbs that only read: the ones a polling test repeats.
READS = {"get", "describe", "wait", "logs", "explain", "api-resources", "api-versions", "auth",
         "version", "events", "top", "cluster-info", "rollout status", "rollout history"}


def load(path, only):
    tests = OrderedDict()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"{path}:{n}: not JSON ({e}); skipped", file=sys.stderr)
                continue
            if only and only not in rec["test"]:
                continue
            runs = tests.setdefault(rec["test"], [])
            # A test polling: keep the last of a run of identical reads. (Writes repeated on
            # purpose, an `apply` applied twice, are replayed each time.)
            if (
                runs
                and runs[-1]["args"] == rec["args"]
                and runs[-1]["stdin"] == rec["stdin"]
                and (" ".join(rec["args"][:1]) in READS or " ".join(rec["args"][:2]) in READS)
            ):
                runs[-1] = rec
            else:
                runs.append(rec)
    return tests


def kubectl(kubeconfig, args, stdin, timeout):
    try:
        p = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        # What was read before the timeout comes as bytes.
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return None, text(e.stdout), text(e.stderr)


def note(msg):
    print(f"probe_diff: {msg}", file=sys.stderr, flush=True)


class Cluster:
    """The real server's cluster-scoped objects, and putting them back as they were."""

    def __init__(self, kubeconfig, timeout, cleanup_timeout):
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self.cleanup_timeout = cleanup_timeout
        self.kinds = []
        self.baseline = {}  # "kind.group/name" -> resourceVersion
        self.crds = {}  # CRD name -> manifest (YAML) the replay installed or keeps

    def run(self, args, stdin=None, timeout=None):
        return kubectl(self.kubeconfig, args, stdin, timeout or self.timeout)

    def discover(self):
        code, out, err = self.run(
            ["api-resources", "--namespaced=false", "--verbs=list,delete", "-o", "name"]
        )
        if code != 0:
            note(f"kubectl api-resources failed: {err.strip()}")
        self.kinds = [k for k in out.split() if k not in KEEP_KINDS]

    def snapshot(self):
        """{"kind.group/name": resourceVersion} of every cluster-scoped object, one kubectl get."""
        for attempt in (1, 2):
            if not self.kinds or attempt == 2:
                self.discover()
            code, out, err = self.run(
                ["get", ",".join(self.kinds), "-o", f"custom-columns={SNAPSHOT_COLUMNS}",
                 "--no-headers"],
                timeout=max(self.timeout, 30),
            )
            if code == 0:
                break
            # A kind went away with its CRD: list the kinds again.
        else:
            note(f"snapshot of cluster-scoped objects failed: {err.strip()[:300]}")
            return None
        objects = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) != 4:
                continue
            api_version, kind, name, rv = parts
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
            ref = kind.lower() + (f".{group}" if group else "") + "/" + name
            objects[ref] = rv
        return objects

    def install_crds(self, path):
        """Creates the CRDs of `path` (a directory of manifests or insta snapshots, or a
        file) that the server lacks; keeps them to put back what a test changes."""
        files = sorted(os.listdir(path)) if os.path.isdir(path) else [path]
        for f in files:
            full = os.path.join(path, f) if os.path.isdir(path) else f
            if not full.endswith((".yaml", ".yml", ".snap")):
                continue
            with open(full) as fh:
                text = fh.read()
            if full.endswith(".snap") and text.startswith("---\n"):
                # insta's header (source, expression) is a YAML document of its own.
                text = text.split("\n---\n", 1)[1]
            if "kind: CustomResourceDefinition" not in text:
                continue
            m = re.search(r"^metadata:\n(?:[ \t]+.*\n)*?  name: (\S+)", text, re.M)
            if m:
                self.crds[m.group(1)] = text
        if not self.crds:
            note(f"no CRDs found in {path}")
            return
        now = self.snapshot() or {}
        missing = [n for n in self.crds if f"customresourcedefinition.apiextensions.k8s.io/{n}" not in now]
        if missing:
            self.apply_crds("create", missing)
        note(f"Kruise CRDs: {len(self.crds)} in {path}, {len(missing)} installed")

    def apply_crds(self, verb, names):
        docs = "\n---\n".join(self.crds[n] for n in names)
        code, _, err = self.run([verb, "-f", "-"], docs, timeout=max(self.timeout, 60))
        if code != 0:
            note(f"kubectl {verb} of CRDs {names} failed: {err.strip()[:500]}")
        self.run(
            ["wait", "--for=condition=Established", "--timeout=30s",
             *(f"customresourcedefinition.apiextensions.k8s.io/{n}" for n in names)],
            timeout=40,
        )

    def make_room(self, test, runs):
        """Deletes the installed Kruise CRDs that the test creates itself (kruise-sim preloads
        them only for some tests); cleanup() puts them back afterwards."""
        names = set()
        for run in runs:
            args = run["args"]
            if not args or args[0] not in ("create", "apply"):
                continue
            texts = [run["stdin"] or ""]
            for i, a in enumerate(args):
                path = args[i + 1] if a in ("-f", "--filename") and i + 1 < len(args) else None
                if a.startswith("--filename="):
                    path = a.split("=", 1)[1]
                if path and path != "-" and os.path.isfile(path):
                    with open(path) as fh:
                        texts.append(fh.read())
            for text in texts:
                if "CustomResourceDefinition" in text:
                    names.update(n for n in re.findall(r"(?m)^  name: (\S+)", text) if n in self.crds)
        if names:
            refs = [f"customresourcedefinition.apiextensions.k8s.io/{n}" for n in sorted(names)]
            note(f"before {test}: deleting Kruise CRD(s) the test creates itself: {' '.join(sorted(names))}")
            self.run(["delete", "--ignore-not-found", "--wait=false", *refs])
            self.wait_deleted(refs, self.cleanup_timeout)

    def cleanup(self, test, namespace):
        """Deletes `namespace` and what the test added to the cluster, and puts back the
        Kruise CRDs it changed."""
        now = self.snapshot()
        if now is None:
            self.delete_and_wait(test, [f"namespace/{namespace}"])
            return
        added = [ref for ref in now if ref not in self.baseline]
        if f"namespace/{namespace}" not in added:
            added.append(f"namespace/{namespace}")
        gone = [ref for ref in self.baseline if ref not in now]
        added.sort(key=lambda ref: (not ref.split("/")[0].endswith(FIRST_KINDS), ref))
        others = [r for r in added if r != f"namespace/{namespace}"]
        if others:
            note(f"after {test}: deleting {len(others)} cluster-scoped object(s): "
                 + " ".join(others[:12]) + (" ..." if len(others) > 12 else ""))
        self.delete_and_wait(test, added)
        # Kruise CRDs that the test deleted or changed (spec or status).
        crd_ref = "customresourcedefinition.apiextensions.k8s.io/"
        changed = [
            n for n in self.crds
            if crd_ref + n in self.baseline and now.get(crd_ref + n) != self.baseline[crd_ref + n]
        ]
        restored = []
        if changed:
            # If the test deleted and remade one, it may still be going.
            self.run(["wait", "--for=delete", "--timeout=30s",
                      *(crd_ref + n for n in changed if crd_ref + n not in now)], timeout=40)
            after = self.snapshot() or {}
            missing = [n for n in changed if crd_ref + n not in after]
            present = [n for n in changed if crd_ref + n in after]
            if missing:
                self.apply_crds("create", missing)
            if present:
                self.apply_crds("replace", present)
            restored = changed
            note(f"after {test}: put back Kruise CRD(s) {' '.join(changed)}")
        lost = [ref for ref in gone if not ref.startswith(crd_ref) or ref[len(crd_ref):] not in self.crds]
        if lost:
            note(f"after {test}: the test deleted {len(lost)} object(s) that were there before: "
                 + " ".join(lost[:12]))
        if restored or lost:
            fresh = self.snapshot()
            if fresh is not None:
                for ref in list(self.baseline):
                    if ref in fresh:
                        self.baseline[ref] = fresh[ref]
                    elif ref in lost:
                        del self.baseline[ref]

    def delete_and_wait(self, test, refs):
        if not refs:
            return
        self.run(["delete", "--ignore-not-found", "--wait=false", *refs])
        if self.wait_deleted(refs, self.cleanup_timeout):
            return
        left = self.existing(refs)
        note(f"after {test}: still there after {self.cleanup_timeout:g}s: {' '.join(left[:12])}; "
             "force-deleting pods and removing finalizers")
        for ref in left:
            if ref.startswith("namespace/"):
                ns = ref.split("/", 1)[1]
                self.run(["delete", "pods", "--all", "-n", ns, "--force", "--grace-period=0",
                          "--wait=false"])
                self.drop_finalizers(self.namespaced_objects(ns), ns)
        self.drop_finalizers([r for r in left if not r.startswith("namespace/")], None)
        if not self.wait_deleted(left, self.cleanup_timeout):
            note(f"after {test}: still there: {' '.join(self.existing(left)[:12])}")

    def wait_deleted(self, refs, seconds):
        code, _, _ = self.run(
            ["wait", "--for=delete", f"--timeout={seconds:g}s", *refs], timeout=seconds + 10
        )
        return code == 0

    def existing(self, refs):
        code, out, _ = self.run(["get", "--ignore-not-found", "-o", "name", *refs])
        names = set(out.split())
        # `-o name` may spell the kind differently (no group for core kinds): match by name.
        return [r for r in refs if r in names or any(n.split("/", 1)[-1] == r.split("/", 1)[-1]
                                                     for n in names)]

    def namespaced_objects(self, ns):
        _, out, _ = self.run(
            ["api-resources", "--namespaced=true", "--verbs=list,delete", "-o", "name"]
        )
        kinds = ",".join(k for k in out.split() if k not in ("events", "events.events.k8s.io"))
        _, out, _ = self.run(["get", kinds, "-n", ns, "-o", "name"], timeout=max(self.timeout, 30))
        return out.split()

    def drop_finalizers(self, refs, ns):
        for ref in refs:
            self.run(
                ["patch", ref, *(["-n", ns] if ns else []), "--type=merge",
                 "-p", '{"metadata":{"finalizers":null}}'],
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="the file KRUISE_SIM_PROBE_LOG named")
    ap.add_argument("--kubeconfig", required=True, help="the real cluster's kubeconfig")
    ap.add_argument("--test", default="", help="only tests whose name contains this")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per kubectl run")
    ap.add_argument("--context", type=int, default=2, help="lines of diff context")
    ap.add_argument(
        "--crds",
        default=os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "kruise-api", "tests",
            "snapshots",
        ),
        help="CRD manifests (directory or file; insta .snap files too) to install when "
        "missing; '' for none",
    )
    ap.add_argument(
        "--cleanup-timeout", type=float, default=30.0,
        help="seconds to wait for what a test leaves to be deleted before forcing it",
    )
    ap.add_argument(
        "--no-cleanup", action="store_true",
        help="leave what tests make on the server (the test namespaces are still deleted)",
    )
    opts = ap.parse_args()

    tests = load(opts.log, opts.test)
    cluster = Cluster(opts.kubeconfig, opts.timeout, opts.cleanup_timeout)
    if opts.crds:
        cluster.install_crds(os.path.normpath(opts.crds))
    if not opts.no_cleanup:
        cluster.baseline = cluster.snapshot() or {}
        stale = [r for r in cluster.baseline if re.fullmatch(r"namespace/probe-\d+", r)]
        if stale:
            note(f"namespaces of an earlier replay are still there: {' '.join(stale[:8])}")
    total = same = code_differs = output_differs = 0
    differing_tests = []
    started = time.monotonic()
    for t_index, (test, runs) in enumerate(tests.items()):
        ns = f"probe-{t_index}"
        if not opts.no_cleanup:
            cluster.make_room(test, runs)
        kubectl(opts.kubeconfig, ["create", "namespace", ns], None, opts.timeout)
        wait_for_service_account(opts.kubeconfig, ns, opts.timeout)
        diffs = 0
        for run in runs:
            total += 1
            args = [localize(a, ns) for a in run["args"]]
            added_ns = not names_namespace(args)
            if added_ns:
                args = ["-n", ns, *args]
            stdin = localize(run["stdin"], ns)
            code, out, err = kubectl(opts.kubeconfig, args, stdin, opts.timeout)
            if added_ns:
                # kubectl's own note on the `-n` the replay added to a cluster-scoped delete.
                err = CLUSTER_SCOPED_DELETE_WARNING.sub("", err)
            if not KRUISE_SHORT_NAME_WARNING.search(run["stderr"]):
                # The Kruise CRDs are installed for every test, kruise-sim has them only in some.
                err = KRUISE_SHORT_NAME_WARNING.sub("", err)
            if code == 0:
                for made in made_namespaces(args, stdin):
                    wait_for_service_account(opts.kubeconfig, made, opts.timeout)
            sim_out = mask(run["stdout"], None)
            sim_err = mask(run["stderr"], None)
            real_out = mask(out, ns)
            real_err = mask(err, ns)
            if code != run["code"]:
                code_differs += 1
            elif (sim_out, sim_err) != (real_out, real_err):
                output_differs += 1
            else:
                same += 1
                continue
            diffs += 1
            print(f"=== {test}: kubectl {' '.join(run['args'])}")
            print(f"    exit code: kruise-sim {run['code']}, kube-apiserver {code}")
            for name, a, b in (("stdout", sim_out, real_out), ("stderr", sim_err, real_err)):
                if a != b:
                    lines = difflib.unified_diff(
                        a.splitlines(),
                        b.splitlines(),
                        f"kruise-sim {name}",
                        f"kube-apiserver {name}",
                        n=opts.context,
                        lineterm="",
                    )
                    for line in lines:
                        print(f"    {line}")
        sys.stdout.flush()
        if diffs:
            differing_tests.append((test, diffs, len(runs)))
        if opts.no_cleanup:
            kubectl(
                opts.kubeconfig, ["delete", "namespace", ns, "--wait=false"], None, opts.timeout
            )
        else:
            cluster.cleanup(test, ns)
    print()
    print(
        f"probe_diff: {total} kubectl runs in {len(tests)} tests: {same} answered alike, "
        f"{code_differs} with another exit code, {output_differs} with other output "
        f"({time.monotonic() - started:.0f}s)"
    )
    for test, diffs, runs in differing_tests:
        print(f"probe_diff:   {test}: {diffs} of {runs} differ")


if __name__ == "__main__":
    main()
