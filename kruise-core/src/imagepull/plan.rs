//! The image-pull controllers' plans in the shape every planner returns ([`Plan`]): what
//! [`plan_node_image`](super::plan_node_image), [`plan_job`](super::plan_job),
//! [`plan_pull_secrets`](super::plan_pull_secrets) and
//! [`plan_list_job`](super::plan_list_job) ask for, as actions that name their targets.
//!
//! Spec updates are JSON merge patches computed against the object as read (keys it drops are
//! written as `null`), guarded by the resourceVersion it was read at: a writer that got there
//! first makes the write a conflict, and the object is planned again from what it wrote. That
//! is how concurrent jobs never overwrite each other's NodeImage entries.

use k8s_openapi::api::core::v1::Secret;
use kruise_api::apps::v1beta1::{ImageListPullJob, ImagePullJob, NodeImage, NodeImageStatus};
use serde::Serialize;
use serde_json::{Value, json};

use super::{JobPlan, ListJobPlan, NodeImagePlan, PROTECTION_FINALIZER, SecretPlan};
use crate::merge_patch::replacing;
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// apps.kruise.io NodeImage (cluster-scoped).
pub const NODE_IMAGE: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1beta1",
    kind: "NodeImage",
    plural: "nodeimages",
    namespaced: false,
};

/// apps.kruise.io ImagePullJob.
pub const IMAGE_PULL_JOB: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1beta1",
    kind: "ImagePullJob",
    plural: "imagepulljobs",
    namespaced: true,
};

/// apps.kruise.io ImageListPullJob.
pub const IMAGE_LIST_PULL_JOB: ObjectKind = ObjectKind::IMAGE_LIST_PULL_JOB;

fn json_of<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn guard_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Guard {
    meta.resource_version.clone().map_or(Guard::None, Guard::ResourceVersion)
}

