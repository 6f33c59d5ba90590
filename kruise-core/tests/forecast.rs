//! The rollout ahead (`kruise_core::forecast`) with the CloneSet planner: waves of a
//! scale-out, of in-place and recreate updates under maxUnavailable and a partition, a hook
//! that holds pods, and properties over random CloneSets.

use std::collections::BTreeSet;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::CloneSet;
use kruise_core::cloneset::{CloneSetPlan, CloneSetSnapshot, SnapshotPod, plan};
use kruise_core::forecast::{Change, Cluster, Forecast, Limits, forecast};
use proptest::prelude::*;
use serde_json::{Value, json};

fn now() -> Timestamp {
    Timestamp::from_second(1_714_557_600).expect("valid")
}

fn cloneset(replicas: i32, image: &str, strategy: Value) -> Value {
    let set: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "cs-uid", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]}
            },
            "updateStrategy": {"rollingUpdate": strategy},
        }
    }))
    .expect("a CloneSet");
    let _: &ObjectMeta = &set.metadata;
    serde_json::to_value(set).expect("encode")
}

fn planner(cluster: &Cluster) -> CloneSetPlan {
    let set: CloneSet = serde_json::from_value(cluster.workload.clone()).expect("the CloneSet");
    let mut snapshot = CloneSetSnapshot::new(set);
    snapshot.pods = cluster.pods.iter().cloned().map(SnapshotPod::from).collect();
    snapshot.pvcs = cluster.pvcs.clone();
    snapshot.revisions = cluster.revisions.clone();
    snapshot.image_pull_jobs = cluster.image_pull_jobs.clone();
    plan(&snapshot, cluster.now)
}

/// `replicas` pods created at `app:v1` on the model, then the template moved to `app:v2` with
/// `strategy` and `edit` applied to the new CloneSet (and the model): the forecast of the
/// creation, and the model ready for the update.
fn moved_to_v2(
    replicas: i32,
    strategy: Value,
    edit: impl FnOnce(&mut Cluster),
) -> (Forecast, Cluster) {
    let created = forecast(
        Cluster::new(cloneset(replicas, "app:v1", strategy.clone()), now()),
        Limits::default(),
        planner,
    );
    let mut cluster = created.end.clone();
    let status = cluster.workload["status"].clone();
    cluster.workload = cloneset(replicas, "app:v2", strategy);
    cluster.workload["status"] = status;
    cluster.workload["metadata"]["generation"] = json!(2);
    edit(&mut cluster);
    (created, cluster)
}

/// `replicas` pods running `app:v1`, then the template moved to `app:v2` with `strategy`:
/// the forecast of that update.
fn update(replicas: i32, strategy: Value) -> (Forecast, Forecast) {
    let (created, cluster) = moved_to_v2(replicas, strategy, |_| {});
    (created, forecast(cluster, Limits::default(), planner))
}

/// Puts the hook's label on every pod of the model (the hook then holds them).
fn hold_all(cluster: &mut Cluster) {
    for pod in &mut cluster.pods {
        pod.metadata.labels.get_or_insert_default().insert(HOLD.into(), "true".into());
    }
}

fn changes(f: &Forecast) -> Vec<Vec<(String, Change)>> {
    f.waves
        .iter()
        .map(|w| w.pods.iter().map(|c| (c.pod.clone(), c.change.clone())).collect())
        .collect()
}

#[test]
fn a_scale_out_is_one_wave_of_creations() {
    let (created, _) = update(4, json!({}));
    assert_eq!(created.waves.len(), 1, "{:#?}", created.waves);
    let wave = &created.waves[0];
    assert_eq!(wave.pods.len(), 4);
    assert!(wave.pods.iter().all(|c| c.change == Change::Create && c.revision.is_some()));
    assert!(created.outcome.settled);
    assert!(created.outcome.not_ready.is_empty(), "{:?}", created.outcome);
    assert_eq!(created.status["readyReplicas"], 4);
}

#[test]
fn in_place_updates_go_one_pod_a_wave_and_stop_at_the_partition() {
    let (created, ahead) = update(
        4,
        json!({"podUpdatePolicy": "InPlaceIfPossible", "partition": 1, "maxUnavailable": 1}),
    );
    let waves = changes(&ahead);
    assert_eq!(waves.len(), 3, "{waves:#?}");
    for wave in &waves {
        assert_eq!(wave.len(), 1, "{waves:#?}");
        assert_eq!(wave[0].1, Change::InPlace);
    }
    let names: BTreeSet<_> = waves.iter().map(|w| w[0].0.clone()).collect();
    assert_eq!(names.len(), 3, "three different pods");
    // The same pods: updated in place, nothing created or deleted.
    let before: BTreeSet<_> =
        created.end.pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
    let after: BTreeSet<_> =
        ahead.end.pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert_eq!(before, after);
    assert!(ahead.outcome.settled);
    assert_eq!(ahead.outcome.not_updated.len(), 1, "the partition keeps one: {:?}", ahead.outcome);
    assert!(!names.contains(&ahead.outcome.not_updated[0]));
    assert!(ahead.outcome.not_ready.is_empty(), "{:?}", ahead.outcome);
    assert_eq!(ahead.status["updatedReadyReplicas"], 3);
}

