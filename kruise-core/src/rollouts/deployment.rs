//! Native Deployments under a release.
//!
//! A Deployment is released in one of two ways, as upstream (`openkruise/rollouts` v0.6.2)
//! does:
//! - **partition style** (v1beta1's default): the Deployment is paused with a `Recreate`
//!   strategy, so kube-controller-manager only keeps its status, and [`plan`] (upstream's
//!   AdvancedDeployment controller) moves its ReplicaSets: the new one grows up to
//!   `partition` pods (from `rollouts.kruise.io/deployment-strategy`), within `maxSurge` and
//!   `maxUnavailable`, and the old ones shrink to match;
//! - **canary style** (`enableExtraWorkloadForCanary`, and a v1alpha1 Rollout's default): the
//!   Deployment stays paused and an extra Deployment of the new template, owned by the
//!   BatchRelease, runs the canary pods ([`canary_deployment`]).
//!
//! The new ReplicaSet the partition style creates is named `<deployment>-<hash>` with
//! [`template_hash`], which is not kube-controller-manager's hash (a dump of Go's in-memory
//! struct that nothing else can compute). Nothing here assumes the two agree: a ReplicaSet is
//! found by its template, and the revision label of its pods is read from it.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::intstr::{Rounding, resolve_fenceposts, scaled_value};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};

pub use kruise_api::well_known::rollouts::annotations::{
    DEPLOYMENT_EXTRA_STATUS as EXTRA_STATUS_ANNOTATION, DEPLOYMENT_STRATEGY as STRATEGY_ANNOTATION,
};
pub use kruise_api::well_known::rollouts::finalizers::CANARY_DEPLOYMENT as CANARY_FINALIZER;
pub use kruise_api::well_known::rollouts::labels::{
    CANARY_DEPLOYMENT as CANARY_DEPLOYMENT_LABEL,
    CONTROLLED_BY_ADVANCED_DEPLOYMENT as CONTROL_LABEL, STABLE_REVISION as STABLE_REVISION_LABEL,
};

/// The label that tells a Deployment's ReplicaSets (and their pods) apart.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

/// `rollouts.kruise.io/deployment-strategy`, as upstream writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStrategy {
    /// `Partition` (or `Canary`, which this controller leaves alone).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rolling_style: String,
    /// The Deployment's own `rollingUpdate`, kept while its strategy is `Recreate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdate>,
    /// Nothing moves while set.
    #[serde(default)]
    pub paused: bool,
    /// How many pods (or what share) run the new template.
    #[serde(default = "zero")]
    pub partition: IntOrString,
}

fn zero() -> IntOrString {
    IntOrString::Int(0)
}

/// A Deployment's `maxSurge` and `maxUnavailable`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdate {
    /// `maxUnavailable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// `maxSurge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
}

impl RollingUpdate {
    /// kube-apiserver's defaults (25% each) where unset.
    pub fn defaulted(self) -> Self {
        let quarter = || Some(IntOrString::String("25%".into()));
        Self {
            max_unavailable: self.max_unavailable.or_else(quarter),
            max_surge: self.max_surge.or_else(quarter),
        }
    }

    /// `(maxSurge, maxUnavailable)` in pods for `replicas`, as kube-controller-manager
    /// resolves them (both 0 makes `maxUnavailable` 1); bad values count as 0.
    pub fn fenceposts(&self, replicas: i32) -> (i32, i32) {
        resolve_fenceposts(self.max_surge.as_ref(), self.max_unavailable.as_ref(), replicas)
            .unwrap_or((0, 1))
    }
}

/// `rollouts.kruise.io/deployment-extra-status`, as upstream writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtraStatus {
    /// Available pods of the new ReplicaSet.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub updated_ready_replicas: i32,
    /// The most pods the partition lets the new ReplicaSet have.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expected_updated_replicas: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// The strategy annotation of a Deployment, when it has a readable one.
pub fn strategy_of(annotations: &BTreeMap<String, String>) -> Option<DeploymentStrategy> {
    serde_json::from_str(annotations.get(STRATEGY_ANNOTATION)?).ok()
}