fn target_of(
    kind: ObjectKind,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Target {
    let name = meta.name.as_deref().or(meta.generate_name.as_deref()).unwrap_or_default();
    Target::new(kind, meta.namespace.as_deref(), name)
}

/// The status patch of an object whose status was `old` and is to be `new`.
fn status_patch<S: Serialize>(old: Option<&S>, new: &S) -> Patch {
    Patch::merge(crate::merge_patch::status_patch(old, new))
}

impl NodeImagePlan {
    /// The plan for the NodeImage `name`, as read (`current`, `None` when there is none). Its
    /// status is the plan's status, written as the last step; the Events, some of which are
    /// about ImagePullJobs rather than the NodeImage, are the caller's to record.
    pub fn to_plan(&self, name: &str, current: Option<&NodeImage>) -> Plan<NodeImageStatus> {
        let mut plan = Plan::empty(Default::default());
        plan.requeue_after = self.requeue_after;
        let target = Target::new(NODE_IMAGE, None, name);
        if let Some(created) = &self.create {
            plan.actions.push(Action::CreateObject {
                target: target.clone(),
                body: std::sync::Arc::new(json_of(created)),
            });
        }
        if self.delete {
            plan.actions.push(Action::DeleteObject { target: target.clone() });
        }
        let Some(current) = current else { return plan };
        if let Some(update) = &self.update {
            let mut body =
                json!({"spec": replacing(&json_of(&current.spec), &json_of(&update.spec))});
            if let Some(labels) = &update.labels {
                let old = current.metadata.labels.as_ref().map_or(json!({}), json_of);
                body["metadata"] = json!({"labels": replacing(&old, &json_of(labels))});
            }
            plan.actions.push(Action::PatchObject {
                target: target.guarded(guard_of(&current.metadata)),
                subresource: Subresource::Main,
                patch: Patch::merge(body),
            });
        }
        plan.status = self.status.clone();
        plan
    }
}

impl SecretPlan {
    /// The writes to the copies in the daemon's namespace `namespace`, where `copies` are the
    /// copies as read.
    pub fn to_actions(&self, namespace: &str, copies: &[Secret]) -> Vec<Action> {
        let mut actions = Vec::new();
        for secret in &self.create {
            let mut target = target_of(ObjectKind::SECRET, &secret.metadata);
            target.namespace = Some(namespace.to_owned());
            actions
                .push(Action::CreateObject { target, body: std::sync::Arc::new(json_of(secret)) });
        }
        for secret in &self.update {
            let name = secret.metadata.name.as_deref().unwrap_or_default();
            let old = copies.iter().find(|c| c.metadata.name.as_deref() == Some(name));
            let managed = |s: Option<&Secret>| {
                json!({
                    "metadata": {
                        "labels": s.and_then(|s| s.metadata.labels.as_ref()).map_or(json!({}), json_of),
                        "annotations": s.and_then(|s| s.metadata.annotations.as_ref()).map_or(json!({}), json_of),
                    },
                    "data": s.and_then(|s| s.data.as_ref()).map_or(json!({}), json_of),
                    "type": s.and_then(|s| s.type_.clone()),
                })
            };
            let guard = old.map_or(Guard::None, |o| guard_of(&o.metadata));
            actions.push(Action::PatchObject {
                target: Target::new(ObjectKind::SECRET, Some(namespace), name).guarded(guard),
                subresource: Subresource::Main,
                patch: Patch::merge(replacing(&managed(old), &managed(Some(secret)))),
            });
        }
        for name in &self.delete {
            actions.push(Action::DeleteObject {
                target: Target::new(ObjectKind::SECRET, Some(namespace), name),
            });
        }
        actions
    }
}

impl JobPlan {
    /// The plan for `job` after its pull secrets' `secrets` writes: the finalizer added, the
    /// NodeImage entries changed (each on the NodeImage as `node_image` reads it; one not read
    /// is left for a later round), the status (a `Completed` Event once the job completes),
    /// the finalizer removed, the job deleted. Finalizer changes are the whole list, guarded
    /// by the job's resourceVersion.
    pub fn to_plan(
        &self,
        job: &ImagePullJob,
        secrets: Vec<Action>,
        node_image: &dyn Fn(&str) -> Option<NodeImage>,
    ) -> Plan<()> {
        let mut plan = Plan::empty(Default::default());
        plan.requeue_after = self.requeue_after;
        plan.actions = secrets;
        let target = target_of(IMAGE_PULL_JOB, &job.metadata);
        let finalizers = job.metadata.finalizers.clone().unwrap_or_default();
        let finalizer_patch = |list: Vec<String>| Action::PatchObject {
            target: target.clone().guarded(guard_of(&job.metadata)),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"metadata": {"finalizers": list}})),
        };
        if self.add_finalizer {
            let mut list = finalizers.clone();
            list.push(PROTECTION_FINALIZER.to_owned());
            plan.actions.push(finalizer_patch(list));
        }
        for change in &self.node_image_changes {
            let Some(current) = node_image(&change.node) else { continue };
            let mut changed = current.clone();
            if !change.apply(&mut changed) {
                continue;
            }
            let patch = replacing(&json_of(&current.spec), &json_of(&changed.spec));
            plan.actions.push(Action::PatchObject {
                target: Target::new(NODE_IMAGE, None, &change.node)
                    .guarded(guard_of(&current.metadata)),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"spec": patch})),
            });
        }
        if let Some(status) = &self.status {
            plan.actions.push(Action::PatchObject {
                target: target.clone(),
                subresource: Subresource::Status,
                patch: status_patch(job.status.as_ref(), status),
            });
            if status.completion_time.is_some() {
                plan.events.push(Event {
                    type_: EventType::Normal,
                    reason: "Completed".into(),
                    message: status.message.clone(),
                    after_action: plan.actions.len().checked_sub(1),
                });
            }
        }
        if self.remove_finalizer {
            plan.actions.push(finalizer_patch(
                finalizers.into_iter().filter(|f| f != PROTECTION_FINALIZER).collect(),
            ));
        }
        if self.delete {
            plan.actions.push(Action::DeleteObject { target });
        }
        plan
    }
}

impl ListJobPlan {
    /// The plan for `list`, creating only `create` of the jobs [`ListJobPlan::create`] asks
    /// for (the caller holds back those whose last creation it has not seen yet).
    pub fn to_plan(&self, list: &ImageListPullJob, create: &[&ImagePullJob]) -> Plan<()> {
        let mut plan = Plan::empty(Default::default());
        plan.requeue_after = self.requeue_after;
        let target = target_of(IMAGE_LIST_PULL_JOB, &list.metadata);
        if let Some(hash) = &self.hash_label {
            plan.actions.push(Action::PatchObject {
                target: target.clone(),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"metadata": {"labels": {
                    kruise_api::well_known::labels::CONTROLLER_REVISION_HASH: hash
                }}})),
            });
        }
        if self.delete_self {
            plan.actions.push(Action::DeleteObject { target });
            return plan;
        }
        let namespace = list.metadata.namespace.as_deref();
        for name in &self.delete {
            plan.actions.push(Action::DeleteObject {
                target: Target::new(IMAGE_PULL_JOB, namespace, name),
            });
        }
        for job in create {
            let mut target = target_of(IMAGE_PULL_JOB, &job.metadata);
            target.namespace = target.namespace.or_else(|| namespace.map(str::to_owned));
            plan.actions
                .push(Action::CreateObject { target, body: std::sync::Arc::new(json_of(job)) });
        }
        if let Some(status) = &self.status {
            plan.actions.push(Action::PatchObject {
                target: target.clone(),
                subresource: Subresource::Status,
                patch: status_patch(list.status.as_ref(), status),
            });
        }
        plan
    }
}