#[test]
fn recreate_updates_name_their_replacements() {
    let (created, ahead) = update(4, json!({"podUpdatePolicy": "ReCreate", "maxUnavailable": 2}));
    let recreated: Vec<_> = ahead.waves.iter().flat_map(|w| &w.pods).collect();
    assert_eq!(recreated.len(), 4, "{:#?}", ahead.waves);
    for wave in &ahead.waves {
        assert!(wave.pods.len() <= 2, "maxUnavailable 2: {:#?}", ahead.waves);
    }
    let old: BTreeSet<_> =
        created.end.pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
    for change in recreated {
        assert_eq!(change.change, Change::Recreate);
        assert!(old.contains(&change.pod));
        // Ids are derived from the CloneSet's UID: a freed one may come back.
        let new = change.replacement.as_ref().expect("each has a replacement");
        let pod = ahead.end.pods.iter().find(|p| p.metadata.name.as_ref() == Some(new));
        let before =
            created.end.pods.iter().find(|p| p.metadata.name.as_ref() == Some(&change.pod));
        let uid =
            |p: Option<&k8s_openapi::api::core::v1::Pod>| p.and_then(|p| p.metadata.uid.clone());
        assert!(uid(pod).is_some() && uid(pod) != uid(before), "{new} is a new pod");
        assert_eq!(change.revision.as_deref(), ahead.outcome.update_revision.as_deref());
    }
    assert!(ahead.outcome.not_updated.is_empty(), "{:?}", ahead.outcome);
    assert_eq!(ahead.end.pods.len(), 4);
}