/// A pod template as JSON, without the `pod-template-hash` label (which a template
/// comparison ignores).
pub fn template_key(template: Option<&PodTemplateSpec>) -> Value {
    let mut value = template.and_then(|t| serde_json::to_value(t).ok()).unwrap_or(Value::Null);
    if let Some(labels) = value.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty()
            && let Some(meta) = value.pointer_mut("/metadata").and_then(Value::as_object_mut)
        {
            meta.remove("labels");
        }
    }
    value
}

/// The `pod-template-hash` this crate gives a template (FNV-1 over its JSON without that
/// label, in kube's safe alphabet). See the module's note: it is not kube-controller-manager's.
pub fn template_hash(template: Option<&PodTemplateSpec>) -> String {
    let json = template_key(template).to_string();
    crate::revision::hash::safe_encode(&crate::revision::hash::fnv1_32(json.as_bytes()).to_string())
}

/// A ReplicaSet's `pod-template-hash` label.
pub fn replica_set_hash(rs: &ReplicaSet) -> Option<&str> {
    rs.metadata.labels.as_ref()?.get(POD_TEMPLATE_HASH).map(String::as_str)
}

fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(0)
}

fn rs_available(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

fn rs_revision(rs: &ReplicaSet) -> i64 {
    rs.metadata.annotations.as_ref().and_then(|a| a.get(REVISION)?.parse().ok()).unwrap_or(0)
}

fn rs_template(rs: &ReplicaSet) -> Option<&PodTemplateSpec> {
    rs.spec.template.as_ref()
}

/// The ReplicaSet among `replica_sets` whose template is the Deployment's (the oldest when
/// several are).
pub fn new_replica_set<'a>(
    deployment: &Deployment,
    replica_sets: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let wanted = template_key(Some(&deployment.spec.template));
    replica_sets
        .iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .filter(|rs| template_key(rs_template(rs)) == wanted)
        .min_by_key(|rs| rs.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The stable ReplicaSet: the one `rollouts.kruise.io/stable-revision` names, else the
/// oldest-revision one with pods whose template is not the Deployment's, else the
/// Deployment's own.
pub fn stable_replica_set<'a>(
    deployment: &Deployment,
    replica_sets: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let labels = deployment.metadata.labels.clone().unwrap_or_default();
    if let Some(hash) = labels.get(STABLE_REVISION_LABEL)
        && let Some(rs) = replica_sets.iter().find(|rs| replica_set_hash(rs) == Some(hash))
    {
        return Some(rs);
    }
    let new = new_replica_set(deployment, replica_sets);
    let new_uid = new.and_then(|rs| rs.metadata.uid.clone());
    replica_sets
        .iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none() && rs_replicas(rs) > 0)
        .filter(|rs| rs.metadata.uid != new_uid)
        .min_by_key(|rs| rs_revision(rs))
        .or(new)
}

/// The pods the new ReplicaSet may have under `partition` out of `replicas` (upstream's
/// `NewRSReplicasLimit`): the partition scaled up and clamped, and one short of all while it
/// is a percentage other than `100%`.
pub fn new_replica_set_limit(partition: &IntOrString, replicas: i32) -> i32 {
    let limit = scaled_value(partition, replicas, Rounding::Up).unwrap_or(0).clamp(0, replicas);
    match partition {
        IntOrString::String(p) if p != "100%" && replicas > 1 => limit.min(replicas - 1),
        _ => limit,
    }
}

/// Whether the AdvancedDeployment controller moves this Deployment: labelled as under its
/// control, with a partition-style strategy annotation.
pub fn is_controlled(deployment: &Deployment) -> bool {
    let labels = deployment.metadata.labels.clone().unwrap_or_default();
    let annotations = deployment.metadata.annotations.clone().unwrap_or_default();
    labels.get(CONTROL_LABEL).map(String::as_str) == Some("true")
        && strategy_of(&annotations).is_some_and(|s| s.rolling_style != "Canary")
}

