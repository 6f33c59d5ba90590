//! Workloads for the planner benchmarks (large, realistic snapshots built once per size), and
//! helpers the other benches share.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{CloneSet, StatefulSet};
use kruise_core::cloneset::{Action, CloneSetSnapshot, SnapshotPod, plan};
use kruise_core::statefulset::StatefulSetSnapshot;
use serde_json::json;

/// The time every benchmark plans at.
pub fn now() -> Timestamp {
    Timestamp::from_second(1_714_557_600).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn cloneset(replicas: usize, image: &str, current: &str, update: &str) -> CloneSet {
    let value = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "CloneSet",
        "metadata": {"name": "bench", "namespace": "default", "uid": "bench-uid", "generation": 3},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": [{"name": "main", "image": image}]}
            },
            "minReadySeconds": 10,
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "partition": "30%",
                    "maxUnavailable": "10%",
                    "podUpdatePolicy": "ReCreate",
                    "priorityStrategy": {"weightPriority": [
                        {"weight": 50, "matchSelector": {"matchLabels": {"tier": "canary"}}},
                        {"weight": 10, "matchSelector": {"matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["zone-a", "zone-b"]}
                        ]}}
                    ]},
                    "scatterStrategy": [{"key": "zone", "value": "zone-c"}]
                }
            }
        },
        "status": {"currentRevision": current, "updateRevision": update, "observedGeneration": 2}
    });
    serde_json::from_value(value).unwrap_or_default()
}

/// The ControllerRevision the CloneSet planner creates for `cs` (its template's revision) when
/// it has `revisions` so far; `None` when it plans none.
pub fn planned_revision(
    cs: CloneSet,
    revisions: Vec<k8s_openapi::api::apps::v1::ControllerRevision>,
) -> Option<k8s_openapi::api::apps::v1::ControllerRevision> {
    let mut s = CloneSetSnapshot::new(cs);
    s.revisions = revisions;
    plan(&s, now()).actions.into_iter().find_map(|a| match a {
        Action::CreateRevision { revision } => Some(*revision),
        _ => None,
    })
}

/// A CloneSet with `n` running, ready pods, a third of them already at the new revision, a
/// few not ready, spread over zones and nodes, with weight priorities and a scatter term:
/// a rolling update in progress.
pub fn snapshot(n: usize) -> CloneSetSnapshot {
    let (cloneset, revisions, pods) = cloneset_parts(n);
    let mut snapshot = CloneSetSnapshot::new(cloneset);
    snapshot.revisions = revisions;
    snapshot.pods = pods.into_iter().map(SnapshotPod::from).collect();
    snapshot
}

/// The CloneSet, revisions and pods of [`snapshot`]`(n)`, as a controller reads them.
pub fn cloneset_parts(
    n: usize,
) -> (CloneSet, Vec<k8s_openapi::api::apps::v1::ControllerRevision>, Vec<Pod>) {
    let old = planned_revision(cloneset(n, "app:v1", "", ""), Vec::new());
    let new = planned_revision(cloneset(n, "app:v2", "", ""), old.clone().into_iter().collect());
    let name = |r: &Option<k8s_openapi::api::apps::v1::ControllerRevision>| {
        r.as_ref().and_then(|r| r.metadata.name.clone()).unwrap_or_default()
    };
    let (old_name, new_name) = (name(&old), name(&new));
    let cloneset = cloneset(n, "app:v2", &old_name, &new_name);
    let revisions = old.into_iter().chain(new).collect();
    let pods = (0..n)
        .map(|i| {
            let updated = i % 3 == 0;
            let revision = if updated { &new_name } else { &old_name };
            let zone = ["zone-a", "zone-b", "zone-c"][i % 3];
            let tier = if i % 17 == 0 { "canary" } else { "main" };
            let ready = i % 50 != 7;
            let created = now() - SignedDuration::from_secs(86_400 - (i as i64 % 80_000));
            let ready_at = now() - SignedDuration::from_secs(3_600 + (i as i64 % 1_000));
            let pod = json!({
                "metadata": {
                    "name": format!("bench-{i:06}"),
                    "namespace": "default",
                    "uid": format!("uid-{i:06}"),
                    "resourceVersion": "100",
                    "creationTimestamp": kruise_core::pod::format_rfc3339(created),
                    "labels": {
                        "app": "bench",
                        "zone": zone,
                        "tier": tier,
                        "controller-revision-hash": revision,
                        "pod-template-hash": revision.rsplit('-').next().unwrap_or_default(),
                        "apps.kruise.io/cloneset-instance-id": format!("{i:06}"),
                        "lifecycle.apps.kruise.io/state": "Normal",
                    },
                    "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
                        "name": "bench", "uid": "bench-uid", "controller": true}],
                },
                "spec": {
                    "nodeName": format!("node-{}", i % 500),
                    "containers": [{"name": "main", "image": if updated { "app:v2" } else { "app:v1" }}],
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [
                        {"type": "Ready", "status": if ready { "True" } else { "False" },
                         "lastTransitionTime": kruise_core::pod::format_rfc3339(ready_at)},
                        {"type": "InPlaceUpdateReady", "status": "True"},
                    ],
                    "containerStatuses": [{"name": "main", "image": "app", "imageID": "sha", "ready": ready,
                        "restartCount": (i % 4) as i32}],
                },
            });
            serde_json::from_value::<Pod>(pod).unwrap_or_default()
        })
        .collect();
    (cloneset, revisions, pods)
}

