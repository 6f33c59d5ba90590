//! Carries out a [`Plan`]: the one place where a controller's action becomes an API call.
//!
//! The match over [`Action`] is exhaustive: an action added to the vocabulary and not carried
//! out here is a compile error. The applier decides nothing of its own beyond how to send
//! (order, batching, what an answer means for the expectations).
//!
//! One [`Applier::apply`]:
//! 1. the actions run in order, independent ones of the same kind concurrently (creations in
//!    slow-start batches of 1, 2, 4, ... that stop at the first failure, as upstream); a run
//!    with a failure is the last; expectations are recorded around each write;
//! 2. each failure is recorded as a Warning Event on the owner (`FailedCreate`, ...);
//! 3. the plan's Events are recorded, each once the action it follows has succeeded;
//! 4. the status is written: a merge patch of the owner's `status` that also clears fields the
//!    new status dropped.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kruise_core::expectations::Expectation;
use kruise_core::plan::{Action, EventType, Guard, ObjectKind, Plan, Subresource, Target};
use kube::api::{ApiResource, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Applier, ApplyError, FIELD_MANAGER};
use crate::cache::ObjectKey;
use crate::controller::ReconcileError;
use crate::expectations::ExpectationStore;

/// How soon [`Applier::apply_or_replan`] plans an owner again after a conflict.
pub const REPLAN_AFTER_CONFLICT: std::time::Duration = std::time::Duration::from_millis(100);

/// The object a plan is for: where its Events go, where the workload actions write, and its
/// status as it was read (the new one is written as the difference).
#[derive(Clone, Debug)]
pub struct PlanOwner {
    /// The object's API.
    pub resource: ApiResource,
    /// Its namespace (`None` for a cluster-scoped owner). Workload actions write here.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// The reference its Events carry.
    pub reference: ObjectReference,
    /// Its status as read.
    pub status: Value,
    /// Write the status only over this resourceVersion (the one the plan read), so that a
    /// status computed from a stale read is refused with a conflict and planned again. For
    /// owners whose status carries state the planner reads back.
    pub status_guard: Option<String>,
}

impl PlanOwner {
    /// The owner `object`, of a kind with a static type.
    pub fn of<K>(object: &K, status: Value) -> Self
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let meta = object.meta();
        Self {
            resource: ApiResource::erase::<K>(&()),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            reference: object.object_ref(&()),
            status,
            status_guard: None,
        }
    }

    /// With the status written only over the object's resourceVersion as read.
    #[must_use]
    pub fn guarding_status(mut self, resource_version: Option<String>) -> Self {
        self.status_guard = resource_version;
        self
    }

    fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }
}

/// The expectations a plan's actions are recorded in, under the owner's key.
#[derive(Clone, Copy)]
pub struct ExpectationsFor<'a> {
    /// The store.
    pub store: &'a ExpectationStore,
    /// The owner's key.
    pub key: &'a ObjectKey,
}

fn api_resource(kind: &ObjectKind) -> ApiResource {
    ApiResource {
        group: kind.group.to_owned(),
        version: kind.version.to_owned(),
        api_version: kind.api_version(),
        kind: kind.kind.to_owned(),
        plural: kind.plural.to_owned(),
    }
}

/// The URL path of `resource` objects in `namespace` (`None`: cluster-scoped).
fn collection(resource: &ApiResource, namespace: Option<&str>) -> kube::core::Request {
    let group = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    let path = match namespace {
        Some(ns) => format!("{group}/namespaces/{ns}/{}", resource.plural),
        None => format!("{group}/{}", resource.plural),
    };
    kube::core::Request::new(path)
}

fn target_collection(target: &Target) -> kube::core::Request {
    let namespace = if target.kind.namespaced { target.namespace.as_deref() } else { None };
    collection(&api_resource(&target.kind), namespace)
}

fn kube_patch(patch: &kruise_core::plan::Patch) -> Patch<&Value> {
    match patch {
        kruise_core::plan::Patch::Strategic(body) => Patch::Strategic(body.as_ref()),
        kruise_core::plan::Patch::Merge(body) => Patch::Merge(body.as_ref()),
    }
}

