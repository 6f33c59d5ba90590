//! Readable Advanced DaemonSet scenarios: each YAML file under `tests/scenarios/daemonset/`
//! holds a DaemonSet, nodes, pods and a time; the plan for it is compared with an insta
//! snapshot next to it. One file per behaviour of upstream's manual.
//!
//! A scenario file:
//!
//! ```yaml
//! description: what the scenario shows
//! daemonset: { the DaemonSet, apps.kruise.io/v1beta1 or v1alpha1 }
//! earlierImages: [nginx:1]   # earlier templates (the DaemonSet's, with this first image)
//! earlierTemplates: [...]    # earlier templates given whole, after those
//! newTemplate: false         # the DaemonSet's template has no revision yet
//! nodes:
//!   - {name: node-a, labels: {zone: a}, taints: [{key: k, effect: NoSchedule}]}
//! pods:                      # see PodState
//!   - {node: node-a, revision: 0}
//! featureGates: {...}
//! ```

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{PodCondition, PodReadinessGate, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_core::daemonset::{DaemonSetObject, DaemonSetSnapshot, FeatureGates, plan};
use serde::Deserialize;
use support::daemonset as ds;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Scenario {
    description: String,
    daemonset: DaemonSetObject,
    #[serde(default)]
    earlier_images: Vec<String>,
    #[serde(default)]
    earlier_templates: Vec<PodTemplateSpec>,
    #[serde(default)]
    new_template: bool,
    #[serde(default)]
    nodes: Vec<NodeState>,
    #[serde(default)]
    pods: Vec<PodState>,
    #[serde(default)]
    feature_gates: FeatureGates,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NodeState {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    taints: Vec<TaintState>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaintState {
    key: String,
    effect: String,
}

/// A pod as it is: on `node`, at earlier revision `revision` (an index) or the update one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodState {
    node: String,
    #[serde(default)]
    revision: Option<usize>,
    #[serde(default = "yes")]
    ready: bool,
    /// Seconds before now the pod became ready (and was created); 600 when unset.
    #[serde(default)]
    ready_seconds_ago: Option<i64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    terminating: bool,
    /// The pod has the `InPlaceUpdateReady` readiness gate (and the condition True).
    #[serde(default)]
    in_place_gate: bool,
}

fn yes() -> bool {
    true
}

const NOW: i64 = 10_000;

fn snapshot(scenario: &Scenario) -> DaemonSetSnapshot {
    let mut set = scenario.daemonset.to_v1beta1().expect("the scenario's DaemonSet converts");
    set.metadata.name.get_or_insert_with(|| ds::NAME.to_owned());
    set.metadata.namespace.get_or_insert_with(|| "default".to_owned());
    set.metadata.uid.get_or_insert_with(|| ds::UID.to_owned());
    set.metadata.generation.get_or_insert(1);
    let mut earlier: Vec<_> = scenario
        .earlier_images
        .iter()
        .map(|image| {
            let mut old = set.clone();
            if let Some(spec) = old.spec.template.spec.as_mut() {
                spec.containers[0].image = Some(image.clone());
            }
            old
        })
        .collect();
    earlier.extend(scenario.earlier_templates.iter().map(|t| {
        let mut old = set.clone();
        old.spec.template = t.clone();
        old
    }));
    let mut revisions: Vec<_> =
        earlier.iter().enumerate().map(|(i, s)| ds::revision_of(s, i as i64 + 1)).collect();
    let update = ds::revision_of(&set, earlier.len() as i64 + 1);
    let hashes: Vec<String> = revisions.iter().map(ds::hash_of).collect();
    let update_hash = ds::hash_of(&update);
    if !scenario.new_template {
        revisions.push(update);
    }
    let nodes = scenario
        .nodes
        .iter()
        .map(|n| {
            let labels: Vec<(&str, &str)> =
                n.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let taints: Vec<(&str, &str)> =
                n.taints.iter().map(|t| (t.key.as_str(), t.effect.as_str())).collect();
            ds::node(&n.name, &labels, &taints).into()
        })
        .collect();
    let now = ds::at(NOW);
    let pods = scenario
        .pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (template, hash) = match p.revision {
                Some(r) => (&earlier[r], &hashes[r]),
                None => (&set, &update_hash),
            };
            let prefix = set.metadata.name.clone().unwrap_or_default();
            let name = p.name.clone().unwrap_or_else(|| format!("{prefix}-pod{i}"));
            let ago = p.ready_seconds_ago.unwrap_or(600);
            let mut pod = ds::pod_on(template, &p.node, hash, &name, p.ready, NOW - ago);
            pod.metadata.labels.get_or_insert_with(Default::default).extend(p.labels.clone());
            if let Some(phase) = &p.phase {
                pod.status.get_or_insert_with(Default::default).phase = Some(phase.clone());
            }
            if p.terminating {
                pod.metadata.deletion_timestamp = Some(Time(now));
            }
            if p.in_place_gate {
                let spec = pod.spec.get_or_insert_with(Default::default);
                spec.readiness_gates =
                    Some(vec![PodReadinessGate { condition_type: "InPlaceUpdateReady".into() }]);
                let status = pod.status.get_or_insert_with(Default::default);
                status.conditions.get_or_insert_with(Vec::new).push(PodCondition {
                    type_: "InPlaceUpdateReady".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(ds::at(NOW - ago))),
                    ..Default::default()
                });
            }
            pod.into()
        })
        .collect();
    let mut snapshot = DaemonSetSnapshot::new(set);
    snapshot.nodes = nodes;
    snapshot.pods = pods;
    snapshot.revisions = revisions;
    snapshot.feature_gates = scenario.feature_gates.clone();
    snapshot
}

fn run(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read scenario");
    let scenario: Scenario =
        serde_yaml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let snapshot = snapshot(&scenario);
    let first = plan(&snapshot, ds::at(NOW));
    // Determinism: planning twice gives the same plan.
    assert_eq!(first, plan(&snapshot, ds::at(NOW)), "{}", path.display());
    let name = path.file_stem().and_then(|s| s.to_str()).expect("file name").to_owned();
    insta::with_settings!({
        snapshot_path => "scenarios/daemonset/snapshots",
        prepend_module_to_snapshot => false,
        description => scenario.description.trim(),
        omit_expression => true,
    }, {
        insta::assert_yaml_snapshot!(name, first);
    });
}

#[test]
fn daemonset_scenarios() {
    for file in support::scenario_files("daemonset") {
        run(&file);
    }
}
