//! After upstream's `workloadspread_validation_test.go`.

use super::*;
use k8s_openapi::api::core::v1::{
    Container, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, PreferredSchedulingTerm,
    Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kruise_api::apps::v1beta1::{
    AdaptiveWorkloadSpreadStrategy, WorkloadSpreadScheduleStrategy, WorkloadSpreadSpec,
};
use serde_json::json;

fn subset(name: &str, max: Option<IntOrString>) -> WorkloadSpreadSubset {
    WorkloadSpreadSubset { name: name.into(), max_replicas: max, ..Default::default() }
}

fn ws() -> WorkloadSpread {
    let mut ws = WorkloadSpread::new(
        "test-ws",
        WorkloadSpreadSpec {
            target_reference: Some(TargetReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "cloneset-test".into(),
            }),
            subsets: Some(vec![
                subset("subset-a", Some(IntOrString::Int(5))),
                subset("subset-b", None),
            ]),
            ..Default::default()
        },
    );
    ws.metadata.namespace = Some("default".into());
    ws
}

fn errors(ws: &WorkloadSpread) -> Vec<String> {
    validate_workloadspread_create(ws, &WorkloadSpreadContext::new(&[])).messages()
}

fn one(ws: &WorkloadSpread) -> String {
    let errs = errors(ws);
    assert_eq!(errs.len(), 1, "{errs:?}");
    errs[0].clone()
}

#[test]
fn valid_workloadspread_passes() {
    assert_eq!(errors(&ws()), Vec::<String>::new());
}

#[test]
fn target_ref_rules() {
    let mut w = ws();
    w.spec.target_reference = None;
    assert_eq!(one(&w), "spec.targetRef: Required value: no targetRef defined in WorkloadSpread");
    let mut w = ws();
    w.spec.target_reference.as_mut().expect("target").name = String::new();
    assert!(one(&w).starts_with("spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"apps.kruise.io/v1alpha1\", Kind:\"CloneSet\", Name:\"\"}: empty TargetReference"));
    let mut w = ws();
    w.spec.target_reference.as_mut().expect("target").kind = "StatefulSet".into();
    w.spec.target_reference.as_mut().expect("target").api_version =
        "apps.kruise.io.xxx/v1alpha1".into();
    assert!(one(&w).ends_with("TargetReference is not valid for StatefulSet."));
    let mut w = ws();
    w.spec.target_reference.as_mut().expect("target").kind = "GameServerSet".into();
    w.spec.target_reference.as_mut().expect("target").api_version = "mock.kruise.io/v1".into();
    assert!(one(&w).ends_with("TargetReference's GroupKind is not permitted."));
    let list = CustomWorkloadWhitelist::parse(
        r#"{"workloads":[{"Group":"mock.kruise.io","Kind":"GameServerSet"}]}"#,
    )
    .expect("whitelist");
    let mut ctx = WorkloadSpreadContext::new(&[]);
    ctx.whitelist = Some(&list);
    assert!(validate_workloadspread_create(&w, &ctx).is_empty());
}

#[test]
fn subset_rules() {
    let mut w = ws();
    w.spec.subsets = None;
    assert_eq!(one(&w), "spec.subsets: Required value: subsets number must >= 1 in WorkloadSpread");
    let mut w = ws();
    w.spec.subsets.as_mut().expect("subsets")[1].name = String::new();
    assert_eq!(one(&w), "spec.subsets[1].name: Invalid value: \"\"");
    let mut w = ws();
    w.spec.subsets.as_mut().expect("subsets")[1].name = "subset-a".into();
    assert_eq!(
        one(&w),
        "spec.subsets[1].name: Invalid value: \"subset-a\": duplicated subset name subset-a"
    );
    let mut w = ws();
    w.spec.subsets.as_mut().expect("subsets")[0].required_node_selector = Some(NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: "zone".into(),
            operator: "In".into(),
            values: None,
        }]),
        match_fields: None,
    });
    assert_eq!(
        one(&w),
        "spec.subsets[0].requiredNodeSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
    );
    let mut w = ws();
    w.spec.subsets.as_mut().expect("subsets")[0].preferred_node_selector =
        vec![PreferredSchedulingTerm { weight: 101, preference: NodeSelectorTerm::default() }];
    assert_eq!(
        one(&w),
        "spec.subsets[0].preferredNodeSelector[0].weight: Invalid value: 101: must be in the range 1-100"
    );
    let mut w = ws();
    w.spec.subsets.as_mut().expect("subsets")[0].tolerations =
        Some(vec![Toleration { operator: Some("Equal".into()), ..Default::default() }]);
    assert!(
        one(&w).starts_with("spec.subsets[0].tolerations[0].operator: Invalid value: \"Equal\"")
    );
}

