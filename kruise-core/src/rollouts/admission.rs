//! The admission decisions of Kruise Rollout: the workload webhook that holds a release for
//! its Rollout ([`hold_workload`]), and the Rollout's validation ([`validate_rollout`]).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::rollouts::v1beta1::{CanaryStep, Rollout, RolloutPhase};
use serde_json::{Value, json};

use super::{
    HOLD_ALL_ORDINALS, IN_PROGRESSING_ANNOTATION, ROLLOUT_ID_LABEL, ReleasedKind, WorkloadError,
};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};
use crate::intstr::{Rounding, scaled_value};

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The Rollout that releases `workload` among `rollouts` (the workload's namespace): not
/// being deleted, not disabled, with a strategy, and whose `workloadRef` names the workload's
/// API group, kind and name (the version is not compared, as upstream).
pub fn matching_rollout<'r>(workload: &Value, rollouts: &'r [Rollout]) -> Option<&'r Rollout> {
    let group = |api_version: &str| api_version.rsplit_once('/').map_or("", |(g, _)| g).to_owned();
    let (api_version, kind, name) =
        (text(workload, "/apiVersion"), text(workload, "/kind"), text(workload, "/metadata/name"));
    rollouts.iter().find(|r| {
        let reference = &r.spec.workload_ref;
        r.metadata.deletion_timestamp.is_none()
            && r.status.as_ref().and_then(|s| s.phase.as_ref()) != Some(&RolloutPhase::Disabled)
            && (r.spec.strategy.canary.is_some() || r.spec.strategy.blue_green.is_some())
            && group(&reference.api_version) == group(api_version)
            && reference.kind == kind
            && reference.name == name
    })
}

/// The pod template with the `pod-template-hash` label dropped, which a template change
/// ignores.
fn template_without_hash(object: &Value) -> Value {
    let mut template = object.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    if let Some(labels) = template.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove("pod-template-hash");
    }
    template
}

/// Whether the update starts a new revision: the release id annotation changed to a new
/// non-empty value, or, without one, the pod template changed.
pub fn revision_changed(old: &Value, new: &Value) -> bool {
    let id = |o: &Value| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(ROLLOUT_ID_LABEL))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let new_id = id(new);
    if !new_id.is_empty() {
        return new_id != id(old);
    }
    template_without_hash(old) != template_without_hash(new)
}

/// The workload webhook's decision on an UPDATE of a CloneSet or Advanced StatefulSet: the object to admit instead of `new`, or `None` to admit it as it is.
///
/// A revision change ([`revision_changed`]) of a workload with replicas, which a Rollout
/// releases ([`matching_rollout`]), is held: a CloneSet's partition becomes `"100%"`, a
/// Advanced StatefulSet's `rollingUpdate.partition` 32767 (only under a RollingUpdate
/// strategy), and the workload is marked `rollouts.kruise.io/in-progressing` with the
/// Rollout's name. An update without a UID (written by tools that drop it) gets the old one.
///
/// A Deployment (`replica_sets`: those it controls) is paused instead; see
/// [`hold_deployment`].
pub fn hold_workload(
    old: &Value,
    new: &Value,
    rollouts: &[Rollout],
    replica_sets: &[k8s_openapi::api::apps::v1::ReplicaSet],
) -> Option<Value> {
    let kind = ReleasedKind::from_ref(text(new, "/apiVersion"), text(new, "/kind")).ok()?;
    let rollout = matching_rollout(new, rollouts)?;
    if kind == ReleasedKind::Deployment {
        return hold_deployment(old, new, rollout, replica_sets);
    }
    if !revision_changed(old, new) {
        return None;
    }
    let replicas = new.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let mut held = new.clone();
    match kind {
        ReleasedKind::CloneSet => {
            if replicas == 0 {
                return None;
            }
            let pointer = if text(new, "/apiVersion").ends_with("/v1alpha1") {
                "/spec/updateStrategy"
            } else {
                "/spec/updateStrategy/rollingUpdate"
            };
            ensure_object(&mut held, pointer)["partition"] = json!("100%");
        }
        ReleasedKind::AdvancedDaemonSet => {
            ensure_object(&mut held, "/spec/updateStrategy/rollingUpdate")["partition"] =
                json!(HOLD_ALL_ORDINALS);
        }
        ReleasedKind::AdvancedStatefulSet | ReleasedKind::StatefulSet => {
            let type_ = text(new, "/spec/updateStrategy/type");
            if replicas <= 0 || !(type_.is_empty() || type_ == "RollingUpdate") {
                return None;
            }
            ensure_object(&mut held, "/spec/updateStrategy/rollingUpdate")["partition"] =
                json!(HOLD_ALL_ORDINALS);
        }
        ReleasedKind::Deployment => return None,
        ReleasedKind::DaemonSet => {
            // Run OnDelete while released; its own strategy type is kept to be given back.
            let type_ = text(new, "/spec/updateStrategy/type");
            let original = if type_.is_empty() { "RollingUpdate" } else { type_ }.to_owned();
            if original != "OnDelete" {
                ensure_object(&mut held, "/metadata/annotations")
                    [super::daemonset::ORIGINAL_STRATEGY_ANNOTATION] = json!(original);
            }
            ensure_object(&mut held, "/spec/updateStrategy")["type"] = json!("OnDelete");
        }
    }
    mark_in_progressing(&mut held, old, rollout);
    Some(held)
}

