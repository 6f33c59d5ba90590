//! Advanced StatefulSet test support: sets, pods at a revision, revisions of earlier
//! templates, and a small pure cluster that carries a plan out and moves pods along (pending
//! pods start and become ready, terminating pods go away, in-place updates finish).
#![allow(dead_code)]

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::v1beta1::StatefulSet;
use kruise_core::smp::PatchSchema;

use super::{bump, patched};
use kruise_core::statefulset::{StatefulSetObject, StatefulSetPlan, StatefulSetSnapshot};
use kruise_core::workload::{Action, SnapshotPod};
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "web";
pub const UID: &str = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

pub fn now() -> Timestamp {
    Timestamp::from_second(1_714_557_600).expect("valid")
}

/// The set with its template's first container running `image`.
pub fn with_image(set: &StatefulSet, image: &str) -> StatefulSet {
    let mut set = set.clone();
    if let Some(container) = set.spec.template.spec.as_mut().and_then(|s| s.containers.first_mut())
    {
        container.image = Some(image.to_owned());
    }
    set
}

/// The ControllerRevision number `number` of `set`'s template.
pub fn revision_of(set: &StatefulSet, number: i64) -> ControllerRevision {
    let mut revision = kruise_core::revision::new_revision(set, number, 0).expect("revision");
    revision.metadata.uid = Some(format!("rev-uid-{number}"));
    revision
}

pub fn revision_name(revision: &ControllerRevision) -> String {
    revision.metadata.name.clone().unwrap_or_default()
}

/// How a pod is doing.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PodState {
    pub ordinal: i32,
    /// Index into the earlier revisions, or `update`.
    pub revision: RevisionRef,
    pub phase: String,
    pub ready: bool,
    /// Seconds the pod has been ready at `now`.
    pub ready_for: i64,
    pub terminating: bool,
    /// The lifecycle state label.
    pub state: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub finalizers: Vec<String>,
    /// Leave out the claim templates' volumes (a pod from before a template was added).
    pub without_claims: bool,
    /// The pod was made by a controller that did not set the identity labels.
    pub without_identity: bool,
}

impl Default for PodState {
    fn default() -> Self {
        Self {
            ordinal: 0,
            revision: RevisionRef::Update,
            phase: "Running".into(),
            ready: true,
            ready_for: 3600,
            terminating: false,
            state: Some("Normal".into()),
            labels: BTreeMap::new(),
            finalizers: Vec::new(),
            without_claims: false,
            without_identity: false,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum RevisionRef {
    Earlier(usize),
    Named(UpdateWord),
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum UpdateWord {
    Update,
}

#[allow(non_upper_case_globals)]
impl RevisionRef {
    pub const Update: RevisionRef = RevisionRef::Named(UpdateWord::Update);
}

/// A pod of `set` (whose template is `template_set`'s) at `revision`, in `state`.
pub fn pod(set: &StatefulSet, template_set: &StatefulSet, revision: &str, state: &PodState) -> Pod {
    let mut spec_set = template_set.clone();
    spec_set.metadata = set.metadata.clone();
    let name = format!("{NAME}-{}", state.ordinal);
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("5".into()),
            labels: template_set.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()),
            owner_references: Some(vec![kruise_core::revision::controller_ref(set)]),
            finalizers: Some(state.finalizers.clone()).filter(|f| !f.is_empty()),
            ..Default::default()
        },
        spec: template_set.spec.template.spec.clone(),
        status: None,
    };
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert("controller-revision-hash".into(), revision.to_owned());
    if !state.without_identity {
        labels.insert("statefulset.kubernetes.io/pod-name".into(), name.clone());
        labels.insert("apps.kubernetes.io/pod-index".into(), state.ordinal.to_string());
    }
    if let Some(s) = &state.state {
        labels.insert("lifecycle.apps.kruise.io/state".into(), s.clone());
    }
    labels.extend(state.labels.clone());
    if !state.without_claims
        && let Some(spec) = pod.spec.as_mut()
    {
        let mut volumes: Vec<k8s_openapi::api::core::v1::Volume> = set
            .spec
            .volume_claim_templates
            .iter()
            .map(|t| {
                let template = t.object.metadata.name.clone().unwrap_or_default();
                serde_json::from_value(json!({
                    "name": template,
                    "persistentVolumeClaim": {"claimName": format!("{template}-{NAME}-{}", state.ordinal)}
                }))
                .expect("volume")
            })
            .collect();
        volumes.extend(spec.volumes.take().into_iter().flatten());
        spec.volumes = Some(volumes).filter(|v| !v.is_empty());
    }
    if state.terminating {
        pod.metadata.deletion_timestamp = Some(Time(now()));
    }
    let since = now() - SignedDuration::from_secs(state.ready_for);
    let ready = if state.ready && state.phase == "Running" { "True" } else { "False" };
    let images: Vec<ContainerStatus> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| ContainerStatus {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            image_id: format!("sha-{}", c.image.clone().unwrap_or_default()),
            ready: ready == "True",
            ..Default::default()
        })
        .collect();
    let mut conditions = vec![PodCondition {
        type_: "Ready".into(),
        status: ready.into(),
        last_transition_time: Some(Time(since)),
        ..Default::default()
    }];
    let gated = pod
        .spec
        .iter()
        .flat_map(|s| s.readiness_gates.iter().flatten())
        .any(|g| g.condition_type == "InPlaceUpdateReady");
    if gated {
        conditions.push(PodCondition {
            type_: "InPlaceUpdateReady".into(),
            status: "True".into(),
            last_transition_time: Some(Time(since)),
            ..Default::default()
        });
    }
    pod.status = Some(PodStatus {
        phase: Some(state.phase.clone()),
        conditions: Some(conditions),
        container_statuses: Some(images),
        ..Default::default()
    });
    super::admitted(pod)
}