fn preconditions(guard: &Guard) -> DeleteParams {
    let preconditions = match guard {
        Guard::None => None,
        Guard::Uid(uid) => Some(Preconditions { uid: Some(uid.clone()), resource_version: None }),
        Guard::ResourceVersion(rv) => {
            Some(Preconditions { uid: None, resource_version: Some(rv.clone()) })
        }
    };
    DeleteParams { preconditions, ..Default::default() }
}

fn delete_with_uid(uid: &str) -> DeleteParams {
    preconditions(&Guard::Uid(uid.to_owned()))
}

/// What an answer means for a plan: a creation that finds its object there, and a deletion
/// (or eviction) that finds it gone, are done; so is a patch of a named object
/// ([`Action::PatchObject`]) that is gone, since nothing of it is left to change, and a
/// creation in a namespace being deleted, which nothing will ever need.
fn tolerate(
    action: &Action,
    result: Result<Option<String>, ApplyError>,
) -> Result<Option<String>, ApplyError> {
    let done = matches!(
        (&result, action),
        (
            Err(ApplyError::AlreadyExists(_) | ApplyError::NamespaceTerminating(_)),
            Action::CreateRevision { .. }
                | Action::CreatePvc { .. }
                | Action::CreatePod { .. }
                | Action::CreateImagePullJob { .. }
                | Action::CreateObject { .. },
        ) | (
            Err(ApplyError::NotFound(_)),
            Action::PatchObject { .. }
                | Action::DeleteRevision { .. }
                | Action::DeletePvc { .. }
                | Action::DeletePod { .. }
                | Action::DeleteImagePullJob { .. }
                | Action::DeleteObject { .. }
                | Action::EvictPod { .. },
        )
    );
    if done { Ok(None) } else { result }
}

/// True when `err` is the conflict a resourceVersion guard of `action` asked for.
fn refused_by_guard(action: &Action, err: &ReconcileError) -> bool {
    let guarded = match action {
        Action::PatchObject { target, .. }
        | Action::DeleteObject { target }
        | Action::EvictPod { target } => matches!(target.guard, Guard::ResourceVersion(_)),
        _ => false,
    };
    guarded && matches!(err, ReconcileError::Write { source: ApplyError::Conflict(_), .. })
}

/// How one action of a plan went ([`Applier::apply_reporting`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ActionOutcome {
    /// Not attempted: an earlier run of actions failed.
    NotAttempted,
    /// Done (or found done: created already, deleted already), with the resourceVersion the
    /// server answered, if any.
    Done(Option<String>),
    /// Refused by its resourceVersion guard: the object changed since it was read.
    Stale,
    /// Failed; what the server answered.
    Failed(String),
}

