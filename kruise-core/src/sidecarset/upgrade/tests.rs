use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::{SidecarContainerUpgradeStrategy, SidecarSetSpec};

use super::*;

fn set(hot: bool) -> SidecarSet {
    let mut sidecar = SidecarContainer {
        container: Container {
            name: "mesh".into(),
            image: Some("mesh:2".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    if hot {
        sidecar.upgrade_strategy = SidecarContainerUpgradeStrategy {
            upgrade_type: Some(kruise_api::apps::v1beta1::SidecarContainerUpgradeType::HotUpgrade),
            hot_upgrade_empty_image: "empty:1".into(),
        };
    }
    SidecarSet::new("s", SidecarSetSpec { containers: vec![sidecar], ..Default::default() })
}

fn pod(containers: &[(&str, &str, &str)], notes: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            annotations: Some(
                notes.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: containers
                .iter()
                .map(|(n, image, _)| Container {
                    name: (*n).into(),
                    image: Some((*image).into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        status: Some(PodStatus {
            container_statuses: Some(
                containers
                    .iter()
                    .map(|(n, _, running)| ContainerStatus {
                        name: (*n).into(),
                        image: (*running).into(),
                        image_id: format!("id-{running}"),
                        ready: true,
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
    }
}

const STATE: &str = "kruise.io/sidecarset-inplace-update-state";

#[test]
fn hot_upgrade_pair_reads_the_working_annotation() {
    let p = pod(&[], &[]);
    assert_eq!(hot_upgrade_pair(&p, "mesh"), ("mesh-2".into(), "mesh-1".into()));
    let p =
        pod(&[], &[("kruise.io/sidecarset-working-hotupgrade-container", r#"{"mesh":"mesh-1"}"#)]);
    assert_eq!(hot_upgrade_pair(&p, "mesh"), ("mesh-1".into(), "mesh-2".into()));
}

#[test]
fn update_completes_when_the_image_id_moves() {
    let s = set(false);
    let state =
        r#"{"s":{"revision":"h","lastContainerStatuses":{"mesh":{"imageID":"id-mesh:1"}}}}"#;
    let none = BTreeSet::new();
    // Spec on mesh:2, still running mesh:1 with the recorded image ID: not completed.
    let p = pod(&[("mesh", "mesh:2", "mesh:1")], &[(STATE, state)]);
    assert!(!is_state_consistent(&p, &s, &none));
    // Restarted on mesh:2.
    let p = pod(&[("mesh", "mesh:2", "mesh:2")], &[(STATE, state)]);
    assert!(is_state_consistent(&p, &s, &none));
    // No state: nothing in flight. Unreadable state: not completed.
    let p = pod(&[("mesh", "mesh:2", "mesh:1")], &[]);
    assert!(is_state_consistent(&p, &s, &none));
    let p = pod(&[("mesh", "mesh:2", "mesh:2")], &[(STATE, "{")]);
    assert!(!is_state_consistent(&p, &s, &none));
}

#[test]
fn digest_pinned_sidecars_compare_digests() {
    let s = set(false);
    let digest = format!("mesh@sha256:{}", "a".repeat(64));
    let mut p = pod(&[("mesh", &digest, "ignored")], &[]);
    let statuses = p.status.as_mut().and_then(|s| s.container_statuses.as_mut()).expect("statuses");
    statuses[0].image_id = format!("docker-pullable://docker.io/library/{digest}");
    assert!(is_state_consistent(&p, &s, &BTreeSet::new()));
    statuses_mut(&mut p)[0].image_id = format!("docker-pullable://mesh@sha256:{}", "b".repeat(64));
    assert!(!is_state_consistent(&p, &s, &BTreeSet::new()));
}

fn statuses_mut(p: &mut Pod) -> &mut Vec<ContainerStatus> {
    p.status.as_mut().and_then(|s| s.container_statuses.as_mut()).expect("statuses")
}

#[test]
fn a_pod_mid_swap_is_not_ready_for_the_set() {
    let s = set(true);
    let mut p = pod(
        &[("mesh-1", "mesh:1", "mesh:1"), ("mesh-2", "mesh:2", "mesh:2")],
        &[("kruise.io/sidecarset-working-hotupgrade-container", r#"{"mesh":"mesh-2"}"#)],
    );
    p.status.as_mut().expect("status").phase = Some("Running".into());
    p.status.as_mut().expect("status").conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    assert!(is_hot_upgrading(&p, &s));
    assert!(!is_ready_for_set(&p, &s));
    assert!(is_hot_upgrading_ready(&p, &s));
    p.spec.as_mut().expect("spec").containers[0].image = Some("empty:1".into());
    assert!(!is_hot_upgrading(&p, &s));
    assert!(is_ready_for_set(&p, &s));
}

#[test]
fn upgradable_condition_tracks_every_sidecarset() {
    let now = Timestamp::from_second(1_700_000_000).expect("time");
    let mut p = pod(&[], &[]);
    let first = next_upgradable_condition(&p, "a", false, now).expect("new condition");
    assert_eq!(
        (first.status.as_str(), first.reason.as_deref()),
        ("False", Some("UpdateImmutableField"))
    );
    p.status.as_mut().expect("status").conditions = Some(vec![first]);
    assert_eq!(next_upgradable_condition(&p, "a", false, now), None);
    // Another SidecarSet being upgradable keeps it False.
    let second = next_upgradable_condition(&p, "b", true, now).expect("changed message");
    assert_eq!(second.status, "False");
    assert_eq!(second.message.as_deref(), Some(r#"{"a":false,"b":true}"#));
    p.status.as_mut().expect("status").conditions = Some(vec![second]);
    let third = next_upgradable_condition(&p, "a", true, now).expect("turns True");
    assert_eq!(
        (third.status.as_str(), third.reason.as_deref()),
        ("True", Some("AllSidecarsetUpgradable"))
    );
}

#[test]
fn star_scatter_terms_expand_to_the_values_pods_carry() {
    let a = BTreeMap::from([("zone".to_owned(), "a".to_owned())]);
    let b = BTreeMap::from([("zone".to_owned(), "b".to_owned())]);
    let none = BTreeMap::new();
    let terms = [
        UpdateScatterTerm { key: "zone".into(), value: "b".into() },
        UpdateScatterTerm { key: "zone".into(), value: "*".into() },
    ];
    let out = expand_scatter_terms(&terms, &[&a, &none, &b, &a]);
    let values: Vec<&str> = out.iter().map(|t| t.value.as_str()).collect();
    assert_eq!(values, ["b", "a"]);
}

#[test]
fn pod_updates_that_requeue_the_sidecarset() {
    let s = set(false);
    let mut old =
        pod(&[("mesh", "mesh:2", "mesh:2")], &[("kruise.io/sidecarset-injected-list", "s,other")]);
    assert_eq!(injected_sidecar_sets(&old), ["s", "other"]);
    old.metadata.resource_version = Some("1".into());
    let mut new = old.clone();
    // Same resourceVersion: nothing.
    assert_eq!(requeue_on_pod_update(&old, &new, &s), None);
    new.metadata.resource_version = Some("2".into());
    assert_eq!(requeue_on_pod_update(&old, &new, &s), None);
    // Readiness flips.
    new.status.as_mut().expect("status").conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    assert_eq!(requeue_on_pod_update(&old, &new, &s), Some(jiff::SignedDuration::ZERO));
    // The sidecar's update completes: after the delay.
    let state =
        r#"{"s":{"revision":"h","lastContainerStatuses":{"mesh":{"imageID":"id-mesh:1"}}}}"#;
    let mut stale = pod(&[("mesh", "mesh:2", "mesh:1")], &[(STATE, state)]);
    stale.metadata.resource_version = Some("1".into());
    let mut done = pod(&[("mesh", "mesh:2", "mesh:2")], &[(STATE, state)]);
    done.metadata.resource_version = Some("2".into());
    assert_eq!(requeue_on_pod_update(&stale, &done, &s), Some(CONSISTENCY_REQUEUE_DELAY));
    // Labels change: only with a canary selector.
    let mut relabelled = done.clone();
    relabelled.metadata.resource_version = Some("3".into());
    relabelled.metadata.labels = Some(BTreeMap::from([("canary".into(), "true".into())]));
    assert_eq!(requeue_on_pod_update(&done, &relabelled, &s), None);
    let mut canary = s.clone();
    canary.spec.update_strategy.selector = Some(Default::default());
    assert_eq!(
        requeue_on_pod_update(&done, &relabelled, &canary),
        Some(jiff::SignedDuration::ZERO)
    );
    // NotUpdate never requeues.
    let mut frozen = canary;
    frozen.spec.update_strategy.type_ = Some(SidecarSetUpdateStrategyType::NotUpdate);
    assert_eq!(requeue_on_pod_update(&done, &relabelled, &frozen), None);
}