/// The snapshot after `plan` is carried out and the cache has caught up. Created pods start
/// pending; deleted pods start terminating (they go away with [`settle_pods`]).
pub fn apply(snapshot: &StatefulSetSnapshot, plan: &StatefulSetPlan) -> StatefulSetSnapshot {
    let mut out = snapshot.clone();
    let mut set = out.statefulset.to_v1beta1().expect("v1beta1");
    for action in &plan.actions {
        match action {
            Action::CreateRevision { revision } => {
                let mut r = (**revision).clone();
                r.metadata.uid = Some(format!("rev-uid-{}", revision_name(&r)));
                out.revisions.push(r);
            }
            Action::PatchRevision { name, patch } => {
                for r in &mut out.revisions {
                    if r.metadata.name.as_deref() == Some(name.as_str()) {
                        *r = patched(r, patch.body(), None);
                    }
                }
            }
            Action::DeleteRevision { name } => {
                out.revisions.retain(|r| r.metadata.name.as_deref() != Some(name.as_str()));
            }
            Action::CreatePvc { pvc } => {
                assert!(
                    !out.pvcs.iter().any(|p| p.metadata.name == pvc.metadata.name),
                    "claim {:?} created twice",
                    pvc.metadata.name
                );
                let mut pvc = (**pvc).clone();
                pvc.metadata.uid = pvc.metadata.name.clone().map(|n| format!("uid-{n}"));
                pvc.metadata.resource_version = Some("1".into());
                out.pvcs.push(pvc);
            }
            Action::PatchPvc { name, patch } => {
                for p in &mut out.pvcs {
                    if p.metadata.name.as_deref() == Some(name.as_str()) {
                        *p = patched(p, patch.body(), None);
                        bump(&mut p.metadata);
                    }
                }
            }
            Action::DeletePvc { name, .. } => {
                out.pvcs.retain(|p| p.metadata.name.as_deref() != Some(name.as_str()));
            }
            Action::CreatePod { pod } => {
                assert!(
                    !out.pods.iter().any(|p| p.metadata().name == pod.metadata.name),
                    "pod {:?} created while it exists",
                    pod.metadata.name
                );
                let mut pod = (**pod).clone();
                let name = pod.metadata.name.clone().unwrap_or_default();
                pod.metadata.uid = Some(format!("uid-{name}-new"));
                pod.metadata.resource_version = Some("1".into());
                pod.metadata.creation_timestamp = Some(Time(now()));
                pod.status =
                    Some(PodStatus { phase: Some("Pending".into()), ..Default::default() });
                out.pods.push(SnapshotPod::from(pod));
            }
            Action::PatchPod { name, patch, .. }
            | Action::PatchPodStatus { name, patch, .. }
            | Action::PatchPodResize { name, patch, .. } => {
                for p in &mut out.pods {
                    if p.metadata().name.as_deref() == Some(name.as_str()) {
                        let mut new: Pod =
                            patched(p.pod().as_ref(), patch.body(), Some(PatchSchema::Pod));
                        bump(&mut new.metadata);
                        *p = SnapshotPod::from(new);
                    }
                }
            }
            Action::DeletePod { name, uid, .. } => {
                for p in &mut out.pods {
                    if p.metadata().name.as_deref() == Some(name.as_str()) {
                        assert_eq!(
                            p.metadata().uid.as_deref(),
                            Some(uid.as_str()),
                            "delete by uid"
                        );
                        assert!(p.metadata().deletion_timestamp.is_none(), "{name} deleted twice");
                        let mut pod = p.pod().as_ref().clone();
                        pod.metadata.deletion_timestamp = Some(Time(now()));
                        *p = SnapshotPod::from(pod);
                    }
                }
            }
            Action::PatchWorkload { patch } => set = patched(&set, patch.body(), None),
            other => panic!("the simulator does not know {other:?}"),
        }
    }
    if let Some(status) = &plan.status {
        set.status = Some(status.clone());
    }
    out.statefulset = StatefulSetObject::from(set);
    out.expectations = Default::default();
    out
}