/// One round of the AdvancedDeployment controller for a Deployment under a partition-style
/// release and its ReplicaSets (those it controls): create the new ReplicaSet, or grow it
/// (within `maxSurge`, up to the partition), or shrink the old ones (within
/// `maxUnavailable`, unhealthy pods first, never below what the partition leaves them), then
/// record `rollouts.kruise.io/deployment-extra-status`. One kind of change per round, as
/// kube-controller-manager's rolling update does. Nothing for a Deployment not under its
/// control ([`is_controlled`]) or being deleted.
pub fn plan(deployment: &Deployment, replica_sets: &[ReplicaSet]) -> Plan<()> {
    let mut plan = Plan::empty(Default::default());
    if deployment.metadata.deletion_timestamp.is_some() || !is_controlled(deployment) {
        return plan;
    }
    let annotations = deployment.metadata.annotations.clone().unwrap_or_default();
    let Some(strategy) = strategy_of(&annotations) else { return plan };
    let mut round = Round::new(deployment, replica_sets, &strategy);
    if !strategy.paused {
        round.run();
    }
    round.record_extra_status(&annotations);
    plan.actions = round.actions;
    plan.events = round.events;
    plan
}

struct Round<'a> {
    deployment: &'a Deployment,
    namespace: String,
    name: String,
    replicas: i32,
    surge: i32,
    unavailable: i32,
    limit: i32,
    /// The ReplicaSets, with the replicas this round gives them.
    sets: Vec<(&'a ReplicaSet, i32)>,
    new: Option<usize>,
    actions: Vec<Action>,
    events: Vec<Event>,
}

impl<'a> Round<'a> {
    fn new(
        deployment: &'a Deployment,
        replica_sets: &'a [ReplicaSet],
        strategy: &DeploymentStrategy,
    ) -> Self {
        let replicas = deployment.spec.replicas.unwrap_or(1);
        let rolling = strategy.rolling_update.clone().unwrap_or_default().defaulted();
        let (surge, unavailable) = rolling.fenceposts(replicas);
        let sets: Vec<(&ReplicaSet, i32)> = replica_sets
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .map(|rs| (rs, rs_replicas(rs)))
            .collect();
        let new_uid =
            new_replica_set(deployment, replica_sets).and_then(|rs| rs.metadata.uid.clone());
        let new = sets.iter().position(|(rs, _)| rs.metadata.uid == new_uid && new_uid.is_some());
        Self {
            deployment,
            namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
            name: deployment.metadata.name.clone().unwrap_or_default(),
            replicas,
            surge,
            unavailable: unavailable.min(replicas.max(0)),
            limit: new_replica_set_limit(&strategy.partition, replicas),
            sets,
            new,
            actions: Vec::new(),
            events: Vec::new(),
        }
    }

    fn total(&self) -> i32 {
        self.sets.iter().map(|(_, n)| n).sum()
    }

    fn old_indices(&self) -> Vec<usize> {
        (0..self.sets.len()).filter(|i| Some(*i) != self.new).collect()
    }

    fn run(&mut self) {
        let Some(new) = self.new else {
            self.create_new();
            return;
        };
        if self.grow_new(new) {
            return;
        }
        self.shrink_old(new);
    }

