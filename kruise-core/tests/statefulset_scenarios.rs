//! Readable Advanced StatefulSet scenarios: each YAML file under
//! `tests/scenarios/statefulset/` holds a set, its pods and a time; the plan for it is compared
//! with an insta snapshot next to it. One file per behaviour of upstream's manual.
//!
//! A scenario file:
//!
//! ```yaml
//! description: what the scenario shows
//! set: { the StatefulSet, apps.kruise.io/v1beta1 or v1alpha1 }
//! earlierImages: [nginx:1]      # earlier templates (the set's, with this first image)
//! earlierTemplates: [...]       # earlier templates given whole
//! currentRevision: 0            # index into earlierImages, or `update` (the default: 0 when
//!                               # there are earlier images)
//! pods:                         # see support::statefulset::PodState
//!   - {ordinal: 0, revision: 0}
//! pvcs: [...]                   # claims as they are
//! featureGates: {...}
//! ```

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::v1beta1::StatefulSetStatus;
use kruise_core::statefulset::{FeatureGates, StatefulSetObject, StatefulSetSnapshot, plan};
use serde::Deserialize;
use support::statefulset::{self as sts, PodState, RevisionRef};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Scenario {
    description: String,
    set: StatefulSetObject,
    #[serde(default)]
    earlier_images: Vec<String>,
    /// Earlier templates given whole, after the `earlierImages` ones.
    #[serde(default)]
    earlier_templates: Vec<k8s_openapi::api::core::v1::PodTemplateSpec>,
    current_revision: Option<RevisionRef>,
    #[serde(default)]
    pods: Vec<PodState>,
    #[serde(default)]
    pvcs: Vec<PersistentVolumeClaim>,
    #[serde(default)]
    storage_classes: BTreeMap<String, bool>,
    #[serde(default)]
    feature_gates: FeatureGates,
    /// The set's template has no revision yet (a fresh set, or a template just changed).
    #[serde(default)]
    new_template: bool,
}

fn snapshot(scenario: &Scenario) -> StatefulSetSnapshot {
    let mut set = scenario.set.to_v1beta1().expect("the scenario's set converts");
    set.metadata.name.get_or_insert_with(|| sts::NAME.to_owned());
    set.metadata.namespace.get_or_insert_with(|| "default".to_owned());
    set.metadata.uid.get_or_insert_with(|| sts::UID.to_owned());
    set.metadata.generation.get_or_insert(1);
    let mut earlier: Vec<_> =
        scenario.earlier_images.iter().map(|i| sts::with_image(&set, i)).collect();
    earlier.extend(scenario.earlier_templates.iter().map(|t| {
        let mut old = set.clone();
        old.spec.template = t.clone();
        old
    }));
    let mut revisions: Vec<_> =
        earlier.iter().enumerate().map(|(i, s)| sts::revision_of(s, i as i64 + 1)).collect();
    let update = sts::revision_of(&set, earlier.len() as i64 + 1);
    if !scenario.new_template {
        revisions.push(update.clone());
    }
    let name_of = |r: &RevisionRef| match r {
        RevisionRef::Earlier(i) => sts::revision_name(&revisions[*i]),
        RevisionRef::Named(_) => sts::revision_name(&update),
    };
    let current = scenario.current_revision.clone().unwrap_or(if earlier.is_empty() {
        RevisionRef::Update
    } else {
        RevisionRef::Earlier(0)
    });
    if set.status.is_none() && (!scenario.pods.is_empty() || !earlier.is_empty()) {
        set.status = Some(StatefulSetStatus {
            observed_generation: 1,
            current_revision: name_of(&current),
            update_revision: sts::revision_name(&update),
            collision_count: Some(0),
            ..Default::default()
        });
    }
    let template_of = |r: &RevisionRef| match r {
        RevisionRef::Earlier(i) => earlier[*i].clone(),
        RevisionRef::Named(_) => set.clone(),
    };
    let pods = scenario
        .pods
        .iter()
        .map(|p| sts::pod(&set, &template_of(&p.revision), &name_of(&p.revision), p).into())
        .collect();
    let mut snapshot = StatefulSetSnapshot::new(set);
    snapshot.pods = pods;
    snapshot.pvcs = scenario.pvcs.clone();
    snapshot.revisions = revisions;
    snapshot.storage_classes = scenario.storage_classes.clone();
    snapshot.feature_gates = scenario.feature_gates.clone();
    snapshot
}

fn run(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read scenario");
    let scenario: Scenario =
        serde_yaml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let snapshot = snapshot(&scenario);
    let first = plan(&snapshot, sts::now());
    // Determinism: planning twice gives the same plan.
    assert_eq!(first, plan(&snapshot, sts::now()), "{}", path.display());
    let name = path.file_stem().and_then(|s| s.to_str()).expect("file name").to_owned();
    insta::with_settings!({
        snapshot_path => "scenarios/statefulset/snapshots",
        prepend_module_to_snapshot => false,
        description => scenario.description.trim(),
        omit_expression => true,
    }, {
        insta::assert_yaml_snapshot!(name, first);
    });
}

#[test]
fn statefulset_scenarios() {
    let files = support::scenario_files("statefulset");
    for file in files {
        run(&file);
    }
}
