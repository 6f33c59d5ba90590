//! Unit tests, after upstream's tables (`workloadspread_test.go`,
//! `workloadspread_controller_test.go`, `reschedule_test.go`,
//! `workloadspread_controller_utils_test.go`).

use super::*;
use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, PodCondition, PodSpec, PodStatus,
    PreferredSchedulingTerm, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kruise_api::apps::v1beta1::{
    AdaptiveWorkloadSpreadStrategy, TargetReference, WorkloadSpreadScheduleStrategy,
    WorkloadSpreadScheduleStrategyType, WorkloadSpreadSpec, WorkloadSpreadStatus,
};
use serde_json::json;

fn now() -> jiff::Timestamp {
    "2024-05-01T10:00:00Z".parse().expect("time")
}

fn secs(n: i64) -> jiff::SignedDuration {
    jiff::SignedDuration::from_secs(n)
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some([("app".to_owned(), "nginx".to_owned())].into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "cloneset-test".into(),
                controller: Some(true),
                uid: "uid".into(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        ..Default::default()
    }
}

fn with_subset(mut p: Pod, subset: &str) -> Pod {
    p.metadata.annotations.get_or_insert_with(Default::default).insert(
        MATCHED_WORKLOADSPREAD_ANNOTATION.into(),
        InjectedSubset { name: "test-ws".into(), subset: subset.into(), uid: None }.to_annotation(),
    );
    p
}

fn subset(name: &str, max: Option<IntOrString>) -> WorkloadSpreadSubset {
    WorkloadSpreadSubset { name: name.into(), max_replicas: max, ..Default::default() }
}

fn ws(subsets: Vec<WorkloadSpreadSubset>) -> WorkloadSpread {
    let mut ws = WorkloadSpread::new(
        "test-ws",
        WorkloadSpreadSpec {
            target_reference: Some(TargetReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "cloneset-test".into(),
            }),
            subsets: Some(subsets),
            ..Default::default()
        },
    );
    ws.metadata.namespace = Some("default".into());
    ws.metadata.generation = Some(10);
    ws
}

fn zone_term(zone: &str) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: "topology.kubernetes.io/zone".into(),
            operator: "In".into(),
            values: Some(vec![zone.into()]),
        }]),
        match_fields: None,
    }
}

fn versioned(ws: &WorkloadSpread) -> &[WorkloadSpreadSubsetStatus] {
    &ws.status.as_ref().expect("status").versioned_subset_statuses[VERSION_IGNORED]
}

fn apply(ws: &mut WorkloadSpread, r: &Reservation) {
    if let Some(s) = &r.new_status {
        ws.status = Some(s.clone());
    }
}

fn uid() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("uid-{n}")
    }
}

// ----- the annotation -----

