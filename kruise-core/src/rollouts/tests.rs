#![allow(clippy::unwrap_used)]
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::rollouts::v1beta1::{CanaryStep, CanaryStrategy, ObjectRef, Rollout, RolloutSpec};
use serde_json::{Value, json};

use super::admission::{hold_workload, validate_rollout};
use super::workload::desired_partition;
use super::{IN_PROGRESSING_ANNOTATION, ReleasedKind};

fn pct(s: &str) -> IntOrString {
    IntOrString::String(s.into())
}

pub(super) fn rollout(kind: &str, api_version: &str, steps: &[IntOrString]) -> Rollout {
    let mut r = Rollout::new(
        "rollouts-demo",
        RolloutSpec {
            workload_ref: ObjectRef {
                api_version: api_version.into(),
                kind: kind.into(),
                name: "demo".into(),
            },
            strategy: kruise_api::rollouts::v1beta1::RolloutStrategy {
                canary: Some(CanaryStrategy {
                    steps: steps
                        .iter()
                        .map(|r| CanaryStep { replicas: Some(r.clone()), ..Default::default() })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            disabled: false,
        },
    );
    r.metadata.namespace = Some("default".into());
    r
}

#[test]
fn partitions_follow_upstreams_examples() {
    // 5 replicas at 20%: one canary, "80%" left; 3 at 50%: two canaries, "33%".
    assert_eq!(desired_partition(ReleasedKind::CloneSet, 4, 5, true, false), pct("80%"));
    assert_eq!(desired_partition(ReleasedKind::CloneSet, 1, 3, true, false), pct("33%"));
    assert_eq!(desired_partition(ReleasedKind::CloneSet, 0, 3, true, true), pct("0%"));
    assert_eq!(desired_partition(ReleasedKind::CloneSet, 5, 5, true, false), pct("100%"));
    // 1 stable of 200: 0% would scale to 0 and release everything, so 1%.
    assert_eq!(desired_partition(ReleasedKind::CloneSet, 1, 200, true, false), pct("1%"));
    assert_eq!(desired_partition(ReleasedKind::CloneSet, 3, 5, false, false), IntOrString::Int(3));
    assert_eq!(
        desired_partition(ReleasedKind::AdvancedStatefulSet, 3, 5, true, false),
        IntOrString::Int(3)
    );
}

fn clone_set(image: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "demo", "namespace": "default", "uid": "u1"},
        "spec": {"replicas": 5, "template": {"metadata": {"labels": {"app": "demo"}},
            "spec": {"containers": [{"name": "main", "image": image}]}}}
    })
}

