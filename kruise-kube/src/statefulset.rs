//! The Advanced StatefulSet controller: the shared [`WorkloadController`](crate::workload)
//! with [`kruise_core::statefulset::plan`] as its planner. With
//! `PreDownloadImageForInPlaceUpdate` on, it also reads the ImagePullJobs it controls, and a
//! partitioned or progressive in-place update first gets ImagePullJobs for its changed images.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kruise_api::apps::v1beta1::{StatefulSet, StatefulSetStatus};
use kruise_api::well_known::annotations;
use kruise_core::statefulset::ordinals::parent_and_ordinal;
use kruise_core::statefulset::{PlannerOptions, StatefulSetPlan, StatefulSetSnapshot};
use serde_json::Value;

use crate::controller::{ControllerInfo, ControllerSettings, Registration, ServedResource};
use crate::workload::{WorkloadController, WorkloadInputs, WorkloadKind};

/// The controller's name in metrics, Events and logs (upstream's).
pub const CONTROLLER_NAME: &str = "statefulset-controller";

impl WorkloadKind for StatefulSet {
    type Status = StatefulSetStatus;

    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "statefulset-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "statefulsets",
        }),
    );

    /// Beyond upstream's, whose Advanced StatefulSet leaves the budget to the pod webhook.
    const ASKS_BUDGETS_BEFORE_UPDATES: bool = true;

    /// The set's claims are found by name (`<template>-<set>-<ordinal>`) in its namespace.
    const READS_NAMESPACE_PVCS: bool = true;

    const ADOPTS_REVISIONS: bool = true;

    fn reads_storage_classes(settings: &ControllerSettings) -> bool {
        settings.gates.enabled("StatefulSetAutoResizePVCGate")
    }

    fn reads_image_pull_jobs(settings: &ControllerSettings) -> bool {
        settings.gates.enabled("PreDownloadImageForInPlaceUpdate")
    }

    fn claim_owners(claim: &PersistentVolumeClaim) -> Vec<String> {
        let meta = &claim.metadata;
        let resized = meta.annotations.as_ref().and_then(|a| a.get(annotations::PVC_OWNED_BY_ASTS));
        let owners =
            meta.owner_references.iter().flatten().filter(|o| {
                o.kind == "StatefulSet" && o.api_version.starts_with("apps.kruise.io/")
            });
        resized.cloned().into_iter().chain(owners.map(|o| o.name.clone())).collect()
    }

    fn selector(&self) -> Option<&LabelSelector> {
        self.spec.selector.as_ref()
    }

    fn status_json(&self) -> Value {
        serde_json::to_value(&self.status).unwrap_or(Value::Null)
    }

    /// Only pods named `<set>-<ordinal>` are the set's to adopt.
    fn may_adopt(&self, pod: &ObjectMeta) -> bool {
        let set = self.metadata.name.as_deref().unwrap_or_default();
        pod.name.as_deref().and_then(parent_and_ordinal).is_some_and(|(parent, _)| parent == set)
    }

    fn plan(
        &self,
        inputs: WorkloadInputs,
        settings: &ControllerSettings,
        now: jiff::Timestamp,
    ) -> StatefulSetPlan {
        let name = self.metadata.name.as_deref().unwrap_or_default();
        let prefixes: Vec<String> = self
            .spec
            .volume_claim_templates
            .iter()
            .filter_map(|t| t.object.metadata.name.as_deref())
            .map(|template| format!("{template}-{name}-"))
            .collect();
        let mut snapshot = StatefulSetSnapshot::new(self.clone());
        snapshot.pods = inputs.pods;
        snapshot.pvcs = inputs
            .namespace_pvcs
            .iter()
            .filter(|c| {
                let claim = c.metadata.name.as_deref().unwrap_or_default();
                prefixes.iter().any(|p| claim.starts_with(p.as_str()))
            })
            .map(|c| (**c).clone())
            .collect();
        snapshot.revisions = inputs.revisions;
        snapshot.storage_classes = inputs.storage_classes;
        snapshot.expectations = inputs.expectations;
        snapshot.image_pull_jobs = inputs.image_pull_jobs;
        snapshot.feature_gates = settings.gates.to_statefulset_gates();
        let mut options = PlannerOptions::default();
        options.expectation_timeout = settings.expectation_timeout;
        snapshot.options = options;
        kruise_core::statefulset::plan(&snapshot, now)
    }
}

/// The Advanced StatefulSet controller's registration.
pub fn registration() -> Registration {
    Registration { info: StatefulSet::INFO, build: WorkloadController::<StatefulSet>::build }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    #[test]
    fn claims_map_to_their_sets_by_annotation_and_owner() {
        let mut claim = PersistentVolumeClaim::default();
        claim.metadata.annotations =
            Some([(annotations::PVC_OWNED_BY_ASTS.to_owned(), "web".to_owned())].into());
        claim.metadata.owner_references = Some(vec![
            OwnerReference {
                api_version: "apps.kruise.io/v1beta1".into(),
                kind: "StatefulSet".into(),
                name: "db".into(),
                uid: "u".into(),
                ..Default::default()
            },
            OwnerReference {
                api_version: "apps/v1".into(),
                kind: "StatefulSet".into(),
                name: "native".into(),
                uid: "v".into(),
                ..Default::default()
            },
        ]);
        assert_eq!(StatefulSet::claim_owners(&claim), vec!["web".to_owned(), "db".to_owned()]);
    }

    #[test]
    fn only_pods_named_for_the_set_are_adopted() {
        let mut set = StatefulSet::default();
        set.metadata.name = Some("web".into());
        let named = |name: &str| ObjectMeta { name: Some(name.into()), ..Default::default() };
        assert!(set.may_adopt(&named("web-0")));
        assert!(set.may_adopt(&named("web-12")));
        assert!(!set.may_adopt(&named("web-abc")));
        assert!(!set.may_adopt(&named("webby-0")));
        assert!(!set.may_adopt(&named("my-web-0")));
    }
}
