//! Readable SidecarSet upgrade scenarios: each YAML file under
//! `tests/scenarios/sidecarset-upgrade/` holds a planner snapshot (the pods written as merge
//! patches over one `podTemplate`) and how many rounds to run. Each round plans, applies the
//! plan's pod patches, and then, with `restart: true`, lets the patched pods restart on their
//! new images and turn ready. The plans of all rounds are compared with an insta snapshot.
//! One file per behaviour of the upstream manual.
//!
//! ```yaml
//! description: what the scenario shows
//! rounds: 2
//! restart: true
//! podTemplate: {metadata: ..., spec: ..., status: ...}
//! pods: [{metadata: {name: web-0, uid: u0}}, ...]
//! input: {sidecarSet: ..., latestRevision: ..., revisions: [...], gates: ..., now: ...}
//! ```

mod support;

use std::path::Path;

use k8s_openapi::api::core::v1::Pod;
use kruise_core::sidecarset::upgrade::{SidecarSetPlan, UpgradeSnapshot, plan_upgrade};
use serde::Deserialize;
use support::sidecarset_upgrade::{apply, restart_all};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Scenario {
    description: String,
    #[serde(default = "one")]
    rounds: usize,
    #[serde(default)]
    restart: bool,
    pod_template: serde_json::Value,
    pods: Vec<serde_json::Value>,
    input: UpgradeSnapshot,
}

fn one() -> usize {
    1
}

fn run(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read scenario");
    let scenario: Scenario =
        serde_yaml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut snapshot = scenario.input.clone();
    snapshot.pods = scenario
        .pods
        .iter()
        .map(|over| {
            let doc = support::merge(scenario.pod_template.clone(), over);
            let mut pod: Pod = serde_json::from_value(doc).expect("pod");
            if pod.status.is_none() {
                restart_all(&mut pod);
            }
            pod
        })
        .collect();
    let mut plans: Vec<SidecarSetPlan> = Vec::new();
    for _ in 0..scenario.rounds {
        let plan = plan_upgrade(&snapshot);
        assert_eq!(plan, plan_upgrade(&snapshot), "{}: not deterministic", path.display());
        let touched = apply(&plan, &mut snapshot.pods);
        if scenario.restart {
            for pod in &mut snapshot.pods {
                if touched.iter().any(|n| pod.metadata.name.as_deref() == Some(n.as_str())) {
                    restart_all(pod);
                }
            }
        }
        if let Some(status) = &plan.status {
            snapshot.sidecar_set.status = Some(status.clone());
        }
        plans.push(plan);
    }
    let name = path.file_stem().and_then(|s| s.to_str()).expect("file name").to_owned();
    insta::with_settings!({
        snapshot_path => "scenarios/sidecarset-upgrade/snapshots",
        prepend_module_to_snapshot => false,
        description => scenario.description.trim(),
        omit_expression => true,
    }, {
        insta::assert_yaml_snapshot!(name, plans);
    });
}

#[test]
fn sidecarset_upgrade_scenarios() {
    for file in support::scenario_files("sidecarset-upgrade") {
        run(&file);
    }
}