/// `VmRSS` and `VmHWM` (resident memory and its peak) of process `pid` (`"self"` for this
/// one), in MiB, from /proc (Linux); 0 where unreadable.
pub fn memory_mib(pid: &str) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time (user + system) process `pid` (`"self"` for this one) has used, in seconds,
/// from /proc (Linux, 100 ticks a second); 0 where unreadable.
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name may hold spaces; the fields after it are space-separated.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn statefulset(
    replicas: usize,
    image: &str,
    current: &str,
    update: &str,
    in_place: bool,
) -> StatefulSet {
    let value = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": "bench", "namespace": "default", "uid": "bench-uid", "generation": 3},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "serviceName": "bench",
            "selector": {"matchLabels": {"app": "bench"}},
            "reserveOrdinals": [3, "10-12"],
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {
                    "containers": [{"name": "main", "image": image}],
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]
                }
            },
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "partition": replicas * 3 / 10,
                    "maxUnavailable": "10%",
                    "podUpdatePolicy": if in_place { "InPlaceIfPossible" } else { "ReCreate" },
                    "minReadySeconds": 10,
                    "unorderedUpdate": {"priorityStrategy": {"weightPriority": [
                        {"weight": 50, "matchSelector": {"matchLabels": {"tier": "canary"}}},
                        {"weight": 10, "matchSelector": {"matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["zone-a", "zone-b"]}
                        ]}}
                    ]}}
                }
            }
        },
        "status": {"currentRevision": current, "updateRevision": update, "observedGeneration": 2}
    });
    serde_json::from_value(value).unwrap_or_default()
}

/// An Advanced StatefulSet (Parallel, unordered with weight priorities, partition 30%,
/// maxUnavailable 10%, a few reserved ordinals; recreating pods, or updating them in place)
/// with `n` running, ready pods, a third of them already at the new revision and a few not
/// ready: a rolling update in progress.
pub fn statefulset_snapshot(n: usize, in_place: bool) -> StatefulSetSnapshot {
    let revision = |set: &StatefulSet, number| {
        kruise_core::revision::new_revision(set, number, 0).unwrap_or_default()
    };
    let old = revision(&statefulset(n, "app:v1", "", "", in_place), 1);
    let new = revision(&statefulset(n, "app:v2", "", "", in_place), 2);
    let name = |r: &k8s_openapi::api::apps::v1::ControllerRevision| {
        r.metadata.name.clone().unwrap_or_default()
    };
    let (old_name, new_name) = (name(&old), name(&new));
    let set = statefulset(n, "app:v2", &old_name, &new_name, in_place);
    let reserved = kruise_core::statefulset::ordinals::Reserved::parse(&set.spec.reserve_ordinals)
        .unwrap_or_default();
    let ordinals = kruise_core::statefulset::ordinals::replica_ordinals(0, n as i32, &reserved);
    let mut snapshot = StatefulSetSnapshot::new(set);
    snapshot.revisions = vec![old, new];
    snapshot.pods = ordinals
        .iter()
        .enumerate()
        .map(|(i, ordinal)| {
            let updated = i % 3 == 0;
            let revision = if updated { &new_name } else { &old_name };
            let zone = ["zone-a", "zone-b", "zone-c"][i % 3];
            let tier = if i % 17 == 0 { "canary" } else { "main" };
            let ready = i % 50 != 7;
            let ready_at = now() - SignedDuration::from_secs(3_600 + (i as i64 % 1_000));
            let name = format!("bench-{ordinal}");
            let pod = json!({
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "uid": format!("uid-{ordinal}"),
                    "resourceVersion": "100",
                    "labels": {
                        "app": "bench",
                        "zone": zone,
                        "tier": tier,
                        "controller-revision-hash": revision,
                        "statefulset.kubernetes.io/pod-name": name,
                        "apps.kubernetes.io/pod-index": ordinal.to_string(),
                        "lifecycle.apps.kruise.io/state": "Normal",
                    },
                    "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                        "name": "bench", "uid": "bench-uid", "controller": true}],
                },
                "spec": {
                    "nodeName": format!("node-{}", i % 500),
                    "hostname": name,
                    "subdomain": "bench",
                    "containers": [{"name": "main", "image": if updated { "app:v2" } else { "app:v1" }}],
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [
                        {"type": "Ready", "status": if ready { "True" } else { "False" },
                         "lastTransitionTime": kruise_core::pod::format_rfc3339(ready_at)},
                        {"type": "InPlaceUpdateReady", "status": "True"},
                    ],
                    "containerStatuses": [{"name": "main", "image": if updated { "app:v2" } else { "app:v1" },
                        "imageID": "sha", "ready": ready, "restartCount": (i % 4) as i32}],
                },
            });
            SnapshotPod::from(serde_json::from_value::<Pod>(pod).unwrap_or_default())
        })
        .collect();
    snapshot
}