/// Time passes for the pods: terminating pods go away, pending pods run, and a running pod is
/// ready when its containers run their spec's images and every readiness gate holds.
/// `fail` makes pods of that image fail instead.
pub fn settle_pods(snapshot: &mut StatefulSetSnapshot, fail_image: Option<&str>) {
    snapshot.pods.retain(|p| p.metadata().deletion_timestamp.is_none());
    for snapshot_pod in &mut snapshot.pods {
        let mut owned = snapshot_pod.pod().as_ref().clone();
        let pod = &mut owned;
        let Some(spec) = pod.spec.clone() else { continue };
        let failing = spec
            .containers
            .iter()
            .any(|c| c.image.as_deref() == fail_image && fail_image.is_some());
        let before = pod.status.clone();
        if kruise_core::pod::phase_of(pod) == kruise_core::pod::PHASE_FAILED {
            // A failed pod stays failed until it is deleted.
            continue;
        }
        // The pod-readiness controller opens a new pod's KruisePodReady gate (these pods are
        // running, so bound, whether or not they name a node).
        let opens_gate = kruise_core::pod::has_readiness_gate(pod, "KruisePodReady")
            && kruise_core::pod::condition(pod, "KruisePodReady").is_none()
            && pod.metadata.deletion_timestamp.is_none();
        let status = pod.status.get_or_insert_with(Default::default);
        status.phase = Some(if failing { "Failed" } else { "Running" }.into());
        let statuses: Vec<ContainerStatus> = spec
            .containers
            .iter()
            .map(|c| ContainerStatus {
                name: c.name.clone(),
                image: c.image.clone().unwrap_or_default(),
                image_id: format!("sha-{}", c.image.clone().unwrap_or_default()),
                ready: !failing,
                ..Default::default()
            })
            .collect();
        status.container_statuses = Some(statuses);
        let mut conditions = status.conditions.clone().unwrap_or_default();
        if opens_gate {
            conditions.push(PodCondition {
                type_: "KruisePodReady".into(),
                status: "True".into(),
                ..Default::default()
            });
        }
        let gates_hold =
            spec.readiness_gates.iter().flatten().all(|g| {
                conditions.iter().any(|c| c.type_ == g.condition_type && c.status == "True")
            });
        let ready = if gates_hold && !failing { "True" } else { "False" };
        let since = now() - SignedDuration::from_secs(3600);
        // Time passes: a pod ready now has been ready for an hour.
        match conditions.iter_mut().find(|c| c.type_ == "Ready") {
            Some(c) if c.status == ready && ready == "False" => {}
            Some(c) => {
                c.status = ready.into();
                c.last_transition_time = Some(Time(since));
            }
            None => conditions.push(PodCondition {
                type_: "Ready".into(),
                status: ready.into(),
                last_transition_time: Some(Time(since)),
                ..Default::default()
            }),
        }
        status.conditions = Some(conditions);
        if pod.status != before {
            bump(&mut pod.metadata);
            *snapshot_pod = SnapshotPod::from(owned);
        }
    }
}