#[test]
fn annotation_round_trips_like_go() {
    let i = InjectedSubset { name: "ws".into(), subset: "a".into(), uid: None };
    assert_eq!(i.to_annotation(), r#"{"name":"ws","subset":"a"}"#);
    let i = InjectedSubset { uid: Some("u<1>".into()), ..i };
    assert_eq!(i.to_annotation(), r#"{"name":"ws","subset":"a","uid":"u\u003c1\u003e"}"#);
    assert_eq!(InjectedSubset::parse(&i.to_annotation()), Some(i));
    // Go's decoder matches keys ignoring case.
    let parsed = InjectedSubset::parse(r#"{"Name":"w","Subset":"s"}"#).expect("parses");
    assert_eq!((parsed.name.as_str(), parsed.subset.as_str(), parsed.uid), ("w", "s", None));
    assert_eq!(InjectedSubset::parse("not json"), None);
    assert_eq!(InjectedSubset::parse(r#"{"name":1}"#), None);
    assert_eq!(InjectedSubset::parse("null"), None);
}

#[test]
fn pod_version_follows_versioned_kinds() {
    let kinds = VersionedKinds::default();
    let mut p = pod("p");
    p.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("pod-template-hash".into(), "abc".into());
    assert_eq!(pod_version(&p, "CloneSet", &kinds), VERSION_IGNORED);
    assert_eq!(pod_version(&p, "Deployment", &kinds), "abc");
    let kinds = VersionedKinds::parse("CloneSet");
    let mut q = pod("q");
    q.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("controller-revision-hash".into(), "cs-5d8f".into());
    assert_eq!(pod_version(&q, "CloneSet", &kinds), "5d8f");
    assert!(VersionedKinds::parse("deployment").contains("ReplicaSet"));
}

// ----- selecting the WorkloadSpread -----

#[test]
fn selection_matches_group_kind_and_name_through_the_chain() {
    let mut a = ws(vec![subset("a", None)]);
    a.spec.target_reference = Some(TargetReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "web".into(),
    });
    let mut deleting = a.clone();
    deleting.metadata.name = Some("deleting".into());
    deleting.metadata.deletion_timestamp = Some(Time(now()));
    let candidates = vec![deleting, a];
    let labels = BTreeMap::new();
    let chain = [
        WorkloadRef { api_version: "apps/v1", kind: "ReplicaSet", name: "web-123" },
        WorkloadRef { api_version: "apps/v1beta2", kind: "Deployment", name: "web" },
    ];
    let got = select_workload_spread(&candidates, &chain, &labels).expect("selected");
    assert_eq!(got.metadata.name.as_deref(), Some("test-ws"));
    let other =
        [WorkloadRef { api_version: "extensions/v1beta1", kind: "Deployment", name: "web" }];
    assert!(select_workload_spread(&candidates, &other, &labels).is_none());
    let bad = [WorkloadRef { api_version: "a/b/c", kind: "Deployment", name: "web" }];
    assert!(select_workload_spread(&candidates, &bad, &labels).is_none());
}

#[test]
fn target_filter_selects_pods() {
    let mut a = ws(vec![subset("a", None)]);
    a.spec.target_filter = Some(kruise_api::apps::v1beta1::TargetFilter {
        selector: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some([("role".to_owned(), "worker".to_owned())].into()),
            match_expressions: None,
        }),
        replicas_path_list: vec![],
    });
    let chain = [WorkloadRef {
        api_version: "apps.kruise.io/v1beta1",
        kind: "CloneSet",
        name: "cloneset-test",
    }];
    let candidates = vec![a];
    assert!(select_workload_spread(&candidates, &chain, &BTreeMap::new()).is_none());
    let labels = [("role".to_owned(), "worker".to_owned())].into();
    assert!(select_workload_spread(&candidates, &chain, &labels).is_some());
}

#[test]
fn supported_owners_and_whitelist() {
    let empty = CustomWorkloadWhitelist::default();
    assert!(is_supported_owner("apps/v1", "Deployment", &empty));
    assert!(is_supported_owner("apps.kruise.io/v1beta1", "StatefulSet", &empty));
    assert!(is_supported_owner("batch/v1", "Job", &empty));
    assert!(!is_supported_owner("apps.kruise.io/v1alpha1", "DaemonSet", &empty));
    let w = CustomWorkloadWhitelist::parse(
        r#"{"workloads":[{"Group":"mock.kruise.io","Version":"v1","Kind":"GameServerSet","subResources":[{"Group":"mock.kruise.io","Version":"v1","Kind":"GameServer"}],"replicasPath":"spec.replicas"}]}"#,
    )
    .expect("parses");
    assert!(is_supported_owner("mock.kruise.io/v1", "GameServer", &w));
    assert!(is_supported_owner("mock.kruise.io/v2", "GameServerSet", &w));
    assert_eq!(w.replicas_path("mock.kruise.io", "v1", "GameServerSet"), Some("spec.replicas"));
    assert!(CustomWorkloadWhitelist::parse("[1]").is_err());
    assert_eq!(
        CustomWorkloadWhitelist::parse("").expect("empty"),
        CustomWorkloadWhitelist::default()
    );
}

// ----- reservation (updateSubsetForPod) -----

#[test]
fn create_reserves_in_the_first_subset_with_room() {
    let mut w = ws(vec![subset("subset-a", Some(IntOrString::Int(5)))]);
    w.spec.subsets.as_mut().expect("subsets").push(subset("subset-b", None));
    let r =
        reserve(&w, &pod("test-pod-1"), PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    assert_eq!(r.subset.as_deref(), Some("subset-a"));
    apply(&mut w, &r);
    let a = &versioned(&w)[0];
    assert_eq!(a.missing_replicas, 4);
    assert_eq!(a.creating_pods.get("test-pod-1"), Some(&Time(now())));
    // Recorded already: same subset, nothing to write.
    let again =
        reserve(&w, &pod("test-pod-1"), PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    assert_eq!((again.subset.as_deref(), again.new_status.is_none()), (Some("subset-a"), true));
}

#[test]
fn full_subset_falls_through_to_unlimited_without_a_write() {
    let mut w = ws(vec![subset("subset-a", Some(IntOrString::Int(0))), subset("subset-b", None)]);
    let r = reserve(&w, &pod("p"), PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    assert_eq!(r.subset.as_deref(), Some("subset-b"));
    assert!(r.new_status.is_none());
    w.spec.subsets.as_mut().expect("subsets").truncate(1);
    let r = reserve(&w, &pod("p"), PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    assert_eq!(r, Reservation::default());
}

#[test]
fn pod_without_name_gets_a_generated_uid() {
    let w =
        ws(vec![subset("a", Some(IntOrString::Int(2))), subset("b", Some(IntOrString::Int(2)))]);
    let mut p = pod("");
    p.metadata.name = None;
    let r = reserve(&w, &p, PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    assert_eq!(r.generated_uid.as_deref(), Some("uid-1"));
    let s = r.new_status.expect("status");
    assert!(s.versioned_subset_statuses[VERSION_IGNORED][0].creating_pods.contains_key("uid-1"));
}

/// A pod sent again after an earlier call placed it (several webhook entries select it) keeps
/// its subset and id, and reserves nothing more.
#[test]
fn an_unnamed_pod_placed_once_is_not_reserved_twice() {
    let mut w =
        ws(vec![subset("a", Some(IntOrString::Int(2))), subset("b", Some(IntOrString::Int(2)))]);
    let mut p = pod("");
    p.metadata.name = None;
    let first = reserve(&w, &p, PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    apply(&mut w, &first);
    inject(&w, first.subset.as_deref().expect("placed"), first.generated_uid.as_deref(), &mut p)
        .expect("injects");
    let mut other_uid = || "uid-other".to_owned();
    let again = reserve(&w, &p, PodOperation::Create, 10, "CloneSet", now(), &mut other_uid);
    assert_eq!(again.subset, first.subset);
    assert_eq!(again.generated_uid, first.generated_uid);
    assert!(again.new_status.is_none(), "nothing more is reserved");
    // An id the status does not record is no reservation: the pod is placed afresh.
    let mut forged = pod("");
    forged.metadata.name = None;
    forged.metadata.annotations = p.metadata.annotations.clone();
    let mut w2 =
        ws(vec![subset("a", Some(IntOrString::Int(2))), subset("b", Some(IntOrString::Int(2)))]);
    w2.metadata.name = w.metadata.name.clone();
    let placed = reserve(&w2, &forged, PodOperation::Create, 10, "CloneSet", now(), &mut other_uid);
    assert_eq!(placed.generated_uid.as_deref(), Some("uid-other"));
    assert!(placed.new_status.is_some());
}

#[test]
fn percent_max_scales_with_replicas_rounding_up() {
    let w = ws(vec![subset("a", Some(IntOrString::String("30%".into()))), subset("b", None)]);
    let r = reserve(&w, &pod("p"), PodOperation::Create, 5, "CloneSet", now(), &mut uid());
    // ceil(1.5) = 2, one taken.
    assert_eq!(
        r.new_status.expect("status").versioned_subset_statuses[VERSION_IGNORED][0]
            .missing_replicas,
        1
    );
}

#[test]
fn unschedulable_subsets_are_skipped() {
    let mut w =
        ws(vec![subset("a", Some(IntOrString::Int(5))), subset("b", Some(IntOrString::Int(5)))]);
    let mut statuses = initial_subset_statuses(&w, 10);
    statuses[0].conditions.push(Condition {
        type_: SUBSET_SCHEDULABLE.into(),
        status: "False".into(),
        reason: "PodUnschedulable".into(),
        message: String::new(),
        last_transition_time: Time(now()),
        observed_generation: None,
    });
    w.status = Some(WorkloadSpreadStatus {
        versioned_subset_statuses: [(VERSION_IGNORED.to_owned(), statuses)].into(),
        ..Default::default()
    });
    let r = reserve(&w, &pod("p"), PodOperation::Create, 10, "CloneSet", now(), &mut uid());
    assert_eq!(r.subset.as_deref(), Some("b"));
}

#[test]
fn delete_and_eviction_give_room_back_once() {
    let mut w = ws(vec![subset("subset-a", Some(IntOrString::Int(5))), subset("b", None)]);
    let mut statuses = initial_subset_statuses(&w, 10);
    statuses[0].missing_replicas = 0;
    w.status = Some(WorkloadSpreadStatus {
        versioned_subset_statuses: [(VERSION_IGNORED.to_owned(), statuses)].into(),
        ..Default::default()
    });
    let p = with_subset(pod("test-pod-1"), "subset-a");
    for op in [PodOperation::Delete, PodOperation::Eviction] {
        let r = reserve(&w, &p, op, 10, "CloneSet", now(), &mut uid());
        let s = r.new_status.expect("status");
        let a = &s.versioned_subset_statuses[VERSION_IGNORED][0];
        assert_eq!((a.missing_replicas, a.deleting_pods.contains_key("test-pod-1")), (1, true));
    }
    let r = reserve(&w, &p, PodOperation::Delete, 10, "CloneSet", now(), &mut uid());
    apply(&mut w, &r);
    let again = reserve(&w, &p, PodOperation::Delete, 10, "CloneSet", now(), &mut uid());
    assert_eq!(again, Reservation::default());
    // A pod of an unknown subset, or without the annotation: nothing.
    let stray = with_subset(pod("x"), "nope");
    assert_eq!(
        reserve(&w, &stray, PodOperation::Delete, 10, "CloneSet", now(), &mut uid()),
        Reservation::default()
    );
    assert_eq!(
        reserve(&w, &pod("y"), PodOperation::Delete, 10, "CloneSet", now(), &mut uid()),
        Reservation::default()
    );
    // Unlimited subset: no write.
    let r = reserve(
        &w,
        &with_subset(pod("z"), "b"),
        PodOperation::Delete,
        10,
        "CloneSet",
        now(),
        &mut uid(),
    );
    assert_eq!((r.subset.as_deref(), r.new_status), (Some("b"), None));
}

#[test]
fn statefulset_pods_go_by_ordinal() {
    let mut w = ws(vec![
        subset("a", Some(IntOrString::Int(2))),
        subset("b", Some(IntOrString::Int(3))),
        subset("c", None),
    ]);
    w.spec.target_reference.as_mut().expect("target").kind = "StatefulSet".into();
    let pick = |name: &str, w: &WorkloadSpread| {
        reserve(w, &pod(name), PodOperation::Create, 10, "StatefulSet", now(), &mut uid()).subset
    };
    assert_eq!(pick("web-0", &w).as_deref(), Some("a"));
    assert_eq!(pick("web-1", &w).as_deref(), Some("a"));
    assert_eq!(pick("web-2", &w).as_deref(), Some("b"));
    assert_eq!(pick("web-4", &w).as_deref(), Some("b"));
    assert_eq!(pick("web-5", &w).as_deref(), Some("c"));
    assert_eq!(pick("web-99999999999", &w).as_deref(), Some("a"));
    let mut st = initial_subset_statuses(&w, 10);
    st[0].conditions.push(Condition {
        type_: SUBSET_SCHEDULABLE.into(),
        status: "False".into(),
        reason: "PodUnschedulable".into(),
        message: String::new(),
        last_transition_time: Time(now()),
        observed_generation: None,
    });
    w.status = Some(WorkloadSpreadStatus { subset_statuses: st, ..Default::default() });
    assert_eq!(pick("web-0", &w).as_deref(), Some("b"));
    assert_eq!(pick("web-3", &w).as_deref(), Some("c"));
}

// ----- injection -----

fn demo_subset() -> WorkloadSpreadSubset {
    WorkloadSpreadSubset {
        name: "subset-a".into(),
        required_node_selector: Some(zone_term("ack")),
        preferred_node_selector: vec![PreferredSchedulingTerm {
            weight: 5,
            preference: zone_term("cn-a"),
        }],
        tolerations: Some(vec![Toleration {
            key: Some("node.kubernetes.io/not-ready".into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            ..Default::default()
        }]),
        max_replicas: Some(IntOrString::Int(5)),
        patch: Some(RawExtension(json!({
            "metadata": {"labels": {"subset": "subset-a"}, "annotations": {"subset": "subset-a"}}
        }))),
    }
}

#[test]
fn inject_writes_the_subset_like_upstream() {
    let w = ws(vec![demo_subset()]);
    let mut p = pod("test-pod-1");
    assert!(inject(&w, "subset-a", None, &mut p).expect("injects"));
    let meta = &p.metadata;
    assert_eq!(meta.labels.as_ref().expect("labels")["subset"], "subset-a");
    let ann = meta.annotations.as_ref().expect("annotations");
    assert_eq!(ann["subset"], "subset-a");
    assert_eq!(ann[MATCHED_WORKLOADSPREAD_ANNOTATION], r#"{"name":"test-ws","subset":"subset-a"}"#);
    let spec = p.spec.as_ref().expect("spec");
    assert_eq!(spec.tolerations.as_ref().expect("tolerations").len(), 1);
    let na = spec.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()).expect("node affinity");
    assert_eq!(
        na.required_during_scheduling_ignored_during_execution
            .as_ref()
            .expect("required")
            .node_selector_terms,
        vec![zone_term("ack")]
    );
    assert_eq!(
        na.preferred_during_scheduling_ignored_during_execution.as_ref().expect("preferred").len(),
        1
    );
    // Twice is once.
    let once = p.clone();
    inject(&w, "subset-a", None, &mut p).expect("injects");
    assert_eq!(p, once);
    // Unknown subset: untouched.
    let mut q = pod("q");
    assert!(!inject(&w, "nope", None, &mut q).expect("no error"));
    assert_eq!(q, pod("q"));
}

#[test]
fn inject_merges_required_term_into_every_term() {
    let w = ws(vec![demo_subset()]);
    let mut p = pod("p");
    let mut own = zone_term("x");
    own.match_expressions.as_mut().expect("exprs")[0].key = "disk".into();
    p.spec.as_mut().expect("spec").affinity = Some(k8s_openapi::api::core::v1::Affinity {
        node_affinity: Some(k8s_openapi::api::core::v1::NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(
                k8s_openapi::api::core::v1::NodeSelector {
                    node_selector_terms: vec![own.clone(), own],
                },
            ),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Default::default()
    });
    inject(&w, "subset-a", Some("u1"), &mut p).expect("injects");
    let terms = &p
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
        .expect("required")
        .node_selector_terms;
    assert_eq!(terms.len(), 2);
    assert!(terms.iter().all(|t| t.match_expressions.as_ref().expect("exprs").len() == 2));
    assert!(
        annotation(&p, MATCHED_WORKLOADSPREAD_ANNOTATION)
            .expect("annotation")
            .contains(r#""uid":"u1""#)
    );
}

#[test]
fn patched_priority_class_clears_priority() {
    let mut s = demo_subset();
    s.patch = Some(RawExtension(json!({"spec": {"priorityClassName": "high"}})));
    let w = ws(vec![s]);
    let mut p = pod("p");
    p.spec.as_mut().expect("spec").priority = Some(0);
    inject(&w, "subset-a", None, &mut p).expect("injects");
    let spec = p.spec.as_ref().expect("spec");
    assert_eq!((spec.priority_class_name.as_deref(), spec.priority), (Some("high"), None));
    let patch = inject_patch(&w, "subset-a", None, &pod("p")).expect("patch").expect("some");
    assert!(patch.as_array().is_some_and(|ops| !ops.is_empty()));
}

// ----- the controller -----

fn no_nodes(_: &str) -> Option<std::sync::Arc<Node>> {
    None
}

fn plan(w: &WorkloadSpread, pods: &[Pod], replicas: i32, at: jiff::Timestamp) -> ReconcilePlan {
    reconcile(&ReconcileInput::new(w, pods, replicas, &no_nodes, "CloneSet", at))
}

fn costs(plan: &ReconcilePlan) -> BTreeMap<String, String> {
    plan.pod_patches
        .iter()
        .filter_map(|p| {
            let v = p.patch["metadata"]["annotations"][POD_DELETION_COST_ANNOTATION].as_str()?;
            Some((p.name.clone(), v.to_owned()))
        })
        .collect()
}

#[test]
fn status_counts_pods_and_expires_records() {
    let mut w = ws(vec![subset("subset-a", Some(IntOrString::Int(5)))]);
    let mut old = initial_subset_statuses(&w, 10);
    old[0].creating_pods.insert("test-pod-1".into(), Time(now() - secs(10)));
    old[0].creating_pods.insert("test-pod-9".into(), Time(now() - secs(31)));
    old[0].creating_pods.insert("test-pod-8".into(), Time(now() - secs(3)));
    old[0].deleting_pods.insert("test-pod-0".into(), Time(now() - secs(1)));
    w.status = Some(WorkloadSpreadStatus { subset_statuses: old, ..Default::default() });
    let pods: Vec<Pod> =
        (0..3).map(|i| with_subset(pod(&format!("test-pod-{i}")), "subset-a")).collect();
    let p = plan(&w, &pods, 10, now());
    let a = &p.status.subset_statuses[0];
    // 3 active, one of them being deleted, one still being created: 5 - 3 + 1 - 1.
    assert_eq!((a.replicas, a.missing_replicas), (3, 2));
    assert_eq!(a.creating_pods.keys().collect::<Vec<_>>(), ["test-pod-8"]);
    assert_eq!(a.deleting_pods.keys().collect::<Vec<_>>(), ["test-pod-0"]);
    assert_eq!(p.events.len(), 1);
    assert_eq!(p.events[0].reason, "CreatePodFailed");
    assert_eq!(
        p.events[0].message,
        "Pod default/test-pod-9 was expected to be created but it wasn't"
    );
    // The earliest expiry: the deleting pod at 15 - 1 = 14 s.
    assert_eq!(p.requeue_after, Some(std::time::Duration::from_secs(14)));
    assert_eq!(p.status.observed_generation, 10);
    assert!(p.status_changed);
}

#[test]
fn delete_timeout_is_reported() {
    let mut w = ws(vec![subset("subset-a", Some(IntOrString::Int(5)))]);
    let mut old = initial_subset_statuses(&w, 10);
    old[0].deleting_pods.insert("test-pod-0".into(), Time(now() - secs(20)));
    w.status = Some(WorkloadSpreadStatus { subset_statuses: old, ..Default::default() });
    let pods = vec![with_subset(pod("test-pod-0"), "subset-a")];
    let p = plan(&w, &pods, 10, now());
    assert_eq!(p.status.subset_statuses[0].missing_replicas, 4);
    assert_eq!(p.events[0].reason, "DeletePodFailed");
    assert!(p.status.subset_statuses[0].deleting_pods.is_empty());
}

#[test]
fn deletion_costs_like_upstream() {
    // maxReplicas 1 and 3 pods: two negative, one positive.
    let w = ws(vec![subset("subset-a", Some(IntOrString::Int(1))), subset("subset-b", None)]);
    let mut pods: Vec<Pod> =
        (0..3).map(|i| with_subset(pod(&format!("a-{i}")), "subset-a")).collect();
    for (i, p) in pods.iter_mut().enumerate() {
        p.spec.as_mut().expect("spec").node_name = Some("n".into());
        p.status = Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if i == 1 { "True".into() } else { "False".into() },
                ..Default::default()
            }]),
            ..Default::default()
        });
    }
    pods.push(with_subset(pod("b-0"), "subset-b"));
    pods.push(pod("stray"));
    let p = plan(&w, &pods, 10, now());
    let c = costs(&p);
    assert_eq!(c["a-1"], "200");
    assert_eq!((c["a-0"].as_str(), c["a-2"].as_str()), ("-100", "-100"));
    assert_eq!(c["b-0"], "100");
    assert_eq!(c["stray"], "-300");
    // Applying the patches leaves nothing to do.
    let patched = apply_patches(&pods, &p);
    assert!(plan(&w, &patched, 10, now()).pod_patches.is_empty());
}

fn apply_patches(pods: &[Pod], plan: &ReconcilePlan) -> Vec<Pod> {
    pods.iter()
        .map(|p| {
            let Some(patch) =
                plan.pod_patches.iter().find(|x| Some(&x.name) == p.metadata.name.as_ref())
            else {
                return p.clone();
            };
            let mut v = serde_json::to_value(p).expect("encode");
            json_patch::merge(&mut v, &patch.patch);
            serde_json::from_value(v).expect("decode")
        })
        .collect()
}

#[test]
fn old_versions_reverse_the_subset_order() {
    let w = ws(vec![subset("subset-a", Some(IntOrString::Int(3))), subset("subset-b", None)]);
    let mut pods = Vec::new();
    for i in 0..10 {
        let mut p =
            with_subset(pod(&format!("test-pod-{i}")), if i < 6 { "subset-a" } else { "subset-b" });
        p.metadata.owner_references.as_mut().expect("owners")[0].kind = "ReplicaSet".into();
        let version = if i % 2 == 0 { "oldVersion" } else { "newVersion" };
        p.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("pod-template-hash".into(), version.into());
        pods.push(p);
    }
    let mut input = ReconcileInput::new(&w, &pods, 10, &no_nodes, "Deployment", now());
    input.latest_version = Some("newVersion");
    let p = reconcile(&input);
    let c = costs(&p);
    for (name, want) in
        [("test-pod-0", "100"), ("test-pod-6", "200"), ("test-pod-1", "200"), ("test-pod-7", "100")]
    {
        assert_eq!(c[name], want, "{name}");
    }
    let s = &p.status.versioned_subset_statuses;
    assert_eq!((s["oldVersion"][0].replicas, s["newVersion"][1].replicas), (3, 2));
    assert_eq!(
        (p.status.subset_statuses[0].replicas, p.status.subset_statuses[1].replicas),
        (6, 4)
    );
}

fn node(name: &str, zone: &str, taints: Vec<Taint>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("topology.kubernetes.io/zone".to_owned(), zone.to_owned())].into()),
            ..Default::default()
        },
        spec: Some(NodeSpec { taints: Some(taints), ..Default::default() }),
        ..Default::default()
    }
}

#[test]
fn subset_score_like_matches_subset() {
    let mut s = demo_subset();
    s.required_node_selector = Some(zone_term("a"));
    s.preferred_node_selector =
        vec![PreferredSchedulingTerm { weight: 100, preference: zone_term("a") }];
    s.patch = Some(RawExtension(json!({"metadata": {"labels": {"app": "nginx"}}})));
    let n = node("n1", "a", vec![]);
    assert_eq!(reconcile::subset_score(&pod("p"), &n, &s, 1), Some(10011));
    assert_eq!(reconcile::subset_score(&pod("p"), &n, &s, 0), Some(10010));
    assert_eq!(reconcile::subset_score(&pod("p"), &node("n2", "b", vec![]), &s, 1), None);
    let tainted = node(
        "n3",
        "a",
        vec![Taint { key: "k".into(), effect: "NoSchedule".into(), ..Default::default() }],
    );
    assert_eq!(reconcile::subset_score(&pod("p"), &tainted, &s, 1), None);
}

#[test]
fn pods_created_before_the_workloadspread_are_adopted_by_node() {
    let mut a = subset("subset-a", Some(IntOrString::Int(1)));
    a.required_node_selector = Some(zone_term("a"));
    a.patch = Some(RawExtension(json!({"metadata": {"labels": {"zone": "a"}}})));
    let mut b = subset("subset-b", None);
    b.required_node_selector = Some(zone_term("b"));
    let w = ws(vec![a, b]);
    let nodes = [node("node-a", "a", vec![]), node("node-b", "b", vec![])];
    let lookup = |name: &str| {
        nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(name))
            .cloned()
            .map(std::sync::Arc::new)
    };
    let mut pods = Vec::new();
    for (name, node) in [("p0", "node-a"), ("p1", "node-a"), ("p2", "node-b"), ("p3", "")] {
        let mut p = pod(name);
        p.spec.as_mut().expect("spec").node_name = (!node.is_empty()).then(|| node.to_owned());
        pods.push(p);
    }
    let input = ReconcileInput::new(&w, &pods, 3, &lookup, "CloneSet", now());
    let p = reconcile(&input);
    let patch = |n: &str| &p.pod_patches.iter().find(|x| x.name == n).expect("patched").patch;
    assert_eq!(patch("p0")["metadata"]["labels"]["zone"], "a");
    assert_eq!(
        patch("p0")["metadata"]["annotations"][MATCHED_WORKLOADSPREAD_ANNOTATION],
        r#"{"name":"test-ws","subset":"subset-a"}"#
    );
    assert_eq!(
        patch("p2")["metadata"]["annotations"][MATCHED_WORKLOADSPREAD_ANNOTATION],
        r#"{"name":"test-ws","subset":"subset-b"}"#
    );
    assert_eq!(patch("p3")["metadata"]["annotations"][POD_DELETION_COST_ANNOTATION], "-300");
    assert_eq!(p.status.subset_statuses[0].replicas, 2);
    // Idempotent on its own outcome.
    let patched = apply_patches(&pods, &p);
    let input = ReconcileInput::new(&w, &patched, 3, &lookup, "CloneSet", now());
    assert!(reconcile(&input).pod_patches.is_empty());
}

fn adaptive(mut w: WorkloadSpread, seconds: i32) -> WorkloadSpread {
    w.spec.schedule_strategy = WorkloadSpreadScheduleStrategy {
        type_: Some(WorkloadSpreadScheduleStrategyType::Adaptive),
        adaptive: Some(AdaptiveWorkloadSpreadStrategy {
            reschedule_critical_seconds: Some(seconds),
            ..Default::default()
        }),
    };
    w
}

fn pending(name: &str, created: jiff::Timestamp) -> Pod {
    let mut p = with_subset(pod(name), "subset-a");
    p.metadata.creation_timestamp = Some(Time(created));
    p.status = Some(PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p
}

fn schedulable(p: &ReconcilePlan, i: usize) -> Option<(String, String, jiff::Timestamp)> {
    p.status.subset_statuses[i]
        .conditions
        .iter()
        .find(|c| c.type_ == SUBSET_SCHEDULABLE)
        .map(|c| (c.status.clone(), c.reason.clone(), c.last_transition_time.0))
}

#[test]
fn reschedule_marks_and_recovers_subsets() {
    let w = adaptive(
        ws(vec![subset("subset-a", Some(IntOrString::Int(5))), subset("subset-b", None)]),
        30,
    );
    // No pods: schedulable.
    let p = plan(&w, &[], 10, now());
    assert_eq!(schedulable(&p, 0), Some(("True".into(), "Sufficient".into(), now())));
    assert_eq!(schedulable(&p, 1), Some(("True".into(), "Sufficient".into(), now())));
    // Two pods pending past the critical time: unschedulable, deleted.
    let pods = vec![
        pending("a-0", now() - secs(60)),
        pending("a-1", now() - secs(40)),
        pending("a-2", now() - secs(10)),
    ];
    let p = plan(&w, &pods, 10, now());
    assert_eq!(schedulable(&p, 0), Some(("False".into(), "PodUnschedulable".into(), now())));
    assert_eq!(p.delete_pods, ["a-0", "a-1"]);
    assert_eq!(p.requeue_after, Some(std::time::Duration::from_secs(20)));
    // Two minutes later without stuck pods: still unschedulable, requeued for recovery.
    let mut w2 = w.clone();
    w2.status = Some(p.status.clone());
    let later = now() + secs(120);
    let p2 = plan(&w2, &[], 10, later);
    assert_eq!(schedulable(&p2, 0), Some(("False".into(), "PodUnschedulable".into(), now())));
    assert_eq!(p2.requeue_after, Some(std::time::Duration::from_secs(180)));
    // After five minutes: recovered, with an Event.
    let p3 = plan(&w2, &[], 10, now() + secs(301));
    assert_eq!(schedulable(&p3, 0), Some(("True".into(), "Sufficient".into(), now() + secs(301))));
    assert_eq!(p3.events[0].reason, "RecoverSchedulable");
    // Fixed strategy: the condition goes away.
    let mut fixed = w2.clone();
    fixed.spec.schedule_strategy = WorkloadSpreadScheduleStrategy::default();
    assert_eq!(schedulable(&plan(&fixed, &[], 10, now()), 0), None);
}

#[test]
fn no_target_plans_nothing() {
    let mut w = ws(vec![subset("a", None)]);
    w.spec.target_reference = None;
    let p = plan(&w, &[pod("x")], 1, now());
    assert!(p.pod_patches.is_empty() && !p.status_changed);
}
