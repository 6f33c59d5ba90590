use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::rollouts::v1beta1::{CanaryStep, CanaryStrategy, ObjectRef, Rollout, RolloutSpec};
use serde_json::json;

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
        messages(&rollout("DaemonSet", "apps/v1", &[pct("20%")])),
        [
            "Spec.ObjectRef.WorkloadRef: Forbidden: a Rollout of apps/DaemonSet is not supported by this version of kruise-rs yet"
        ]
    );
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
    let mut alb = nginx.clone();
    if let Some(ingress) = alb.ingress.as_mut() {
        ingress.class_type = "aliyun-alb".into();
    }
    assert_eq!(
        with(vec![step("20%", "5%")], alb),
        [
            r#"Spec.Strategy.Canary.TrafficRouting.Ingress.ClassType: Forbidden: Ingress class type "aliyun-alb" is not supported by this version of kruise-rs yet (only nginx)"#
        ]
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