fn mark_in_progressing(held: &mut Value, old: &Value, rollout: &Rollout) {
    let name = rollout.metadata.name.clone().unwrap_or_default();
    ensure_object(held, "/metadata/annotations")[IN_PROGRESSING_ANNOTATION] =
        json!(json!({"rolloutName": name}).to_string());
    if held.pointer("/metadata/uid").is_none_or(|u| u.as_str().is_none_or(str::is_empty))
        && let Some(uid) = old.pointer("/metadata/uid").cloned()
    {
        ensure_object(held, "/metadata")["uid"] = uid;
    }
}

/// The workload webhook's decision on a Deployment, as upstream's:
/// - under a release (`rollouts.kruise.io/in-progressing`), it stays paused; by partition
///   (`rollouts.kruise.io/deployment-strategy`), its strategy stays `Recreate` and a
///   `rollingUpdate` written meanwhile moves into the annotation, and a new revision pauses
///   the partition until the Rollout starts over;
/// - otherwise a revision change of a Deployment with replicas and pods running (exactly one
///   ReplicaSet with pods, when the Rollout routes traffic) is held: paused, marked
///   in-progressing, and labelled `rollouts.kruise.io/stable-revision` with the
///   `pod-template-hash` of the stable ReplicaSet (the oldest revision with pods whose
///   template is not the new one).
pub fn hold_deployment(
    old: &Value,
    new: &Value,
    rollout: &Rollout,
    replica_sets: &[k8s_openapi::api::apps::v1::ReplicaSet],
) -> Option<Value> {
    use super::deployment as d;
    let mut held = new.clone();
    let annotations = new.pointer("/metadata/annotations").cloned().unwrap_or(Value::Null);
    let changed = revision_changed(old, new);
    if annotations
        .get(IN_PROGRESSING_ANNOTATION)
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty())
    {
        let original = kruise_api::well_known::rollouts::annotations::ORIGINAL_DEPLOYMENT_STRATEGY;
        if annotations.get(original).is_some() {
            // Blue-green: paused again only by a new revision (a rollback or another
            // release); the strategy stays a rolling update.
            if changed {
                held["spec"]["paused"] = json!(true);
            }
            if text(new, "/spec/strategy/type") != "RollingUpdate" {
                held["spec"]["strategy"] =
                    old.pointer("/spec/strategy").cloned().unwrap_or(Value::Null);
            }
            return (held != *new).then_some(held);
        }
        held["spec"]["paused"] = json!(true);
        let strategy = annotations
            .get(d::STRATEGY_ANNOTATION)
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<d::DeploymentStrategy>(s).ok());
        if let Some(mut strategy) =
            strategy.filter(|s| s.rolling_style.eq_ignore_ascii_case("partition"))
        {
            held["spec"]["strategy"]["type"] = json!("Recreate");
            if let Some(rolling) =
                new.pointer("/spec/strategy/rollingUpdate").filter(|r| !r.is_null())
            {
                if let Ok(rolling) = serde_json::from_value(rolling.clone()) {
                    strategy.rolling_update = Some(rolling);
                }
                if let Some(s) = held["spec"]["strategy"].as_object_mut() {
                    s.remove("rollingUpdate");
                }
            }
            if changed {
                strategy.paused = true;
            }
            held["metadata"]["annotations"][d::STRATEGY_ANNOTATION] =
                json!(serde_json::to_string(&strategy).unwrap_or_default());
        }
        return (held != *new).then_some(held);
    }
    let replicas = new.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    if replicas == 0 || !changed {
        return None;
    }
    let active: Vec<&k8s_openapi::api::apps::v1::ReplicaSet> = replica_sets
        .iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none() && rs.spec.replicas.unwrap_or(0) != 0)
        .collect();
    let routes_traffic = !super::rollout::traffic_routings(rollout).is_empty();
    if active.is_empty() || (routes_traffic && active.len() != 1) {
        return None;
    }
    let template =
        new.pointer("/spec/template").and_then(|t| serde_json::from_value(t.clone()).ok());
    let wanted = d::template_key(template.as_ref());
    let revision = |rs: &k8s_openapi::api::apps::v1::ReplicaSet| -> i64 {
        rs.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision")?.parse().ok())
            .unwrap_or(0)
    };
    let stable = active
        .iter()
        .filter(|rs| d::template_key(rs.spec.template.as_ref()) != wanted)
        .min_by_key(|rs| revision(rs));
    if let Some(hash) = stable.and_then(|rs| d::replica_set_hash(rs)) {
        ensure_object(&mut held, "/metadata/labels")[d::STABLE_REVISION_LABEL] = json!(hash);
    }
    held["spec"]["paused"] = json!(true);
    mark_in_progressing(&mut held, old, rollout);
    Some(held)
}

