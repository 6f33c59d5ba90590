#!/usr/bin/env python3
"""Replays the kubectl runs of kruise-sim's tests against a real kube-apiserver and prints
where the answers differ.

1. Record what kruise-sim answered (each kubectl run of the e2e tests becomes a JSON line):

       KRUISE_SIM_PROBE_LOG=/tmp/probes.jsonl cargo test -p kruise-sim --test e2e -- --test-threads 1

2. Start the real control plane (../shared/realk8s/up.sh) and, for tests of Kruise kinds,
   apply the CRDs (kruise-manager crds | kubectl apply --server-side -f -).

3. Replay and compare:

       python3 benches/realk8s/probe_diff.py /tmp/probes.jsonl --kubeconfig /tmp/realk8s/kubeconfig

Each test runs in a fresh namespace on the real server (its runs get `-n <namespace>` unless
they name a namespace themselves), which is deleted afterwards. Repeated runs of the same
command in a row (a test polling until something holds) are replayed once, compared with the
last answer kruise-sim gave. Outputs are compared after masking what differs between any two
clusters: uids, timestamps, resourceVersions, ages, generated name suffixes, IP addresses,
the namespace name and the server's address.

What cannot match: tests that use kruise-sim's simulated nodes (the real control plane has
no kubelets), its fault injection, or objects made through its Rust API rather than kubectl.
Cluster-scoped objects a test makes (webhook configurations, CRDs, nodes) stay on the real
server and change what later tests see: the replay does not clean them up yet.
Their differences are printed like any other; `--test` narrows the replay to tests whose
name contains a string.
"""

import argparse
import difflib
import json
import re
import subprocess
import sys
from collections import OrderedDict

MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"), "<time>"),
    (re.compile(r'("resourceVersion":\s*)"\d+"'), r'\1"<rv>"'),
    (re.compile(r"(resourceVersion:\s*)\"?\d+\"?"), r"\1<rv>"),
    (re.compile(r"\b\d+(\.\d+)?(ms|s|m|h|d)(\d+(s|m|h))?\b"), "<age>"),
    (re.compile(r"\b(\d{1,3}\.){3}\d{1,3}(:\d+)?\b"), "<ip>"),
    (re.compile(r"https://[^\s\"']+"), "<server>"),
    (re.compile(r"-[a-z0-9]{5}\b"), "-<rand>"),
    (re.compile(r"\b[0-9a-f]{8,10}\b"), "<hash>"),
]


def mask(text, namespace):
    if namespace:
        text = text.replace(namespace, "default")
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text.strip()


def names_namespace(args):
    for i, a in enumerate(args):
        if a in ("-n", "--namespace", "-A", "--all-namespaces") or a.startswith("--namespace="):
            return True
        if a.startswith("-n") and len(a) > 2:
            return True
    return False


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
            # A test polling: keep the last of a run of identical commands.
            if runs and runs[-1]["args"] == rec["args"] and runs[-1]["stdin"] == rec["stdin"]:
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="the file KRUISE_SIM_PROBE_LOG named")
    ap.add_argument("--kubeconfig", required=True, help="the real cluster's kubeconfig")
    ap.add_argument("--test", default="", help="only tests whose name contains this")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per kubectl run")
    ap.add_argument("--context", type=int, default=2, help="lines of diff context")
    opts = ap.parse_args()

    tests = load(opts.log, opts.test)
    total = same = code_differs = output_differs = 0
    differing_tests = []
    for t_index, (test, runs) in enumerate(tests.items()):
        ns = f"probe-{t_index}"
        kubectl(opts.kubeconfig, ["create", "namespace", ns], None, opts.timeout)
        diffs = 0
        for run in runs:
            total += 1
            args = list(run["args"])
            if not names_namespace(args):
                args = ["-n", ns, *args]
            code, out, err = kubectl(opts.kubeconfig, args, run["stdin"], opts.timeout)
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
        if diffs:
            differing_tests.append((test, diffs, len(runs)))
        kubectl(
            opts.kubeconfig, ["delete", "namespace", ns, "--wait=false"], None, opts.timeout
        )
    print()
    print(
        f"probe_diff: {total} kubectl runs in {len(tests)} tests: {same} answered alike, "
        f"{code_differs} with another exit code, {output_differs} with other output"
    )
    for test, diffs, runs in differing_tests:
        print(f"probe_diff:   {test}: {diffs} of {runs} differ")


if __name__ == "__main__":
    main()