#[test]
fn max_replicas_rules() {
    let with = |a: IntOrString, b: Option<IntOrString>| {
        let mut w = ws();
        w.spec.subsets = Some(vec![subset("subset-a", Some(a)), subset("subset-b", b)]);
        errors(&w)
    };
    assert_eq!(
        with(IntOrString::Int(-1), None),
        [
            "spec.subsets[0].maxReplicas: Invalid value: intstr.IntOrString{Type:0, IntVal:-1, StrVal:\"\"}: maxReplicas is not valid for subset"
        ]
    );
    assert_eq!(with(IntOrString::String("0.2%".into()), None).len(), 1);
    assert!(with(IntOrString::String("101%".into()), None)[0].contains("exceeds 100%"));
    assert!(
        with(IntOrString::String("40%".into()), Some(IntOrString::String("70%".into())))[0]
            .starts_with("spec.subsets[1].maxReplicas")
    );
    assert_eq!(
        with(IntOrString::String("40%".into()), Some(IntOrString::String("20%".into()))),
        [
            "spec.subsets[0].maxReplicas: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"40%\"}: maxReplicas sum of all subsets must equal 100% when type is specified as percent"
        ]
    );
    assert!(with(IntOrString::String("40%".into()), None).is_empty());
    assert!(
        with(IntOrString::Int(2), Some(IntOrString::String("20%".into())))[0]
            .ends_with("the maxReplicas type of all subsets must be the same")
    );
    let mut w = ws();
    w.spec.target_reference = Some(TargetReference {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        name: "sts".into(),
    });
    w.spec.subsets.as_mut().expect("subsets")[0].max_replicas =
        Some(IntOrString::String("50%".into()));
    assert!(one(&w).ends_with("the maxReplicas type must be Int for StatefulSet"));
}

#[test]
fn schedule_strategy_rules() {
    let mut w = ws();
    w.spec.schedule_strategy.type_ = Some(WorkloadSpreadScheduleStrategyType::Other("Bad".into()));
    assert_eq!(
        one(&w),
        "spec.scheduleStrategy.type: Invalid value: \"Bad\": ScheduleStrategy's type is not valid"
    );
    let adaptive = |seconds: i32| WorkloadSpreadScheduleStrategy {
        type_: Some(WorkloadSpreadScheduleStrategyType::Adaptive),
        adaptive: Some(AdaptiveWorkloadSpreadStrategy {
            reschedule_critical_seconds: Some(seconds),
            ..Default::default()
        }),
    };
    let mut w = ws();
    w.spec.schedule_strategy = adaptive(-1);
    assert_eq!(
        one(&w),
        "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: -1: rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > 295 is not permitted"
    );
    w.spec.schedule_strategy = adaptive(30);
    assert!(errors(&w).is_empty());
    w.spec.schedule_strategy.type_ = Some(WorkloadSpreadScheduleStrategyType::Fixed);
    assert_eq!(
        one(&w),
        "spec.scheduleStrategy.type: Invalid value: 30: the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy"
    );
    let mut w = ws();
    w.spec.schedule_strategy = adaptive(30);
    w.spec.subsets.as_mut().expect("subsets")[1].max_replicas = Some(IntOrString::Int(1));
    assert_eq!(
        one(&w),
        "spec.scheduleStrategy.adaptive: Invalid value: 30: the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy"
    );
}

#[test]
fn patch_is_checked_against_the_template() {
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta::default()),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                image: Some("busybox".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    };
    let mut w = ws();
    w.spec.subsets.as_mut().expect("subsets")[0].patch =
        Some(RawExtension(json!({"metadata": {"labels": {"a": "b"}}})));
    let mut ctx = WorkloadSpreadContext::new(&[]);
    ctx.workload_template = Some(&template);
    assert!(validate_workloadspread_create(&w, &ctx).is_empty());
    w.spec.subsets.as_mut().expect("subsets")[0].patch =
        Some(RawExtension(json!({"spec": {"containers": [{"name": "main", "image": ""}]}})));
    let errs = validate_workloadspread_create(&w, &ctx).messages();
    assert!(
        errs.iter().any(|e| e.starts_with("spec.subsets[0].patch.containers[0].image")),
        "{errs:?}"
    );
}

#[test]
fn conflicts_and_updates() {
    let mut other = ws();
    other.metadata.name = Some("other".into());
    other.spec.target_reference.as_mut().expect("target").api_version =
        "apps.kruise.io/v1beta1".into();
    let others = [ws(), other];
    let errs =
        validate_workloadspread_create(&ws(), &WorkloadSpreadContext::new(&others)).messages();
    assert_eq!(
        errs,
        [
            "spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"apps.kruise.io/v1alpha1\", Kind:\"CloneSet\", Name:\"cloneset-test\"}: ws.spec.targetRef is in conflict with other WorkloadSpread other"
        ]
    );
    let ctx = WorkloadSpreadContext::new(&[]);
    let old = ws();
    for change in [
        |t: &mut TargetReference| t.api_version = "apps/v1".into(),
        |t: &mut TargetReference| t.kind = "Deployment".into(),
        |t: &mut TargetReference| t.name = "x".into(),
    ] {
        let mut new = ws();
        new.metadata.resource_version = Some("1".into());
        change(new.spec.target_reference.as_mut().expect("target"));
        let errs = validate_workloadspread_update(&new, &old, &ctx).messages();
        assert!(
            errs.iter()
                .any(|e| e.ends_with("change TargetReference is not permitted for WorkloadSpread")),
            "{errs:?}"
        );
    }
    let mut new = ws();
    new.spec.target_reference.as_mut().expect("target").api_version =
        "apps.kruise.io/v1beta1".into();
    new.metadata.resource_version = Some("1".into());
    assert_eq!(validate_workloadspread_update(&new, &old, &ctx).messages(), Vec::<String>::new());
    let unavailable =
        WorkloadSpreadContext { others: OtherWorkloadSpreads::Unavailable("boom"), ..ctx };
    assert_eq!(
        validate_workloadspread_create(&ws(), &unavailable).messages(),
        ["[]: Internal error: query other WorkloadSpread failed, err: boom"]
    );
}