#[test]
fn a_hook_that_holds_pods_is_where_the_rollout_stops() {
    let strategy = json!({"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 2});
    let (_, cluster) = moved_to_v2(2, strategy, |cluster| {
        cluster.workload["spec"]["lifecycle"] =
            json!({"inPlaceUpdate": {"labelsHandler": {HOLD: "true"}}});
        hold_all(cluster);
    });
    let ahead = forecast(cluster, Limits::default(), planner);
    assert!(ahead.outcome.settled);
    assert_eq!(ahead.outcome.hooked.len(), 2, "{:?}", ahead.outcome);
    assert!(ahead.outcome.hooked.values().all(|s| s == "PreparingUpdate"));
    assert_eq!(ahead.outcome.not_updated.len(), 2);
    let first = &ahead.waves[0];
    assert!(first.pods.iter().all(|c| c.change == Change::Hook), "{:#?}", ahead.waves);
}

#[test]
fn min_ready_seconds_spaces_the_waves() {
    let strategy = json!({"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1});
    let (_, cluster) = moved_to_v2(3, strategy, |cluster| {
        cluster.workload["spec"]["minReadySeconds"] = json!(30);
        // The pods have been available for long.
        cluster.now += jiff::SignedDuration::from_secs(3600);
    });
    let ahead = forecast(cluster, Limits::default(), planner);
    assert_eq!(ahead.waves.len(), 3, "{:#?}", ahead.waves);
    for pair in ahead.waves.windows(2) {
        assert!(pair[1].at_seconds - pair[0].at_seconds >= 30, "{:#?}", ahead.waves);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any update of a CloneSet on the model settles with what the partition keeps on the old
    /// revision and the rest on the new; no wave starts more updates than maxUnavailable
    /// (plus maxSurge for recreate) allows; no pod is updated twice; and forecasting again from
    /// the end changes nothing.
    #[test]
    fn forecasts_settle_within_the_budget(
        replicas in 1i32..7,
        max_unavailable in 1i32..4,
        max_surge in 0i32..3,
        partition in 0i32..8,
        in_place in any::<bool>(),
    ) {
        let strategy = json!({
            "podUpdatePolicy": if in_place { "InPlaceIfPossible" } else { "ReCreate" },
            "maxUnavailable": max_unavailable,
            "maxSurge": max_surge,
            "partition": partition,
        });
        let (_, ahead) = update(replicas, strategy);
        prop_assert!(ahead.outcome.settled, "{:?}", ahead.outcome);
        let keep = usize::try_from(partition.min(replicas)).unwrap_or(0);
        prop_assert_eq!(ahead.outcome.not_updated.len(), keep, "{:?}", ahead.outcome);
        prop_assert!(ahead.outcome.not_ready.is_empty(), "{:?}", ahead.outcome);
        let mut updated = BTreeSet::new();
        for wave in &ahead.waves {
            let starts = wave.pods.iter().filter(|c| matches!(c.change, Change::InPlace | Change::Recreate)).count();
            let budget = usize::try_from(max_unavailable + max_surge).unwrap_or(0);
            prop_assert!(starts <= budget, "{:#?}", ahead.waves);
            for c in wave.pods.iter().filter(|c| matches!(c.change, Change::InPlace | Change::Recreate)) {
                prop_assert!(updated.insert(c.pod.clone()), "{} updated twice: {:#?}", c.pod, ahead.waves);
            }
        }
        let again = forecast(ahead.end.clone(), Limits::default(), planner);
        prop_assert!(again.waves.is_empty(), "{:#?}", again.waves);
    }
}

/// What `kubectl kruise plan` prints of the rollout ahead, for the manual's in-place update
/// with a partition, and for a recreate update with a surge.
#[test]
fn the_rollout_ahead_as_printed() {
    let (_, in_place) = update(
        4,
        json!({"podUpdatePolicy": "InPlaceIfPossible", "partition": 1, "maxUnavailable": 1}),
    );
    let strategy = &in_place.end.workload["spec"]["updateStrategy"];
    insta::assert_snapshot!(
        "in_place_with_partition",
        kruise_core::rollout::describe_forecast(&in_place, strategy).join("\n")
    );
    let (_, recreate) =
        update(3, json!({"podUpdatePolicy": "ReCreate", "maxUnavailable": 0, "maxSurge": 1}));
    let strategy = &recreate.end.workload["spec"]["updateStrategy"];
    insta::assert_snapshot!(
        "recreate_with_surge",
        kruise_core::rollout::describe_forecast(&recreate, strategy).join("\n")
    );
}

const HOLD: &str = "example.io/hold";

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// In-place updates on the pure cluster, with the `inPlaceUpdate` hook: the hook holds
    /// as many pods as maxUnavailable allows (of those the partition lets go) in
    /// `PreparingUpdate`, none updated; then the user's controller lets each go (the label
    /// removed) and marks it done once `Updated` (the label back), and the rollout moves on
    /// within maxUnavailable until every pod is `Normal`, ready, and all but the partition's
    /// updated. Without the hook, the same rollout ends at once in `Normal`.
    #[test]
    fn in_place_rollouts_with_hooks_finish_on_the_pure_cluster(
        replicas in 1i32..6,
        max_unavailable in 1i32..4,
        partition in 0i32..6,
        hooked in any::<bool>(),
    ) {
        let strategy = json!({"podUpdatePolicy": "InPlaceIfPossible",
            "maxUnavailable": max_unavailable, "partition": partition});
        let (_, cluster) = moved_to_v2(replicas, strategy, |cluster| {
            if hooked {
                cluster.workload["spec"]["lifecycle"] =
                    json!({"inPlaceUpdate": {"labelsHandler": {HOLD: "true"}}});
                hold_all(cluster);
            }
        });
        let to_update = usize::try_from(replicas - partition.min(replicas)).unwrap_or(0);
        let mut ahead = forecast(cluster, Limits::default(), planner);
        if hooked {
            prop_assert!(ahead.outcome.settled, "{:?}", ahead.outcome);
            let preparing = ahead.outcome.hooked.values().filter(|s| *s == "PreparingUpdate").count();
            // Pods waiting for the hook count against maxUnavailable.
            let budget = usize::try_from(max_unavailable).unwrap_or(0);
            prop_assert_eq!(preparing, to_update.min(budget), "{:?}", ahead.outcome);
            prop_assert_eq!(ahead.outcome.not_updated.len(), usize::try_from(replicas).unwrap_or(0));
            // The user's own controller: it lets a pod waiting to be updated go (the label
            // removed), and marks an updated one done (the label back), until no hook holds
            // a pod; every pass keeps to the budget.
            let mut passes = 0;
            while !ahead.outcome.hooked.is_empty() {
                prop_assert!(ahead.outcome.settled, "{:?}", ahead.outcome);
                passes += 1;
                prop_assert!(passes <= 4 * replicas + 4, "{:?}", ahead.outcome);
                let mut cluster = ahead.end.clone();
                for pod in &mut cluster.pods {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let labels = pod.metadata.labels.get_or_insert_default();
                    match ahead.outcome.hooked.get(&name).map(String::as_str) {
                        Some("PreparingUpdate") => {
                            labels.remove(HOLD);
                        }
                        Some("Updated") => {
                            labels.insert(HOLD.into(), "true".into());
                        }
                        _ => {}
                    }
                }
                ahead = forecast(cluster, Limits::default(), planner);
                for wave in &ahead.waves {
                    let starts = wave.pods.iter().filter(|c| c.change == Change::InPlace).count();
                    prop_assert!(starts <= budget, "{:#?}", ahead.waves);
                }
            }
        }
        prop_assert!(ahead.outcome.settled, "{:?}", ahead.outcome);
        prop_assert!(ahead.outcome.hooked.is_empty(), "{:?}", ahead.outcome);
        prop_assert!(ahead.outcome.not_ready.is_empty(), "{:?}", ahead.outcome);
        prop_assert_eq!(
            ahead.outcome.not_updated.len(),
            usize::try_from(replicas).unwrap_or(0) - to_update,
            "{:?}", ahead.outcome
        );
        for pod in &ahead.end.pods {
            let state = pod.metadata.labels.as_ref().and_then(|l| l.get("lifecycle.apps.kruise.io/state"));
            prop_assert_eq!(state.map(String::as_str), Some("Normal"), "{}", pod.metadata.name.clone().unwrap_or_default());
        }
    }
}