/// The server's answer in a failed write, without the action and target around it.
fn failure_text(err: &ReconcileError) -> String {
    match err {
        ReconcileError::Write { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Which actions may run together: independent writes of the same kind.
fn group_kind(action: &Action) -> Option<u8> {
    match action {
        Action::CreatePvc { .. } => Some(1),
        Action::CreatePod { .. } => Some(2),
        Action::DeletePod { .. } => Some(3),
        Action::DeletePvc { .. } => Some(4),
        Action::PatchPodStatus { .. } => Some(5),
        Action::DeleteRevision { .. } => Some(6),
        Action::CreateObject { .. } => Some(7),
        Action::CreateRevision { .. }
        | Action::PatchRevision { .. }
        | Action::PatchPvc { .. }
        | Action::PatchPod { .. }
        | Action::PatchPodResize { .. }
        | Action::CreateImagePullJob { .. }
        | Action::DeleteImagePullJob { .. }
        | Action::PatchWorkload { .. }
        | Action::PatchObject { .. }
        | Action::DeleteObject { .. }
        | Action::EvictPod { .. } => None,
    }
}

/// What an action is, for errors and Events.
fn verb(action: &Action) -> &'static str {
    match action {
        Action::CreateRevision { .. } => "create revision",
        Action::PatchRevision { .. } => "patch revision",
        Action::DeleteRevision { .. } => "delete revision",
        Action::CreatePvc { .. } => "create pvc",
        Action::PatchPvc { .. } => "patch pvc",
        Action::DeletePvc { .. } => "delete pvc",
        Action::CreatePod { .. } => "create pod",
        Action::PatchPod { .. } => "patch pod",
        Action::PatchPodStatus { .. } => "patch pod status",
        Action::PatchPodResize { .. } => "resize pod",
        Action::DeletePod { .. } => "delete pod",
        Action::CreateImagePullJob { .. } => "create imagepulljob",
        Action::DeleteImagePullJob { .. } => "delete imagepulljob",
        Action::PatchWorkload { .. } => "patch workload",
        Action::CreateObject { .. } => "create",
        Action::PatchObject { subresource: Subresource::Main, .. } => "patch",
        Action::PatchObject { subresource: Subresource::Status, .. } => "update status",
        Action::PatchObject { .. } => "patch subresource",
        Action::DeleteObject { .. } => "delete",
        Action::EvictPod { .. } => "evict pod",
    }
}

/// The Warning Event reason for a failed write.
fn failure_reason(action: &str) -> &'static str {
    match action {
        "create imagepulljob" => "FailedCreateImagePullJob",
        "create pod" | "create pvc" | "create revision" | "create" => "FailedCreate",
        "delete pod" | "delete pvc" | "delete revision" | "delete imagepulljob" | "delete" => {
            "FailedDelete"
        }
        "evict pod" => "FailedEvict",
        _ => "FailedUpdate",
    }
}

impl Applier {
    /// Carries out `plan` for `owner`: its actions, the Warning Events of failed writes, its
    /// Events and its status (`plan.status`, written as a merge patch against
    /// `owner.status`). Expectations, when given, are recorded around each write.
    ///
    /// # Errors
    /// The first failed write; the actions after a failed run are not attempted, but the
    /// Events due and the status are still written.
    pub async fn apply<S: Serialize>(
        &self,
        owner: &PlanOwner,
        plan: &Plan<S>,
        expectations: Option<ExpectationsFor<'_>>,
        now: jiff::Timestamp,
    ) -> Result<(), ReconcileError> {
        self.apply_reporting(owner, plan, expectations, now).await.1
    }

    /// As [`Applier::apply`], with how each action went, in the plan's order: for a
    /// controller that remembers its writes until its cache shows them, or reports failed
    /// ones in the next status.
    pub async fn apply_reporting<S: Serialize>(
        &self,
        owner: &PlanOwner,
        plan: &Plan<S>,
        expectations: Option<ExpectationsFor<'_>>,
        now: jiff::Timestamp,
    ) -> (Vec<ActionOutcome>, Result<(), ReconcileError>) {
        // The plan is made; what is left waits on the API server: the worker takes other keys.
        crate::controller::release_worker();
        let mut outcomes = vec![ActionOutcome::NotAttempted; plan.actions.len()];
        let mut succeeded = vec![false; plan.actions.len()];
        let mut failure: Option<ReconcileError> = None;
        let mut start = 0;
        while start < plan.actions.len() {
            let kind = group_kind(&plan.actions[start]);
            let mut end = start + 1;
            while end < plan.actions.len()
                && kind.is_some()
                && group_kind(&plan.actions[end]) == kind
            {
                end += 1;
            }
            let results = self.run_group(owner, &plan.actions[start..end], expectations, now).await;
            let mut group_failed = false;
            for (offset, result) in results.into_iter().enumerate() {
                match result {
                    Some(Ok(resource_version)) => {
                        succeeded[start + offset] = true;
                        outcomes[start + offset] = ActionOutcome::Done(resource_version);
                    }
                    Some(Err(err)) => {
                        group_failed = true;
                        // A guard that refused a stale write did its job: the owner is planned
                        // again, and nothing failed that a user should see.
                        if refused_by_guard(&plan.actions[start + offset], &err) {
                            outcomes[start + offset] = ActionOutcome::Stale;
                        } else {
                            self.failure_event(owner, &err).await;
                            outcomes[start + offset] = ActionOutcome::Failed(failure_text(&err));
                        }
                        failure.get_or_insert(err);
                    }
                    None => {}
                }
            }
            if group_failed {
                break;
            }
            start = end;
        }

        for event in &plan.events {
            let due = event.after_action.is_none_or(|i| succeeded.get(i).copied().unwrap_or(false));
            if due {
                let warning = matches!(event.type_, EventType::Warning);
                self.event(
                    &owner.reference,
                    warning,
                    &event.reason,
                    &event.reason,
                    event.message.clone(),
                )
                .await;
            }
        }

        if let Some(status) = &plan.status {
            let new = serde_json::to_value(status).unwrap_or(Value::Null);
            let mut patch = kruise_core::merge_patch::status_patch(Some(&owner.status), &new);
            if let (Some(rv), Some(object)) = (&owner.status_guard, patch.as_object_mut()) {
                object.insert("metadata".into(), json!({"resourceVersion": rv}));
            }
            let request = collection(&owner.resource, owner.namespace.as_deref())
                .patch_subresource(
                    "status",
                    &owner.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                );
            match self.write_lean(request).await {
                Ok(_) | Err(ApplyError::NotFound(_)) => {}
                Err(source) => {
                    failure.get_or_insert(ReconcileError::Write {
                        action: "update status",
                        target: owner.name.clone(),
                        source,
                    });
                }
            }
        }
        (outcomes, failure.map_or(Ok(()), Err))
    }

    /// Runs a run of same-kind actions; `None` for actions not attempted (slow start stopped).
    async fn run_group(
        &self,
        owner: &PlanOwner,
        actions: &[Action],
        expectations: Option<ExpectationsFor<'_>>,
        now: jiff::Timestamp,
    ) -> Vec<Option<Result<Option<String>, ReconcileError>>> {
        let run = |i: usize| self.run_action(owner, &actions[i], expectations, now);
        if matches!(actions[0], Action::CreatePod { .. } | Action::CreatePvc { .. }) {
            return slow_start(actions.len(), self.create_burst, run).await;
        }
        let mut results: Vec<Option<Result<Option<String>, ReconcileError>>> =
            (0..actions.len()).map(|_| None).collect();
        let outcomes: Vec<(usize, Result<Option<String>, ReconcileError>)> =
            futures::stream::iter(0..actions.len())
                .map(|i| async move { (i, run(i).await) })
                .buffer_unordered(self.concurrency.max(1))
                .collect()
                .await;
        for (i, outcome) in outcomes {
            results[i] = Some(outcome);
        }
        results
    }

    /// One action, with its expectation recorded around the write; the resourceVersion the
    /// server answered with, if any.
    async fn run_action(
        &self,
        owner: &PlanOwner,
        action: &Action,
        expectations: Option<ExpectationsFor<'_>>,
        now: jiff::Timestamp,
    ) -> Result<Option<String>, ReconcileError> {
        let expectation = expectations.and(action.expectation());
        if let (Some(exp), Some(on)) = (&expectation, expectations) {
            on.store.before_write(on.key, exp, now);
        }
        let answer = self.send(owner, action).await;
        let dropped = matches!(answer, Err(ApplyError::NamespaceTerminating(_)));
        let result = tolerate(action, answer).map_err(|source| ReconcileError::Write {
            action: verb(action),
            target: action.target().to_owned(),
            source,
        });
        if let Some(on) = expectations {
            match (&result, &expectation) {
                (Ok(Some(rv)), Some(Expectation::ResourceVersion { uid })) => {
                    on.store.expect_resource_version(on.key, uid, rv, now);
                }
                (Err(_), Some(Expectation::Scale { action, name })) => {
                    on.store.cancel_scale(on.key, *action, name);
                }
                // Never created: nothing to wait for.
                (Ok(None), Some(Expectation::Scale { action, name })) if dropped => {
                    on.store.cancel_scale(on.key, *action, name);
                }
                _ => {}
            }
        }
        result
    }

    /// As [`Applier::apply`] without expectations, for an owner another writer also writes
    /// (the PodUnavailableBudget and WorkloadSpread webhooks reserve pods in their status): a
    /// write refused with a conflict is no error, and the owner is planned again after
    /// [`REPLAN_AFTER_CONFLICT`] from what the other wrote. Otherwise, when to look again:
    /// `plan.requeue_after`.
    ///
    /// # Errors
    /// As [`Applier::apply`], conflicts aside.
    pub async fn apply_or_replan<S: Serialize>(
        &self,
        owner: &PlanOwner,
        plan: &Plan<S>,
        now: jiff::Timestamp,
    ) -> Result<Option<std::time::Duration>, ReconcileError> {
        match self.apply(owner, plan, None, now).await {
            Ok(()) => Ok(plan.requeue_after.and_then(|d| std::time::Duration::try_from(d).ok())),
            Err(ReconcileError::Write { source: ApplyError::Conflict(_), .. }) => {
                Ok(Some(REPLAN_AFTER_CONFLICT))
            }
            Err(err) => Err(err),
        }
    }

    /// Sends one action for `owner`, leader-gated; the resourceVersion the server answered
    /// with, if any. The answer is as the server gave it: [`Applier::apply`] is what takes an
    /// existing object for a created one and a missing one for a deleted one.
    ///
    /// # Errors
    /// The server's refusal, classified.
    pub async fn send(
        &self,
        owner: &PlanOwner,
        action: &Action,
    ) -> Result<Option<String>, ApplyError> {
        let ns = owner.namespace();
        let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        use k8s_openapi::api::apps::v1::ControllerRevision;
        use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
        use kruise_api::apps::v1beta1::ImagePullJob;
        match action {
            Action::CreateRevision { revision } => self.create(ns, revision.as_ref(), &post).await,
            Action::PatchRevision { name, patch } => {
                self.patch::<ControllerRevision, _>(ns, name, None, &pp, &kube_patch(patch)).await
            }
            Action::DeleteRevision { name } => self
                .delete::<ControllerRevision>(ns, name, &DeleteParams::default())
                .await
                .map(|()| None),
            Action::CreatePvc { pvc } => self.create(ns, pvc.as_ref(), &post).await,
            Action::PatchPvc { name, patch } => {
                self.patch::<PersistentVolumeClaim, _>(ns, name, None, &pp, &kube_patch(patch))
                    .await
            }
            Action::DeletePvc { name, uid } => self
                .delete::<PersistentVolumeClaim>(ns, name, &delete_with_uid(uid))
                .await
                .map(|()| None),
            Action::CreatePod { pod } => {
                // Built now, and freed once encoded: the first pod of a big scale-out goes
                // out at once, and a batch in flight holds request bodies, not pods.
                self.create(ns, pod.build().as_ref(), &post).await
            }
            Action::PatchPod { namespace, name, patch, .. } => {
                let ns = namespace.as_deref().unwrap_or(ns);
                self.patch::<Pod, _>(ns, name, None, &pp, &kube_patch(patch)).await
            }
            Action::PatchPodStatus { namespace, name, patch, .. } => {
                let ns = namespace.as_deref().unwrap_or(ns);
                self.patch::<Pod, _>(ns, name, Some("status"), &pp, &kube_patch(patch)).await
            }
            Action::PatchPodResize { namespace, name, patch, .. } => {
                let ns = namespace.as_deref().unwrap_or(ns);
                self.patch::<Pod, _>(ns, name, Some("resize"), &pp, &kube_patch(patch)).await
            }
            Action::DeletePod { name, uid, .. } => {
                self.delete::<Pod>(ns, name, &delete_with_uid(uid)).await.map(|()| None)
            }
            Action::CreateImagePullJob { job } => self.create(ns, job.as_ref(), &post).await,
            Action::DeleteImagePullJob { name } => {
                self.delete::<ImagePullJob>(ns, name, &DeleteParams::default()).await.map(|()| None)
            }
            Action::PatchWorkload { patch } => {
                let request = collection(&owner.resource, owner.namespace.as_deref()).patch(
                    &owner.name,
                    &pp,
                    &kube_patch(patch),
                );
                self.write_lean(request).await
            }
            Action::CreateObject { target, body } => {
                // The target's kind names the object, whatever the body says of itself.
                let mut body = body.as_ref().clone();
                if let Some(object) = body.as_object_mut() {
                    object.insert("apiVersion".into(), json!(target.kind.api_version()));
                    object.insert("kind".into(), json!(target.kind.kind));
                }
                let body =
                    serde_json::to_vec(&body).map_err(|e| ApplyError::Invalid(e.to_string()))?;
                self.write_lean(target_collection(target).create(&post, body)).await
            }
            Action::PatchObject { target, subresource, patch } => {
                let guarded;
                let patch = match (&target.guard, patch) {
                    (Guard::ResourceVersion(rv), patch) => {
                        let mut body = patch.body().clone();
                        if let Some(object) = body.as_object_mut() {
                            let meta = object.entry("metadata").or_insert_with(|| json!({}));
                            meta["resourceVersion"] = json!(rv);
                        }
                        guarded = match patch {
                            kruise_core::plan::Patch::Strategic(_) => {
                                kruise_core::plan::Patch::strategic(body)
                            }
                            kruise_core::plan::Patch::Merge(_) => {
                                kruise_core::plan::Patch::merge(body)
                            }
                        };
                        &guarded
                    }
                    (Guard::None | Guard::Uid(_), patch) => patch,
                };
                let request = target_collection(target);
                let request = match subresource.path() {
                    Some(sub) => {
                        request.patch_subresource(sub, &target.name, &pp, &kube_patch(patch))
                    }
                    None => request.patch(&target.name, &pp, &kube_patch(patch)),
                };
                self.write_lean(request).await
            }
            Action::DeleteObject { target } => {
                // Dependents go in the background, whatever the kind's default (a batch/v1
                // Job's is to orphan its pods).
                let params = DeleteParams {
                    propagation_policy: Some(kube::api::PropagationPolicy::Background),
                    ..preconditions(&target.guard)
                };
                let request = target_collection(target).delete(&target.name, &params);
                self.write_lean(request).await
            }
            Action::EvictPod { target } => {
                let eviction = json!({
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": target.name, "namespace": target.namespace},
                    "deleteOptions": preconditions(&target.guard),
                });
                let body = serde_json::to_vec(&eviction)
                    .map_err(|e| ApplyError::Invalid(e.to_string()))?;
                let request = target_collection(target).create_subresource(
                    "eviction",
                    &target.name,
                    &post,
                    body,
                );
                self.write_lean(request).await
            }
        }
    }

    async fn failure_event(&self, owner: &PlanOwner, err: &ReconcileError) {
        let action = match err {
            ReconcileError::Write { source: ApplyError::NotLeader, .. } => return,
            ReconcileError::Write { action, .. } => *action,
            ReconcileError::CachedPod(_) => "read pods",
            ReconcileError::SidecarSetRevision(_) => "build revision",
        };
        self.event(&owner.reference, true, failure_reason(action), action, err.to_string()).await;
    }
}

/// Runs `run(i)` for every `i` in `0..count` in slow-start batches, as kube-controller-manager
/// and upstream OpenKruise create pods: batches of 1, 2, 4, ... doubling up to `burst`, every
/// call of a batch in flight at once and each batch finished before the next starts. A batch
/// with a failure is the last, so a refusing server (a quota, an admission webhook) sees a few
/// requests, not hundreds. `None` for the calls never started.
pub(crate) async fn slow_start<T, E, F, Fut>(
    count: usize,
    burst: usize,
    run: F,
) -> Vec<Option<Result<T, E>>>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut results: Vec<Option<Result<T, E>>> = (0..count).map(|_| None).collect();
    let mut next = 0;
    for batch in batch_sizes(count, burst) {
        let end = next + batch;
        let outcomes = futures::future::join_all((next..end).map(&run)).await;
        let mut failed = false;
        for (i, outcome) in (next..end).zip(outcomes) {
            failed |= outcome.is_err();
            results[i] = Some(outcome);
        }
        if failed {
            break;
        }
        next = end;
    }
    results
}

