//! The TrafficRouting planner (rollouts.kruise.io/v1alpha1): traffic rules that the releases
//! of several Rollouts move together, as upstream's `trafficrouting-controller` moves them.
//!
//! A Rollout names a TrafficRouting in its `rollouts.kruise.io/trafficrouting` annotation (or
//! `trafficRoutingRef`); while one of its releases runs, it holds the finalizer
//! `progressing.rollouts.kruise.io/<rollout>` on it. The TrafficRouting goes
//! `Initial` → `Healthy` (its Service and Ingress or HTTPRoute exist) → `Progressing` (some
//! Rollout holds it: its `strategy` is applied, the new versions' traffic going to the stable
//! Service itself, told apart downstream by the pods' labels or a request header) →
//! `Finalizing` (no Rollout holds it: the routes restored) → `Healthy`. A deleted one is
//! `Terminating`: its routes are restored, then its own finalizer
//! (`rollouts.kruise.io/trafficrouting`) goes; upstream lets it go before the restore.

use jiff::{SignedDuration, Timestamp};
use kruise_api::rollouts::v1alpha1::{TrafficRouting, TrafficRoutingPhase, TrafficRoutingStatus};
use kruise_api::rollouts::v1beta1::{CanaryStep, HttpRouteMatch};
use kruise_api::well_known::rollouts::finalizers::{
    PROGRESSING_ROLLOUT_PREFIX, TRAFFIC_ROUTING as OWN_FINALIZER,
};
use serde_json::{Value, json};

use super::rollout::{RECHECK, TrafficObjects};
use super::traffic::Router;
use crate::expectations::ControllerExpectations;
use crate::plan::{Action, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// How long an `Initial` TrafficRouting whose objects are missing waits before it looks again.
const MISSING_RECHECK: SignedDuration = SignedDuration::from_secs(10);

/// The finalizer a Rollout in progress holds on the TrafficRouting it names.
pub fn progressing_finalizer(rollout: &str) -> String {
    format!("{PROGRESSING_ROLLOUT_PREFIX}{rollout}")
}

/// What the TrafficRouting planner reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The TrafficRouting.
    pub traffic_routing: TrafficRouting,
    /// The objects its (first) `objectRef` names (its canary Service is not used).
    pub traffic: TrafficObjects,
}

/// The strategy as a step the shared routing writes understand.
pub fn strategy_step(traffic_routing: &TrafficRouting) -> CanaryStep {
    let strategy = &traffic_routing.spec.strategy;
    CanaryStep {
        traffic: strategy.weight.map(|w| format!("{w}%")),
        request_header_modifier: strategy.request_header_modifier.clone(),
        matches: strategy
            .matches
            .iter()
            .map(|m| HttpRouteMatch { headers: m.headers.clone(), ..HttpRouteMatch::default() })
            .collect(),
        ..CanaryStep::default()
    }
}