/// The object at `pointer`, created (as `{}`) along the way where missing or null.
fn ensure_object<'v>(value: &'v mut Value, pointer: &str) -> &'v mut Value {
    let mut node = value;
    for step in pointer.split('/').skip(1) {
        if !node.is_object() {
            *node = json!({});
        }
        // Invariant: `node` was just made an object.
        let map = node.as_object_mut().expect("an object");
        node = map.entry(step.to_owned()).or_insert_with(|| json!({}));
        if node.is_null() {
            *node = json!({});
        }
    }
    if !node.is_object() {
        *node = json!({});
    }
    node
}

const NOT_YET: &str = "is not supported by this version of kruise-rs yet";

/// Upstream's checks of one traffic routing, and a refusal of what is not built here (custom
/// network references, Ingress classes other than nginx, an Ingress and a route together).
fn validate_traffic_routing(
    routing: &kruise_api::rollouts::v1beta1::TrafficRoutingRef,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if routing.grace_period_seconds < 0 {
        errors.push(FieldError::invalid(
            &path.child("GracePeriodSeconds"),
            BadValue::Str(routing.service.clone()),
            "TrafficRouting.GracePeriodSeconds cannot be negative",
        ));
    }
    if routing.service.is_empty() {
        errors.push(FieldError::invalid(
            &path.child("Service"),
            BadValue::Str(String::new()),
            "TrafficRouting.Service cannot be empty",
        ));
    }
    if routing.gateway.is_none()
        && routing.ingress.is_none()
        && routing.custom_network_refs.is_empty()
    {
        errors.push(FieldError::invalid(
            &path.child("TrafficRoutings"),
            BadValue::Null,
            "TrafficRoutings are not set",
        ));
    }
    if let Some(ingress) = &routing.ingress {
        if ingress.name.is_empty() {
            errors.push(FieldError::invalid(
                &path.child("Ingress"),
                BadValue::Go(serde_json::to_string(ingress).unwrap_or_default()),
                "TrafficRouting.Ingress.Ingress cannot be empty",
            ));
        }
        if super::traffic::IngressClass::from_class_type(&ingress.class_type).is_none() {
            errors.push(FieldError::forbidden(
                &path.child("Ingress").child("ClassType"),
                format!(
                    "Ingress class type {:?} {NOT_YET} (nginx, higress, mse and aliyun-alb are; a script from kruise-rollout-configuration is not)",
                    ingress.class_type
                ),
            ));
        }
    }
    if let Some(gateway) = &routing.gateway {
        if gateway.http_route_name.as_deref().is_none_or(str::is_empty) {
            errors.push(FieldError::invalid(
                &path.child("Gateway"),
                BadValue::Go(serde_json::to_string(gateway).unwrap_or_default()),
                "TrafficRouting.Gateway must set the name of HTTPRoute or HTTPsRoute",
            ));
        }
        if routing.ingress.is_some() {
            errors.push(FieldError::forbidden(
                &path.child("Gateway"),
                format!("an Ingress and a Gateway API route in one routing {NOT_YET}"),
            ));
        }
    }
    if !routing.custom_network_refs.is_empty() {
        errors.push(FieldError::forbidden(
            &path.child("CustomNetworkRefs"),
            format!("a custom network provider {NOT_YET}"),
        ));
    }
    errors
}

