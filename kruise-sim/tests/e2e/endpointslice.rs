//! The built-in EndpointSlice controller, driven with the real kubectl: a Service's slice
//! follows its pods (addresses, ports resolved per pod, node, zone, readiness, readiness
//! gates, termination), 150 pods take two slices, a Service without a selector gets none, and
//! the API server serves, prints and validates EndpointSlices.

use crate::common;

use common::Env;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// Two simulated nodes (zones `zone-a` and `zone-b`) and the built-in controllers.
fn env() -> Env {
    Env::with_controllers(Duration::from_millis(50))
}

fn eventually<T>(env: &Env, what: &str, f: impl FnMut() -> Option<T>) -> T {
    env.eventually(what, "pods,endpointslices", f)
}

/// A Service `web` selecting `app: web`, its port 80 sent to the pods' port named `http`.
const SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    team: storefront
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: http
"#;

/// A pod `name` of `app: web` serving `http` on 8080; `extra` goes into its spec.
fn pod(name: &str, extra: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels:
    app: web
spec:
  terminationGracePeriodSeconds: 60
{extra}  containers:
  - name: app
    image: nginx:1.27
    ports:
    - name: http
      containerPort: 8080
"#
    )
}

/// The managed slices of Service `service`, by name.
fn slices(env: &Env, service: &str) -> Vec<Value> {
    let selector = format!("kubernetes.io/service-name={service}");
    let list = env.json(&["get", "endpointslice", "-l", &selector]);
    let mut items: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
    items.retain(|s| {
        s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
            == "endpointslice-controller.k8s.io"
    });
    items.sort_by_key(|s| s["metadata"]["name"].as_str().unwrap_or_default().to_owned());
    items
}

/// The endpoints of the slice, by the name of their pod.
fn endpoints(slice: &Value) -> Vec<Value> {
    let mut all: Vec<Value> = slice["endpoints"].as_array().cloned().unwrap_or_default();
    all.sort_by_key(|e| e["targetRef"]["name"].as_str().unwrap_or_default().to_owned());
    all
}

fn conditions(endpoint: &Value) -> (Value, Value, Value) {
    let c = &endpoint["conditions"];
    (c["ready"].clone(), c["serving"].clone(), c["terminating"].clone())
}

const READY: (bool, bool, bool) = (true, true, false);

fn is(endpoint: &Value, (ready, serving, terminating): (bool, bool, bool)) -> bool {
    conditions(endpoint) == (ready.into(), serving.into(), terminating.into())
}

/// The one managed slice of `web` once it lists exactly the pods `names` with conditions
/// `want` each.
fn settled(env: &Env, names: &[&str], want: (bool, bool, bool)) -> Option<Value> {
    let all = slices(env, "web");
    let [slice] = all.as_slice() else { return None };
    let eps = endpoints(slice);
    let listed: Vec<&str> = eps.iter().filter_map(|e| e["targetRef"]["name"].as_str()).collect();
    (listed == names && eps.iter().all(|e| is(e, want))).then(|| slice.clone())
}

