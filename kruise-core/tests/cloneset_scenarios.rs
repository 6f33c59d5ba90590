//! Readable CloneSet scenarios: each YAML file under `tests/scenarios/cloneset/` holds a
//! snapshot and a time; the plan for it is compared with an insta snapshot next to it.
//!
//! A scenario file:
//!
//! ```yaml
//! description: what the scenario shows (the upstream manual's behaviour)
//! now: "2024-05-01T10:00:00Z"
//! snapshot: { cloneset: ..., pods: [...], pvcs: [...], revisions: [...] }
//! ```

mod support;

use std::path::Path;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kruise_core::cloneset::{CloneSetSnapshot, plan};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    description: String,
    now: String,
    snapshot: CloneSetSnapshot,
}

fn run(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read scenario");
    let mut scenario: Scenario =
        serde_yaml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    // The pods as the CloneSet created them (its controller reference) and admission left
    // them: the readiness gate comes from the webhook's rule.
    let set = scenario.snapshot.cloneset.to_v1beta1().expect("the scenario's CloneSet converts");
    let owner = OwnerReference {
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "CloneSet".into(),
        name: set.metadata.name.clone().unwrap_or_default(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    for pod in &mut scenario.snapshot.pods {
        let mut created = pod.pod().as_ref().clone();
        created.metadata.owner_references.get_or_insert_with(|| vec![owner.clone()]);
        *pod = support::admitted(created).into();
    }
    let now: jiff::Timestamp = scenario.now.parse().expect("scenario.now is RFC 3339");
    let first = plan(&scenario.snapshot, now);
    // Determinism: planning twice gives the same plan.
    assert_eq!(first, plan(&scenario.snapshot, now), "{}", path.display());
    let name = path.file_stem().and_then(|s| s.to_str()).expect("file name").to_owned();
    insta::with_settings!({
        snapshot_path => "scenarios/cloneset/snapshots",
        prepend_module_to_snapshot => false,
        description => scenario.description.trim(),
        omit_expression => true,
    }, {
        insta::assert_yaml_snapshot!(name, first);
    });
}

#[test]
fn cloneset_scenarios() {
    let files = support::scenario_files("cloneset");
    for file in files {
        run(&file);
    }
}

/// Pods updated in place to the same images get one shared patch body (and one shared
/// conditions body), not a copy each: a rollout of many pods plans a few bodies.
#[test]
fn equal_in_place_patches_share_one_body() {
    use kruise_core::cloneset::{Action, Patch};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/cloneset/in-place-image-update.yaml");
    let text = std::fs::read_to_string(&path).expect("read scenario");
    let scenario: Scenario = serde_yaml::from_str(&text).expect("scenario");
    let mut snapshot = scenario.snapshot;
    // Both pods run the same image digest, so their in-place patches are the same.
    for pod in &mut snapshot.pods {
        let mut p = (**pod.pod()).clone();
        for status in p.status.iter_mut().flat_map(|s| s.container_statuses.iter_mut().flatten()) {
            status.image_id = "docker.io/library/nginx@sha256:0123".into();
        }
        *pod = p.into();
    }
    let now: jiff::Timestamp = scenario.now.parse().expect("now");
    let plan = plan(&snapshot, now);
    let bodies = |pod_patch: bool| -> Vec<std::sync::Arc<serde_json::Value>> {
        plan.actions
            .iter()
            .filter_map(|a| match (a, pod_patch) {
                (Action::PatchPod { patch: Patch::Strategic(body), .. }, true)
                | (Action::PatchPodStatus { patch: Patch::Strategic(body), .. }, false) => {
                    Some(body.clone())
                }
                _ => None,
            })
            .collect()
    };
    for (what, bodies) in [("pod", bodies(true)), ("conditions", bodies(false))] {
        assert_eq!(bodies.len(), 2, "two {what} patches in {:#?}", plan.actions);
        assert_eq!(bodies[0], bodies[1], "the two {what} patches are equal");
        assert!(std::sync::Arc::ptr_eq(&bodies[0], &bodies[1]), "{what} patches share a body");
    }
}