fn daemonset(image: &str, desired: usize) -> kruise_api::apps::v1beta1::DaemonSet {
    let value = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "DaemonSet",
        "metadata": {"name": "bench", "namespace": "default", "uid": "bench-uid", "generation": 2},
        "spec": {
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {
                    "nodeSelector": {"role": "worker"},
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}],
                    "containers": [{"name": "main", "image": image}],
                },
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "rollingUpdateType": "Standard", "maxUnavailable": "10%", "partition": "10%"}},
        },
        "status": {"desiredNumberScheduled": desired, "currentNumberScheduled": desired,
            "numberMisscheduled": 0, "numberReady": desired, "updatedNumberScheduled": 0},
    });
    serde_json::from_value(value).unwrap_or_default()
}

/// An Advanced DaemonSet over `n` nodes (5% of them outside its nodeSelector, 5% with a taint
/// it tolerates, 2% with one it does not) mid-rollout: every eligible node runs a pod, a third
/// of them at the new revision, a few not ready; the update deletes old pods within
/// maxUnavailable 10% and partition 10%.
pub fn daemonset_snapshot(n: usize) -> kruise_core::daemonset::DaemonSetSnapshot {
    use kruise_core::daemonset::{DaemonSetSnapshot, eligibility};
    let hash_of = |ds: &kruise_api::apps::v1beta1::DaemonSet, number| {
        let mut r = kruise_core::revision::new_revision(ds, number, 0).unwrap_or_default();
        let name = r.metadata.name.clone().unwrap_or_default();
        let hash = kruise_core::revision::short_hash(&name).to_owned();
        r.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("controller-revision-hash".into(), hash.clone());
        (r, hash)
    };
    let (old_rev, old_hash) = hash_of(&daemonset("app:v1", n), 1);
    let (new_rev, new_hash) = hash_of(&daemonset("app:v2", n), 2);
    let ds = daemonset("app:v2", n);
    let mut nodes = Vec::with_capacity(n);
    let mut pods = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("node-{i:05}");
        let role = if i % 20 == 7 { "master" } else { "worker" };
        let taints = match i % 50 {
            3 | 13 | 23 => json!([{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]),
            9 => json!([{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
            _ => json!([]),
        };
        let zone = ["a", "b", "c"][i % 3];
        let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"role": role, "zone": zone}},
            "spec": {"taints": taints},
        }))
        .unwrap_or_default();
        let eligible = role == "worker" && i % 50 != 9;
        nodes.push(kruise_core::daemonset::SnapshotNode::from(node));
        if !eligible {
            continue;
        }
        let updated = i % 3 == 0;
        let ready = i % 97 != 5;
        let ready_at = now() - SignedDuration::from_secs(3_600 + (i as i64 % 1_000));
        let mut pod = eligibility::pod_for_node(&ds.spec.template, &name);
        let pod_name = format!("bench-{i:05}");
        let status = json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                "lastTransitionTime": kruise_core::pod::format_rfc3339(ready_at)}],
        });
        pod.status = serde_json::from_value(status).ok();
        let meta = &mut pod.metadata;
        meta.name = Some(pod_name.clone());
        meta.namespace = Some("default".into());
        meta.uid = Some(format!("uid-{pod_name}"));
        meta.resource_version = Some("100".into());
        meta.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ready_at));
        meta.labels.get_or_insert_with(Default::default).insert(
            "controller-revision-hash".into(),
            if updated { new_hash.clone() } else { old_hash.clone() },
        );
        if let Some(spec) = pod.spec.as_mut() {
            spec.node_name = Some(name);
        }
        pods.push(SnapshotPod::from(pod));
    }
    let mut snapshot = DaemonSetSnapshot::new(ds);
    snapshot.nodes = nodes;
    snapshot.pods = pods;
    snapshot.revisions = vec![old_rev, new_rev];
    snapshot
}
