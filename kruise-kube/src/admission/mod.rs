//! Admission webhooks: the handlers (served by [`crate::webhook::WebhookServer`]) and the
//! webhook configurations that register them with the API server.
//!
//! Paths and webhook names are upstream's (`/validate-apps-kruise-io-cloneset`,
//! `vcloneset.kb.io`, ...), so a cluster moving between implementations keeps its
//! configuration shape. The decisions are kruise-core's ([`kruise_core::admission`]); this
//! module decodes reviews, looks up what a decision needs (pods in a namespace, objects of a
//! CRD) and encodes the answer.
//!
//! Safe by default:
//! - pod webhooks never see `kube-system` or the manager's own namespace; the mutating one
//!   defaults to `failurePolicy: Ignore`, so a manager that is down never blocks pod creation,
//!   and the validating one selects only the pods a PodUnavailableBudget covers (the
//!   `pub.kruise.io/protected` label) and fails closed for them, so a covered pod is never
//!   deleted unprotected and every other pod is untouched; evictions (which carry no pod
//!   labels) reach the same check through `vpodeviction.kb.io`, with the pod failure policy;
//! - webhooks for Kruise's own kinds default to `Fail` (an unvalidated CloneSet is worse than
//!   a refused one);
//! - deletion protection webhooks for built-in kinds select only objects that carry the
//!   `policy.kruise.io/delete-protection` label, so unlabelled objects never pay for them;
//! - every webhook has a short timeout.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::admission::protection::{self, Dependents, ProtectedKind};
use kruise_core::admission_review::{
    AdmissionRequest, AdmissionResponse, Operation, decode_review,
};
use kruise_core::cloneset::admission as rules;
use kruise_core::pub_budget::validation as pub_rules;
use kruise_core::statefulset::admission as sts_rules;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::features::FeatureGates;

/// The label that turns on deletion protection.
pub const PROTECTION_LABEL: &str = "policy.kruise.io/delete-protection";

/// Upstream's configuration names (with the chart's `kruise-` prefix).
pub const MUTATING_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";
/// Upstream's validating configuration name.
pub const VALIDATING_CONFIGURATION: &str = "kruise-validating-webhook-configuration";

/// What the handlers read.
#[derive(Clone)]
pub struct AdmissionContext {
    /// Pods: whether a namespace still runs any, and the pods `podsToDelete` names.
    pub pods: Cache<CachedPod>,
    /// PVCs: whether a namespace still holds bound claims.
    pub pvcs: Cache<PersistentVolumeClaim>,
    /// For listing a CRD's objects (deletion protection of CRDs).
    pub client: kube::Client,
    /// `ResourcesDeletionProtection`.
    pub deletion_protection: bool,
    /// `DeletionProtectionForCRDCascadingGate`.
    pub crd_cascading: bool,
    /// The gates the Advanced StatefulSet webhooks read.
    pub statefulset_gates: kruise_core::statefulset::admission::AdmissionGates,
    /// `PodUnavailableBudgetDeleteGate` or `PodUnavailableBudgetUpdateGate`: with both off,
    /// PodUnavailableBudgets are refused, as upstream refuses them.
    pub pub_enabled: bool,
    /// What acts on pods at admission (SidecarSet, WorkloadSpread, PodUnavailableBudget, ...),
    /// asked in turn by the pod webhooks, which name none of them.
    pub pod_features: Vec<Arc<dyn PodFeature>>,
    /// The SidecarSet webhooks' view of the other SidecarSets and their revisions.
    pub sidecar_sets: Option<crate::sidecarset::SidecarSetWebhook>,
    /// The WorkloadSpread webhook's view of the other WorkloadSpreads and the whitelist.
    pub workload_spreads: Option<crate::workloadspread::WorkloadSpreadWebhook>,
    /// Nodes: a ContainerRecreateRequest for a pod on a virtual-kubelet node is labelled so.
    pub nodes: Option<Cache<k8s_openapi::api::core::v1::Node>>,
    /// The manager's namespace, where `kruise-configuration` lives.
    pub manager_namespace: String,
    /// `SidecarSetPatchPodMetadataDefaultsAllowed`: `patchPodMetadata` passes when no
    /// whitelist rule applies.
    pub patch_metadata_defaults_allowed: bool,
    /// `ResourceDistributionGate`: with it off, ResourceDistributions are refused, as upstream
    /// refuses them.
    pub resource_distribution: bool,
    /// The gate that refuses PodProbeMarkers, as upstream's webhook does with it off:
    /// `PodProbeMarkerGate` or `KruiseDaemon`.
    pub pod_probe_marker_off: Option<&'static str>,
    /// The PersistentPodStates, for the conflicts `vpersistentpodstate.kb.io` refuses.
    pub persistent_pod_states: Option<Cache<kruise_api::apps::v1beta1::PersistentPodState>>,
    /// The Rollouts, which the workload webhook holds releases for and the Rollout
    /// validation checks conflicts and immutable fields against.
    pub rollouts: Option<Cache<kruise_api::rollouts::v1beta1::Rollout>>,
    /// The ReplicaSets, whose stable revision the Deployment webhook records.
    pub replica_sets: Option<Cache<k8s_openapi::api::apps::v1::ReplicaSet>>,
}

pub mod offline;
pub mod pod_feature;
pub mod pod_scope;
mod registry;

pub use pod_feature::{PodFeature, PodReview, PodVerdict};
pub use registry::{
    FailureSource, Handler, Namespaces, Objects, Rule, WebhookRegistration, WebhookType,
};

impl AdmissionContext {
    /// A context with the settings `gates` decide, over `caches` (pods and claims), with no
    /// pod features and no SidecarSet, WorkloadSpread, node or PersistentPodState view yet.
    pub fn new(
        client: kube::Client,
        caches: &crate::cache::SharedCaches,
        gates: &FeatureGates,
        manager_namespace: &str,
    ) -> Self {
        Self {
            pods: caches.get::<CachedPod>(),
            pvcs: caches.get::<PersistentVolumeClaim>(),
            client,
            deletion_protection: gates.enabled("ResourcesDeletionProtection"),
            crd_cascading: gates.enabled("DeletionProtectionForCRDCascadingGate"),
            statefulset_gates: kruise_core::statefulset::admission::AdmissionGates::default()
                .with_auto_delete_pvc(gates.enabled("StatefulSetAutoDeletePVC"))
                .with_auto_resize_pvc(gates.enabled("StatefulSetAutoResizePVCGate"))
                .with_template_no_defaults(gates.enabled("TemplateNoDefaults"))
                .with_host_network_host_ports(
                    gates.enabled("DefaultHostNetworkHostPortsInPodTemplates"),
                ),
            pub_enabled: gates.enabled("PodUnavailableBudgetDeleteGate")
                || gates.enabled("PodUnavailableBudgetUpdateGate"),
            pod_features: Vec::new(),
            sidecar_sets: None,
            workload_spreads: None,
            nodes: None,
            manager_namespace: manager_namespace.to_owned(),
            patch_metadata_defaults_allowed: gates
                .enabled("SidecarSetPatchPodMetadataDefaultsAllowed"),
            resource_distribution: gates.enabled("ResourceDistributionGate"),
            pod_probe_marker_off: ["PodProbeMarkerGate", "KruiseDaemon"]
                .into_iter()
                .find(|gate| !gates.enabled(gate)),
            persistent_pod_states: None,
            rollouts: None,
            replica_sets: None,
        }
    }
}

/// The admission routes of every webhook whose gates are on, to add with
/// [`crate::webhook::WebhookServer::routes`]: generated from [`registrations`], as the webhook
/// configurations are.
pub fn routes(context: AdmissionContext, gates: &FeatureGates) -> axum::Router {
    let state = Arc::new(context);
    let mut router = axum::Router::new();
    let mut served = std::collections::BTreeSet::new();
    for registration in registry::enabled(registrations(), gates) {
        if served.insert(registration.path) {
            router = router.route(registration.path, registration.handler);
        }
    }
    router.with_state(state)
}

const KRUISE_VERSIONS: &[&str] = &["v1alpha1", "v1beta1"];
const CREATE_UPDATE: &[&str] = &["CREATE", "UPDATE"];
const CREATE_UPDATE_DELETE: &[&str] = &["CREATE", "UPDATE", "DELETE"];
const DELETE: &[&str] = &["DELETE"];