fn steps_value(steps: &[CanaryStep]) -> BadValue {
    BadValue::Go(serde_json::to_string(steps).unwrap_or_default())
}

fn replicas_value(replicas: &IntOrString) -> BadValue {
    match replicas {
        IntOrString::Int(i) => BadValue::Int(i64::from(*i)),
        IntOrString::String(s) => BadValue::Str(s.clone()),
    }
}

/// The most a partition-style step with traffic may release, in percent
/// (upstream's `--partition-percent-limit` default).
pub const PARTITION_PERCENT_LIMIT: i32 = 50;

/// Upstream's step checks: replicas set and within range, traffic a percentage, a
/// partition-style step with traffic at most [`PARTITION_PERCENT_LIMIT`], replicas
/// non-decreasing; the first problem only.
fn validate_steps(
    steps: &[CanaryStep],
    path: &FieldPath,
    partition: bool,
    blue_green: bool,
) -> Option<FieldError> {
    if steps.is_empty() {
        return Some(FieldError::invalid(
            path,
            steps_value(steps),
            "The number of Canary.Steps cannot be empty",
        ));
    }
    let scaled = |r: &IntOrString| scaled_value(r, 100, Rounding::Up);
    for (i, step) in steps.iter().enumerate() {
        let Some(replicas) = &step.replicas else {
            return Some(FieldError::invalid(
                &path.index(i).child("steps"),
                steps_value(steps),
                "replicas cannot be empty",
            ));
        };
        let bad = match scaled(replicas) {
            Err(_) => true,
            Ok(n) => n <= 0 || (n > 100 && matches!(replicas, IntOrString::String(_))),
        };
        if bad {
            return Some(FieldError::invalid(
                &path.index(i).child("Replicas"),
                replicas_value(replicas),
                r#"replicas must be positive number, or a percentage with "0%" < canaryReplicas <= "100%""#,
            ));
        }
        if step.traffic.is_none() && step.matches.is_empty() {
            continue;
        }
        if partition
            && matches!(replicas, IntOrString::String(_))
            && scaled(replicas).unwrap_or(0) > PARTITION_PERCENT_LIMIT
        {
            return Some(FieldError::invalid(
                &path.index(i).child("steps"),
                steps_value(steps),
                "For partition style rollout: step[x].replicas must not greater than partition-percent-limit if traffic specified",
            ));
        }
        if let Some(traffic) = &step.traffic {
            let weight = scaled_value(&IntOrString::String(traffic.clone()), 100, Rounding::Up);
            if blue_green && !matches!(weight, Ok(w) if (0..=100).contains(&w)) {
                return Some(FieldError::invalid(
                    &path.index(i).child("steps"),
                    steps_value(steps),
                    r#"traffic must be percentage with "0%" <= traffic <= "100%" in blueGreen strategy"#,
                ));
            }
            if !blue_green && !matches!(weight, Ok(w) if w > 0 && w <= 100) {
                return Some(FieldError::invalid(
                    &path.index(i).child("steps"),
                    steps_value(steps),
                    r#"traffic must be percentage with "0%" < traffic <= "100%" in canary strategy"#,
                ));
            }
        }
    }
    for pair in steps.windows(2) {
        let (Some(prev), Some(curr)) = (&pair[0].replicas, &pair[1].replicas) else { continue };
        let percent = |r: &IntOrString| matches!(r, IntOrString::String(_));
        if percent(prev) != percent(curr) {
            continue;
        }
        if scaled(curr).unwrap_or(0) < scaled(prev).unwrap_or(0) {
            return Some(FieldError::invalid(
                &path.child("CanaryReplicas"),
                steps_value(steps),
                "Steps.CanaryReplicas must be a non decreasing sequence",
            ));
        }
    }
    None
}