#[test]
fn a_service_selecting_two_pods_gets_one_slice_with_two_ready_endpoints() {
    let env = env();
    env.ok_stdin(&["apply", "-f", "-"], SERVICE);
    env.ok_stdin(&["apply", "-f", "-"], &[pod("web-a", ""), pod("web-b", "")].join("---\n"));
    let slice =
        eventually(&env, "two ready endpoints", || settled(&env, &["web-a", "web-b"], READY));
    let svc = env.json(&["get", "service", "web"]);
    let meta = &slice["metadata"];
    assert_eq!(meta["generateName"], "web-");
    assert!(meta["name"].as_str().is_some_and(|n| n.starts_with("web-") && n.len() > 4), "{meta}");
    assert_eq!(meta["labels"]["kubernetes.io/service-name"], "web");
    assert_eq!(meta["labels"]["team"], "storefront", "the Service's labels are copied");
    let owner = &meta["ownerReferences"][0];
    assert_eq!(
        (&owner["apiVersion"], &owner["kind"], &owner["name"], &owner["uid"]),
        (&"v1".into(), &"Service".into(), &"web".into(), &svc["metadata"]["uid"])
    );
    assert_eq!((&owner["controller"], &owner["blockOwnerDeletion"]), (&true.into(), &true.into()));
    assert_eq!(slice["addressType"], "IPv4");
    // The Service's target port `http` resolved against the pods.
    assert_eq!(
        slice["ports"],
        serde_json::json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
    for endpoint in endpoints(&slice) {
        let name = endpoint["targetRef"]["name"].as_str().unwrap_or_default().to_owned();
        let p = env.json(&["get", "pod", &name]);
        assert_eq!(endpoint["addresses"], serde_json::json!([p["status"]["podIP"]]));
        assert_eq!(endpoint["nodeName"], p["spec"]["nodeName"]);
        let node_name = p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
        let node = env.json(&["get", "node", &node_name]);
        assert_eq!(endpoint["zone"], node["metadata"]["labels"]["topology.kubernetes.io/zone"]);
        assert_eq!(endpoint["targetRef"]["kind"], "Pod");
        assert_eq!(endpoint["targetRef"]["namespace"], "default");
        assert_eq!(endpoint["targetRef"]["uid"], p["metadata"]["uid"]);
    }

    // kubectl prints slices as kube-apiserver does.
    let table = env.ok(&["get", "endpointslices"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("ADDRESSTYPE") && header.contains("PORTS"), "{table}");
    assert!(header.contains("ENDPOINTS"), "{table}");
    let row = table.lines().find(|l| l.starts_with("web-")).unwrap_or_default().to_owned();
    assert!(row.contains("IPv4") && row.contains(" 8080 "), "{table}");

    // Nothing that leaves the endpoints alone rewrites the slice; the Service's label does.
    let version = slice["metadata"]["resourceVersion"].clone();
    env.ok(&["annotate", "service", "web", "note=unrelated"]);
    env.ok(&["annotate", "pod", "web-a", "note=unrelated"]);
    env.ok(&["label", "service", "web", "team=checkout", "--overwrite"]);
    let relabelled = eventually(&env, "the slice relabelled", || {
        let all = slices(&env, "web");
        let slice = all.first()?.clone();
        (slice["metadata"]["labels"]["team"] == "checkout").then_some(slice)
    });
    assert_eq!(relabelled["metadata"]["name"], meta["name"], "updated in place");
    let before: u64 = version.as_str().and_then(|v| v.parse().ok()).unwrap_or(0);
    let after: u64 = relabelled["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(after > before);
    // The generation counts endpoint and label changes: one write since the pods settled.
    let generation = |s: &Value| s["metadata"]["generation"].as_i64();
    assert_eq!(generation(&relabelled), generation(&slice).map(|g| g + 1), "{relabelled}");

    // A slice someone else deletes comes back.
    let name = relabelled["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    env.ok(&["delete", "endpointslice", &name]);
    let back = eventually(&env, "a new slice", || {
        settled(&env, &["web-a", "web-b"], READY).filter(|s| s["metadata"]["name"] != name)
    });
    assert_eq!(back["metadata"]["labels"]["team"], "checkout");
}

#[test]
fn a_pod_whose_readiness_gate_turns_false_is_neither_ready_nor_serving() {
    let env = env();
    env.ok_stdin(&["apply", "-f", "-"], SERVICE);
    let gated = pod("web-a", "  readinessGates:\n  - conditionType: example.com/gate\n");
    env.ok_stdin(&["apply", "-f", "-"], &gated);
    // Running, but the gate's condition is missing: listed, not ready.
    eventually(&env, "a not-ready endpoint", || settled(&env, &["web-a"], (false, false, false)));
    let gate = |status: &str| {
        let patch = format!(
            r#"{{"status":{{"conditions":[{{"type":"example.com/gate","status":"{status}"}}]}}}}"#
        );
        env.ok(&[
            "patch",
            "pod",
            "web-a",
            "--subresource=status",
            "--type=strategic",
            "-p",
            &patch,
        ]);
    };
    gate("True");
    eventually(&env, "a ready endpoint", || settled(&env, &["web-a"], READY));
    gate("False");
    let slice =
        eventually(&env, "not ready again", || settled(&env, &["web-a"], (false, false, false)));
    let endpoint = &endpoints(&slice)[0];
    let p = env.json(&["get", "pod", "web-a"]);
    assert_eq!(endpoint["addresses"], serde_json::json!([p["status"]["podIP"]]));

    // The Service's slices go with it.
    env.ok(&["delete", "service", "web"]);
    eventually(&env, "the slices gone", || slices(&env, "web").is_empty().then_some(()));
}

#[test]
fn a_deleted_pod_held_by_a_finalizer_is_terminating() {
    let env = env();
    env.ok_stdin(&["apply", "-f", "-"], SERVICE);
    // `web-a` runs on a node made by hand, with no kubelet: its status is what the test writes,
    // so it stays Ready while it terminates. `web-b` runs on a simulated node.
    env.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: by-hand\n  labels:\n    topology.kubernetes.io/zone: zone-x\n",
    );
    let held = pod("web-a", "  nodeName: by-hand\n")
        .replace("  labels:", "  finalizers: [example.com/hold]\n  labels:");
    env.ok_stdin(&["apply", "-f", "-"], &[held, pod("web-b", "")].join("---\n"));
    let status = r#"{"status":{"phase":"Running","podIP":"10.9.0.5","podIPs":[{"ip":"10.9.0.5"}],
        "conditions":[{"type":"Ready","status":"True"}]}}"#;
    env.ok(&["patch", "pod", "web-a", "--subresource=status", "--type=merge", "-p", status]);
    let before =
        eventually(&env, "two ready endpoints", || settled(&env, &["web-a", "web-b"], READY));
    let by_hand = &endpoints(&before)[0];
    assert_eq!(by_hand["addresses"], serde_json::json!(["10.9.0.5"]));
    assert_eq!((&by_hand["nodeName"], &by_hand["zone"]), (&"by-hand".into(), &"zone-x".into()));

    env.ok(&["delete", "pod", "web-a", "--wait=false"]);
    let slice = eventually(&env, "a terminating endpoint", || {
        let all = slices(&env, "web");
        let [slice] = all.as_slice() else { return None };
        let eps = endpoints(slice);
        let names: Vec<&str> = eps.iter().filter_map(|e| e["targetRef"]["name"].as_str()).collect();
        let terminating = eps.first().is_some_and(|e| e["conditions"]["terminating"] == true);
        (names == ["web-a", "web-b"] && terminating).then(|| slice.clone())
    });
    let eps = endpoints(&slice);
    // Still serving (its Ready condition is True), but a terminating endpoint is never ready.
    assert!(is(&eps[0], (false, true, true)), "{slice}");
    assert!(is(&eps[1], READY), "{slice}");
    assert_eq!(slice["metadata"]["name"], before["metadata"]["name"], "updated in place");

    // Once it has finished, it is left out.
    let failed = r#"{"status":{"phase":"Failed"}}"#;
    env.ok(&["patch", "pod", "web-a", "--subresource=status", "--type=merge", "-p", failed]);
    eventually(&env, "the finished pod left out", || settled(&env, &["web-b"], READY));
}

#[test]
fn a_hundred_and_fifty_pods_take_two_slices() {
    let env = env();
    env.ok(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=150", "--port=8080"]);
    env.ok(&["expose", "deployment", "web", "--port=80", "--target-port=8080"]);
    let all = env.eventually("150 ready endpoints", "deployments,endpointslices", || {
        let all = slices(&env, "web");
        let total: usize = all.iter().map(|s| endpoints(s).len()).sum();
        let ready = all.iter().flat_map(endpoints).all(|e| is(&e, READY));
        (total == 150 && ready).then_some(all)
    });
    assert_eq!(all.len(), 2, "{all:#?}");
    for slice in &all {
        let n = endpoints(slice).len();
        assert!(n <= 100, "{n} endpoints in one slice");
        assert_eq!(
            slice["ports"],
            serde_json::json!([{"name": "", "port": 8080, "protocol": "TCP"}])
        );
    }
    // Every pod once, by its IP.
    let listed: BTreeSet<String> = all
        .iter()
        .flat_map(endpoints)
        .filter_map(|e| e["addresses"][0].as_str().map(str::to_owned))
        .collect();
    let pods = env.json(&["get", "pods", "-l", "app=web"]);
    let ips: BTreeSet<String> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(listed.len(), 150);
    assert_eq!(listed, ips);
}

#[test]
fn a_service_without_a_selector_gets_no_managed_slice() {
    let env = env();
    let resources = env.ok(&["api-resources", "--api-group=discovery.k8s.io"]);
    assert!(resources.contains("endpointslices") && resources.contains("EndpointSlice"));
    let manual =
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: manual\nspec:\n  ports:\n  - port: 80\n";
    env.ok_stdin(&["apply", "-f", "-"], manual);
    env.ok_stdin(&["apply", "-f", "-"], &pod("web-a", ""));
    // A Service selecting nothing keeps one empty slice, written at its first sync with the
    // Service's creation time.
    let probe = "apiVersion: v1\nkind: Service\nmetadata:\n  name: probe\nspec:\n  selector:\n    app: none\n  ports:\n  - port: 80\n";
    env.ok_stdin(&["apply", "-f", "-"], probe);
    let placeholder = eventually(&env, "the placeholder slice", || slices(&env, "probe").pop());
    assert_eq!(placeholder["endpoints"], Value::Null);
    assert_eq!(placeholder["ports"], Value::Null);
    let created = env.json(&["get", "service", "probe"])["metadata"]["creationTimestamp"].clone();
    assert_eq!(
        placeholder["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"],
        created
    );
    assert_eq!(slices(&env, "manual"), Vec::<Value>::new());

    // Slices written by hand for it are served, validated and left alone.
    let by_hand = r#"
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: manual-1
  labels:
    kubernetes.io/service-name: manual
addressType: IPv4
endpoints:
- addresses: ["10.1.2.3"]
ports:
- port: 80
"#;
    env.ok_stdin(&["apply", "-f", "-"], by_hand);
    let stored = env.json(&["get", "endpointslice", "manual-1"]);
    assert_eq!(stored["ports"], serde_json::json!([{"name": "", "port": 80, "protocol": "TCP"}]));
    assert_eq!(stored["endpoints"][0]["conditions"], serde_json::json!({}));
    assert_eq!(stored["metadata"]["generation"], 1);
    let no_type = by_hand.replace("addressType: IPv4\n", "");
    let e = env.fails_stdin(&["create", "-f", "-"], &no_type.replace("manual-1", "manual-2"));
    assert!(e.contains("addressType: Required value"), "{e}");
    let no_address = by_hand.replace(r#"["10.1.2.3"]"#, "[]").replace("manual-1", "manual-3");
    let e = env.fails_stdin(&["create", "-f", "-"], &no_address);
    assert!(
        e.contains("endpoints[0].addresses: Required value: must contain at least 1 address"),
        "{e}"
    );
    let e = env.fails_stdin(&["apply", "-f", "-"], &by_hand.replace("IPv4", "IPv6"));
    assert!(e.contains("addressType: Invalid value: \"IPv6\": field is immutable"), "{e}");
    let still = env.json(&["get", "endpointslice", "manual-1"]);
    assert_eq!(still["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
    assert_eq!(slices(&env, "manual"), Vec::<Value>::new());
}