    fn create_new(&mut self) {
        let spec = &self.deployment.spec;
        let hash = template_hash(Some(&spec.template));
        let rs_name = format!("{}-{hash}", self.name);
        let current = self.total();
        let room = (self.replicas + self.surge - current).max(0);
        let start = room.min(self.limit).min(self.replicas).max(0);
        let revision = self.sets.iter().map(|(rs, _)| rs_revision(rs)).max().unwrap_or(0) + 1;
        let mut template = serde_json::to_value(&spec.template).unwrap_or(Value::Null);
        template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut selector = serde_json::to_value(&spec.selector).unwrap_or_else(|_| json!({}));
        selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
        let labels = template["metadata"]["labels"].clone();
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": {
                    REVISION: revision.to_string(),
                    DESIRED_REPLICAS: self.replicas.to_string(),
                    MAX_REPLICAS: (self.replicas + self.surge).to_string(),
                },
                "ownerReferences": [{
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": self.name,
                    "uid": self.deployment.metadata.uid.clone().unwrap_or_default(),
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "spec": {
                "replicas": start,
                "minReadySeconds": spec.min_ready_seconds.unwrap_or(0),
                "selector": selector,
                "template": template,
            },
        });
        self.actions.push(Action::CreateObject {
            target: Target::new(ObjectKind::REPLICA_SET, Some(&self.namespace), &rs_name),
            body: std::sync::Arc::new(body),
        });
        self.events.push(Event {
            type_: EventType::Normal,
            reason: "ScalingReplicaSet".into(),
            message: format!("Created new replica set \"{rs_name}\" with {start} replicas"),
            after_action: Some(self.actions.len() - 1),
        });
    }

    fn scale(&mut self, index: usize, to: i32) {
        let (rs, from) = self.sets[index];
        if from == to {
            return;
        }
        self.sets[index].1 = to;
        let name = rs.metadata.name.clone().unwrap_or_default();
        self.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::REPLICA_SET, Some(&self.namespace), &name).guarded(
                Guard::ResourceVersion(rs.metadata.resource_version.clone().unwrap_or_default()),
            ),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({
                "metadata": {"annotations": {
                    DESIRED_REPLICAS: self.replicas.to_string(),
                    MAX_REPLICAS: (self.replicas + self.surge).to_string(),
                }},
                "spec": {"replicas": to},
            })),
        });
        let verb = if to > from { "up" } else { "down" };
        self.events.push(Event {
            type_: EventType::Normal,
            reason: "ScalingReplicaSet".into(),
            message: format!("Scaled {verb} replica set {name} from {from} to {to}"),
            after_action: Some(self.actions.len() - 1),
        });
    }

    /// Grows (or trims) the new ReplicaSet; true when it changed.
    fn grow_new(&mut self, new: usize) -> bool {
        let current = self.sets[new].1;
        if current == self.replicas {
            return false;
        }
        if current > self.replicas {
            self.scale(new, self.replicas);
            return true;
        }
        if current >= self.limit {
            return false;
        }
        let room = self.replicas + self.surge - self.total();
        let up = room.min(self.replicas - current).min(self.limit - current);
        if up <= 0 {
            return false;
        }
        self.scale(new, current + up);
        true
    }

    /// What the old ReplicaSets may lose: their pods beyond what the partition leaves them
    /// (negative: they are short).
    fn old_excess(&self, new: usize) -> i32 {
        let new_desired = self.limit.max(self.sets[new].1);
        let old_desired = self.replicas - new_desired;
        let old: i32 = self.old_indices().iter().map(|&i| self.sets[i].1).sum();
        old - old_desired
    }

    fn shrink_old(&mut self, new: usize) {
        let old = self.old_indices();
        if old.iter().all(|&i| self.sets[i].1 == 0) {
            return;
        }
        let excess = self.old_excess(new);
        if excess <= 0 {
            // Short of pods (the partition went back): the largest, then oldest, grows.
            if excess < 0
                && let Some(&i) = old.iter().max_by(|&&a, &&b| {
                    self.sets[a].1.cmp(&self.sets[b].1).then_with(|| {
                        let t = |i: usize| {
                            self.sets[i].0.metadata.creation_timestamp.as_ref().map(|t| t.0)
                        };
                        t(b).cmp(&t(a))
                    })
                })
            {
                let to = self.sets[i].1 - excess;
                self.scale(i, to);
            }
            return;
        }
        let min_available = self.replicas - self.unavailable;
        let (new_rs, new_replicas) = self.sets[new];
        let new_unavailable = (new_replicas - rs_available(new_rs)).max(0);
        let max_down = (self.total() - min_available - new_unavailable).min(excess);
        if max_down <= 0 {
            return;
        }
        // Unhealthy pods first, oldest ReplicaSet first.
        let mut by_age = old.clone();
        by_age.sort_by_key(|&i| self.sets[i].0.metadata.creation_timestamp.as_ref().map(|t| t.0));
        let mut cleaned = 0;
        for &i in &by_age {
            if cleaned >= max_down {
                break;
            }
            let (rs, n) = self.sets[i];
            let unhealthy = (n - rs_available(rs)).max(0);
            if n == 0 || unhealthy == 0 {
                continue;
            }
            let down = unhealthy.min(max_down - cleaned);
            self.scale(i, n - down);
            cleaned += down;
        }
        // Then available pods, while the available ones stay at the floor.
        let available: i32 = self.sets.iter().map(|(rs, n)| rs_available(rs).min(*n)).sum();
        let budget = (available - min_available).min(self.old_excess(new)).max(0);
        let mut by_revision = old;
        by_revision.sort_by_key(|&i| rs_revision(self.sets[i].0));
        let mut taken = 0;
        for i in by_revision {
            if taken >= budget {
                break;
            }
            let n = self.sets[i].1;
            if n == 0 {
                continue;
            }
            let down = n.min(budget - taken);
            self.scale(i, n - down);
            taken += down;
        }
    }

    fn record_extra_status(&mut self, annotations: &BTreeMap<String, String>) {
        let ready = self.new.map_or(0, |i| rs_available(self.sets[i].0));
        let extra =
            ExtraStatus { updated_ready_replicas: ready, expected_updated_replicas: self.limit };
        let current: Option<ExtraStatus> =
            annotations.get(EXTRA_STATUS_ANNOTATION).and_then(|s| serde_json::from_str(s).ok());
        if current.as_ref() == Some(&extra) {
            return;
        }
        let text = serde_json::to_string(&extra).unwrap_or_default();
        // Guarded by the Deployment this round read: a round that planned from a copy read
        // before the release handed the Deployment back must not write the annotation back
        // onto it (nothing would ever take it off again).
        let read_at = self.deployment.metadata.resource_version.clone().unwrap_or_default();
        self.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::DEPLOYMENT, Some(&self.namespace), &self.name)
                .guarded(Guard::ResourceVersion(read_at)),
            subresource: Subresource::Main,
            patch: Patch::merge(
                json!({"metadata": {"annotations": {EXTRA_STATUS_ANNOTATION: text}}}),
            ),
        });
    }
}