/// A rule on one of Kruise's `apps.kruise.io` resources, at both versions.
const fn kruise_rule(resource: &'static str, operations: &'static [&'static str]) -> Rule {
    Rule { group: "apps.kruise.io", versions: KRUISE_VERSIONS, resource, operations }
}

/// Every admission webhook the manager serves, in the order the configurations list them. The
/// routes and the webhook configurations are both generated from this list.
pub fn registrations() -> Vec<WebhookRegistration> {
    use FailureSource::{Fail, Pod};
    use WebhookType::{Mutating, Validating};
    let kruise = |name, path, type_, resource, operations, handler| {
        WebhookRegistration::new(
            name,
            path,
            type_,
            vec![kruise_rule(resource, operations)],
            handler,
        )
    };
    let protected = json!({"matchExpressions": [{"key": PROTECTION_LABEL, "operator": "Exists"}]});
    // Deletion protection: only the objects that carry the label, on DELETE.
    let protection = |name, path, group, versions, resource, handler| {
        WebhookRegistration::new(
            name,
            path,
            Validating,
            vec![Rule { group, versions, resource, operations: DELETE }],
            handler,
        )
        .objects(Objects::Selected(protected.clone()))
        .gates(&["ResourcesDeletionProtection"])
    };
    let pod_rule =
        |resource, operations| Rule { group: "", versions: &["v1"], resource, operations };
    // Kruise Rollout's workload webhooks: only the workloads the Rollout controller labelled,
    // failing closed (a release let through unheld would roll every pod at once).
    let released_workloads = json!({"matchExpressions": [
        {"key": kruise_core::rollouts::WORKLOAD_TYPE_LABEL, "operator": "Exists"}
    ]});
    let held = |name, path, rules| {
        WebhookRegistration::new(name, path, Mutating, rules, post(mutate_released_workload))
            .failure(Fail)
            .objects(Objects::Selected(released_workloads.clone()))
    };
    vec![
        // The pod mutating webhook: the chain of pod steps at CREATE.
        WebhookRegistration::new(
            "mpod.kb.io",
            "/mutate-pod",
            Mutating,
            vec![pod_rule("pods", &["CREATE"])],
            post(mutate_pod),
        )
        .failure(Pod)
        .namespaces(Namespaces::PodPolicy)
        .objects(Objects::PodPolicy)
        .never_reinvoked()
        .gates(&["PodWebhook"]),
        kruise(
            "mcloneset.kb.io",
            "/mutate-apps-kruise-io-cloneset",
            Mutating,
            "clonesets",
            CREATE_UPDATE,
            post(mutate_cloneset),
        ),
        kruise(
            "mstatefulset.kb.io",
            "/mutate-apps-kruise-io-statefulset",
            Mutating,
            "statefulsets",
            CREATE_UPDATE,
            post(mutate_statefulset),
        ),
        kruise(
            "msidecarset.kb.io",
            SIDECARSET_MUTATING_PATH,
            Mutating,
            "sidecarsets",
            CREATE_UPDATE,
            post(mutate_sidecarset),
        ),
        kruise(
            "mdaemonset.kb.io",
            DAEMONSET_MUTATING_PATH,
            Mutating,
            "daemonsets",
            CREATE_UPDATE,
            post(mutate_daemonset),
        ),
        kruise(
            "mcontainerrecreaterequest.kb.io",
            CRR_MUTATING_PATH,
            Mutating,
            "containerrecreaterequests",
            CREATE_UPDATE,
            post(mutate_crr),
        ),
        kruise(
            "mimagepulljob-v1beta1.kb.io",
            IMAGEPULLJOB_MUTATING_PATH,
            Mutating,
            "imagepulljobs",
            CREATE_UPDATE,
            post(mutate_image_pull_job),
        ),
        kruise(
            "mimagelistpulljob-v1beta1.kb.io",
            IMAGELISTPULLJOB_MUTATING_PATH,
            Mutating,
            "imagelistpulljobs",
            CREATE_UPDATE,
            post(mutate_image_list_pull_job),
        ),
        kruise(
            "mbroadcastjob.kb.io",
            BROADCASTJOB_MUTATING_PATH,
            Mutating,
            "broadcastjobs",
            CREATE_UPDATE,
            post(mutate_broadcast_job),
        ),
        kruise(
            "muniteddeployment.kb.io",
            "/mutate-apps-kruise-io-uniteddeployment",
            Mutating,
            "uniteddeployments",
            CREATE_UPDATE,
            post(mutate_united_deployment),
        ),
        kruise(
            "madvancedcronjob.kb.io",
            "/mutate-apps-kruise-io-advancedcronjob",
            Mutating,
            "advancedcronjobs",
            CREATE_UPDATE,
            post(mutate_advanced_cron_job),
        ),
        kruise(
            "mnodeimage.kb.io",
            NODEIMAGE_MUTATING_PATH,
            Mutating,
            "nodeimages",
            CREATE_UPDATE,
            post(mutate_node_image),
        ),
        // Reaches only the pods a PodUnavailableBudget covers (the label its controller and the
        // mutating step stamp), and fails closed for them: no covered pod goes unprotected, and
        // no other pod waits for the manager.
        WebhookRegistration::new(
            "vpod.kb.io",
            "/validate-pod",
            Validating,
            vec![pod_rule("pods", &["UPDATE", "DELETE"])],
            post(validate_pod),
        )
        .failure(Fail)
        .namespaces(Namespaces::OutsideSystem)
        .objects(Objects::Selected(json!({"matchExpressions": [
            {"key": crate::pub_budget::COVERED_LABEL, "operator": "Exists"}
        ]})))
        .gates(&["PodWebhook"]),
        // An Eviction carries no labels, so no objectSelector can pick the covered pods'
        // evictions: they go to the same handler through a webhook of their own, with the pod
        // webhooks' failure policy (a manager that is down does not block `kubectl drain` by
        // default).
        WebhookRegistration::new(
            "vpodeviction.kb.io",
            "/validate-pod",
            Validating,
            vec![pod_rule("pods/eviction", &["CREATE"])],
            post(validate_pod),
        )
        .failure(Pod)
        .namespaces(Namespaces::OutsideSystem)
        .gates(&["PodWebhook"]),
        // Pods a WorkloadSpread placed release their subset when deleted; those a budget covers
        // are already sent by `vpod.kb.io` (sending them twice would reserve them twice).
        WebhookRegistration::new(
            "vpodworkloadspread.kb.io",
            "/validate-pod",
            Validating,
            vec![pod_rule("pods", DELETE)],
            post(validate_pod),
        )
        .failure(Pod)
        .namespaces(Namespaces::OutsideSystem)
        .objects(Objects::Selected(json!({"matchExpressions": [
            {"key": crate::workloadspread::MATCHED_LABEL, "operator": "Exists"},
            {"key": crate::pub_budget::COVERED_LABEL, "operator": "DoesNotExist"}
        ]})))
        .gates(&["PodWebhook"]),
        kruise(
            "vcloneset.kb.io",
            "/validate-apps-kruise-io-cloneset",
            Validating,
            "clonesets",
            CREATE_UPDATE_DELETE,
            post(validate_cloneset),
        ),
        kruise(
            "vstatefulset.kb.io",
            "/validate-apps-kruise-io-statefulset",
            Validating,
            "statefulsets",
            CREATE_UPDATE_DELETE,
            post(validate_statefulset),
        ),
        WebhookRegistration::new(
            pub_rules::VALIDATING_WEBHOOK_NAME,
            pub_rules::VALIDATING_WEBHOOK_PATH,
            Validating,
            vec![Rule {
                group: "policy.kruise.io",
                versions: KRUISE_VERSIONS,
                resource: "podunavailablebudgets",
                operations: CREATE_UPDATE,
            }],
            post(validate_pub),
        ),
        kruise(
            "vsidecarset.kb.io",
            SIDECARSET_VALIDATING_PATH,
            Validating,
            "sidecarsets",
            CREATE_UPDATE,
            post(validate_sidecarset),
        ),
        kruise(
            "vdaemonset.kb.io",
            DAEMONSET_VALIDATING_PATH,
            Validating,
            "daemonsets",
            CREATE_UPDATE,
            post(validate_daemonset),
        ),
        kruise(
            "vworkloadspread.kb.io",
            WORKLOADSPREAD_VALIDATING_PATH,
            Validating,
            "workloadspreads",
            CREATE_UPDATE,
            post(validate_workloadspread),
        ),
        kruise(
            "vbroadcastjob.kb.io",
            "/validate-apps-kruise-io-broadcastjob",
            Validating,
            "broadcastjobs",
            CREATE_UPDATE,
            post(validate_broadcast_job),
        ),
        kruise(
            "vuniteddeployment.kb.io",
            "/validate-apps-kruise-io-uniteddeployment",
            Validating,
            "uniteddeployments",
            CREATE_UPDATE_DELETE,
            post(validate_united_deployment),
        ),
        kruise(
            "vadvancedcronjob.kb.io",
            "/validate-apps-kruise-io-advancedcronjob",
            Validating,
            "advancedcronjobs",
            CREATE_UPDATE,
            post(validate_advanced_cron_job),
        ),
        kruise(
            "vpodprobemarker.kb.io",
            "/validate-apps-kruise-io-podprobemarker",
            Validating,
            "podprobemarkers",
            CREATE_UPDATE,
            post(validate_pod_probe_marker),
        ),
        kruise(
            "vpersistentpodstate.kb.io",
            "/validate-apps-kruise-io-persistentpodstate",
            Validating,
            "persistentpodstates",
            CREATE_UPDATE,
            post(validate_persistent_pod_state),
        ),
        kruise(
            "vresourcedistribution.kb.io",
            "/validate-apps-kruise-io-resourcedistribution",
            Validating,
            "resourcedistributions",
            CREATE_UPDATE,
            post(validate_resource_distribution),
        ),
        kruise(
            "vephemeraljobs.kb.io",
            "/validate-apps-kruise-io-v1alpha1-ephemeraljob",
            Validating,
            "ephemeraljobs",
            CREATE_UPDATE,
            post(validate_ephemeral_job),
        ),
        kruise(
            "vimagepulljob-v1beta1.kb.io",
            IMAGEPULLJOB_VALIDATING_PATH,
            Validating,
            "imagepulljobs",
            CREATE_UPDATE,
            post(validate_image_pull_job),
        ),
        kruise(
            "vimagelistpulljob-v1beta1.kb.io",
            IMAGELISTPULLJOB_VALIDATING_PATH,
            Validating,
            "imagelistpulljobs",
            CREATE_UPDATE,
            post(validate_image_list_pull_job),
        ),
        kruise(
            "vnodeimage.kb.io",
            NODEIMAGE_VALIDATING_PATH,
            Validating,
            "nodeimages",
            CREATE_UPDATE,
            post(validate_node_image),
        ),
        protection(
            "vnamespace.kb.io",
            "/validate-namespace",
            "",
            &["v1"],
            "namespaces",
            post(validate_namespace),
        ),
        protection(
            "vcustomresourcedefinition.kb.io",
            "/validate-customresourcedefinition",
            "apiextensions.k8s.io",
            &["v1"],
            "customresourcedefinitions",
            post(validate_crd),
        ),
        protection(
            "vbuiltindeployment.kb.io",
            "/validate-apps-deployment",
            "apps",
            &["v1"],
            "deployments",
            post(validate_builtin_workload),
        ),
        protection(
            "vbuiltinreplicaset.kb.io",
            "/validate-apps-replicaset",
            "apps",
            &["v1"],
            "replicasets",
            post(validate_builtin_workload),
        ),
        protection(
            "vbuiltinstatefulset.kb.io",
            "/validate-apps-statefulset",
            "apps",
            &["v1"],
            "statefulsets",
            post(validate_builtin_workload),
        ),
        // Services and Ingresses honour `Always` only.
        protection(
            "vservice.kb.io",
            "/validate-service",
            "",
            &["v1"],
            "services",
            post(validate_always_protected),
        ),
        protection(
            "vingress.kb.io",
            "/validate-ingress",
            "networking.k8s.io",
            &["v1"],
            "ingresses",
            post(validate_always_protected),
        ),
        // Kruise Rollout: a template change of a workload a Rollout releases is held for it.
        held(
            "mcloneset.rollouts.kruise.io",
            "/mutate-apps-kruise-io-v1alpha1-cloneset",
            vec![kruise_rule("clonesets", &["UPDATE"])],
        ),
        held(
            "mdaemonset.rollouts.kruise.io",
            "/mutate-apps-kruise-io-v1alpha1-daemonset",
            vec![kruise_rule("daemonsets", &["UPDATE"])],
        ),
        held(
            "mnativedaemonset.rollouts.kruise.io",
            "/mutate-apps-v1-daemonset",
            vec![Rule {
                group: "apps",
                versions: &["v1"],
                resource: "daemonsets",
                operations: &["UPDATE"],
            }],
        ),
        held(
            "mdeployment.rollouts.kruise.io",
            "/mutate-apps-v1-deployment",
            vec![Rule {
                group: "apps",
                versions: &["v1"],
                resource: "deployments",
                operations: &["UPDATE"],
            }],
        ),
        held(
            "munifiedworkload.rollouts.kruise.io",
            "/mutate-unified-workload",
            vec![
                kruise_rule("statefulsets", &["UPDATE"]),
                Rule {
                    group: "apps",
                    versions: &["v1"],
                    resource: "statefulsets",
                    operations: &["UPDATE"],
                },
            ],
        ),
        WebhookRegistration::new(
            "vrollout.rollouts.kruise.io",
            "/validate-rollouts-kruise-io-rollout",
            Validating,
            vec![Rule {
                group: "rollouts.kruise.io",
                versions: &["v1alpha1", "v1beta1"],
                resource: "rollouts",
                operations: CREATE_UPDATE,
            }],
            post(validate_rollout),
        )
        .failure(Fail),
    ]
}

/// Holds a template change of a workload a Rollout releases
/// ([`kruise_core::rollouts::admission::hold_workload`]). Until the Rollouts are cached, it
/// refuses, so that no release slips through unheld.
async fn mutate_released_workload(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let response =
        match (&request.operation, &request.object, &request.old_object, &context.rollouts) {
            (Operation::Update, Some(new), Some(old), Some(rollouts))
                if request.sub_resource.is_none() =>
            {
                if !rollouts.is_synced() {
                    AdmissionResponse::deny(
                        &request,
                        500,
                        "the Rollouts are not cached yet; retry in a moment",
                    )
                } else {
                    let namespace = request.namespace.clone().unwrap_or_default();
                    let in_namespace: Vec<kruise_api::rollouts::v1beta1::Rollout> =
                        rollouts.in_namespace(&namespace).iter().map(|r| (**r).clone()).collect();
                    let replica_sets: Vec<k8s_openapi::api::apps::v1::ReplicaSet> =
                        match (&context.replica_sets, old.pointer("/metadata/uid")) {
                            (Some(cache), Some(Value::String(uid)))
                                if request.kind.name == "Deployment" =>
                            {
                                cache.controlled_by(uid).iter().map(|rs| (**rs).clone()).collect()
                            }
                            _ => Vec::new(),
                        };
                    match kruise_core::rollouts::admission::hold_workload(
                        old,
                        new,
                        &in_namespace,
                        &replica_sets,
                    ) {
                        Some(held) => AdmissionResponse::mutate(&request, new, &held),
                        None => AdmissionResponse::allow(&request),
                    }
                }
            }
            _ => AdmissionResponse::allow(&request),
        };
    review_response(&response)
}

/// A Rollout as stored (v1beta1), from either served version.
fn stored_rollout(
    request: &AdmissionRequest,
    object: &Value,
    what: &str,
) -> Result<kruise_api::rollouts::v1beta1::Rollout, String> {
    match request.kind.version.as_str() {
        "v1alpha1" => {
            let alpha: kruise_api::rollouts::v1alpha1::Rollout = typed(object, what)?;
            kruise_api::conversion::to_hub(alpha).map_err(|e| e.to_string())
        }
        _ => typed(object, what),
    }
}

/// Validates a Rollout ([`kruise_core::rollouts::admission::validate_rollout`]) against the
/// stored one and the others of its namespace.
async fn validate_rollout(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let Some(object) = request.object.as_ref() else {
        return review_response(&AdmissionResponse::allow(&request));
    };
    let checked = (|| {
        let rollout = stored_rollout(&request, object, "rollout")?;
        let old = match (&request.operation, &request.old_object) {
            (Operation::Update, Some(old)) => Some(stored_rollout(&request, old, "old rollout")?),
            _ => None,
        };
        let namespace = request.namespace.clone().unwrap_or_default();
        let (live, others) = match &context.rollouts {
            Some(cache) => (
                cache.get(&ObjectKey::new(namespace.as_str(), request.name.as_str())),
                cache.in_namespace(&namespace).iter().map(|r| (**r).clone()).collect(),
            ),
            None => (None, Vec::new()),
        };
        let errors = kruise_core::rollouts::admission::validate_rollout(
            &rollout,
            old.as_ref(),
            live.as_deref(),
            &others,
        );
        Ok::<_, String>(errors)
    })();
    let response = match checked {
        Ok(errors) if errors.is_empty() => AdmissionResponse::allow(&request),
        Ok(errors) => AdmissionResponse::deny(&request, 422, errors.to_string()),
        Err(message) => AdmissionResponse::deny(&request, 400, message),
    };
    review_response(&response)
}

fn review_response(response: &AdmissionResponse) -> Response {
    let body = response.to_review_bytes();
    (StatusCode::OK, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Decodes the body or answers 400 naming what is wrong.
fn decode(body: &[u8]) -> Result<AdmissionRequest, Box<Response>> {
    decode_review(body)
        .map_err(|err| Box::new((StatusCode::BAD_REQUEST, err.to_string()).into_response()))
}

/// Upstream's paths of the Advanced DaemonSet webhooks.
const DAEMONSET_MUTATING_PATH: &str = "/mutate-apps-kruise-io-daemonset";
const DAEMONSET_VALIDATING_PATH: &str = "/validate-apps-kruise-io-daemonset";

/// Answers a review of a kind's CREATE or UPDATE with `check(request, object)`; other
/// operations are allowed. An `Err((code, message))` refuses the request.
fn on_write(
    body: &[u8],
    check: impl FnOnce(&AdmissionRequest, &Value) -> Result<AdmissionResponse, (u16, String)>,
) -> Response {
    let request = match decode(body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let response = match (request.object.as_ref(), request.operation) {
        (Some(object), Operation::Create | Operation::Update) => check(&request, object)
            .unwrap_or_else(|(code, message)| AdmissionResponse::deny(&request, code, message)),
        _ => AdmissionResponse::allow(&request),
    };
    review_response(&response)
}

/// The old object of an UPDATE.
fn old_of(request: &AdmissionRequest) -> Option<&Value> {
    request.old_object.as_ref().filter(|_| request.operation == Operation::Update)
}

/// A defaulted v1beta1 object as JSON at the version the review sent it in.
fn at_sent_version<A>(request: &AdmissionRequest, hub: A::Hub) -> Result<Value, String>
where
    A: kruise_api::conversion::HubConvertible,
{
    match request.kind.version.as_str() {
        "v1alpha1" => {
            let alpha: A = kruise_api::conversion::from_hub(hub)
                .map_err(|err| format!("failed to convert v1beta1->v1alpha1: {err}"))?;
            serde_json::to_value(&alpha).map_err(|e| e.to_string())
        }
        _ => serde_json::to_value(&hub).map_err(|e| e.to_string()),
    }
}

/// `mdaemonset.kb.io`: upstream's defaults for either version, answered as a patch.
async fn mutate_daemonset(body: Bytes) -> Response {
    use kruise_core::daemonset::admission as ds_rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let defaulted = match request.kind.version.as_str() {
            "v1alpha1" => {
                let mut ds: v1alpha1::DaemonSet = typed(object, "daemonset").map_err(bad)?;
                ds_rules::default_daemonset_v1alpha1(&mut ds);
                serde_json::to_value(&ds).map_err(|e| bad(e.to_string()))?
            }
            _ => {
                let mut ds: v1beta1::DaemonSet = typed(object, "daemonset").map_err(bad)?;
                ds_rules::default_daemonset(&mut ds);
                serde_json::to_value(&ds).map_err(|e| bad(e.to_string()))?
            }
        };
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vdaemonset.kb.io`: upstream's rules for either version, on CREATE and UPDATE.
async fn validate_daemonset(body: Bytes) -> Response {
    use kruise_core::daemonset::admission as ds_rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let old = old_of(request);
        let errors = match request.kind.version.as_str() {
            "v1alpha1" => {
                let ds: v1alpha1::DaemonSet = typed(object, "daemonset").map_err(bad)?;
                match old {
                    Some(old) => {
                        let old: v1alpha1::DaemonSet = typed(old, "old daemonset").map_err(bad)?;
                        ds_rules::validate_daemonset_v1alpha1_update(&ds, &old)
                    }
                    None => ds_rules::validate_daemonset_v1alpha1(&ds),
                }
            }
            _ => {
                let ds: v1beta1::DaemonSet = typed(object, "daemonset").map_err(bad)?;
                match old {
                    Some(old) => {
                        let old: v1beta1::DaemonSet = typed(old, "old daemonset").map_err(bad)?;
                        ds_rules::validate_daemonset_update(&ds, &old)
                    }
                    None => ds_rules::validate_daemonset(&ds),
                }
            }
        };
        errors.into_result().map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// Upstream's paths of the SidecarSet webhooks.
const SIDECARSET_MUTATING_PATH: &str = "/mutate-apps-kruise-io-sidecarset";
const SIDECARSET_VALIDATING_PATH: &str = "/validate-apps-kruise-io-sidecarset";

/// Upstream's path of the WorkloadSpread validating webhook.
const WORKLOADSPREAD_VALIDATING_PATH: &str =
    kruise_core::workloadspread::admission::VALIDATING_WEBHOOK_PATH;

/// `vworkloadspread.kb.io`: upstream's rules, against the other WorkloadSpreads in the
/// namespace (a workload has at most one) and the custom-workload whitelist.
async fn validate_workloadspread(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::workloadspread::admission::{
        WorkloadSpreadContext, validate_workloadspread_create, validate_workloadspread_update,
    };
    let whitelist = match &context.workload_spreads {
        Some(spreads) => Some(spreads.whitelist().await),
        None => None,
    };
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let ws = hub_object::<v1alpha1::WorkloadSpread>(request, object, "workloadspread")
            .map_err(bad)?;
        let old = old_of(request)
            .map(|old| hub_object::<v1alpha1::WorkloadSpread>(request, old, "old workloadspread"))
            .transpose()
            .map_err(bad)?;
        let namespace = request.namespace.clone().unwrap_or_default();
        let mut others = match &context.workload_spreads {
            Some(spreads) => spreads.in_namespace(&namespace),
            None => Vec::new(),
        };
        others.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut ctx = WorkloadSpreadContext::new(&others);
        ctx.whitelist = whitelist.as_deref();
        let errors = match &old {
            Some(old) => validate_workloadspread_update(&ws, old, &ctx),
            None => validate_workloadspread_create(&ws, &ctx),
        };
        errors.into_result().map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// Upstream's paths of the daemon features' webhooks.
const CRR_MUTATING_PATH: &str = "/mutate-apps-kruise-io-containerrecreaterequest";
const IMAGEPULLJOB_MUTATING_PATH: &str = "/mutate-apps-kruise-io-imagepulljob";
const BROADCASTJOB_MUTATING_PATH: &str = "/mutate-apps-kruise-io-broadcastjob";
const IMAGEPULLJOB_VALIDATING_PATH: &str = "/validate-apps-kruise-io-imagepulljob";
const IMAGELISTPULLJOB_MUTATING_PATH: &str = "/mutate-apps-kruise-io-imagelistpulljob";
const IMAGELISTPULLJOB_VALIDATING_PATH: &str = "/validate-apps-kruise-io-imagelistpulljob";
const NODEIMAGE_MUTATING_PATH: &str = "/mutate-apps-kruise-io-nodeimage";
const NODEIMAGE_VALIDATING_PATH: &str = "/validate-apps-kruise-io-nodeimage";

/// `mcontainerrecreaterequest.kb.io`: on CREATE, upstream's checks and defaults against the
/// pod (read from the API server, so a pod that just started is seen with its container IDs)
/// and its node; on UPDATE, the spec and the pod-uid and node-name labels are immutable.
async fn mutate_crr(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    use kruise_core::containerrecreate::{default_crr, validate_crr_update};
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let Some(object) = request.object.clone() else {
        return review_response(&AdmissionResponse::allow(&request));
    };
    let crr = match hub_object::<v1alpha1::ContainerRecreateRequest>(&request, &object, "crr") {
        Ok(crr) => crr,
        Err(message) => return review_response(&AdmissionResponse::deny(&request, 400, message)),
    };
    let response = match request.operation {
        Operation::Create => {
            let namespace = request.namespace.clone().unwrap_or_default();
            let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
                kube::Api::namespaced(context.client.clone(), &namespace);
            let pod = match pods.get_opt(&crr.spec.pod_name).await {
                Ok(pod) => pod,
                // The API server did not answer: the cache is the next best view.
                Err(_) => context
                    .pods
                    .get(&ObjectKey::new(namespace.clone(), crr.spec.pod_name.clone()))
                    .and_then(|p| p.to_pod().ok()),
            };
            let node_name = pod.as_ref().and_then(|p| p.spec.as_ref()?.node_name.clone());
            let node = match (&context.nodes, node_name) {
                (Some(nodes), Some(name)) => nodes.get(&ObjectKey::new("", name)),
                _ => None,
            };
            match default_crr(&crr, pod.as_ref(), node.as_deref()) {
                Ok(defaulted) => {
                    match at_sent_version::<v1alpha1::ContainerRecreateRequest>(&request, defaulted)
                    {
                        Ok(value) => AdmissionResponse::mutate(&request, &object, &value),
                        Err(message) => AdmissionResponse::deny(&request, 400, message),
                    }
                }
                Err(e) => AdmissionResponse::deny(&request, 422, e.to_field_error().to_string()),
            }
        }
        Operation::Update => {
            let old = old_of(&request).map(|old| {
                hub_object::<v1alpha1::ContainerRecreateRequest>(&request, old, "old crr")
            });
            match old.transpose() {
                Ok(Some(old)) => match validate_crr_update(&crr, &old) {
                    Ok(()) => AdmissionResponse::allow(&request),
                    Err(e) => {
                        AdmissionResponse::deny(&request, 422, e.to_field_error().to_string())
                    }
                },
                Ok(None) => AdmissionResponse::allow(&request),
                Err(message) => AdmissionResponse::deny(&request, 400, message),
            }
        }
        _ => AdmissionResponse::allow(&request),
    };
    review_response(&response)
}

/// `mimagepulljob-v1beta1.kb.io`: upstream's defaults.
async fn mutate_image_pull_job(body: Bytes) -> Response {
    use kruise_core::imagepull::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut job =
            hub_object::<v1alpha1::ImagePullJob>(request, object, "imagepulljob").map_err(bad)?;
        rules::default_image_pull_job(&mut job);
        let defaulted = at_sent_version::<v1alpha1::ImagePullJob>(request, job).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `mbroadcastjob.kb.io`: upstream's defaults, at the version the job was sent in.
async fn mutate_broadcast_job(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::broadcastjob::admission as rules;
    let template = context.statefulset_gates.template_defaults();
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut job =
            hub_object::<v1alpha1::BroadcastJob>(request, object, "broadcastjob").map_err(bad)?;
        rules::default_broadcast_job(&mut job, template);
        let defaulted = at_sent_version::<v1alpha1::BroadcastJob>(request, job).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vbroadcastjob.kb.io`: upstream's rules.
async fn validate_broadcast_job(body: Bytes) -> Response {
    use kruise_core::broadcastjob::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let job =
            hub_object::<v1alpha1::BroadcastJob>(request, object, "broadcastjob").map_err(bad)?;
        rules::validate_broadcast_job(&job).into_result().map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `muniteddeployment.kb.io`: upstream's defaults, at the version the object was sent in.
async fn mutate_united_deployment(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::uniteddeployment::admission as rules;
    let template = context.statefulset_gates.template_defaults();
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut ud = hub_object::<v1alpha1::UnitedDeployment>(request, object, "uniteddeployment")
            .map_err(bad)?;
        let old = old_of(request)
            .map(|old| {
                hub_object::<v1alpha1::UnitedDeployment>(request, old, "old uniteddeployment")
            })
            .transpose()
            .map_err(bad)?;
        rules::default_united_deployment(&mut ud, old.as_ref(), template);
        let defaulted = at_sent_version::<v1alpha1::UnitedDeployment>(request, ud).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vuniteddeployment.kb.io`: upstream's rules; on update a subset keeps its nodes; on
/// delete, deletion protection.
async fn validate_united_deployment(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::uniteddeployment::admission as rules;
    if let Ok(request) = decode(&body)
        && request.operation == Operation::Delete
    {
        let old = request.old_object.clone().unwrap_or(Value::Null);
        return review_response(&protect_workload(
            &context,
            &request,
            ProtectedKind::UnitedDeployment,
            &old,
        ));
    }
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let ud = hub_object::<v1alpha1::UnitedDeployment>(request, object, "uniteddeployment")
            .map_err(bad)?;
        let old = old_of(request)
            .map(|old| {
                hub_object::<v1alpha1::UnitedDeployment>(request, old, "old uniteddeployment")
            })
            .transpose()
            .map_err(bad)?;
        rules::validate_united_deployment(&ud, old.as_ref())
            .into_result()
            .map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `madvancedcronjob.kb.io`: upstream's defaults, at the version the object was sent in; the
/// pod template is defaulted on create and on an update that changes it.
async fn mutate_advanced_cron_job(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::advancedcronjob::admission as rules;
    let template = context.statefulset_gates.template_defaults();
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut cron_job =
            hub_object::<v1alpha1::AdvancedCronJob>(request, object, "advancedcronjob")
                .map_err(bad)?;
        let old = old_of(request)
            .map(|old| hub_object::<v1alpha1::AdvancedCronJob>(request, old, "old advancedcronjob"))
            .transpose()
            .map_err(bad)?;
        rules::default_advanced_cron_job(&mut cron_job, old.as_ref(), template);
        let defaulted =
            at_sent_version::<v1alpha1::AdvancedCronJob>(request, cron_job).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vadvancedcronjob.kb.io`: upstream's rules, and on update the fields that may change.
async fn validate_advanced_cron_job(body: Bytes) -> Response {
    use kruise_core::advancedcronjob::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let cron_job = hub_object::<v1alpha1::AdvancedCronJob>(request, object, "advancedcronjob")
            .map_err(bad)?;
        let old = old_of(request)
            .map(|old| hub_object::<v1alpha1::AdvancedCronJob>(request, old, "old advancedcronjob"))
            .transpose()
            .map_err(bad)?;
        rules::validate_advanced_cron_job(&cron_job, old.as_ref())
            .into_result()
            .map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `vpodprobemarker.kb.io`: refused while `PodProbeMarkerGate` or `KruiseDaemon` is off, as
/// upstream's webhook refuses it; then upstream's rules (the selector immutable on update).
async fn validate_pod_probe_marker(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::podprobe::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let marker = typed::<v1alpha1::PodProbeMarker>(object, "podprobemarker").map_err(bad)?;
        if let Some(gate) = context.pod_probe_marker_off {
            return Err((403, format!("feature-gate {gate} is not enabled")));
        }
        let old = old_of(request)
            .map(|old| typed::<v1alpha1::PodProbeMarker>(old, "old podprobemarker"))
            .transpose()
            .map_err(bad)?;
        rules::validate_pod_probe_marker(&marker, old.as_ref())
            .into_result()
            .map_err(|e| (400, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `vpersistentpodstate.kb.io`: upstream's rules, against the other PersistentPodStates of
/// the namespace.
async fn validate_persistent_pod_state(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::persistentpodstate::admission as rules;
    use kruise_core::persistentpodstate::{CustomWorkloadWhitelist, is_stateful_set};
    // The custom-workload whitelist is read, as upstream reads it, at each write of a
    // PersistentPodState that targets something other than a StatefulSet.
    let custom_target = decode(&body).ok().and_then(|request| {
        let target = &request.object.as_ref()?.get("spec")?.get("targetRef")?;
        let field = |key: &str| target.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        Some(!is_stateful_set(field("apiVersion"), field("kind")))
    });
    let whitelist = if custom_target == Some(true) {
        match crate::configuration::read_pps_whitelist(&context.client, &context.manager_namespace)
            .await
        {
            Ok(whitelist) => whitelist,
            Err(message) => return on_write(&body, |_, _| Err((500, message))),
        }
    } else {
        CustomWorkloadWhitelist::default()
    };
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let state =
            hub_object::<v1alpha1::PersistentPodState>(request, object, "persistentpodstate")
                .map_err(bad)?;
        let old = old_of(request)
            .map(|old| {
                hub_object::<v1alpha1::PersistentPodState>(request, old, "old persistentpodstate")
            })
            .transpose()
            .map_err(bad)?;
        let namespace = request.namespace.clone().unwrap_or_default();
        let others = context
            .persistent_pod_states
            .as_ref()
            .map(|c| c.in_namespace(&namespace))
            .unwrap_or_default();
        let others: Vec<&kruise_api::apps::v1beta1::PersistentPodState> =
            others.iter().map(AsRef::as_ref).collect();
        rules::validate_persistent_pod_state(&state, old.as_ref(), &others, &whitelist)
            .into_result()
            .map_err(|e| (400, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `vresourcedistribution.kb.io`: refused while `ResourceDistributionGate` is off; upstream's
/// rules; then the resource is created with `dryRun=All` in the manager's namespace, so that
/// kube-apiserver validates its body as it will validate each copy.
async fn validate_resource_distribution(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::resourcedistribution::{Resource, admission as rules};
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let Some(object) = request
        .object
        .as_ref()
        .filter(|_| matches!(request.operation, Operation::Create | Operation::Update))
    else {
        return review_response(&AdmissionResponse::allow(&request));
    };
    if !context.resource_distribution {
        let message = "feature-gate ResourceDistributionGate is not enabled";
        return review_response(&AdmissionResponse::deny(&request, 403, message));
    }
    let checked =
        hub_object::<v1alpha1::ResourceDistribution>(&request, object, "resourcedistribution")
            .map_err(|message| (400, message))
            .and_then(|distribution| {
                let old = old_of(&request)
                    .map(|old| {
                        hub_object::<v1alpha1::ResourceDistribution>(
                            &request,
                            old,
                            "old resourcedistribution",
                        )
                    })
                    .transpose()
                    .map_err(|message| (400, message))?;
                rules::validate_resource_distribution(&distribution, old.as_ref())
                    .into_result()
                    .map_err(|e| (422, e.to_string()))?;
                Ok(distribution)
            });
    let distribution = match checked {
        Ok(distribution) => distribution,
        Err((code, message)) => {
            return review_response(&AdmissionResponse::deny(&request, code, message));
        }
    };
    let raw = &distribution.spec.resource.0;
    let Ok(resource) = Resource::parse(raw) else {
        return review_response(&AdmissionResponse::allow(&request));
    };
    let response = match dry_run_create(&context, &resource).await {
        Ok(()) => AdmissionResponse::allow(&request),
        Err(detail) => AdmissionResponse::deny(&request, 422, detail),
    };
    review_response(&response)
}

/// Creates `resource` with `dryRun=All` in the manager's namespace; what kube-apiserver
/// refused, worded as upstream's webhook words it.
async fn dry_run_create(
    context: &AdmissionContext,
    resource: &kruise_core::resourcedistribution::Resource<'_>,
) -> Result<(), String> {
    let kind = resource.kind.object_kind();
    let api_resource = kube::api::ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: kind.kind.into(),
        plural: kind.plural.into(),
    };
    let mut body = Value::Object(resource.body.clone());
    body["metadata"]["namespace"] = json!(context.manager_namespace);
    let object: kube::api::DynamicObject = match serde_json::from_value(body) {
        Ok(object) => object,
        Err(err) => {
            return Err(format!(
                "spec.resource: Invalid value: null: spec.resource is invalid: {err}"
            ));
        }
    };
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        context.client.clone(),
        &context.manager_namespace,
        &api_resource,
    );
    let params = kube::api::PostParams { dry_run: true, ..Default::default() };
    match api.create(&params, &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => Err(format!(
            "spec.resource: Invalid value: null: spec.resource is invalid: {}",
            status.message
        )),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            Err(format!("spec.resource: Forbidden: spec.resource is forbidden: {}", status.message))
        }
        Err(err) => Err(format!(
            "spec.resource: Internal error: failed to dry-run validate spec.resource: {err}"
        )),
    }
}

/// `vephemeraljobs.kb.io`: upstream's rules for the ephemeral containers (there is no
/// mutating webhook: nothing is defaulted).
async fn validate_ephemeral_job(body: Bytes) -> Response {
    use kruise_core::ephemeraljob::admission as rules;
    on_write(&body, |request, object| {
        let job: v1alpha1::EphemeralJob = typed(object, "ephemeraljob").map_err(|e| (400, e))?;
        rules::validate_ephemeral_job(&job).into_result().map_err(|e| (400, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `vimagepulljob-v1beta1.kb.io`: upstream's rules (`pullSecrets` immutable on update).
async fn validate_image_pull_job(body: Bytes) -> Response {
    use kruise_core::imagepull::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let job =
            hub_object::<v1alpha1::ImagePullJob>(request, object, "imagepulljob").map_err(bad)?;
        let old = old_of(request)
            .map(|old| hub_object::<v1alpha1::ImagePullJob>(request, old, "old imagepulljob"))
            .transpose()
            .map_err(bad)?;
        rules::validate_image_pull_job(&job, old.as_ref())
            .into_result()
            .map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `mimagelistpulljob-v1beta1.kb.io`: upstream's defaults.
async fn mutate_image_list_pull_job(body: Bytes) -> Response {
    use kruise_core::imagepull::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut job = hub_object::<v1alpha1::ImageListPullJob>(request, object, "imagelistpulljob")
            .map_err(bad)?;
        rules::default_image_list_pull_job(&mut job);
        let defaulted = at_sent_version::<v1alpha1::ImageListPullJob>(request, job).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vimagelistpulljob-v1beta1.kb.io`: upstream's rules.
async fn validate_image_list_pull_job(body: Bytes) -> Response {
    use kruise_core::imagepull::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let job = hub_object::<v1alpha1::ImageListPullJob>(request, object, "imagelistpulljob")
            .map_err(bad)?;
        rules::validate_image_list_pull_job(&job)
            .into_result()
            .map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// `mnodeimage.kb.io`: `createdAt` and the tag pull policy's defaults.
async fn mutate_node_image(body: Bytes) -> Response {
    use kruise_core::imagepull::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut ni =
            hub_object::<v1alpha1::NodeImage>(request, object, "nodeimage").map_err(bad)?;
        rules::default_node_image(&mut ni, jiff::Timestamp::now());
        let defaulted = at_sent_version::<v1alpha1::NodeImage>(request, ni).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vnodeimage.kb.io`: upstream's rules.
async fn validate_node_image(body: Bytes) -> Response {
    use kruise_core::imagepull::admission as rules;
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let ni = hub_object::<v1alpha1::NodeImage>(request, object, "nodeimage").map_err(bad)?;
        rules::validate_node_image(&ni).into_result().map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// An object of a kind served at v1alpha1 and v1beta1, as v1beta1: a v1alpha1 object is
/// converted, as upstream's handlers do.
fn hub_object<A>(request: &AdmissionRequest, object: &Value, what: &str) -> Result<A::Hub, String>
where
    A: kruise_api::conversion::HubConvertible,
{
    match request.kind.version.as_str() {
        "v1alpha1" => {
            let alpha: A = typed(object, what)?;
            kruise_api::conversion::to_hub(alpha)
                .map_err(|err| format!("failed to convert v1alpha1->v1beta1: {err}"))
        }
        _ => typed(object, what),
    }
}

/// `msidecarset.kb.io`: upstream's defaults and the hash annotations, answered as a patch at
/// the version the SidecarSet was sent in.
async fn mutate_sidecarset(body: Bytes) -> Response {
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let mut set =
            hub_object::<v1alpha1::SidecarSet>(request, object, "sidecarset").map_err(bad)?;
        kruise_core::sidecarset::admission::default_sidecar_set(&mut set);
        let defaulted = at_sent_version::<v1alpha1::SidecarSet>(request, set).map_err(bad)?;
        Ok(AdmissionResponse::mutate(request, object, &defaulted))
    })
}

/// `vsidecarset.kb.io`: upstream's rules, against the other SidecarSets in the cluster.
async fn validate_sidecarset(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    use kruise_core::sidecarset::admission::{SidecarSetContext, validate_sidecar_set};
    // Read at every SidecarSet write (they are rare), as upstream does: a change to the
    // ConfigMap applies to the next write.
    let whitelist = match patch_metadata_whitelist(&context).await {
        Ok(whitelist) => whitelist,
        Err(message) => {
            return on_write(&body, |_, _| Err((500, message)));
        }
    };
    on_write(&body, |request, object| {
        let bad = |message: String| (400, message);
        let set = hub_object::<v1alpha1::SidecarSet>(request, object, "sidecarset").map_err(bad)?;
        let old = old_of(request)
            .map(|old| hub_object::<v1alpha1::SidecarSet>(request, old, "old sidecarset"))
            .transpose()
            .map_err(bad)?;
        let (others, revisions) = match &context.sidecar_sets {
            Some(sets) => (sets.all(), sets.revisions_of(&request.name)),
            None => (Vec::new(), Vec::new()),
        };
        let ctx = SidecarSetContext {
            others: &others,
            revisions: &revisions,
            whitelist: whitelist.as_ref(),
            patch_metadata_defaults_allowed: context.patch_metadata_defaults_allowed,
        };
        validate_sidecar_set(&set, old.as_ref(), &ctx)
            .into_result()
            .map_err(|e| (422, e.to_string()))?;
        Ok(AdmissionResponse::allow(request))
    })
}

/// The `SidecarSet_PatchPodMetadata_WhiteList` entry of `kruise-configuration` in the
/// manager's namespace: `None` when the ConfigMap or the entry is missing; `Err` when it cannot
/// be read or does not parse (the write is then refused, naming the entry).
async fn patch_metadata_whitelist(
    context: &AdmissionContext,
) -> Result<Option<kruise_core::sidecarset::whitelist::PatchMetadataWhitelist>, String> {
    let data = crate::configuration::read(&context.client, &context.manager_namespace).await?;
    if data.is_empty() {
        return Ok(None);
    }
    kruise_core::sidecarset::whitelist::parse_patch_metadata_whitelist(&data)
        .map_err(|e| e.to_string())
}

/// The pod mutating webhook: at pod CREATE, every registered [`PodFeature`] offers its step,
/// and the chain ([`kruise_core::admission::pod_chain`]) runs them in upstream's order.
async fn mutate_pod(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    if !pod_caches_synced(&context) {
        let wait = async {
            for feature in &context.pod_features {
                feature.wait_synced().await;
            }
        };
        if tokio::time::timeout(POD_CACHE_WAIT, wait).await.is_err() {
            let waiting: Vec<&str> =
                context.pod_features.iter().filter(|f| !f.is_synced()).map(|f| f.name()).collect();
            // Not an AdmissionReview: the API server applies the webhook's failure policy.
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the pod webhook's caches have not loaded yet: {}", waiting.join(", ")),
            )
                .into_response();
        }
    }
    use crate::cached_pod::PodWithoutManagedFields as LeanPod;
    // The pod without managedFields (no step reads them, and the patch never touches them),
    // decoded with the review in one pass; when that fails, by the slower paths, which explain
    // what is off.
    // Boxed from the start: a Pod is 2.4 KiB, moved whole at every level it passes through
    // (and it is held across the handler's awaits).
    let boxed = |pod: LeanPod| Box::new(Pod::from(pod));
    let typed = |object: Option<Obj<'_>>| object.map(|o| o.typed::<LeanPod>("pod").map(boxed));
    let response = match fast_decode_as::<Box<LeanPod>, serde::de::IgnoredAny>(&body) {
        Some((request, pod, _)) => pod_create(&context, &request, pod.map(|p| Ok(boxed(*p)))).await,
        None => match fast_decode(&body) {
            Some((request, object, _)) => pod_create(&context, &request, typed(object)).await,
            None => {
                let request = match decode(&body) {
                    Ok(request) => request,
                    Err(response) => return *response,
                };
                pod_create(&context, &request, typed(request.object.as_ref().map(Obj::Value))).await
            }
        },
    };
    review_response(&response)
}

/// How long a pod creation waits for the caches its steps read to load: within the
/// webhooks' `timeoutSeconds` (5), so the API server gets this answer rather than a timeout.
const POD_CACHE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// True when every cache the pod creation steps read has loaded (a pod admitted before that
/// could miss its sidecar, budget annotation or subset).
fn pod_caches_synced(context: &AdmissionContext) -> bool {
    context.pod_features.iter().all(|feature| feature.is_synced())
}

/// The answer to a pod review at `/mutate-pod`; only a CREATE of the pod itself is mutated.
async fn pod_create(
    context: &AdmissionContext,
    request: &AdmissionRequest,
    pod: Option<Result<Box<Pod>, String>>,
) -> AdmissionResponse {
    use kruise_core::admission::pod_chain::PodChain;
    let pod = match (&request.operation, &request.sub_resource, pod) {
        (Operation::Create, None, Some(pod)) => pod,
        _ => return AdmissionResponse::allow(request),
    };
    let mut pod = match pod {
        Ok(pod) => pod,
        Err(message) => return AdmissionResponse::deny(request, 400, message),
    };
    // A pod created by generateName has its namespace only in the request. Set on both sides
    // of the diff, it is never part of the patch.
    if pod.metadata.namespace.is_none() {
        pod.metadata.namespace = request.namespace.clone();
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let mut steps = Vec::with_capacity(context.pod_features.len());
    for feature in &context.pod_features {
        match feature.on_create(&pod, &namespace, request.dry_run).await {
            Ok(Some(step)) => steps.push(step),
            Ok(None) => {}
            Err(message) => return AdmissionResponse::deny(request, 500, message),
        }
    }
    let steps: Vec<&dyn kruise_core::admission::pod_chain::PodMutator> =
        steps.iter().map(|step| step.as_ref() as _).collect();
    // The pod is freed when this returns, not in a task of its own: spawning one cost more
    // (waking another runtime thread) than freeing the pod saves.
    match PodChain::new(steps).run(&mut pod) {
        // The edit recorded what the steps changed: the patch holds only that.
        Ok(mut edit) => match edit.patch() {
            Ok(Some(ops)) => AdmissionResponse::patched(request, ops),
            Ok(None) => AdmissionResponse::allow(request),
            Err(e) => AdmissionResponse::deny(request, 500, e.to_string()),
        },
        Err(e) => AdmissionResponse::deny(request, 500, e.to_string()),
    }
}

/// The pod validating webhook: pod DELETE and UPDATE and `pods/eviction` CREATE, checked by
/// every registered [`PodFeature`] (PodUnavailableBudget's budget today); once all allow it,
/// each is told it was admitted (WorkloadSpread releases the pod's place in its subset then;
/// upstream releases first, so a refused deletion still released its place until the
/// controller noticed, while here only an admitted one does).
async fn validate_pod(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let decode_pod = |value: Option<&Value>| {
        use serde::Deserialize as _;
        value.and_then(|v| k8s_openapi::api::core::v1::Pod::deserialize(v).ok())
    };
    let namespace = request.namespace.clone().unwrap_or_default();
    let (old, new, evicted);
    let review = match (&request.operation, request.sub_resource.as_deref()) {
        (Operation::Delete, None) => {
            old = decode_pod(request.old_object.as_ref());
            old.as_ref().map(|pod| PodReview::Delete { pod })
        }
        (Operation::Update, None) => {
            old = decode_pod(request.old_object.as_ref());
            new = decode_pod(request.object.as_ref());
            old.as_ref().zip(new.as_ref()).map(|(old, new)| PodReview::Update { old, new })
        }
        (Operation::Create, Some("eviction")) => {
            let key = ObjectKey::new(namespace.clone(), request.name.clone());
            evicted = context.pods.get(&key).and_then(|p| p.to_pod().ok());
            evicted.as_ref().map(|pod| PodReview::Evict { pod })
        }
        _ => None,
    };
    let Some(review) = review else {
        return review_response(&AdmissionResponse::allow(&request));
    };
    // An eviction's own options may ask for a dry run.
    let dry_run = request.dry_run
        || request.object.as_ref().is_some_and(|o| {
            o.pointer("/deleteOptions/dryRun")
                .and_then(Value::as_array)
                .is_some_and(|d| !d.is_empty())
        });
    let username = request.username.as_deref().unwrap_or_default();
    for feature in &context.pod_features {
        if let PodVerdict::Deny(code, message) = feature.validate(review, dry_run, username).await {
            return review_response(&AdmissionResponse::deny(&request, code, message));
        }
    }
    if !dry_run {
        for feature in &context.pod_features {
            feature.admitted(review).await;
        }
    }
    review_response(&AdmissionResponse::allow(&request))
}

/// Decodes `value` as `T`, naming the failing field.
fn typed<T: DeserializeOwned>(value: &Value, what: &str) -> Result<T, String> {
    // Tracking the path costs an allocation per key, so it is done only to explain a failure.
    T::deserialize(value).or_else(|_| {
        serde_path_to_error::deserialize(value)
            .map_err(|err| format!("{what}: {}: {}", err.path(), err.inner()))
    })
}

/// An object in a review: already a `Value`, or still the raw JSON text (decoded straight into
/// typed form, without building a `Value` first).
#[derive(Clone, Copy)]
enum Obj<'a> {
    Value(&'a Value),
    Raw(&'a serde_json::value::RawValue),
}

impl Obj<'_> {
    fn typed<T: DeserializeOwned>(self, what: &str) -> Result<T, String> {
        match self {
            Obj::Value(value) => typed(value, what),
            Obj::Raw(raw) => serde_json::from_str(raw.get()).or_else(|_| {
                let mut de = serde_json::Deserializer::from_str(raw.get());
                serde_path_to_error::deserialize(&mut de)
                    .map_err(|err| format!("{what}: {}: {}", err.path(), err.inner()))
            }),
        }
    }

    fn value(self) -> Result<Value, String> {
        match self {
            Obj::Value(value) => Ok(value.clone()),
            Obj::Raw(raw) => serde_json::from_str(raw.get()).map_err(|e| e.to_string()),
        }
    }
}

/// The parts of a review the hot handlers need, with the objects as `O` and `P`: raw JSON
/// (decoded later, straight into their typed form), or the typed form itself.
#[derive(serde::Deserialize)]
#[serde(bound(deserialize = "O: serde::Deserialize<'de>, P: serde::Deserialize<'de>"))]
struct FastReview<'a, O, P> {
    #[serde(rename = "apiVersion")]
    api_version: std::borrow::Cow<'a, str>,
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    request: FastRequest<'a, O, P>,
}

#[derive(serde::Deserialize)]
#[serde(bound(deserialize = "O: serde::Deserialize<'de>, P: serde::Deserialize<'de>"))]
struct FastRequest<'a, O, P> {
    uid: String,
    kind: FastKind,
    operation: std::borrow::Cow<'a, str>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(rename = "subResource", default)]
    sub_resource: Option<String>,
    #[serde(rename = "dryRun", default)]
    dry_run: Option<bool>,
    #[serde(rename = "userInfo", default)]
    user_info: Option<FastUser>,
    #[serde(default)]
    object: Option<O>,
    #[serde(rename = "oldObject", default)]
    old_object: Option<P>,
}

#[derive(serde::Deserialize)]
struct FastKind {
    #[serde(default)]
    group: String,
    version: String,
    kind: String,
}

#[derive(serde::Deserialize)]
struct FastUser {
    #[serde(default)]
    username: Option<String>,
}

/// A review decoded for the hot handlers (CloneSet, pod creation): the request (without its
/// objects) and the objects as raw JSON, decoded later straight into their typed form. `None` when anything is off; [`decode`] then explains what.
fn fast_decode(body: &[u8]) -> Option<(AdmissionRequest, Option<Obj<'_>>, Option<Obj<'_>>)> {
    type Raw<'a> = &'a serde_json::value::RawValue;
    let (request, object, old_object) = fast_decode_as::<Raw<'_>, Raw<'_>>(body)?;
    let is_null = |raw: &Raw<'_>| raw.get().trim() == "null";
    let object = object.filter(|o| !is_null(o)).map(Obj::Raw);
    let old_object = old_object.filter(|o| !is_null(o)).map(Obj::Raw);
    Some((request, object, old_object))
}

/// [`fast_decode`] with the objects decoded as `O` and `P` in the same pass: `None` when
/// anything is off, a field of an object included.
fn fast_decode_as<'a, O, P>(body: &'a [u8]) -> Option<(AdmissionRequest, Option<O>, Option<P>)>
where
    O: serde::Deserialize<'a>,
    P: serde::Deserialize<'a>,
{
    let review: FastReview<'_, O, P> = serde_json::from_slice(body).ok()?;
    if review.kind != "AdmissionReview" {
        return None;
    }
    let version = match review.api_version.as_ref() {
        "admission.k8s.io/v1" => kruise_core::admission_review::ReviewVersion::V1,
        "admission.k8s.io/v1beta1" => kruise_core::admission_review::ReviewVersion::V1beta1,
        _ => return None,
    };
    let r = review.request;
    let operation = match r.operation.as_ref() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        _ => return None,
    };
    let request = AdmissionRequest {
        version,
        uid: r.uid,
        kind: kruise_core::admission_review::GroupVersionName {
            group: r.kind.group,
            version: r.kind.version,
            name: r.kind.kind,
        },
        resource: Default::default(),
        sub_resource: r.sub_resource,
        name: r.name,
        namespace: r.namespace,
        operation,
        object: None,
        old_object: None,
        dry_run: r.dry_run.unwrap_or(false),
        username: r.user_info.and_then(|u| u.username),
    };
    Some((request, r.object, r.old_object))
}

/// The served version a CloneSet review's object is in (`v1alpha1` or `v1beta1`).
fn cloneset_version(request: &AdmissionRequest) -> &str {
    request.kind.version.as_str()
}

/// Defaults a CloneSet as upstream's webhook does: decode into the typed form, apply the
/// defaults, and answer with the JSON patch from the object as sent to the defaulted typed form.
fn default_cloneset(
    request: &AdmissionRequest,
    object: Option<Obj<'_>>,
    old: Option<Obj<'_>>,
    template: kruise_core::admission::pod_defaults::TemplateDefaults,
) -> Result<AdmissionResponse, String> {
    // Templates are defaulted on create and on an update that changes them, unless
    // `TemplateNoDefaults`.
    let options = |changed: bool| {
        rules::DefaultingOptions::default()
            .with_template_defaults(changed && !template.skip)
            .with_pod_options(template.pod)
    };
    let (Some(object), true) =
        (object, matches!(request.operation, Operation::Create | Operation::Update))
    else {
        return Ok(AdmissionResponse::allow(request));
    };
    let old = old.filter(|_| request.operation == Operation::Update);
    let defaulted = match cloneset_version(request) {
        "v1alpha1" => {
            let mut cs: v1alpha1::CloneSet = object.typed("cloneset")?;
            let old = old.map(|o| o.typed::<v1alpha1::CloneSet>("old cloneset")).transpose()?;
            let changed = old.is_none_or(|old| old.spec.template != cs.spec.template);
            rules::default_cloneset_v1alpha1_with(&mut cs, options(changed));
            serde_json::to_value(&cs).map_err(|e| e.to_string())?
        }
        _ => {
            let mut cs: v1beta1::CloneSet = object.typed("cloneset")?;
            let old = old.map(|o| o.typed::<v1beta1::CloneSet>("old cloneset")).transpose()?;
            let changed = old.is_none_or(|old| old.spec.template != cs.spec.template);
            rules::default_cloneset_v1beta1_with(&mut cs, options(changed));
            serde_json::to_value(&cs).map_err(|e| e.to_string())?
        }
    };
    Ok(AdmissionResponse::mutate(request, &object.value()?, &defaulted))
}

async fn mutate_cloneset(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let template = context.statefulset_gates.template_defaults();
    let response = match fast_decode(&body) {
        Some((request, object, old)) => default_cloneset(&request, object, old, template)
            .unwrap_or_else(|message| AdmissionResponse::deny(&request, 400, message)),
        None => {
            let request = match decode(&body) {
                Ok(request) => request,
                Err(response) => return *response,
            };
            let object = request.object.as_ref().map(Obj::Value);
            let old = request.old_object.as_ref().map(Obj::Value);
            default_cloneset(&request, object, old, template)
                .unwrap_or_else(|message| AdmissionResponse::deny(&request, 400, message))
        }
    };
    review_response(&response)
}

/// Validates a CloneSet at the version it was written in.
fn validate_cloneset_object(
    context: &AdmissionContext,
    request: &AdmissionRequest,
    object: Obj<'_>,
    old: Option<Obj<'_>>,
) -> Result<(), String> {
    let old = old.filter(|_| request.operation == Operation::Update);
    let errors = match cloneset_version(request) {
        "v1alpha1" => {
            let cs: v1alpha1::CloneSet = object.typed("cloneset")?;
            let old = old.map(|o| o.typed::<v1alpha1::CloneSet>("old cloneset")).transpose()?;
            let namespace = request.namespace.clone().unwrap_or_default();
            let pods: rules::PodsByName = rules::pods_to_look_up(&cs, old.as_ref())
                .into_iter()
                .filter_map(|name| {
                    let pod = context.pods.get(&ObjectKey::new(namespace.clone(), name.clone()))?;
                    // Validation reads the pod's metadata and status only.
                    Some((name, pod.without_spec()))
                })
                .collect();
            match &old {
                Some(old) => rules::validate_cloneset_v1alpha1_update(&cs, old, &pods),
                None => rules::validate_cloneset_v1alpha1_create(&cs, &pods),
            }
        }
        _ => {
            let cs: v1beta1::CloneSet = object.typed("cloneset")?;
            match old.map(|o| o.typed::<v1beta1::CloneSet>("old cloneset")).transpose()? {
                Some(old) => rules::validate_cloneset_update(&cs, &old),
                None => rules::validate_cloneset_create(&cs),
            }
        }
    };
    errors.into_result().map_err(|errors| errors.to_string())
}

async fn validate_cloneset(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let slow;
    let (request, object, old) = match fast_decode(&body) {
        Some(decoded) => decoded,
        None => {
            slow = match decode(&body) {
                Ok(request) => request,
                Err(response) => return *response,
            };
            let object = slow.object.as_ref().map(Obj::Value);
            let old = slow.old_object.as_ref().map(Obj::Value);
            (slow.clone(), object, old)
        }
    };
    let response = match (request.operation, object) {
        (Operation::Create | Operation::Update, Some(object)) => {
            match validate_cloneset_object(&context, &request, object, old) {
                Ok(()) => AdmissionResponse::allow(&request),
                Err(message) => AdmissionResponse::deny(&request, 422, message),
            }
        }
        (Operation::Delete, _) => {
            let old = match old.map(Obj::value).transpose() {
                Ok(old) => old.unwrap_or(Value::Null),
                Err(message) => {
                    return review_response(&AdmissionResponse::deny(&request, 400, message));
                }
            };
            protect_workload(&context, &request, ProtectedKind::CloneSet, &old)
        }
        _ => AdmissionResponse::allow(&request),
    };
    review_response(&response)
}

/// An Advanced StatefulSet in a review, as v1beta1 (a v1alpha1 object is converted, as
/// upstream's handlers do).
fn statefulset_object(
    request: &AdmissionRequest,
    object: &Value,
    what: &str,
) -> Result<v1beta1::StatefulSet, String> {
    hub_object::<v1alpha1::StatefulSet>(request, object, what)
}

/// Defaults an Advanced StatefulSet as upstream's `mstatefulset.kb.io` does, answering with
/// the JSON patch from the object as sent to the defaulted one, at the version it was sent in.
fn default_statefulset(
    context: &AdmissionContext,
    request: &AdmissionRequest,
) -> Result<AdmissionResponse, String> {
    let (Some(object), true) = (
        request.object.as_ref(),
        matches!(request.operation, Operation::Create | Operation::Update),
    ) else {
        return Ok(AdmissionResponse::allow(request));
    };
    let mut set = statefulset_object(request, object, "statefulset")?;
    let old = match (&request.old_object, request.operation) {
        (Some(old), Operation::Update) => {
            Some(statefulset_object(request, old, "old statefulset")?)
        }
        _ => None,
    };
    sts_rules::default_statefulset(&mut set, old.as_ref(), context.statefulset_gates);
    let defaulted = at_sent_version::<v1alpha1::StatefulSet>(request, set)?;
    Ok(AdmissionResponse::mutate(request, object, &defaulted))
}

async fn mutate_statefulset(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let response = default_statefulset(&context, &request)
        .unwrap_or_else(|message| AdmissionResponse::deny(&request, 400, message));
    review_response(&response)
}

/// The StorageClasses a claim template change is checked against.
async fn storage_classes(
    client: &kube::Client,
) -> Result<std::collections::BTreeMap<String, sts_rules::StorageClassFacts>, String> {
    use k8s_openapi::api::storage::v1::StorageClass;
    let api: kube::Api<StorageClass> = kube::Api::all(client.clone());
    let list = api.list(&kube::api::ListParams::default()).await.map_err(|e| e.to_string())?;
    Ok(list
        .items
        .into_iter()
        .map(|class| {
            let default = class
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("storageclass.kubernetes.io/is-default-class"))
                .is_some_and(|v| v == "true");
            let created = class.metadata.creation_timestamp.as_ref().map_or(0, |t| t.0.as_second());
            let facts =
                sts_rules::StorageClassFacts::new(class.allow_volume_expansion, default, created);
            (class.metadata.name.unwrap_or_default(), facts)
        })
        .collect())
}

/// Validates an Advanced StatefulSet in upstream's stages: the spec, then the update rules,
/// then claim template changes (gate `StatefulSetAutoResizePVCGate`), then `InPlaceOnly`.
async fn validate_statefulset_object(
    context: &AdmissionContext,
    request: &AdmissionRequest,
    object: &Value,
) -> Result<(), (u16, String)> {
    let bad = |message: String| (400, message);
    let set = statefulset_object(request, object, "statefulset").map_err(bad)?;
    let old = match (&request.old_object, request.operation) {
        (Some(old), Operation::Update) => {
            Some(statefulset_object(request, old, "old statefulset").map_err(bad)?)
        }
        _ => None,
    };
    let Some(old) = old else {
        return sts_rules::validate_statefulset(&set)
            .into_result()
            .map_err(|e| (422, e.to_string()));
    };
    sts_rules::validate_statefulset_update(&set, &old)
        .into_result()
        .map_err(|e| (422, e.to_string()))?;
    if context.statefulset_gates.auto_resize_pvc
        && old.spec.volume_claim_update_strategy.type_
            == Some(v1beta1::VolumeClaimUpdateStrategyType::OnPodRollingUpdate)
    {
        let classes = storage_classes(&context.client)
            .await
            .map_err(|err| (500, format!("listing storage classes: {err}")))?;
        if let Some(err) = sts_rules::validate_volume_claim_template_update(&set, &old, &classes) {
            return Err((422, err.to_string()));
        }
    }
    sts_rules::validate_in_place_only(&set, &old).map_err(|message| (422, message))
}

async fn validate_statefulset(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let response = match (request.operation, request.object.as_ref()) {
        (Operation::Create | Operation::Update, Some(object)) => {
            match validate_statefulset_object(&context, &request, object).await {
                Ok(()) => AdmissionResponse::allow(&request),
                Err((code, message)) => AdmissionResponse::deny(&request, code, message),
            }
        }
        (Operation::Delete, _) => {
            let old = request.old_object.clone().unwrap_or(Value::Null);
            protect_workload(&context, &request, ProtectedKind::AdvancedStatefulSet, &old)
        }
        _ => AdmissionResponse::allow(&request),
    };
    review_response(&response)
}

/// The PodUnavailableBudgets of `namespace` (the v1beta1 view), sorted by name so that the
/// conflict reported is always the same one.
async fn budgets_in(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<kruise_api::policy::v1beta1::PodUnavailableBudget>, String> {
    let api: kube::Api<kruise_api::policy::v1beta1::PodUnavailableBudget> =
        kube::Api::namespaced(client.clone(), namespace);
    let mut items =
        api.list(&kube::api::ListParams::default()).await.map_err(|e| e.to_string())?.items;
    items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(items)
}

/// Validates a PodUnavailableBudget as upstream's `vpodunavailablebudget.kb.io` does, at the
/// version it was written in, against the other budgets of its namespace. Every refusal is a
/// 400, as upstream answers.
async fn validate_pub_object(
    context: &AdmissionContext,
    request: &AdmissionRequest,
    object: &Value,
) -> Result<(), String> {
    use kruise_api::policy::{v1alpha1 as alpha, v1beta1 as beta};
    if !context.pub_enabled {
        return Err("feature PodUnavailableBudget is invalid, please open via feature-gate(PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate)".into());
    }
    let old = request.old_object.as_ref().filter(|_| request.operation == Operation::Update);
    let namespace = request.namespace.clone().unwrap_or_default();
    let listed = budgets_in(&context.client, &namespace).await;
    let others = match &listed {
        Ok(items) => pub_rules::OtherBudgets::Listed(items),
        Err(reason) => pub_rules::OtherBudgets::Unavailable(reason),
    };
    let errors = match request.kind.version.as_str() {
        "v1beta1" => {
            let budget: beta::PodUnavailableBudget = typed(object, "podunavailablebudget")?;
            match old.map(|o| typed::<beta::PodUnavailableBudget>(o, "old podunavailablebudget")) {
                Some(old) => pub_rules::validate_pub_update(&budget, &old?, others),
                None => pub_rules::validate_pub_create(&budget, others),
            }
        }
        "v1alpha1" => {
            let budget: alpha::PodUnavailableBudget = typed(object, "podunavailablebudget")?;
            match old.map(|o| typed::<alpha::PodUnavailableBudget>(o, "old podunavailablebudget")) {
                Some(old) => pub_rules::validate_pub_v1alpha1_update(&budget, &old?, others),
                None => pub_rules::validate_pub_v1alpha1_create(&budget, others),
            }
        }
        other => return Err(format!("unsupported version: {other}")),
    };
    errors.into_result().map_err(|errors| errors.to_string())
}

async fn validate_pub(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let response = match (request.operation, request.object.as_ref()) {
        (Operation::Create | Operation::Update, Some(object)) => {
            match validate_pub_object(&context, &request, object).await {
                Ok(()) => AdmissionResponse::allow(&request),
                Err(message) => AdmissionResponse::deny(&request, 400, message),
            }
        }
        _ => AdmissionResponse::allow(&request),
    };
    review_response(&response)
}

fn protect(
    context: &AdmissionContext,
    request: &AdmissionRequest,
    kind: ProtectedKind,
    object: &Value,
    dependents: &Dependents,
) -> AdmissionResponse {
    if !context.deletion_protection {
        return AdmissionResponse::allow(request);
    }
    let meta: ObjectMeta = object
        .get("metadata")
        .and_then(|m| serde_json::from_value(m.clone()).ok())
        .unwrap_or_default();
    match protection::check_deletion(kind, &meta, dependents) {
        Ok(()) => AdmissionResponse::allow(request),
        Err(reason) => AdmissionResponse::deny(request, 403, reason.to_string()),
    }
}

fn has_protection_label(object: &Value) -> bool {
    object.pointer("/metadata/labels").and_then(|l| l.get(PROTECTION_LABEL)).is_some()
}

async fn validate_namespace(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let old = request.old_object.clone().unwrap_or(Value::Null);
    if request.operation != Operation::Delete || !has_protection_label(&old) {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let namespace = request.name.clone();
    let active_pods = context
        .pods
        .in_namespace(&namespace)
        .iter()
        .filter(|pod| kruise_core::pod::is_pod_active(&pod.without_spec()))
        .count();
    let bound_pvcs = context
        .pvcs
        .in_namespace(&namespace)
        .iter()
        .filter(|pvc| pvc.metadata.deletion_timestamp.is_none())
        .filter(|pvc| pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
        .count();
    let dependents = Dependents { active_pods, bound_pvcs, ..Dependents::default() };
    review_response(&protect(&context, &request, ProtectedKind::Namespace, &old, &dependents))
}

async fn validate_crd(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let old = request.old_object.clone().unwrap_or(Value::Null);
    if request.operation != Operation::Delete
        || !has_protection_label(&old)
        || !context.deletion_protection
    {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let active_custom_resources = match count_custom_objects(&context.client, &old).await {
        Ok(n) => n,
        Err(message) => {
            // Not knowing means not deleting a protected CRD.
            let reason = format!("cannot tell whether the CRD still has objects: {message}");
            return review_response(&AdmissionResponse::deny(&request, 403, reason));
        }
    };
    let dependents = Dependents {
        active_custom_resources,
        crd_cascading_enabled: context.crd_cascading,
        ..Dependents::default()
    };
    let kind = ProtectedKind::CustomResourceDefinition;
    review_response(&protect(&context, &request, kind, &old, &dependents))
}

/// How many live objects of the CRD exist, at its storage version.
async fn count_custom_objects(client: &kube::Client, crd: &Value) -> Result<usize, String> {
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
    let version = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v.get("storage") == Some(&json!(true)))
                .or_else(|| versions.first())
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let group = text("/spec/group");
    let resource = kube::api::ApiResource {
        api_version: if group.is_empty() { version.clone() } else { format!("{group}/{version}") },
        group,
        version,
        kind: text("/spec/names/kind"),
        plural: text("/spec/names/plural"),
    };
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(client.clone(), &resource);
    let list = api
        .list_metadata(&kube::api::ListParams::default())
        .await
        .map_err(|err| err.to_string())?;
    Ok(list.items.iter().filter(|o| o.metadata.deletion_timestamp.is_none()).count())
}

async fn validate_builtin_workload(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let old = request.old_object.clone().unwrap_or(Value::Null);
    if request.operation != Operation::Delete {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let kruise = request.resource.group == "apps.kruise.io";
    let kind = match (kruise, request.resource.name.as_str()) {
        (false, "deployments") => ProtectedKind::Deployment,
        (false, "replicasets") => ProtectedKind::ReplicaSet,
        (false, "statefulsets") => ProtectedKind::StatefulSet,
        _ => return review_response(&AdmissionResponse::allow(&request)),
    };
    review_response(&protect_workload(&context, &request, kind, &old))
}

/// Deletion protection of a Service or an Ingress: `Always` only, no dependents.
async fn validate_always_protected(
    State(context): State<Arc<AdmissionContext>>,
    body: Bytes,
) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let old = request.old_object.clone().unwrap_or(Value::Null);
    if request.operation != Operation::Delete || !has_protection_label(&old) {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let kind = match (request.resource.group.as_str(), request.resource.name.as_str()) {
        ("", "services") => ProtectedKind::Service,
        ("networking.k8s.io", "ingresses") => ProtectedKind::Ingress,
        _ => return review_response(&AdmissionResponse::allow(&request)),
    };
    review_response(&protect(&context, &request, kind, &old, &Dependents::default()))
}

/// Deletion protection of a workload `object`, whose dependents are its replicas (unset
/// replicas default to 1 for every protected workload kind).
fn protect_workload(
    context: &AdmissionContext,
    request: &AdmissionRequest,
    kind: ProtectedKind,
    object: &Value,
) -> AdmissionResponse {
    let replicas = object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let dependents = Dependents { replicas: i32::try_from(replicas).ok(), ..Dependents::default() };
    protect(context, request, kind, object, &dependents)
}

/// How the webhook configurations are generated.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WebhookPolicy {
    /// `Ignore` or `Fail` for the pod mutating webhook (default `Ignore`). The pod validating
    /// webhook always fails closed, for the pods a PodUnavailableBudget covers only.
    pub pod_failure_policy: String,
    /// `Ignore` or `Fail` for webhooks on Kruise's kinds and deletion protection (default
    /// `Fail`).
    pub kruise_failure_policy: String,
    /// Seconds the API server waits for an answer.
    pub timeout_seconds: i32,
    /// The manager's namespace, which pod webhooks never see.
    pub manager_namespace: String,
    /// The feature gates: a webhook whose gates are not all on is not registered
    /// (`PodWebhook`, `ResourcesDeletionProtection`, ...).
    pub gates: FeatureGates,
    /// Narrows the pod mutating webhook (`mpod.kb.io`) to the pods this selects: the others
    /// are created without the manager (no sidecar, no WorkloadSpread subset, no budget
    /// annotation). `None`: every pod outside the system namespaces.
    pub pod_object_selector: Option<LabelSelector>,
    /// Narrows the pod mutating webhook to the namespaces this selects, besides leaving out
    /// `kube-system` and the manager's namespace.
    pub pod_namespace_selector: Option<LabelSelector>,
    /// Which pods the pod mutating webhook sees (`--pod-webhook-scope`).
    pub pod_scope: PodWebhookScope,
}

/// Which pods the pod mutating webhook sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PodWebhookScope {
    /// Only the pods some SidecarSet, PodUnavailableBudget or WorkloadSpread selects, through
    /// entries generated from those objects ([`pod_scope`]), each with `failurePolicy: Fail`.
    /// Until the first entries are written, the catch-all `mpod.kb.io` stays.
    #[default]
    Selected,
    /// Every pod outside the system namespaces, through `mpod.kb.io` with
    /// `--pod-webhook-failure-policy`.
    All,
}

impl std::str::FromStr for PodWebhookScope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "selected" => Ok(Self::Selected),
            "all" => Ok(Self::All),
            other => Err(format!("--pod-webhook-scope: {other:?} is not selected or all")),
        }
    }
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        Self {
            pod_failure_policy: "Ignore".into(),
            kruise_failure_policy: "Fail".into(),
            timeout_seconds: 5,
            manager_namespace: crate::webhook::DEFAULT_NAMESPACE.into(),
            gates: FeatureGates::default(),
            pod_object_selector: None,
            pod_namespace_selector: None,
            pod_scope: PodWebhookScope::default(),
        }
    }
}

/// Why the webhook configurations could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigurationError {
    /// A failure policy is neither `Ignore` nor `Fail`.
    #[error("{flag}: {value:?} is not Ignore or Fail")]
    FailurePolicy {
        /// The flag.
        flag: &'static str,
        /// The value.
        value: String,
    },
    /// A pod webhook selector is not a valid label selector.
    #[error("{flag}: {message}")]
    Selector {
        /// The flag.
        flag: &'static str,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The API server could not list what the configuration depends on.
    #[error("listing {what}: {source}")]
    List {
        /// What was listed.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The API server refused the configuration.
    #[error("applying {name}: {source}")]
    Apply {
        /// The configuration's name.
        name: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

impl WebhookPolicy {
    /// Checks the failure policies.
    pub fn validate(&self) -> Result<(), ConfigurationError> {
        for (flag, value) in [
            ("--pod-webhook-failure-policy", &self.pod_failure_policy),
            ("--kruise-webhook-failure-policy", &self.kruise_failure_policy),
        ] {
            if value != "Ignore" && value != "Fail" {
                return Err(ConfigurationError::FailurePolicy { flag, value: value.clone() });
            }
        }
        for (flag, selector) in [
            ("--pod-webhook-object-selector", &self.pod_object_selector),
            ("--pod-webhook-namespace-selector", &self.pod_namespace_selector),
        ] {
            if let Some(selector) = selector {
                kruise_core::admission::meta::label_selector_as_selector(Some(selector))
                    .map_err(|message| ConfigurationError::Selector { flag, message })?;
            }
        }
        Ok(())
    }

    /// Parses a pod webhook selector given as JSON (`--pod-webhook-object-selector`,
    /// `--pod-webhook-namespace-selector`); an empty text is no selector.
    ///
    /// # Errors
    /// When the text is not a `LabelSelector`, naming the flag and the field.
    pub fn parse_selector(
        flag: &'static str,
        text: &str,
    ) -> Result<Option<LabelSelector>, ConfigurationError> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let selector: LabelSelector = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            ConfigurationError::Selector { flag, message: format!("{}: {}", e.path(), e.inner()) }
        })?;
        de.end().map_err(|e| ConfigurationError::Selector { flag, message: e.to_string() })?;
        Ok(Some(selector))
    }
}

/// A selector (as JSON) matching what both `base` and `more` match: the API server ANDs every
/// label and expression of one selector.
fn and_selectors(base: &Value, more: &LabelSelector) -> Value {
    let mut out = base.clone();
    for (key, value) in more.match_labels.iter().flatten() {
        out["matchLabels"][key] = json!(value);
    }
    for requirement in more.match_expressions.iter().flatten() {
        match out["matchExpressions"].as_array_mut() {
            Some(list) => list.push(json!(requirement)),
            None => out["matchExpressions"] = json!([requirement]),
        }
    }
    out
}

/// The mutating and validating webhook configurations of every registered webhook whose gates
/// (in `policy.gates`) are on, with `client_config(path)` giving each webhook's `clientConfig`
/// (URL or Service, and the caBundle).
///
/// With [`PodWebhookScope::Selected`] the catch-all `mpod.kb.io` is left out: the generated
/// entries ([`pod_scope`]) send the pods instead.
pub fn configurations(
    policy: &WebhookPolicy,
    client_config: impl Fn(&str) -> Value,
) -> (Value, Value) {
    configurations_with(policy, policy.pod_scope == PodWebhookScope::All, client_config)
}

/// The name of the catch-all pod mutating webhook.
pub const CATCH_ALL_POD_WEBHOOK: &str = "mpod.kb.io";

/// As [`configurations`], with the catch-all `mpod.kb.io` in or out.
fn configurations_with(
    policy: &WebhookPolicy,
    catch_all: bool,
    client_config: impl Fn(&str) -> Value,
) -> (Value, Value) {
    let (mut mutating, mut validating) = (Vec::new(), Vec::new());
    for registration in registry::enabled(registrations(), &policy.gates) {
        if registration.name == CATCH_ALL_POD_WEBHOOK && !catch_all {
            continue;
        }
        let entry = registration.to_json(policy, &client_config);
        match registration.type_ {
            WebhookType::Mutating => mutating.push(entry),
            WebhookType::Validating => validating.push(entry),
        }
    }
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIGURATION},
        "webhooks": mutating
    });
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIGURATION},
        "webhooks": validating
    });
    (mutating, validating)
}

/// Writes both configurations with server-side apply (the manager owns them). With
/// [`PodWebhookScope::Selected`], the catch-all `mpod.kb.io` is kept until a generated
/// configuration exists, so that pods are not created unmutated while the first entries are
/// being written.
pub async fn apply_configurations(
    client: &kube::Client,
    policy: &WebhookPolicy,
    client_config: impl Fn(&str) -> Value,
) -> Result<(), ConfigurationError> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube::api::{Patch, PatchParams};
    let catch_all = match policy.pod_scope {
        PodWebhookScope::All => true,
        PodWebhookScope::Selected => !pod_scope::generated_exist(client)
            .await
            .map_err(|source| ConfigurationError::List { what: pod_scope::LISTING, source })?,
    };
    let (mutating, validating) = configurations_with(policy, catch_all, client_config);
    let params = PatchParams::apply(crate::applier::FIELD_MANAGER).force();
    let api: kube::Api<MutatingWebhookConfiguration> = kube::Api::all(client.clone());
    api.patch(MUTATING_CONFIGURATION, &params, &Patch::Apply(&mutating))
        .await
        .map_err(|source| ConfigurationError::Apply { name: MUTATING_CONFIGURATION, source })?;
    let api: kube::Api<ValidatingWebhookConfiguration> = kube::Api::all(client.clone());
    api.patch(VALIDATING_CONFIGURATION, &params, &Patch::Apply(&validating))
        .await
        .map_err(|source| ConfigurationError::Apply { name: VALIDATING_CONFIGURATION, source })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configurations with the catch-all pod webhook (`--pod-webhook-scope=all`).
    fn configs() -> (Value, Value) {
        let gates = FeatureGates::parse("ResourcesDeletionProtection=true").expect("gates");
        let policy =
            WebhookPolicy { gates, pod_scope: PodWebhookScope::All, ..WebhookPolicy::default() };
        configurations(
            &policy,
            |path| json!({"url": format!("https://127.0.0.1:9876{path}"), "caBundle": "Q0E="}),
        )
    }

    #[test]
    fn pod_webhooks_skip_system_namespaces_and_only_covered_pods_wait_for_the_manager() {
        let (mutating, validating) = configs();
        for webhook in [&mutating["webhooks"][0], &validating["webhooks"][0]] {
            let values = &webhook["namespaceSelector"]["matchExpressions"][0]["values"];
            assert_eq!(values, &json!(["kube-system", "kruise-system"]));
            assert!(webhook["timeoutSeconds"].as_i64().is_some_and(|t| t <= 10));
        }
        // Pod creation never waits for a manager that is down.
        assert_eq!(mutating["webhooks"][0]["failurePolicy"], "Ignore");
        // The validating webhook fails closed, for the pods a budget covers only.
        let vpod = &validating["webhooks"][0];
        assert_eq!(vpod["failurePolicy"], "Fail");
        let selected = &vpod["objectSelector"]["matchExpressions"][0];
        assert_eq!(selected["key"], crate::pub_budget::COVERED_LABEL);
        assert_eq!(selected["operator"], "Exists");
        // Evictions (which carry no pod labels) have a webhook of their own, with the pod
        // failure policy.
        let eviction = &validating["webhooks"][1];
        assert_eq!(eviction["name"], "vpodeviction.kb.io");
        assert_eq!(eviction["rules"][0]["resources"], json!(["pods/eviction"]));
        assert_eq!(eviction["failurePolicy"], "Ignore");
        assert!(eviction.get("objectSelector").is_none());
    }

    #[test]
    fn a_pod_review_decodes_in_one_pass_and_a_bad_pod_is_explained_by_the_slow_path() {
        use crate::cached_pod::PodWithoutManagedFields as LeanPod;
        let review = |pod: Value| {
            serde_json::to_vec(&json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "namespace": "default", "operation": "CREATE", "object": pod,
                    "oldObject": null, "dryRun": false}
            }))
            .expect("json")
        };
        let good = review(json!({
            "metadata": {"name": "web-0", "labels": {"app": "web"},
                "managedFields": [{"manager": "kubectl"}]},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]}
        }));
        let (request, pod, old) =
            fast_decode_as::<LeanPod, serde::de::IgnoredAny>(&good).expect("one pass");
        assert_eq!((request.uid.as_str(), request.operation), ("u-1", Operation::Create));
        assert_eq!(request.namespace.as_deref(), Some("default"));
        assert!(old.is_none(), "a null oldObject is no object");
        let pod = Pod::from(pod.expect("the pod"));
        assert_eq!(pod.metadata.name.as_deref(), Some("web-0"));
        assert_eq!(pod.metadata.managed_fields, None);
        assert_eq!(pod.spec.expect("spec").containers[0].image.as_deref(), Some("nginx"));

        // A container's name of the wrong type: the one pass fails, and the raw path names
        // the field.
        let bad = review(json!({"spec": {"containers": [{"name": 7}]}}));
        assert!(fast_decode_as::<LeanPod, serde::de::IgnoredAny>(&bad).is_none());
        let (_, object, _) = fast_decode(&bad).expect("the review itself is fine");
        let err = object.expect("an object").typed::<LeanPod>("pod").err().expect("refused");
        assert!(err.starts_with("pod: spec.containers[0].name: "), "{err}");
    }

    /// A context whose client answers nothing: the routes are built, and a handler that
    /// decodes first answers a bad review without reaching the cluster.
    fn offline_context() -> AdmissionContext {
        let service = tower::service_fn(|_: http::Request<kube::client::Body>| async {
            Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("offline"))
        });
        AdmissionContext {
            pods: Cache::new(),
            pvcs: Cache::new(),
            client: kube::Client::new(service, "default"),
            deletion_protection: true,
            crd_cascading: false,
            statefulset_gates: Default::default(),
            pub_enabled: true,
            pod_features: Vec::new(),
            sidecar_sets: None,
            workload_spreads: None,
            nodes: None,
            manager_namespace: crate::webhook::DEFAULT_NAMESPACE.into(),
            patch_metadata_defaults_allowed: false,
            resource_distribution: true,
            pod_probe_marker_off: Some("PodProbeMarkerGate"),
            persistent_pod_states: None,
            rollouts: None,
            replica_sets: None,
        }
    }

    /// The status the routes answer a POST of a review that does not decode at `path`.
    async fn status_at(router: &axum::Router, path: &str) -> StatusCode {
        use tower::ServiceExt as _;
        let request = http::Request::post(path)
            .header("content-type", "application/json")
            .body(axum::body::Body::from("{}"))
            .expect("request");
        router.clone().oneshot(request).await.expect("infallible").status()
    }

    fn configured_paths(configs: &(Value, Value)) -> std::collections::BTreeSet<String> {
        [&configs.0, &configs.1]
            .into_iter()
            .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
            .map(|w| w["clientConfig"]["service"]["path"].as_str().expect("a path").to_owned())
            .collect()
    }

    #[tokio::test]
    async fn the_configurations_register_exactly_the_routes_served() {
        let by_path =
            |path: &str| json!({"service": {"name": "s", "namespace": "n", "path": path}});
        let all_paths: std::collections::BTreeSet<String> =
            registrations().iter().map(|r| r.path.to_owned()).collect();
        for flags in [
            "ResourcesDeletionProtection=true",
            "",
            "PodWebhook=false",
            "PodWebhook=false,ResourcesDeletionProtection=true",
        ] {
            let gates = FeatureGates::parse(flags).expect("gates");
            let router = routes(offline_context(), &gates);
            for scope in [PodWebhookScope::All, PodWebhookScope::Selected] {
                let policy = WebhookPolicy {
                    gates: gates.clone(),
                    pod_scope: scope,
                    ..WebhookPolicy::default()
                };
                let mut configured = configured_paths(&configurations(&policy, by_path));
                // With `selected`, `/mutate-pod` is called by the generated entries.
                if scope == PodWebhookScope::Selected && gates.enabled("PodWebhook") {
                    assert!(!configured.contains(pod_scope::PATH), "{flags}");
                    configured.insert(pod_scope::PATH.to_owned());
                }
                for path in &all_paths {
                    let status = status_at(&router, path).await;
                    if configured.contains(path) {
                        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} served ({flags})");
                    } else {
                        assert_eq!(status, StatusCode::NOT_FOUND, "{path} not served ({flags})");
                    }
                }
                assert!(!configured.is_empty());
            }
        }
    }

    #[test]
    fn pod_webhook_off_registers_no_pod_webhook() {
        let gates = FeatureGates::parse("PodWebhook=false,ResourcesDeletionProtection=true")
            .expect("gates");
        let (mutating, validating) =
            configurations(&WebhookPolicy { gates, ..WebhookPolicy::default() }, |_| json!({}));
        let names: Vec<String> = [&mutating, &validating]
            .into_iter()
            .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
            .map(|w| w["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        for pod in ["mpod.kb.io", "vpod.kb.io", "vpodeviction.kb.io", "vpodworkloadspread.kb.io"] {
            assert!(!names.iter().any(|n| n == pod), "{pod} registered: {names:?}");
        }
        // The others stay.
        assert!(names.iter().any(|n| n == "vcloneset.kb.io"));
        assert!(names.iter().any(|n| n == "vservice.kb.io"));
        // And deletion protection off removes its webhooks.
        let (_, validating) = configurations(&WebhookPolicy::default(), |_| json!({}));
        assert!(
            !validating.to_string().contains("vnamespace.kb.io"),
            "ResourcesDeletionProtection is off by default"
        );
    }

    #[test]
    fn protection_webhooks_select_labelled_objects_only() {
        let (_, validating) = configs();
        let protected: Vec<&Value> = validating["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .filter(|w| w["objectSelector"]["matchExpressions"][0]["key"] == PROTECTION_LABEL)
            .collect();
        let names: Vec<&str> = protected.iter().filter_map(|w| w["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "vnamespace.kb.io",
                "vcustomresourcedefinition.kb.io",
                "vbuiltindeployment.kb.io",
                "vbuiltinreplicaset.kb.io",
                "vbuiltinstatefulset.kb.io",
                "vservice.kb.io",
                "vingress.kb.io",
            ]
        );
        for webhook in protected {
            assert_eq!(webhook["objectSelector"]["matchExpressions"][0]["key"], PROTECTION_LABEL);
            assert_eq!(webhook["rules"][0]["operations"], json!(["DELETE"]));
            assert_eq!(webhook["failurePolicy"], "Fail");
        }
    }

    #[test]
    fn pod_unavailable_budgets_are_validated_on_create_and_update_in_both_versions() {
        let (_, validating) = configs();
        let webhook = validating["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .find(|w| w["name"] == "vpodunavailablebudget.kb.io")
            .expect("the PodUnavailableBudget webhook");
        assert_eq!(
            webhook["clientConfig"]["url"],
            "https://127.0.0.1:9876/validate-policy-kruise-io-podunavailablebudget"
        );
        let rule = &webhook["rules"][0];
        assert_eq!(rule["apiGroups"], json!(["policy.kruise.io"]));
        assert_eq!(rule["apiVersions"], json!(["v1alpha1", "v1beta1"]));
        assert_eq!(rule["resources"], json!(["podunavailablebudgets"]));
        assert_eq!(rule["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(webhook["failurePolicy"], "Fail");
    }

    #[test]
    fn daemon_feature_webhooks_are_registered_at_upstreams_paths() {
        let (mutating, validating) = configs();
        let find = |config: &Value, name: &str| {
            config["webhooks"]
                .as_array()
                .expect("webhooks")
                .iter()
                .find(|w| w["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{name} registered"))
        };
        for (config, name, path, resource) in [
            (
                &mutating,
                "mcontainerrecreaterequest.kb.io",
                CRR_MUTATING_PATH,
                "containerrecreaterequests",
            ),
            (&mutating, "mimagepulljob-v1beta1.kb.io", IMAGEPULLJOB_MUTATING_PATH, "imagepulljobs"),
            (
                &validating,
                "vimagepulljob-v1beta1.kb.io",
                IMAGEPULLJOB_VALIDATING_PATH,
                "imagepulljobs",
            ),
            (
                &mutating,
                "mimagelistpulljob-v1beta1.kb.io",
                IMAGELISTPULLJOB_MUTATING_PATH,
                "imagelistpulljobs",
            ),
            (
                &validating,
                "vimagelistpulljob-v1beta1.kb.io",
                IMAGELISTPULLJOB_VALIDATING_PATH,
                "imagelistpulljobs",
            ),
            (&mutating, "mnodeimage.kb.io", NODEIMAGE_MUTATING_PATH, "nodeimages"),
            (&validating, "vnodeimage.kb.io", NODEIMAGE_VALIDATING_PATH, "nodeimages"),
        ] {
            let webhook = find(config, name);
            assert_eq!(webhook["clientConfig"]["url"], format!("https://127.0.0.1:9876{path}"));
            let rule = &webhook["rules"][0];
            assert_eq!(rule["resources"], json!([resource]), "{name}");
            assert_eq!(rule["apiVersions"], json!(["v1alpha1", "v1beta1"]), "{name}");
            assert_eq!(rule["operations"], json!(["CREATE", "UPDATE"]), "{name}");
            assert_eq!(webhook["failurePolicy"], "Fail", "{name}");
        }
    }

    #[test]
    fn failure_policies_are_checked() {
        let policy =
            WebhookPolicy { pod_failure_policy: "Sometimes".into(), ..WebhookPolicy::default() };
        let err = policy.validate().expect_err("invalid");
        assert_eq!(
            err.to_string(),
            r#"--pod-webhook-failure-policy: "Sometimes" is not Ignore or Fail"#
        );
    }

    #[test]
    fn pod_webhook_selectors_narrow_only_the_pod_mutating_webhook() {
        let object = WebhookPolicy::parse_selector("--pod-webhook-object-selector", "")
            .expect("empty is none");
        assert!(object.is_none());
        let object = WebhookPolicy::parse_selector(
            "--pod-webhook-object-selector",
            r#"{"matchLabels": {"sidecar": "on"}}"#,
        )
        .expect("a selector");
        let namespaces = WebhookPolicy::parse_selector(
            "--pod-webhook-namespace-selector",
            r#"{"matchLabels": {"team": "shop"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["dev"]}]}"#,
        )
        .expect("a selector");
        let policy = WebhookPolicy {
            pod_object_selector: object,
            pod_namespace_selector: namespaces,
            pod_scope: PodWebhookScope::All,
            ..WebhookPolicy::default()
        };
        policy.validate().expect("valid");
        let (mutating, validating) = configurations(&policy, |_| json!({}));
        let mpod = &mutating["webhooks"][0];
        assert_eq!(mpod["name"], "mpod.kb.io");
        assert_eq!(mpod["objectSelector"], json!({"matchLabels": {"sidecar": "on"}}));
        assert_eq!(
            mpod["namespaceSelector"],
            json!({
                "matchLabels": {"team": "shop"},
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                        "values": ["kube-system", crate::webhook::DEFAULT_NAMESPACE]},
                    {"key": "tier", "operator": "NotIn", "values": ["dev"]},
                ]
            })
        );
        // The validating pod webhooks keep their own selectors.
        let (_, unchanged) = configurations(&WebhookPolicy::default(), |_| json!({}));
        assert_eq!(validating, unchanged);

        // Bad selectors are refused, naming the flag and the field.
        let err = WebhookPolicy::parse_selector(
            "--pod-webhook-object-selector",
            r#"{"matchLabels": {"sidecar": 1}}"#,
        )
        .expect_err("not a string");
        assert!(
            err.to_string().starts_with("--pod-webhook-object-selector: matchLabels.sidecar: "),
            "{err}"
        );
        let bad_operator = WebhookPolicy {
            pod_namespace_selector: WebhookPolicy::parse_selector(
                "--pod-webhook-namespace-selector",
                r#"{"matchExpressions": [{"key": "tier", "operator": "Near"}]}"#,
            )
            .expect("parses"),
            ..WebhookPolicy::default()
        };
        let err = bad_operator.validate().expect_err("unknown operator");
        assert!(err.to_string().starts_with("--pod-webhook-namespace-selector: "), "{err}");
        assert!(err.to_string().contains("Near"), "{err}");
    }
}