/// Plans one pass over a TrafficRouting.
pub fn plan(snapshot: &Snapshot, _now: Timestamp) -> Plan<TrafficRoutingStatus> {
    let tr = &snapshot.traffic_routing;
    let old = tr.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut plan = Plan::empty(ControllerExpectations::default());
    let name = tr.metadata.name.clone().unwrap_or_default();
    let namespace = tr.metadata.namespace.clone().unwrap_or_default();
    let finalizers = tr.metadata.finalizers.clone().unwrap_or_default();
    let deleting = tr.metadata.deletion_timestamp.is_some();
    let own_target = || {
        Target::new(ObjectKind::TRAFFIC_ROUTING, Some(&namespace), &name).guarded(
            Guard::ResourceVersion(tr.metadata.resource_version.clone().unwrap_or_default()),
        )
    };
    let set_finalizers = |list: Vec<String>| Action::PatchObject {
        target: own_target(),
        subresource: Subresource::Main,
        patch: Patch::merge(json!({"metadata": {"finalizers": list}})),
    };
    if !deleting && !finalizers.iter().any(|f| f == OWN_FINALIZER) {
        let mut list = finalizers.clone();
        list.push(OWN_FINALIZER.to_owned());
        plan.actions.push(set_finalizers(list));
        plan.requeue_after = Some(RECHECK);
        return plan;
    }
    let held = finalizers.iter().any(|f| f.starts_with(PROGRESSING_ROLLOUT_PREFIX));
    let mut phase = status.phase.clone().unwrap_or(TrafficRoutingPhase::Initial);
    if status.phase.is_none() {
        status.message = "TrafficRouting is Initializing".to_owned();
    }
    if deleting {
        phase = TrafficRoutingPhase::Terminating;
    }
    let Some(routing) = tr.spec.object_ref.first() else {
        status.phase = Some(phase);
        status.message = "spec.objectRef is empty: no routing to move".to_owned();
        return finish(plan, tr, old, status);
    };
    let owner = json!({
        "apiVersion": ObjectKind::TRAFFIC_ROUTING.api_version(),
        "kind": ObjectKind::TRAFFIC_ROUTING.kind,
        "name": name,
        "uid": tr.metadata.uid.clone().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let router = Router {
        routing,
        objects: &snapshot.traffic,
        namespace: &namespace,
        owner: &owner,
        canary_service: routing.service.clone(),
    };
    let grace = SignedDuration::from_secs(i64::from(if routing.grace_period_seconds <= 0 {
        3
    } else {
        routing.grace_period_seconds
    }));
    // Runs a routing write; true once nothing needed writing.
    let settled = |plan: &mut Plan<TrafficRoutingStatus>,
                   status: &mut TrafficRoutingStatus,
                   write: &dyn Fn(&mut Vec<Action>) -> Result<bool, String>| {
        let before = plan.actions.len();
        match write(&mut plan.actions) {
            Ok(true) if plan.actions.len() == before => true,
            Ok(_) => {
                plan.requeue_after = Some(grace);
                false
            }
            Err(message) => {
                status.message = message;
                plan.requeue_after = Some(MISSING_RECHECK);
                false
            }
        }
    };
    match phase {
        TrafficRoutingPhase::Initial => match missing(routing, &snapshot.traffic) {
            Some(what) => {
                status.phase = Some(TrafficRoutingPhase::Initial);
                status.message = format!("{what} is not found");
                plan.requeue_after = Some(MISSING_RECHECK);
            }
            None => healthy(&mut status),
        },
        TrafficRoutingPhase::Healthy => {
            status.phase = Some(TrafficRoutingPhase::Healthy);
            if held {
                status.phase = Some(TrafficRoutingPhase::Progressing);
                status.message = "TrafficRouting is Progressing".to_owned();
                plan.requeue_after = Some(RECHECK);
            }
        }
        TrafficRoutingPhase::Progressing if !held => {
            status.phase = Some(TrafficRoutingPhase::Finalizing);
            status.message = "TrafficRouting is Finalizing".to_owned();
            plan.requeue_after = Some(RECHECK);
        }
        TrafficRoutingPhase::Progressing => {
            let step = strategy_step(tr);
            if settled(&mut plan, &mut status, &|actions| router.ensure_routes(&step, actions)) {
                status.message = "TrafficRouting is Progressing".to_owned();
            }
        }
        TrafficRoutingPhase::Finalizing => {
            if settled(&mut plan, &mut status, &|actions| router.restore_routes(actions)) {
                healthy(&mut status);
            }
        }
        TrafficRoutingPhase::Terminating => {
            status.phase = Some(TrafficRoutingPhase::Terminating);
            let restored = snapshot.traffic.stable_service.is_none()
                || settled(&mut plan, &mut status, &|actions| router.restore_routes(actions));
            if restored && finalizers.iter().any(|f| f == OWN_FINALIZER) {
                let rest = finalizers.iter().filter(|f| *f != OWN_FINALIZER).cloned().collect();
                plan.actions.push(set_finalizers(rest));
            }
        }
        _ => status.phase = Some(phase),
    }
    finish(plan, tr, old, status)
}

fn healthy(status: &mut TrafficRoutingStatus) {
    status.phase = Some(TrafficRoutingPhase::Healthy);
    status.message = "TrafficRouting is Healthy".to_owned();
}

/// What the routing names that does not exist, if anything.
fn missing(
    routing: &kruise_api::rollouts::v1beta1::TrafficRoutingRef,
    objects: &TrafficObjects,
) -> Option<String> {
    if objects.stable_service.is_none() {
        return Some(format!("Service {}", routing.service));
    }
    if let Some(ingress) = &routing.ingress
        && objects.ingress.is_none()
    {
        return Some(format!("Ingress {}", ingress.name));
    }
    if let Some(route) = routing.gateway.as_ref().and_then(|g| g.http_route_name.as_ref())
        && objects.http_route.is_none()
    {
        return Some(format!("HTTPRoute {route}"));
    }
    None
}

fn finish(
    mut plan: Plan<TrafficRoutingStatus>,
    tr: &TrafficRouting,
    old: TrafficRoutingStatus,
    mut status: TrafficRoutingStatus,
) -> Plan<TrafficRoutingStatus> {
    status.observed_generation = tr.metadata.generation.unwrap_or_default();
    if status != old {
        plan.status = Some(status);
    }
    plan
}

/// The TrafficRouting a Rollout names: its `rollouts.kruise.io/trafficrouting` annotation,
/// else `trafficRoutingRef` (canary or blue-green).
pub fn named_by(rollout: &kruise_api::rollouts::v1beta1::Rollout) -> Option<String> {
    let annotation = rollout
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(super::TRAFFIC_ROUTING_ANNOTATION))
        .filter(|v| !v.is_empty());
    let strategy = &rollout.spec.strategy;
    let field = strategy
        .canary
        .as_ref()
        .map(|c| c.traffic_routing_ref.as_str())
        .or(strategy.blue_green.as_ref().map(|b| b.traffic_routing_ref.as_str()))
        .filter(|v| !v.is_empty());
    annotation.map(String::as_str).or(field).map(str::to_owned)
}

/// The merge patch of a TrafficRouting's finalizers with `rollout`'s progressing one added
/// (`hold`) or removed; `None` when it already is so.
pub fn hold_patch(tr: &TrafficRouting, rollout: &str, hold: bool) -> Option<Value> {
    let own = progressing_finalizer(rollout);
    let finalizers = tr.metadata.finalizers.clone().unwrap_or_default();
    let has = finalizers.contains(&own);
    if has == hold {
        return None;
    }
    let list: Vec<String> = if hold {
        finalizers.into_iter().chain([own]).collect()
    } else {
        finalizers.into_iter().filter(|f| *f != own).collect()
    };
    Some(json!({"metadata": {"finalizers": list}}))
}