/// The extra Deployment a canary-style release runs: named `<deployment>-<revision>`,
/// owned by the BatchRelease (`owner`), labelled with the stable Deployment's name, held by
/// [`CANARY_FINALIZER`], and a copy of the stable Deployment's `spec` with no replicas, not
/// paused, and `patch_labels`/`patch_annotations` (the release plan's
/// `patchPodTemplateMetadata`) merged into the pod template.
pub fn canary_deployment(
    stable_name: &str,
    namespace: &str,
    revision: &str,
    stable_spec: &Value,
    owner: &Value,
    control_info: &str,
    patch: Option<&kruise_api::rollouts::v1beta1::PatchPodTemplateMetadata>,
) -> Value {
    let mut spec = stable_spec.clone();
    spec["replicas"] = json!(0);
    spec["paused"] = json!(false);
    if let Some(patch) = patch {
        for (key, value) in &patch.labels {
            spec["template"]["metadata"]["labels"][key] = json!(value);
        }
        for (key, value) in &patch.annotations {
            spec["template"]["metadata"]["annotations"][key] = json!(value);
        }
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": canary_deployment_name(stable_name, revision),
            "namespace": namespace,
            "labels": {CANARY_DEPLOYMENT_LABEL: stable_name},
            "annotations": {super::CONTROL_INFO_ANNOTATION: control_info},
            "finalizers": [CANARY_FINALIZER],
            "ownerReferences": [owner],
        },
        "spec": spec,
    })
}

/// The name of the canary Deployment for `revision` of `stable_name`.
pub fn canary_deployment_name(stable_name: &str, revision: &str) -> String {
    format!("{stable_name}-{revision}")
}
