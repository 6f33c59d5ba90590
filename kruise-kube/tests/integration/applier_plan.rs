//! Every action of the plan vocabulary carried out by the applier against the embedded API
//! server, and what the server holds afterwards.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kruise_api::apps::v1beta1::{CloneSet, CloneSetStatus, ImagePullJob};
use kruise_core::plan::{
    Action, DeletePurpose, Event, EventType, Guard, ObjectKind, Patch, Plan, PodPatchPurpose,
    PodStatusPurpose, Subresource, Target,
};
use kruise_kube::applier::{Applier, ApplyError, PlanOwner};
use kruise_kube::controller::ReconcileError;
use kruise_kube::leader::LeaderHandle;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NS: &str = "default";

const CONFIG_MAP: ObjectKind = ObjectKind {
    group: "",
    version: "v1",
    kind: "ConfigMap",
    plural: "configmaps",
    namespaced: true,
};

async fn client(
    server: &kruise_sim::ServerHandle,
) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kruise_kube::client::client_from_config(config, 0.0, 0)?)
}

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

fn pod(name: &str) -> Pod {
    object(json!({
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": "100m"}}}]}
    }))
}

fn pvc(name: &str) -> PersistentVolumeClaim {
    object(json!({
        "metadata": {"name": name, "namespace": NS},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))
}

fn revision(name: &str) -> ControllerRevision {
    object(json!({"metadata": {"name": name, "namespace": NS}, "revision": 1}))
}

fn config_map(name: &str) -> ConfigMap {
    object(json!({"metadata": {"name": name, "namespace": NS}, "data": {"k": "v"}}))
}

/// Which action each is, so that the plan below provably holds every one: a variant added to
/// the vocabulary fails to compile here until the test carries it out too.
fn index(action: &Action) -> usize {
    match action {
        Action::CreateRevision { .. } => 0,
        Action::PatchRevision { .. } => 1,
        Action::DeleteRevision { .. } => 2,
        Action::CreatePvc { .. } => 3,
        Action::PatchPvc { .. } => 4,
        Action::DeletePvc { .. } => 5,
        Action::CreatePod { .. } => 6,
        Action::PatchPod { .. } => 7,
        Action::PatchPodStatus { .. } => 8,
        Action::PatchPodResize { .. } => 9,
        Action::DeletePod { .. } => 10,
        Action::CreateImagePullJob { .. } => 11,
        Action::DeleteImagePullJob { .. } => 12,
        Action::PatchWorkload { .. } => 13,
        Action::CreateObject { .. } => 14,
        Action::PatchObject { .. } => 15,
        Action::DeleteObject { .. } => 16,
        Action::EvictPod { .. } => 17,
    }
}
const ACTION_KINDS: usize = 18;

#[tokio::test]
async fn a_plan_with_every_action_runs_through_the_applier() -> TestResult {
    let config = kruise_sim::Config { install_kruise_crds: true, ..Default::default() };
    let server = kruise_sim::Server::start(config).await?;
    let client = client(&server).await?;
    let post = PostParams::default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NS);
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), NS);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let jobs: Api<ImagePullJob> = Api::namespaced(client.clone(), NS);
    let clonesets: Api<CloneSet> = Api::namespaced(client.clone(), NS);

    // What the plan changes or removes.
    let web: CloneSet = clonesets
        .create(
            &post,
            &object(json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
            })),
        )
        .await?;
    for name in ["patched", "status", "resized", "deleted", "evicted", "generic"] {
        pods.create(&post, &pod(name)).await?;
    }
    let deleted_uid = pods.get("deleted").await?.metadata.uid.unwrap_or_default();
    let evicted_uid = pods.get("evicted").await?.metadata.uid.unwrap_or_default();
    for name in ["patched-claim", "deleted-claim"] {
        pvcs.create(&post, &pvc(name)).await?;
    }
    let claim_uid = pvcs.get("deleted-claim").await?.metadata.uid.unwrap_or_default();
    for name in ["r-patched", "r-deleted"] {
        revisions.create(&post, &revision(name)).await?;
    }
    for name in ["cm-patched", "cm-deleted"] {
        config_maps.create(&post, &config_map(name)).await?;
    }
    let job = |name: &str| -> ImagePullJob {
        object(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"image": "nginx:1.27", "completionPolicy": {"type": "Always"}}
        }))
    };
    jobs.create(&post, &job("j-deleted")).await?;
    let cm_version = config_maps.get("cm-patched").await?.metadata.resource_version;

    let labels = |key: &str| Patch::merge(json!({"metadata": {"labels": {key: "yes"}}}));
    let target = |kind, name: &str| Target::new(kind, Some(NS), name);
    let actions = vec![
        Action::CreateRevision { revision: Box::new(revision("r-created")) },
        Action::PatchRevision { name: "r-patched".into(), patch: labels("patched") },
        Action::DeleteRevision { name: "r-deleted".into() },
        Action::CreatePvc { pvc: Box::new(pvc("created-claim")) },
        Action::PatchPvc { name: "patched-claim".into(), patch: labels("patched") },
        Action::DeletePvc { name: "deleted-claim".into(), uid: claim_uid },
        Action::CreatePod { pod: pod("created").into() },
        Action::PatchPod {
            namespace: None,
            name: "patched".into(),
            uid: String::new(),
            purpose: PodPatchPurpose::Lifecycle,
            patch: labels("patched"),
        },
        Action::PatchPodStatus {
            namespace: Some(NS.into()),
            name: "status".into(),
            uid: String::new(),
            purpose: PodStatusPurpose::KruisePodReady,
            patch: Patch::strategic(json!({"status": {"conditions": [
                {"type": "KruisePodReady", "status": "True"}
            ]}})),
        },
        Action::PatchPodResize {
            namespace: None,
            name: "resized".into(),
            uid: String::new(),
            patch: Patch::strategic(json!({"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "200m"}}}
            ]}})),
        },
        Action::DeletePod {
            name: "deleted".into(),
            uid: deleted_uid,
            purpose: DeletePurpose::ScaleIn,
        },
        Action::CreateImagePullJob { job: Box::new(job("j-created")) },
        Action::DeleteImagePullJob { name: "j-deleted".into() },
        Action::PatchWorkload { patch: labels("patched") },
        Action::CreateObject {
            target: target(CONFIG_MAP, "cm-created"),
            body: Arc::new(serde_json::to_value(config_map("cm-created"))?),
        },
        Action::PatchObject {
            target: target(CONFIG_MAP, "cm-patched")
                .guarded(cm_version.map_or(Guard::None, Guard::ResourceVersion)),
            subresource: Subresource::Main,
            patch: labels("patched"),
        },
        Action::DeleteObject { target: target(CONFIG_MAP, "cm-deleted") },
        Action::EvictPod {
            target: target(ObjectKind::POD, "evicted").guarded(Guard::Uid(evicted_uid)),
        },
    ];
    let mut seen = [false; ACTION_KINDS];
    for action in &actions {
        seen[index(action)] = true;
    }
    assert!(seen.iter().all(|s| *s), "the plan holds every action");

    let status = CloneSetStatus { observed_generation: 1, replicas: 0, ..Default::default() };
    let plan = Plan {
        actions,
        status: Some(status),
        events: vec![Event {
            type_: EventType::Normal,
            reason: "SuccessfulCreate".into(),
            message: "created pod created".into(),
            after_action: Some(6),
        }],
        ..Plan::empty(Default::default())
    };
    let applier = Applier::new(client.clone(), LeaderHandle::always_leader(), "plan-test");
    let owner = PlanOwner::of(&web, json!({}));
    applier.apply(&owner, &plan, None, jiff::Timestamp::now()).await?;

    let label = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.labels.as_ref().and_then(|l| l.get("patched")).cloned()
    };
    let yes = Some("yes".to_owned());
    // Created.
    assert!(revisions.get_opt("r-created").await?.is_some());
    assert!(pvcs.get_opt("created-claim").await?.is_some());
    assert!(pods.get_opt("created").await?.is_some());
    assert!(jobs.get_opt("j-created").await?.is_some());
    assert!(config_maps.get_opt("cm-created").await?.is_some());
    // Patched.
    assert_eq!(label(&revisions.get("r-patched").await?.metadata), yes);
    assert_eq!(label(&pvcs.get("patched-claim").await?.metadata), yes);
    assert_eq!(label(&pods.get("patched").await?.metadata), yes);
    assert_eq!(label(&clonesets.get("web").await?.metadata), yes);
    assert_eq!(label(&config_maps.get("cm-patched").await?.metadata), yes);
    let conditions =
        pods.get("status").await?.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(conditions.iter().any(|c| c.type_ == "KruisePodReady" && c.status == "True"));
    let resized = pods.get("resized").await?;
    let cpu = resized
        .spec
        .as_ref()
        .and_then(|s| s.containers[0].resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("cpu"))
        .map(|q| q.0.clone());
    assert_eq!(cpu.as_deref(), Some("200m"));
    assert_eq!(clonesets.get_status("web").await?.status.map(|s| s.observed_generation), Some(1));
    // Deleted or evicted.
    assert!(revisions.get_opt("r-deleted").await?.is_none());
    assert!(pvcs.get_opt("deleted-claim").await?.is_none());
    assert!(pods.get_opt("deleted").await?.is_none());
    assert!(pods.get_opt("evicted").await?.is_none());
    assert!(jobs.get_opt("j-deleted").await?.is_none());
    assert!(config_maps.get_opt("cm-deleted").await?.is_none());

    // Applied again, the plan asks for nothing the server refuses: what exists is created,
    // what is gone is deleted. Only the guarded patch, planned from a version that is no longer
    // there, is refused as a conflict.
    let again = applier.apply(&owner, &plan, None, jiff::Timestamp::now()).await;
    match again {
        Err(ReconcileError::Write { source: ApplyError::Conflict(_), action, target }) => {
            assert_eq!((action, target.as_str()), ("patch", "cm-patched"));
        }
        other => panic!("a stale guard is a conflict, got {other:?}"),
    }
    server.shutdown();
    Ok(())
}