/// The checks of a strategy's traffic routings, and of its steps' traffic, that canary and
/// blue-green share: upstream's, and refusals of what is not built here.
fn validate_routings(
    routings: &[kruise_api::rollouts::v1beta1::TrafficRoutingRef],
    steps: &[CanaryStep],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if routings.len() > 1 {
        errors.push(FieldError::invalid(
            path,
            BadValue::Go(serde_json::to_string(routings).unwrap_or_default()),
            "Rollout currently only support single TrafficRouting.",
        ));
    }
    for routing in routings {
        errors.extend(validate_traffic_routing(routing, &path.child("TrafficRouting")));
    }
    if routings.is_empty() && steps.iter().any(|s| s.traffic.is_some() || !s.matches.is_empty()) {
        errors.push(FieldError::forbidden(
            &path.child("Steps"),
            "traffic and matches in a step need a trafficRoutings entry",
        ));
    }
    let mse = routings.iter().any(|r| {
        r.ingress.as_ref().is_some_and(|i| {
            super::traffic::IngressClass::from_class_type(&i.class_type)
                == Some(super::traffic::IngressClass::Mse)
        })
    });
    for (i, step) in steps.iter().enumerate() {
        let step_path = path.child("Steps").index(i);
        if step.request_header_modifier.is_some() && !mse {
            errors.push(FieldError::forbidden(
                &step_path.child("RequestHeaderModifier"),
                "requestHeaderModifier is applied through an mse Ingress only (upstream's nginx, higress and aliyun-alb scripts and its Gateway API routing ignore it; its custom network providers are not built here)",
            ));
        }
        let ingress_only = routings.iter().all(|r| r.gateway.is_none());
        if ingress_only
            && step.matches.iter().any(|m| m.path.is_some() || (!mse && !m.query_params.is_empty()))
        {
            errors.push(FieldError::forbidden(
                &step_path.child("Matches"),
                "path matches need a Gateway API route, and queryParams matches a route or an mse Ingress: an Ingress canary matches headers (and, on mse, query parameters) only",
            ));
        }
    }
    errors
}

