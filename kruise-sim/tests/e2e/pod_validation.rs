//! Pod specs and quantities through the real kubectl, against answers recorded from
//! kube-apiserver 1.36.2 (`data/pod_validation/`: each manifest, and what `kubectl create
//! --dry-run=server -f -` printed on realk8s): the same refusals with the same messages in
//! the same order, and quantities stored as Go writes them back.

use kruise_sim::Config;
use serde_json::Value;

use crate::common::Env;

macro_rules! case {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("data/pod_validation/", $name, ".yaml")),
            include_str!(concat!("data/pod_validation/", $name, ".real.txt")),
        )
    };
}

/// Manifests kube-apiserver refused, and what kubectl printed. (Cases where Go walks a map of
/// several bad keys are left out: their order is random there.)
const REFUSED: [(&str, &str, &str); 13] = [
    case!("q-bad-format"),
    case!("q-bad-suffix"),
    case!("v-resources"),
    case!("v-negative"),
    case!("v-probes"),
    case!("v-readiness-grace"),
    case!("v-security"),
    case!("v-seccomp"),
    case!("v-podsc"),
    case!("v-affinity"),
    case!("v-misc"),
    case!("v-sched"),
    case!("deploy-bad"),
];

#[test]
fn invalid_pod_specs_are_refused_as_kube_apiserver_refuses_them() {
    let env = Env::new(Config::default());
    let mut differ = Vec::new();
    for (name, manifest, real) in REFUSED {
        let got = env.fails_stdin(&["create", "--dry-run=server", "-f", "-"], manifest);
        if got.trim_end() != real.trim_end() {
            differ.push(format!("{name}:\n--- kube-apiserver\n{real}\n--- kruise-sim\n{got}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn quantities_are_stored_as_go_writes_them_back() {
    let env = Env::new(Config::default());
    let pod = env.json(&[
        "create",
        "--dry-run=server",
        "-f",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/data/pod_validation/q-ok.yaml"),
    ]);
    let got: serde_json::Map<String, Value> = pod["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| (c["name"].as_str().unwrap_or_default().to_owned(), c["resources"].clone()))
        .collect();
    let real: Value =
        serde_json::from_str(include_str!("data/pod_validation/q-ok.real.json")).expect("JSON");
    assert_eq!(Value::Object(got), real);
}
