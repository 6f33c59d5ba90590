//! Fixtures for the SidecarSet upgrade planner: SidecarSets and pods shaped like upstream's
//! test factories, and a tiny cluster that carries a plan out (patches applied, containers
//! restarted on their new images).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kruise_api::apps::v1beta1::{
    SidecarContainer, SidecarContainerUpgradeStrategy, SidecarContainerUpgradeType, SidecarSet,
    SidecarSetSpec,
};
use kruise_core::sidecarset::upgrade::{SidecarSetPlan, UpgradeSnapshot};
use kruise_core::smp::PatchSchema;
use kruise_core::workload::{Action, PodPatchPurpose};
use serde_json::json;

use super::patched;

pub const SET: &str = "test-sidecarset";
pub const SIDECAR: &str = "test-sidecar";
pub const EMPTY: &str = "busybox:empty";

pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).expect("valid time")
}

/// The image ID a runtime reports for `image`.
pub fn image_id(image: &str) -> String {
    format!("docker-pullable://{image}@sha256:{:064x}", fxhash(image))
}

fn fxhash(s: &str) -> u64 {
    s.bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// A SidecarSet named [`SET`] with one sidecar [`SIDECAR`] on `image`, and the two hash
/// annotations set to `hash` / `hash_without_image`.
pub fn sidecar_set(image: &str, hash: &str, hash_without_image: &str) -> SidecarSet {
    let mut set = SidecarSet::new(
        SET,
        SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("app".into(), "sidecar".into())])),
                ..Default::default()
            }),
            containers: vec![SidecarContainer {
                container: Container {
                    name: SIDECAR.into(),
                    image: Some(image.into()),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    set.metadata.generation = Some(1);
    set.metadata.resource_version = Some("100".into());
    set.metadata.annotations = Some(BTreeMap::from([
        ("kruise.io/sidecarset-hash".into(), hash.into()),
        ("kruise.io/sidecarset-hash-without-image".into(), hash_without_image.into()),
    ]));
    set
}

/// The same SidecarSet with its sidecar hot-upgraded (`-1`/`-2` pair, [`EMPTY`] image).
pub fn hot_sidecar_set(image: &str, hash: &str, hash_without_image: &str) -> SidecarSet {
    let mut set = sidecar_set(image, hash, hash_without_image);
    set.spec.containers[0].upgrade_strategy = SidecarContainerUpgradeStrategy {
        upgrade_type: Some(SidecarContainerUpgradeType::HotUpgrade),
        hot_upgrade_empty_image: EMPTY.into(),
    };
    set
}

fn hash_entry(hash: &str) -> String {
    json!({ SET: { "hash": hash, "sidecarSetName": SET, "sidecarList": [SIDECAR] } }).to_string()
}

/// A running, ready pod `pod-<i>` created at `at(i)` with an app container `nginx` and the
/// sidecar on `image`, injected at hashes `hash` / `hash_without_image`.
pub fn pod(i: usize, image: &str, hash: &str, hash_without_image: &str) -> Pod {
    let name = format!("pod-{i}");
    let containers = vec![
        Container {
            name: "nginx".into(),
            image: Some("nginx:1.15.1".into()),
            ..Default::default()
        },
        Container { name: SIDECAR.into(), image: Some(image.into()), ..Default::default() },
    ];
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{i}")),
            resource_version: Some("1".into()),
            creation_timestamp: Some(Time(at(i64::try_from(i).unwrap_or_default()))),
            labels: Some(BTreeMap::from([("app".into(), "sidecar".into())])),
            annotations: Some(BTreeMap::from([
                ("kruise.io/sidecarset-hash".into(), hash_entry(hash)),
                ("kruise.io/sidecarset-hash-without-image".into(), hash_entry(hash_without_image)),
                ("kruise.io/sidecarset-injected-list".into(), SET.into()),
            ])),
            ..Default::default()
        },
        spec: Some(PodSpec { containers, ..Default::default() }),
        status: None,
    };
    restart_all(&mut pod);
    pod
}

/// A pod with the hot-upgrade pair: `-1` working on `image`, `-2` idle on [`EMPTY`].
pub fn hot_pod(i: usize, image: &str, hash: &str, hash_without_image: &str) -> Pod {
    let mut p = pod(i, image, hash, hash_without_image);
    let spec = p.spec.as_mut().expect("spec");
    spec.containers[1].name = format!("{SIDECAR}-1");
    spec.containers.push(Container {
        name: format!("{SIDECAR}-2"),
        image: Some(EMPTY.into()),
        ..Default::default()
    });
    let notes = p.metadata.annotations.as_mut().expect("annotations");
    notes.insert(
        "kruise.io/sidecarset-working-hotupgrade-container".into(),
        json!({ SIDECAR: format!("{SIDECAR}-1") }).to_string(),
    );
    restart_all(&mut p);
    p
}

/// Every container runs its spec image, ready; the pod is Running and Ready.
pub fn restart_all(pod: &mut Pod) {
    let statuses =
        pod.spec.as_ref().map(|s| s.containers.iter().map(running).collect()).unwrap_or_default();
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        container_statuses: Some(statuses),
        ..Default::default()
    });
}

fn running(c: &Container) -> ContainerStatus {
    let image = c.image.clone().unwrap_or_default();
    ContainerStatus {
        name: c.name.clone(),
        image_id: image_id(&image),
        image,
        ready: true,
        ..Default::default()
    }
}

/// Marks the pod not ready (and its containers).
pub fn set_not_ready(pod: &mut Pod) {
    let status = pod.status.as_mut().expect("status");
    for c in status.conditions.iter_mut().flatten() {
        if c.type_ == "Ready" {
            c.status = "False".into();
        }
    }
}

/// Runs `plan`'s pod actions against `pods`: patches applied and resourceVersions bumped.
/// Containers keep running what they ran (call [`restart_all`] to finish the update).
/// Returns the names of the pods patched.
pub fn apply(plan: &SidecarSetPlan, pods: &mut [Pod]) -> Vec<String> {
    let mut touched = Vec::new();
    for action in &plan.actions {
        let (name, patch, schema_status) = match action {
            Action::PatchPod { name, patch, .. } => (name, patch, false),
            Action::PatchPodStatus { name, patch, .. } => (name, patch, true),
            Action::PatchPodResize { name, patch, .. } => (name, patch, false),
            other => panic!("unexpected action {other:?}"),
        };
        let pod = pods
            .iter_mut()
            .find(|p| p.metadata.name.as_deref() == Some(name.as_str()))
            .expect("patched pod exists");
        let mut next: Pod = patched(pod, patch.body(), Some(PatchSchema::Pod));
        let rv: u64 = pod.metadata.resource_version.as_deref().unwrap_or("0").parse().unwrap_or(0);
        next.metadata.resource_version = Some((rv + 1).to_string());
        *pod = next;
        if !schema_status {
            touched.push(name.clone());
        }
    }
    touched
}

/// Names of the pods `plan` upgrades, in order.
pub fn upgraded(plan: &SidecarSetPlan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchPod { name, purpose: PodPatchPurpose::SidecarSetUpgrade, .. } => {
                Some(name.clone())
            }
            _ => None,
        })
        .collect()
}

/// A snapshot of `set` and `pods` at `at(1000)`.
pub fn snapshot(set: SidecarSet, pods: Vec<Pod>) -> UpgradeSnapshot {
    UpgradeSnapshot {
        sidecar_set: set,
        pods,
        latest_revision: format!("{SET}-rev"),
        now: at(1000),
        ..Default::default()
    }
}
