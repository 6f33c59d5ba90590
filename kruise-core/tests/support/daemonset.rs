//! Advanced DaemonSet test helpers: builders and a small cluster that applies plans.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, NodeSpec, Pod, PodCondition, PodStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::v1beta1::DaemonSet;
use kruise_core::daemonset::{DaemonSetPlan, DaemonSetSnapshot, eligibility, plan};
use kruise_core::smp::PatchSchema;
use kruise_core::workload::{Action, SnapshotPod};
use serde_json::{Value, json};

pub const NAME: &str = "ds";
pub const UID: &str = "ds-uid";

/// A DaemonSet running `image`, with `spec` merged over the defaults.
pub fn daemonset(image: &str, spec: Value) -> DaemonSet {
    let base = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": "default", "uid": UID, "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": image}]}
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
        }
    });
    serde_json::from_value(super::merge(base, &json!({ "spec": spec }))).expect("daemonset")
}

/// A node with labels and taints.
pub fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: Some(
                taints
                    .iter()
                    .map(|(key, effect)| Taint {
                        key: key.to_string(),
                        effect: effect.to_string(),
                        value: None,
                        time_added: None,
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        status: None,
    }
}

pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).expect("time")
}

/// The revision the planner would create for `ds`, numbered `number`.
pub fn revision_of(ds: &DaemonSet, number: i64) -> ControllerRevision {
    let snapshot = DaemonSetSnapshot::new(ds.clone());
    let plan = plan(&snapshot, at(0));
    let mut revision = plan
        .actions
        .iter()
        .find_map(|a| match a {
            Action::CreateRevision { revision } => Some(revision.as_ref().clone()),
            _ => None,
        })
        .expect("a revision is created");
    kruise_core::revision::set_revision_number(&mut revision, number);
    revision
}

/// The hash pods of `revision` carry.
pub fn hash_of(revision: &ControllerRevision) -> String {
    revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        .cloned()
        .expect("hash")
}

/// A ready pod of `ds` (at the revision with `hash`) on `node`, created at `created`.
pub fn pod_on(
    ds: &DaemonSet,
    node: &str,
    hash: &str,
    name: &str,
    ready: bool,
    created: i64,
) -> Pod {
    let mut pod = eligibility::pod_for_node(&ds.spec.template, node);
    let meta = &mut pod.metadata;
    meta.name = Some(name.into());
    meta.namespace = Some("default".into());
    meta.uid = Some(format!("uid-{name}"));
    meta.resource_version = Some("1".into());
    meta.creation_timestamp = Some(Time(at(created)));
    meta.labels
        .get_or_insert_with(Default::default)
        .insert("controller-revision-hash".into(), hash.into());
    meta.owner_references = Some(vec![kruise_core::revision::controller_ref(ds)]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(node.into());
    }
    pod.status = Some(status(ready, at(created)));
    pod
}

