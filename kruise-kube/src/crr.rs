//! The ContainerRecreateRequest controller (`containerrecreaterequest-controller`, gate
//! `KruiseDaemon`), over kruise-core's planner ([`kruise_core::containerrecreate`]).
//!
//! For each request: [`plan_crr`] (pod gone, daemon silent, `activeDeadlineSeconds`, the
//! container status snapshot while recreating, the pod's not-ready hold, the removal of the
//! `crr.apps.kruise.io/active` label once finished, `ttlSecondsAfterFinished`). Then, for the
//! pod's requests together, [`pick_active`]: one request per pod runs at a time; the others
//! are marked `Pending` with a message naming the one they wait for, and the message goes
//! once they are next. The daemon on the pod's node does the recreating itself.
//!
//! A request change wakes its siblings on the same pod (so the next one is picked as soon as
//! one finishes); a pod change wakes the pod's requests.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kruise_api::apps::v1beta1::{ContainerRecreateRequest, ContainerRecreateRequestPhase};
use kruise_core::containerrecreate::{CrrAction, pick_active, plan_crr};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::applier::ApplyError;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(ContainerRecreateRequest);

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "containerrecreaterequest-controller";

/// The start of the message [`pick_active`] gives a waiting request.
const WAITING_PREFIX: &str = "waiting for ContainerRecreateRequest ";

/// The ContainerRecreateRequest controller.
pub struct CrrController {
    context: ControllerContext,
    crrs: Cache<ContainerRecreateRequest>,
    pods: Cache<CachedPod>,
}

/// The requests in `namespace` for the pod `pod`.
fn requests_of(
    crrs: &Cache<ContainerRecreateRequest>,
    namespace: &str,
    pod: &str,
) -> Vec<Arc<ContainerRecreateRequest>> {
    crrs.in_namespace(namespace).into_iter().filter(|c| c.spec.pod_name == pod).collect()
}

fn write_error(action: &'static str, target: String, source: ApplyError) -> ReconcileError {
    ReconcileError::Write { action, target, source }
}