/// The sizes of the slow-start batches for `count` calls: 1, 2, 4, ... doubling up to
/// `burst` (at least 1), the last one what remains.
pub(crate) fn batch_sizes(count: usize, burst: usize) -> impl Iterator<Item = usize> {
    let burst = burst.max(1);
    let (mut done, mut batch) = (0, 1);
    std::iter::from_fn(move || {
        if done >= count {
            return None;
        }
        let size = batch.min(burst).min(count - done);
        done += size;
        batch = batch.saturating_mul(2);
        Some(size)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-apiserver's answer to a create in a namespace being deleted.
    fn terminating() -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403,
            "reason": "Forbidden",
            "message": "pods \"web-x\" is forbidden: unable to create new content in namespace gone because it is being terminated",
            "details": {"name": "web-x", "kind": "pods", "causes": [{"reason": "NamespaceTerminating",
                "message": "namespace gone is being terminated", "field": "metadata.namespace"}]}
        }))
        .expect("a Status");
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn a_create_in_a_terminating_namespace_is_nothing_to_do() {
        let err = ApplyError::from_kube(terminating());
        assert!(matches!(err, ApplyError::NamespaceTerminating(_)), "{err:?}");
        let create = Action::CreateObject {
            target: kruise_core::plan::Target::new(
                kruise_core::plan::ObjectKind::SERVICE,
                Some("gone"),
                "web",
            ),
            body: std::sync::Arc::new(serde_json::json!({})),
        };
        assert!(matches!(tolerate(&create, Err(err)), Ok(None)));
        // Any other 403 stays a failure.
        let other = ApplyError::Forbidden("pods is forbidden: User cannot create".into());
        assert!(tolerate(&create, Err(other)).is_err());
    }

    #[test]
    fn slow_start_batches_double_up_to_the_burst() {
        let sizes = |count, burst| batch_sizes(count, burst).collect::<Vec<_>>();
        assert_eq!(sizes(0, 500), Vec::<usize>::new());
        assert_eq!(sizes(1, 500), [1]);
        assert_eq!(sizes(10, 500), [1, 2, 4, 3]);
        assert_eq!(sizes(1000, 500), [1, 2, 4, 8, 16, 32, 64, 128, 256, 489]);
        assert_eq!(sizes(2000, 500), [1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 500, 489]);
        assert_eq!(sizes(100, 32), [1, 2, 4, 8, 16, 32, 32, 5]);
        // A burst of 0 is taken as 1: one at a time, never stuck.
        assert_eq!(sizes(3, 0), [1, 1, 1]);
        for (count, burst) in [(1, 1), (7, 3), (1000, 500), (12345, 500)] {
            let sizes = sizes(count, burst);
            assert_eq!(sizes.iter().sum::<usize>(), count);
            assert!(sizes.iter().all(|&s| s >= 1 && s <= burst.max(1)));
        }
    }

    /// Every call of a batch is in flight at once; a batch with a failure is the last.
    #[tokio::test]
    async fn slow_start_runs_each_batch_at_once_and_stops_after_a_failing_one() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let in_flight = AtomicUsize::new(0);
        let peaks = std::sync::Mutex::new(Vec::new());
        let call = |i: usize, fail: Option<usize>| {
            let (in_flight, peaks) = (&in_flight, &peaks);
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::task::yield_now().await;
                peaks.lock().expect("not poisoned").push(now);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                if Some(i) == fail { Err(i) } else { Ok(i) }
            }
        };
        let results = slow_start(1000, 500, |i| call(i, None)).await;
        assert!(results.iter().enumerate().all(|(i, r)| *r == Some(Ok(i))));
        assert_eq!(peaks.lock().expect("not poisoned").iter().max(), Some(&489));

        // Index 5 is in the third batch (3..7): 0..7 are attempted, 7.. are not.
        let results = slow_start(20, 500, |i| call(i, Some(5))).await;
        assert_eq!(results[5], Some(Err(5)));
        assert!(results[..7].iter().enumerate().all(|(i, r)| i == 5 || *r == Some(Ok(i))));
        assert!(results[7..].iter().all(Option::is_none));
    }
}