pub fn status(ready: bool, since: Timestamp) -> PodStatus {
    PodStatus {
        phase: Some(if ready { "Running" } else { "Pending" }.into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            last_transition_time: Some(Time(since)),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// A cluster that carries plans out at once.
pub struct Sim {
    pub snapshot: DaemonSetSnapshot,
    pub now: i64,
}

impl Sim {
    pub fn new(snapshot: DaemonSetSnapshot) -> Self {
        Self { snapshot, now: 0 }
    }

    pub fn ds(&self) -> DaemonSet {
        self.snapshot.daemonset.to_v1beta1().expect("v1beta1")
    }

    pub fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.snapshot.pods.iter().map(|p| p.pod().as_ref())
    }

    pub fn plan(&self) -> DaemonSetPlan {
        plan(&self.snapshot, at(self.now))
    }

    /// Plans and applies the plan; returns it.
    pub fn step(&mut self) -> DaemonSetPlan {
        let plan = self.plan();
        self.apply(&plan);
        plan
    }

    pub fn apply(&mut self, plan: &DaemonSetPlan) {
        let now = at(self.now);
        let mut pods: Vec<Pod> = self.pods().cloned().collect();
        for action in &plan.actions {
            match action {
                Action::CreateRevision { revision } => {
                    self.snapshot.revisions.push(revision.as_ref().clone())
                }
                Action::PatchRevision { name, patch } => {
                    for r in &mut self.snapshot.revisions {
                        if r.metadata.name.as_deref() == Some(name) {
                            *r = super::patched(r, patch.body(), None);
                        }
                    }
                }
                Action::DeleteRevision { name } => {
                    self.snapshot.revisions.retain(|r| r.metadata.name.as_deref() != Some(name))
                }
                Action::CreatePod { pod } => {
                    let mut pod = pod.build().into_owned();
                    let name = pod.metadata.name.clone().expect("name");
                    let node = eligibility::target_node_name(&pod).expect("pinned").to_owned();
                    pod.metadata.uid = Some(format!("uid-{name}"));
                    pod.metadata.resource_version = Some("1".into());
                    pod.metadata.creation_timestamp = Some(Time(now));
                    if let Some(spec) = pod.spec.as_mut() {
                        spec.node_name = Some(node);
                    }
                    pod.status = Some(status(false, now));
                    pods.push(pod);
                }
                Action::PatchPod { uid, patch, .. } | Action::PatchPodStatus { uid, patch, .. } => {
                    for pod in &mut pods {
                        if pod.metadata.uid.as_deref() == Some(uid) {
                            *pod = super::patched(pod, patch.body(), Some(PatchSchema::Pod));
                            super::bump(&mut pod.metadata);
                        }
                    }
                }
                Action::DeletePod { uid, .. } => {
                    pods.retain(|p| p.metadata.uid.as_deref() != Some(uid))
                }
                Action::PatchPodResize { .. } | Action::PatchWorkload { .. } => {}
                other => panic!("unexpected action {other:?}"),
            }
        }
        self.snapshot.pods = pods.into_iter().map(SnapshotPod::from).collect();
        self.snapshot.expectations = plan.expectations.clone();
        if let Some(status) = &plan.status {
            let mut ds = self.ds();
            ds.status = Some(status.clone());
            self.snapshot.daemonset = ds.into();
        }
    }

    /// The kubelet: pods that `ready` picks become Running and Ready now.
    pub fn kubelet(&mut self, mut ready: impl FnMut(&Pod) -> bool) {
        let now = at(self.now);
        let pods: Vec<Pod> = self
            .pods()
            .cloned()
            .map(|mut pod| {
                let is_ready = kruise_core::pod::is_pod_ready(&pod);
                if !is_ready && ready(&pod) {
                    pod.status = Some(status(true, now));
                    super::bump(&mut pod.metadata);
                }
                pod
            })
            .collect();
        self.snapshot.pods = pods.into_iter().map(SnapshotPod::from).collect();
    }

    /// Removes the hook label `key` from pods in `PreparingDelete`.
    pub fn release_hook(&mut self, key: &str) {
        let pods: Vec<Pod> = self
            .pods()
            .cloned()
            .map(|mut pod| {
                let labels = pod.metadata.labels.get_or_insert_with(Default::default);
                let preparing = labels.get("lifecycle.apps.kruise.io/state").map(String::as_str)
                    == Some("PreparingDelete");
                if preparing && labels.remove(key).is_some() {
                    super::bump(&mut pod.metadata);
                }
                pod
            })
            .collect();
        self.snapshot.pods = pods.into_iter().map(SnapshotPod::from).collect();
    }

    /// Sets a new template image (a new revision).
    pub fn set_image(&mut self, image: &str) {
        let mut ds = self.ds();
        if let Some(spec) = ds.spec.template.spec.as_mut() {
            spec.containers[0].image = Some(image.into());
        }
        ds.metadata.generation = Some(ds.metadata.generation.unwrap_or(1) + 1);
        self.snapshot.daemonset = ds.into();
    }
}