#[test]
fn a_template_change_is_held_and_marked() {
    let rollouts = [rollout("CloneSet", "apps.kruise.io/v1alpha1", &[pct("20%"), pct("100%")])];
    let held = hold_workload(&clone_set("a"), &clone_set("b"), &rollouts, &[]).expect("held");
    assert_eq!(held.pointer("/spec/updateStrategy/rollingUpdate/partition"), Some(&json!("100%")));
    assert_eq!(
        held.pointer("/metadata/annotations").and_then(|a| a.get(IN_PROGRESSING_ANNOTATION)),
        Some(&json!(r#"{"rolloutName":"rollouts-demo"}"#))
    );
    // No template change, another workload, or no Rollout: admitted as is.
    assert_eq!(hold_workload(&clone_set("a"), &clone_set("a"), &rollouts, &[]), None);
    let mut other = clone_set("b");
    other["metadata"]["name"] = json!("other");
    assert_eq!(hold_workload(&clone_set("a"), &other, &rollouts, &[]), None);
    assert_eq!(hold_workload(&clone_set("a"), &clone_set("b"), &[], &[]), None);
    // v1alpha1 keeps the partition directly under updateStrategy.
    let (mut old, mut new) = (clone_set("a"), clone_set("b"));
    old["apiVersion"] = json!("apps.kruise.io/v1alpha1");
    new["apiVersion"] = json!("apps.kruise.io/v1alpha1");
    let held = hold_workload(&old, &new, &rollouts, &[]).expect("held");
    assert_eq!(held.pointer("/spec/updateStrategy/partition"), Some(&json!("100%")));
}

#[test]
fn validation_names_the_field() {
    let messages = |r: &Rollout| validate_rollout(r, None, None, &[]).messages();
    assert!(messages(&rollout("CloneSet", "apps.kruise.io/v1beta1", &[pct("20%")])).is_empty());
    assert_eq!(
        messages(&rollout("CloneSet", "apps.kruise.io/v1beta1", &[pct("50%"), pct("20%")])),
        [format!(
            "Spec.Strategy.Canary.Steps.CanaryReplicas: Invalid value: {}: Steps.CanaryReplicas must be a non decreasing sequence",
            r#"[{"replicas":"50%","pause":{}},{"replicas":"20%","pause":{}}]"#
        )]
    );
    assert_eq!(
        messages(&rollout("CloneSet", "apps.kruise.io/v1beta1", &[pct("120%")])),
        [
            r#"Spec.Strategy.Canary.Steps[0].Replicas: Invalid value: "120%": replicas must be positive number, or a percentage with "0%" < canaryReplicas <= "100%""#
        ]
    );
    assert_eq!(
        messages(&rollout("ReplicaSet", "apps/v1", &[pct("20%")])),
        [
            r#"Spec.ObjectRef.WorkloadRef: Invalid value: {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"demo"}: WorkloadRef kind is not supported"#
        ]
    );
    assert!(messages(&rollout("DaemonSet", "apps/v1", &[pct("20%")])).is_empty());
    assert!(messages(&rollout("Deployment", "apps/v1", &[pct("20%")])).is_empty());
    let mut twin = rollout("CloneSet", "apps.kruise.io/v1beta1", &[pct("20%")]);
    twin.metadata.name = Some("twin".into());
    let first = rollout("CloneSet", "apps.kruise.io/v1beta1", &[pct("20%")]);
    assert_eq!(
        validate_rollout(&first, None, None, &[twin]).messages(),
        [
            r#"Conflict Checker: Invalid value: "rollouts-demo": This rollout conflict with Rollout(default/twin), one workload only have less than one Rollout"#
        ]
    );
}

#[test]
fn traffic_routing_follows_upstreams_rules() {
    use kruise_api::rollouts::v1beta1::{IngressTrafficRouting, TrafficRoutingRef};
    let with = |steps: Vec<CanaryStep>, routing: TrafficRoutingRef| {
        let mut r = rollout("CloneSet", "apps.kruise.io/v1beta1", &[]);
        let canary = r.spec.strategy.canary.as_mut().expect("canary");
        canary.steps = steps;
        canary.traffic_routings = vec![routing];
        validate_rollout(&r, None, None, &[]).messages()
    };
    let step = |replicas: &str, traffic: &str| CanaryStep {
        replicas: Some(pct(replicas)),
        traffic: Some(traffic.into()),
        ..Default::default()
    };
    let nginx = TrafficRoutingRef {
        service: "demo".into(),
        ingress: Some(IngressTrafficRouting { class_type: String::new(), name: "demo".into() }),
        ..Default::default()
    };
    assert!(with(vec![step("20%", "5%")], nginx.clone()).is_empty());
    // A partition-style step with traffic releases at most 50%.
    let messages = with(vec![step("60%", "5%")], nginx.clone());
    assert!(
        messages[0].starts_with("Spec.Strategy.Canary.Steps[0].steps: Invalid value: ")
            && messages[0].ends_with("For partition style rollout: step[x].replicas must not greater than partition-percent-limit if traffic specified"),
        "{messages:?}"
    );
    let messages = with(vec![step("20%", "0%")], nginx.clone());
    assert!(
        messages[0].ends_with(
            r#"traffic must be percentage with "0%" < traffic <= "100%" in canary strategy"#
        ),
        "{messages:?}"
    );
    let messages = with(
        vec![step("20%", "5%")],
        TrafficRoutingRef { service: String::new(), ..nginx.clone() },
    );
    assert_eq!(
        messages,
        [
            r#"Spec.Strategy.Canary.TrafficRouting.Service: Invalid value: "": TrafficRouting.Service cannot be empty"#
        ]
    );
    let messages =
        with(vec![step("20%", "5%")], TrafficRoutingRef { ingress: None, ..nginx.clone() });
    assert_eq!(
        messages,
        [
            "Spec.Strategy.Canary.TrafficRouting.TrafficRoutings: Invalid value: null: TrafficRoutings are not set"
        ]
    );
    let class = |name: &str| {
        let mut routing = nginx.clone();
        if let Some(ingress) = routing.ingress.as_mut() {
            ingress.class_type = name.into();
        }
        routing
    };
    for known in ["higress", "mse", "aliyun-alb"] {
        assert!(with(vec![step("20%", "5%")], class(known)).is_empty(), "{known}");
    }
    assert_eq!(
        with(vec![step("20%", "5%")], class("traefik")),
        [
            r#"Spec.Strategy.Canary.TrafficRouting.Ingress.ClassType: Forbidden: Ingress class type "traefik" is not supported by this version of kruise-rs yet (nginx, higress, mse and aliyun-alb are; a script from kruise-rollout-configuration is not)"#
        ]
    );
    // A header modifier is applied by mse's script only.
    let mut modified = step("20%", "5%");
    modified.request_header_modifier = Some(kruise_api::rollouts::gateway::HttpHeaderFilter {
        set: vec![kruise_api::rollouts::gateway::HttpHeader {
            name: "x-canary".into(),
            value: "yes".into(),
        }],
        ..Default::default()
    });
    assert!(with(vec![modified.clone()], class("mse")).is_empty());
    let messages = with(vec![modified], nginx.clone());
    assert!(
        messages[0].starts_with(
            "Spec.Strategy.Canary.Steps[0].RequestHeaderModifier: Forbidden: requestHeaderModifier is applied through an mse Ingress only"
        ),
        "{messages:?}"
    );
}

#[test]
fn describe_lays_out_steps_and_state() {
    use kruise_api::rollouts::v1beta1::{CanaryStatus, CommonStatus, RolloutPhase, RolloutStatus};
    let mut r = rollout("CloneSet", "apps.kruise.io/v1beta1", &[pct("20%"), pct("100%")]);
    r.status = Some(RolloutStatus {
        phase: Some(RolloutPhase::Progressing),
        message: "Rollout is in step(1/2), and you need manually confirm to enter the next step"
            .into(),
        canary_status: Some(CanaryStatus {
            common: CommonStatus {
                current_step_index: 1,
                current_step_state: kruise_api::rollouts::v1beta1::CanaryStepState::StepPaused,
                stable_revision: "r0".into(),
                ..Default::default()
            },
            canary_revision: "r1".into(),
            canary_replicas: 1,
            canary_ready_replicas: 1,
        }),
        ..Default::default()
    });
    let text = super::describe::describe(&r, None);
    assert_eq!(
        text,
        "Name:         rollouts-demo
Namespace:    default
Workload:     apps.kruise.io/v1beta1 CloneSet/demo
Phase:        Progressing
Message:      Rollout is in step(1/2), and you need manually confirm to enter the next step
Strategy:     Partition
Steps:
  STEP  REPLICAS  TRAFFIC  PAUSE     STATE
  * 1   20%       -        approval  StepPaused
    2   100%      -        approval
Canary:       1/1 ready, revision r1 (stable r0)
"
    );
}

#[test]
fn blue_green_validation_follows_upstreams_rules() {
    let blue_green = |kind: &str, api_version: &str, traffic: &str| {
        let mut r = rollout(kind, api_version, &[]);
        r.spec.strategy.canary = None;
        r.spec.strategy.blue_green = Some(kruise_api::rollouts::v1beta1::BlueGreenStrategy {
            steps: vec![CanaryStep {
                replicas: Some(pct("100%")),
                traffic: Some(traffic.into()),
                ..Default::default()
            }],
            traffic_routings: vec![kruise_api::rollouts::v1beta1::TrafficRoutingRef {
                service: "demo".into(),
                gateway: Some(kruise_api::rollouts::v1beta1::GatewayTrafficRouting {
                    http_route_name: Some("demo".into()),
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        validate_rollout(&r, None, None, &[]).messages()
    };
    // 0% is a blue-green step's traffic, and 100% replicas pass the partition limit.
    assert!(blue_green("CloneSet", "apps.kruise.io/v1beta1", "0%").is_empty());
    assert!(blue_green("Deployment", "apps/v1", "100%").is_empty());
    let messages = blue_green("StatefulSet", "apps.kruise.io/v1beta1", "0%");
    assert!(
        messages[0].starts_with("Spec.ObjectRef.WorkloadRef: Invalid value: ")
            && messages[0].ends_with("WorkloadRef kind is not supported for bluegreen style"),
        "{messages:?}"
    );
    let messages = blue_green("CloneSet", "apps.kruise.io/v1beta1", "120%");
    assert!(
        messages[0].starts_with("Spec.Strategy.BlueGreen.Steps[0].steps: Invalid value: ")
            && messages[0].ends_with(
                r#"traffic must be percentage with "0%" <= traffic <= "100%" in blueGreen strategy"#
            ),
        "{messages:?}"
    );
}

/// A BatchRelease whose workload moved to a revision it is not releasing (a third template)
/// writes nothing to it: the Rollout restarts or winds up the release.
#[test]
fn a_batch_release_leaves_a_workload_on_another_revision_alone() {
    use kruise_api::rollouts::v1beta1::{
        BatchRelease, BatchReleaseSpec, BatchReleaseStatus, ReleaseBatch, ReleasePlan,
    };
    let mut release = BatchRelease::new(
        "rollouts-demo",
        BatchReleaseSpec {
            workload_ref: ObjectRef {
                api_version: "apps.kruise.io/v1beta1".into(),
                kind: "CloneSet".into(),
                name: "demo".into(),
            },
            release_plan: ReleasePlan {
                batches: vec![ReleaseBatch { canary_replicas: pct("100%") }],
                batch_partition: Some(0),
                rollout_id: "r1".into(),
                ..Default::default()
            },
        },
    );
    release.metadata.namespace = Some("default".into());
    release.metadata.uid = Some("br".into());
    release.metadata.finalizers = Some(vec![super::BATCH_RELEASE_FINALIZER.into()]);
    release.status = Some(BatchReleaseStatus {
        update_revision: "r1".into(),
        observed_rollout_id: "r1".into(),
        observed_release_plan_hash: super::release_plan_hash(&release.spec.release_plan),
        ..Default::default()
    });
    let workload = super::ReleasedWorkload {
        kind: Some(ReleasedKind::CloneSet),
        name: "demo".into(),
        replicas: 4,
        current_revision: "demo-r0".into(),
        update_revision: "demo-r9".into(),
        partition: Some(pct("100%")),
        annotations: [(
            super::CONTROL_INFO_ANNOTATION.to_owned(),
            super::batchrelease::control_info(&release),
        )]
        .into(),
        ..Default::default()
    };
    let plan = super::batchrelease::plan(
        &super::batchrelease::Snapshot {
            release,
            workload: Some(workload),
            pods: Vec::new(),
            canary: None,
            autoscalers: Vec::new(),
        },
        jiff::Timestamp::UNIX_EPOCH,
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let status = plan.status.expect("a status");
    assert_eq!(
        status.message,
        "the workload's revision changed from r1 to r9; waiting for the Rollout"
    );
}

#[test]
fn each_ingress_class_writes_its_scripts_annotations() {
    use super::traffic::{IngressClass, ingress_annotations};
    use kruise_api::rollouts::gateway::{
        HttpHeader, HttpHeaderFilter, HttpHeaderMatch, HttpQueryParamMatch, MatchType,
    };
    use kruise_api::rollouts::v1beta1::HttpRouteMatch;
    let set = |a: std::collections::BTreeMap<String, Option<String>>| -> Vec<(String, String)> {
        a.into_iter().filter_map(|(k, v)| Some((k, v?))).collect()
    };
    let weighted = CanaryStep { traffic: Some("20%".into()), ..Default::default() };
    let none = Default::default();
    assert_eq!(
        set(ingress_annotations(IngressClass::AliyunAlb, &none, &weighted)),
        [
            ("alb.ingress.kubernetes.io/canary".to_owned(), "true".to_owned()),
            ("alb.ingress.kubernetes.io/canary-weight".to_owned(), "20".to_owned()),
            ("alb.ingress.kubernetes.io/order".to_owned(), "1".to_owned()),
        ]
    );
    assert_eq!(
        ingress_annotations(IngressClass::Higress, &none, &weighted),
        ingress_annotations(IngressClass::Nginx, &none, &weighted),
        "higress reads nginx's annotations"
    );
    // mse: query parameters and a header modifier, and its subset where one is set.
    let step = CanaryStep {
        matches: vec![HttpRouteMatch {
            headers: vec![HttpHeaderMatch {
                type_: Some(MatchType::RegularExpression),
                name: "user".into(),
                value: "a.*".into(),
            }],
            query_params: vec![HttpQueryParamMatch {
                type_: None,
                name: "canary".into(),
                value: "1".into(),
            }],
            path: None,
        }],
        request_header_modifier: Some(HttpHeaderFilter {
            set: vec![HttpHeader { name: "x-version".into(), value: "v2".into() }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let subset = [("mse.ingress.kubernetes.io/service-subset".to_owned(), "base".to_owned())]
        .into_iter()
        .collect();
    assert_eq!(
        set(ingress_annotations(IngressClass::Mse, &subset, &step)),
        [
            (
                "mse.ingress.kubernetes.io/request-header-control-update".to_owned(),
                "x-version v2".to_owned()
            ),
            ("mse.ingress.kubernetes.io/service-subset".to_owned(), "gray".to_owned()),
            ("nginx.ingress.kubernetes.io/canary".to_owned(), "true".to_owned()),
            ("nginx.ingress.kubernetes.io/canary-by-header".to_owned(), "user".to_owned()),
            ("nginx.ingress.kubernetes.io/canary-by-header-pattern".to_owned(), "a.*".to_owned()),
            ("nginx.ingress.kubernetes.io/canary-by-query".to_owned(), "canary".to_owned()),
            ("nginx.ingress.kubernetes.io/canary-by-query-value".to_owned(), "1".to_owned()),
        ]
    );
}

/// The HorizontalPodAutoscaler a blue-green release points away: the one whose target is the
/// workload by group, kind and name, with or without the suffix (repeated ones too).
#[test]
fn an_autoscaler_targets_its_workload_by_group_kind_and_name() {
    use super::batchrelease::{Autoscaler, HPA_DISABLE_SUFFIX};
    let workload = super::ReleasedWorkload {
        kind: Some(super::ReleasedKind::Deployment),
        name: "demo".into(),
        ..Default::default()
    };
    let hpa = |api_version: &str, kind: &str, name: &str| Autoscaler {
        name: "a".into(),
        target_api_version: api_version.into(),
        target_kind: kind.into(),
        target_name: name.into(),
    };
    assert!(hpa("apps/v1", "Deployment", "demo").targets(&workload));
    let away =
        hpa("apps/v1", "Deployment", &format!("demo{HPA_DISABLE_SUFFIX}{HPA_DISABLE_SUFFIX}"));
    assert!(away.targets(&workload) && away.disabled());
    assert!(!hpa("apps/v1", "Deployment", "demo").disabled());
    assert!(!hpa("apps.kruise.io/v1beta1", "Deployment", "demo").targets(&workload));
    assert!(!hpa("apps/v1", "StatefulSet", "demo").targets(&workload));
    assert!(!hpa("apps/v1", "Deployment", "demo-2").targets(&workload));
    let cloneset = super::ReleasedWorkload {
        kind: Some(super::ReleasedKind::CloneSet),
        name: "demo".into(),
        ..Default::default()
    };
    assert!(hpa("apps.kruise.io/v1alpha1", "CloneSet", "demo").targets(&cloneset));
}

/// A TrafficRouting's phases: its finalizer first; `Initial` waits for its objects, naming
/// the missing one; `Healthy` turns `Progressing` once a Rollout holds it and `Finalizing`
/// once none does; a Rollout names it by annotation or `trafficRoutingRef`.
#[test]
fn a_traffic_routing_moves_through_its_phases() {
    use super::trafficrouting::{Snapshot, hold_patch, named_by, plan};
    use kruise_api::rollouts::v1alpha1::{TrafficRouting, TrafficRoutingPhase};
    let tr = |finalizers: &[&str], phase: Option<&str>| -> TrafficRouting {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "rollouts.kruise.io/v1alpha1", "kind": "TrafficRouting",
            "metadata": {"name": "lane", "namespace": "ns", "resourceVersion": "7",
                         "finalizers": finalizers},
            "spec": {"objectRef": [{"service": "front", "ingress": {"name": "front"}}],
                     "strategy": {"weight": 10}},
            "status": phase.map(|p| serde_json::json!({"phase": p})),
        }))
        .unwrap()
    };
    let now = jiff::Timestamp::UNIX_EPOCH;
    let first = plan(&Snapshot { traffic_routing: tr(&[], None), ..Default::default() }, now);
    assert_eq!(first.actions.len(), 1, "the finalizer first");
    let own = "rollouts.kruise.io/trafficrouting";
    let missing = plan(&Snapshot { traffic_routing: tr(&[own], None), ..Default::default() }, now);
    let status = missing.status.unwrap();
    assert_eq!(status.phase, Some(TrafficRoutingPhase::Initial));
    assert_eq!(status.message, "Service front is not found");
    let held = "progressing.rollouts.kruise.io/a";
    let healthy =
        Snapshot { traffic_routing: tr(&[own, held], Some("Healthy")), ..Default::default() };
    assert_eq!(plan(&healthy, now).status.unwrap().phase, Some(TrafficRoutingPhase::Progressing));
    let let_go =
        Snapshot { traffic_routing: tr(&[own], Some("Progressing")), ..Default::default() };
    assert_eq!(plan(&let_go, now).status.unwrap().phase, Some(TrafficRoutingPhase::Finalizing));
    // The Rollout's side.
    let patch = hold_patch(&tr(&[own], None), "a", true).unwrap();
    assert_eq!(patch["metadata"]["finalizers"], serde_json::json!([own, held]));
    assert_eq!(hold_patch(&tr(&[own, held], None), "a", true), None);
    let rollout: kruise_api::rollouts::v1beta1::Rollout =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a"},
            "spec": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                     "strategy": {"canary": {"trafficRoutingRef": "lane", "steps": []}}}
        }))
        .unwrap();
    assert_eq!(named_by(&rollout).as_deref(), Some("lane"));
}

/// A route whose new versions' side is its own Service: the added rules are told apart only
/// by their record, which survives the server's defaults and leaves the user's own rules
/// (even one added mid-release that leads to the same Service) in place.
#[test]
fn a_shared_route_takes_out_only_the_rules_it_recorded() {
    use super::traffic::{ADDED_RULES_ANNOTATION, shared_route_patch};
    let own = json!({"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                     "backendRefs": [{"name": "web", "port": 80}]});
    let mut route = json!({"metadata": {"name": "web"}, "spec": {"rules": [own.clone()]}});
    let step: CanaryStep = serde_json::from_value(
        json!({"matches": [{"headers": [{"name": "x-lane", "value": "gray"}]}]}),
    )
    .expect("a step");
    let patch = shared_route_patch(&route, "web", Some(&step)).expect("a first write");
    let added = json!({"matches": [{"path": {"type": "PathPrefix", "value": "/api"},
                                    "headers": [{"name": "x-lane", "value": "gray"}]}],
                       "backendRefs": [{"name": "web", "port": 80}]});
    assert_eq!(patch["spec"]["rules"], json!([own.clone(), added]));
    json_patch::merge(&mut route, &patch);
    // Read back as kube-apiserver stores it under the Gateway API CRDs' defaults.
    route["spec"]["rules"][1]["matches"][0]["headers"][0]["type"] = json!("Exact");
    route["spec"]["rules"][1]["backendRefs"][0]["weight"] = json!(1);
    route["spec"]["rules"][1]["backendRefs"][0]["kind"] = json!("Service");
    assert_eq!(shared_route_patch(&route, "web", Some(&step)), None, "in place");
    // A weight alone changes nothing when both sides are one Service: the match rule goes.
    let weighted: CanaryStep = serde_json::from_value(json!({"traffic": "30%"})).expect("a step");
    let patch = shared_route_patch(&route, "web", Some(&weighted)).expect("the match goes");
    assert_eq!(patch["spec"]["rules"], json!([own.clone()]));
    // The user adds a rule of their own leading to the same Service; the restore keeps it.
    let theirs = json!({"matches": [{"path": {"type": "Exact", "value": "/health"}}],
                        "backendRefs": [{"name": "web", "port": 80}]});
    route["spec"]["rules"].as_array_mut().expect("rules").push(theirs.clone());
    let patch = shared_route_patch(&route, "web", None).expect("a restore");
    assert_eq!(patch["spec"]["rules"], json!([own, theirs]));
    assert_eq!(patch["metadata"]["annotations"][ADDED_RULES_ANNOTATION], Value::Null);
    json_patch::merge(&mut route, &patch);
    assert_eq!(shared_route_patch(&route, "web", None), None, "restored");
}