impl CrrController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "containerrecreaterequest-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "containerrecreaterequests",
        }),
    )
    .with_gates(&["KruiseDaemon"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self { crrs: context.caches.get(), pods: context.caches.get(), context })
    }

    async fn run_action(
        &self,
        crr: &ContainerRecreateRequest,
        action: &CrrAction,
    ) -> Result<(), ReconcileError> {
        let applier = &self.context.applier;
        let namespace = crr.namespace().unwrap_or_default();
        let name = crr.name_any();
        let target = format!("{namespace}/{name}");
        let api: Api<ContainerRecreateRequest> =
            Api::namespaced(applier.client().clone(), &namespace);
        let params = PatchParams::default();
        let finalizers = |list: Vec<String>| json!({"metadata": {"finalizers": list, "resourceVersion": crr.resource_version()}});
        let (what, result) = match action {
            CrrAction::PatchStatus { patch } => (
                "patch status",
                applier
                    .write(api.patch_status(&name, &params, &crate::workload::kube_patch(patch)))
                    .await
                    .map(|_| ()),
            ),
            CrrAction::PatchMetadata { patch } => (
                "patch metadata",
                applier
                    .write(api.patch(&name, &params, &crate::workload::kube_patch(patch)))
                    .await
                    .map(|_| ()),
            ),
            CrrAction::AddFinalizer { finalizer } => {
                let mut list = crr.finalizers().to_vec();
                if !list.contains(finalizer) {
                    list.push(finalizer.clone());
                }
                let patch = finalizers(list);
                (
                    "add finalizer",
                    applier
                        .write(api.patch(&name, &params, &Patch::Merge(&patch)))
                        .await
                        .map(|_| ()),
                )
            }
            CrrAction::RemoveFinalizer { finalizer } => {
                let list: Vec<String> =
                    crr.finalizers().iter().filter(|f| *f != finalizer).cloned().collect();
                let patch = finalizers(list);
                (
                    "remove finalizer",
                    applier
                        .write(api.patch(&name, &params, &Patch::Merge(&patch)))
                        .await
                        .map(|_| ()),
                )
            }
            CrrAction::UpdatePodConditions { pod, patch } => {
                let pods: Api<k8s_openapi::api::core::v1::Pod> =
                    Api::namespaced(applier.client().clone(), &namespace);
                (
                    "patch pod status",
                    applier
                        .write(pods.patch_status(pod, &params, &crate::workload::kube_patch(patch)))
                        .await
                        .map(|_| ()),
                )
            }
            CrrAction::Delete => (
                "delete",
                applier.write(api.delete(&name, &DeleteParams::background())).await.map(|_| ()),
            ),
            other => {
                tracing::error!(action = ?other, "the CRR planner returned an action this controller does not know");
                return Ok(());
            }
        };
        match result {
            Ok(()) | Err(ApplyError::NotFound(_)) => Ok(()),
            Err(source) => Err(write_error(what, target, source)),
        }
    }

    async fn reconcile_request(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(crr) = self.crrs.get(key) else {
            return Ok(None);
        };
        let pod_key = ObjectKey::new(key.namespace.as_str(), crr.spec.pod_name.as_str());
        let pod = self.pods.get(&pod_key).map(|p| p.to_pod()).transpose()?;
        let now = jiff::Timestamp::now();
        let plan = plan_crr(&crr, pod.as_ref(), now);
        for action in &plan.actions {
            self.run_action(&crr, action).await?;
            if matches!(action, CrrAction::Delete) {
                return Ok(None);
            }
        }
        if let Some(message) = &plan.completed {
            let reference = kube::Resource::object_ref(crr.as_ref(), &());
            self.context
                .applier
                .event(&reference, false, "Completed", "Reconcile", message.clone())
                .await;
        }

        // One request per pod at a time.
        let siblings: Vec<ContainerRecreateRequest> =
            requests_of(&self.crrs, &key.namespace, &crr.spec.pod_name)
                .iter()
                .map(|c| (**c).clone())
                .collect();
        let pick = pick_active(&siblings);
        let api: Api<ContainerRecreateRequest> =
            Api::namespaced(self.context.applier.client().clone(), &key.namespace);
        for waiting in &pick.waiting {
            let Some(patch) = &waiting.patch else { continue };
            let written = self
                .context
                .applier
                .write(api.patch_status(
                    &waiting.name,
                    &PatchParams::default(),
                    &crate::workload::kube_patch(patch),
                ))
                .await;
            match written {
                Ok(_) | Err(ApplyError::NotFound(_)) => {}
                Err(source) => {
                    return Err(write_error(
                        "patch status",
                        format!("{}/{}", key.namespace, waiting.name),
                        source,
                    ));
                }
            }
        }
        // The one that runs no longer waits.
        if let Some(active) = pick.active.as_deref()
            && let Some(current) =
                siblings.iter().find(|c| c.metadata.name.as_deref() == Some(active))
            && let Some(status) = current.status.as_ref()
            && status.phase == ContainerRecreateRequestPhase::Pending
            && status.message.starts_with(WAITING_PREFIX)
        {
            let patch = json!({"status": {"message": null}});
            let written = self
                .context
                .applier
                .write(api.patch_status(active, &PatchParams::default(), &Patch::Merge(&patch)))
                .await;
            match written {
                Ok(_) | Err(ApplyError::NotFound(_)) => {}
                Err(source) => {
                    return Err(write_error(
                        "patch status",
                        format!("{}/{active}", key.namespace),
                        source,
                    ));
                }
            }
        }
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

impl Reconciler for CrrController {
    fn watches(&self) -> Vec<Watch> {
        let crrs = self.crrs.clone();
        let for_pods = self.crrs.clone();
        vec![
            // A request wakes itself and its siblings on the same pod.
            Watch::new(&self.crrs, KeyMapping::Custom, move |change| {
                let mut keys = Vec::new();
                for crr in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                    let namespace = crr.namespace().unwrap_or_default();
                    keys.push(ObjectKey::of(crr));
                    keys.extend(
                        requests_of(&crrs, &namespace, &crr.spec.pod_name)
                            .iter()
                            .map(|c| ObjectKey::of(c.as_ref())),
                    );
                }
                keys.sort();
                keys.dedup();
                keys
            }),
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                requests_of(&for_pods, &namespace, &name)
                    .iter()
                    .map(|c| ObjectKey::of(c.as_ref()))
                    .collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.crrs.all().iter().map(|c| ObjectKey::of(c.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_request(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration { info: CrrController::INFO, build: CrrController::build }
}