/// Validates a Rollout as upstream's `vrollout.kb.io` does, with its (Go-style) field paths,
/// and refuses what this version does not carry out yet, so that nothing is accepted and then
/// ignored. On an update, `live` is the stored Rollout: while it is Progressing or
/// Terminating, the workload, the traffic routing, the style and the number of steps are
/// immutable. `others` are the other Rollouts of the namespace: two may not name one workload.
pub fn validate_rollout(
    rollout: &Rollout,
    old: Option<&Rollout>,
    live: Option<&Rollout>,
    others: &[Rollout],
) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let spec = &rollout.spec;
    let workload_path = FieldPath::new("Spec").child("ObjectRef").child("WorkloadRef");
    match ReleasedKind::from_ref(&spec.workload_ref.api_version, &spec.workload_ref.kind) {
        Ok(ReleasedKind::AdvancedDaemonSet | ReleasedKind::DaemonSet)
            if spec.strategy.canary.as_ref().is_some_and(|c| !c.traffic_routings.is_empty()) =>
        {
            errors.push(FieldError::forbidden(
                &FieldPath::new("Spec").child("Strategy").child("Canary").child("TrafficRoutings"),
                format!("traffic routing for a DaemonSet release {NOT_YET}"),
            ));
        }
        Ok(_) => {}
        Err(WorkloadError::NotYetSupported(kind)) => errors
            .push(FieldError::forbidden(&workload_path, format!("a Rollout of {kind} {NOT_YET}"))),
        Err(_) => errors.push(FieldError::invalid(
            &workload_path,
            BadValue::Go(serde_json::to_string(&spec.workload_ref).unwrap_or_default()),
            "WorkloadRef kind is not supported",
        )),
    }
    let strategy_path = FieldPath::new("Spec").child("Strategy");
    let strategy = &spec.strategy;
    match (&strategy.canary, &strategy.blue_green) {
        (None, None) => errors.push(FieldError::invalid(
            &strategy_path,
            BadValue::Go("{}".into()),
            "Canary and BlueGreen cannot both be empty",
        )),
        (Some(_), Some(_)) => errors.push(FieldError::invalid(
            &strategy_path,
            BadValue::Go("{}".into()),
            "Canary and BlueGreen cannot both be set",
        )),
        (None, Some(blue_green)) => {
            let path = strategy_path.child("BlueGreen");
            let kind =
                ReleasedKind::from_ref(&spec.workload_ref.api_version, &spec.workload_ref.kind);
            if kind.is_ok_and(|k| !matches!(k, ReleasedKind::CloneSet | ReleasedKind::Deployment)) {
                errors.push(FieldError::invalid(
                    &workload_path,
                    BadValue::Go(serde_json::to_string(&spec.workload_ref).unwrap_or_default()),
                    "WorkloadRef kind is not supported for bluegreen style",
                ));
            }
            if let Some(error) =
                validate_steps(&blue_green.steps, &path.child("Steps"), false, true)
            {
                errors.push(error);
            }
            errors.extend(validate_routings(
                &blue_green.traffic_routings,
                &blue_green.steps,
                &path,
            ));
        }
        (Some(canary), None) => {
            let canary_path = strategy_path.child("Canary");
            let partition =
                super::rollout::release_style(rollout) == super::ReleaseStyle::Partition;
            if let Some(error) =
                validate_steps(&canary.steps, &canary_path.child("Steps"), partition, false)
            {
                errors.push(error);
            }
            errors.extend(validate_routings(&canary.traffic_routings, &canary.steps, &canary_path));
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    if let (Some(old), Some(live)) = (old, live) {
        let phase = live.status.as_ref().and_then(|s| s.phase.clone());
        if matches!(phase, Some(RolloutPhase::Progressing | RolloutPhase::Terminating)) {
            let steps = |r: &Rollout| {
                let s = &r.spec.strategy;
                s.canary
                    .as_ref()
                    .map(|c| c.steps.len())
                    .or(s.blue_green.as_ref().map(|b| b.steps.len()))
            };
            let routings = |r: &Rollout| super::rollout::traffic_routings(r).to_vec();
            let style = |r: &Rollout| {
                (
                    r.spec.strategy.blue_green.is_some(),
                    r.spec
                        .strategy
                        .canary
                        .as_ref()
                        .is_some_and(|c| c.enable_extra_workload_for_canary),
                )
            };
            let refusal = if old.spec.workload_ref != spec.workload_ref {
                Some(("Spec.ObjectRef", "Rollout 'ObjectRef' field is immutable"))
            } else if routings(old) != routings(rollout) {
                Some((
                    "Spec.Strategy.Canary|BlueGreen.TrafficRoutings",
                    "Rollout 'Strategy.Canary|BlueGreen.TrafficRoutings' field is immutable",
                ))
            } else if style(old) != style(rollout) {
                Some((
                    "Spec.Strategy.Canary|BlueGreen",
                    "Rollout style and enableExtraWorkloadForCanary are immutable",
                ))
            } else if steps(old) != steps(rollout) {
                Some(("Spec.Strategy.Canary|BlueGreen", "Amount of Rollout steps are immutable"))
            } else {
                None
            };
            if let Some((path, message)) = refusal {
                errors.push(FieldError::forbidden(&FieldPath::new(path), message));
                return errors;
            }
        }
    }
    let name = rollout.metadata.name.as_deref().unwrap_or_default();
    for other in others {
        if other.metadata.name.as_deref() == Some(name) {
            continue;
        }
        if other.spec.workload_ref == spec.workload_ref {
            errors.push(FieldError::invalid(
                &FieldPath::new("Conflict Checker"),
                BadValue::Str(name.to_owned()),
                format!(
                    "This rollout conflict with Rollout({}/{}), one workload only have less than one Rollout",
                    other.metadata.namespace.as_deref().unwrap_or_default(),
                    other.metadata.name.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    errors
}
