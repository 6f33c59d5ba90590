//! The `KruisePodReady` readiness gate: which pods carry it, and the condition that opens it.
//!
//! Upstream gives the gate in its pod webhook, at creation, to every pod whose controller is a
//! Kruise workload (its owner's API group is `apps.kruise.io`), and to every pod when the
//! `KruisePodReadinessGate` feature gate is on ([`wants_gate`]). Its pod-readiness controller
//! then adds the condition, `True`, to each gated pod that has none yet ([`plan`]). From then
//! on, lifecycle hooks with `markPodNotReady` and ContainerRecreateRequests hold the condition
//! `False` while the pod must take no traffic ([`crate::pod::add_not_ready_hold`]).
//!
//! The rule is used in two places:
//! - the pod webhook's first step, [`ReadinessGateStep`], for pods whatever created them;
//! - the workload planners, through [`inject_gate`], for the pods they create: their pods are
//!   Kruise-owned, so the rule gives them the gate, and they are born with it even where the
//!   pod webhook does not see them (under `--pod-webhook-scope=selected` only the pods some
//!   object selects reach it, and a workload's pods are created before any entry for it could
//!   be written).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodReadinessGate, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::well_known::{groups, readiness_gates::KRUISE_POD_READY};

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;
use crate::expectations::ControllerExpectations;
use crate::plan::{Action, Patch, Plan, PodStatusPurpose};
use crate::pod::{PodConditionsUpdate, condition, has_readiness_gate};

/// Whether the pod's controller is a Kruise workload: its controller ownerReference's API
/// group is `apps.kruise.io` (any version), as upstream's `IsPodOwnedByKruise` decides.
pub fn owned_by_kruise(pod: &Pod) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| r.api_version.split_once('/').is_some_and(|(g, _)| g == groups::APPS))
}

/// Whether the pod webhook gives `pod` the `KruisePodReady` gate: when a Kruise workload
/// controls it, and for every pod when `all_pods` (the `KruisePodReadinessGate` feature gate).
pub fn wants_gate(pod: &Pod, all_pods: bool) -> bool {
    all_pods || owned_by_kruise(pod)
}

/// Appends the `KruisePodReady` readiness gate to `spec` unless it is there. Returns whether
/// it was added.
pub fn inject_gate(spec: &mut PodSpec) -> bool {
    inject_into(&mut spec.readiness_gates)
}

/// [`inject_gate`] on a pod spec's `readinessGates`.
fn inject_into(gates: &mut Option<Vec<PodReadinessGate>>) -> bool {
    let gates = gates.get_or_insert_with(Vec::new);
    if gates.iter().any(|g| g.condition_type == KRUISE_POD_READY) {
        return false;
    }
    gates.push(PodReadinessGate { condition_type: KRUISE_POD_READY.to_owned() });
    true
}

/// The readiness-gate step of the pod mutating webhook: [`wants_gate`], then [`inject_gate`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadinessGateStep {
    /// Every pod gets the gate (`KruisePodReadinessGate`), not only Kruise-owned ones.
    pub all_pods: bool,
}

impl PodMutator for ReadinessGateStep {
    fn step(&self) -> PodStep {
        PodStep::ReadinessGate
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        if !wants_gate(pod.pod(), self.all_pods) || has_readiness_gate(pod.pod(), KRUISE_POD_READY)
        {
            return Ok(());
        }
        inject_into(pod.readiness_gates_mut());
        Ok(())
    }
}

/// Whether the pod-readiness controller has anything to do for `pod`: it has the gate, no
/// `KruisePodReady` condition yet, is bound to a node, and is not being deleted.
///
/// Difference from upstream, which opens the gate as soon as the pod is created: here it is
/// opened once the pod is bound. The gate only matters once the pod's containers can be
/// ready, which needs a node; a pod that is never scheduled costs no write, and a scale-out's
/// burst of creates is not joined by a burst of status writes.
pub fn needs_condition(pod: &Pod) -> bool {
    let bound =
        pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
    pod.metadata.deletion_timestamp.is_none()
        && bound
        && has_readiness_gate(pod, KRUISE_POD_READY)
        && condition(pod, KRUISE_POD_READY).is_none()
}

/// The pod-readiness controller's plan for `pod`: when [`needs_condition`], one status patch
/// adding `KruisePodReady` `True` (no reason, no message, as upstream writes it); otherwise
/// nothing. A condition that exists, whatever its status, is left to whoever wrote it.
pub fn plan(pod: &Pod, now: Timestamp) -> Plan<()> {
    let mut plan = Plan::empty(ControllerExpectations::default());
    if !needs_condition(pod) {
        return plan;
    }
    let update = PodConditionsUpdate {
        conditions: vec![PodCondition {
            type_: KRUISE_POD_READY.to_owned(),
            status: "True".to_owned(),
            last_transition_time: Some(Time(now)),
            ..PodCondition::default()
        }],
    };
    plan.actions.push(Action::PatchPodStatus {
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        purpose: PodStatusPurpose::KruisePodReadyOpened,
        patch: Patch::strategic(update.to_status_patch()),
    });
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_chain::PodChain;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn pod(owner: Option<(&str, bool)>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                owner_references: owner.map(|(api_version, controller)| {
                    vec![OwnerReference {
                        api_version: api_version.into(),
                        kind: "Owner".into(),
                        name: "o".into(),
                        uid: "o1".into(),
                        controller: Some(controller),
                        block_owner_deletion: None,
                    }]
                }),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                readiness_gates: Some(vec![PodReadinessGate {
                    condition_type: "InPlaceUpdateReady".into(),
                }]),
                ..PodSpec::default()
            }),
            status: None,
        }
    }

    fn gates(pod: &Pod) -> Vec<&str> {
        pod.spec
            .iter()
            .flat_map(|s| s.readiness_gates.iter().flatten())
            .map(|g| g.condition_type.as_str())
            .collect()
    }

    #[test]
    fn the_rule_follows_the_controller_owners_group() {
        assert!(owned_by_kruise(&pod(Some(("apps.kruise.io/v1alpha1", true)))));
        assert!(owned_by_kruise(&pod(Some(("apps.kruise.io/v1beta1", true)))));
        assert!(!owned_by_kruise(&pod(Some(("apps.kruise.io/v1alpha1", false)))));
        assert!(!owned_by_kruise(&pod(Some(("apps/v1", true)))));
        assert!(!owned_by_kruise(&pod(Some(("policy.kruise.io/v1alpha1", true)))));
        // No group at all (a core owner's `v1`) and no owner.
        assert!(!owned_by_kruise(&pod(Some(("v1", true)))));
        assert!(!owned_by_kruise(&pod(None)));
        assert!(wants_gate(&pod(None), true));
        assert!(!wants_gate(&pod(None), false));
    }

    #[test]
    fn the_step_appends_the_gate_once_and_patches_only_the_gates() {
        let step = ReadinessGateStep::default();
        let mut owned = pod(Some(("apps.kruise.io/v1alpha1", true)));
        let chain = PodChain::new(vec![&step]);
        let patch = chain.run(&mut owned).expect("runs").patch().expect("encodes");
        assert_eq!(gates(&owned), ["InPlaceUpdateReady", "KruisePodReady"]);
        let patch: serde_json::Value =
            serde_json::from_slice(&patch.expect("a patch")).expect("json");
        assert_eq!(
            patch,
            serde_json::json!([{"op": "add", "path": "/spec/readinessGates/1",
                "value": {"conditionType": "KruisePodReady"}}])
        );
        // Again: nothing to add.
        assert_eq!(chain.run(&mut owned).expect("runs").patch().expect("encodes"), None);

        let mut other = pod(Some(("apps/v1", true)));
        assert_eq!(chain.run(&mut other).expect("runs").patch().expect("encodes"), None);
        let all = ReadinessGateStep { all_pods: true };
        let chain = PodChain::new(vec![&all]);
        chain.run(&mut other).expect("runs");
        assert_eq!(gates(&other), ["InPlaceUpdateReady", "KruisePodReady"]);
    }

    #[test]
    fn inject_gate_adds_to_a_spec_without_gates() {
        let mut spec = PodSpec::default();
        assert!(inject_gate(&mut spec));
        assert!(!inject_gate(&mut spec));
        assert_eq!(spec.readiness_gates.map(|g| g.len()), Some(1));
    }

    #[test]
    fn the_controller_opens_a_gated_pod_once() {
        let now: Timestamp = "2026-12-06T00:00:00Z".parse().expect("time");
        let mut p = pod(Some(("apps.kruise.io/v1alpha1", true)));
        assert!(plan(&p, now).actions.is_empty(), "no gate, nothing to do");
        inject_gate(p.spec.as_mut().expect("spec"));
        assert!(plan(&p, now).actions.is_empty(), "not bound yet, nothing to do");
        p.spec.as_mut().expect("spec").node_name = Some("node-1".into());
        let first = plan(&p, now);
        let [Action::PatchPodStatus { name, uid, patch, purpose, .. }] = first.actions.as_slice()
        else {
            panic!("one status patch: {:?}", first.actions);
        };
        assert_eq!((name.as_str(), uid.as_str()), ("p", "u1"));
        assert_eq!(*purpose, PodStatusPurpose::KruisePodReadyOpened);
        let Patch::Strategic(body) = patch else { panic!("a strategic merge patch") };
        let opened = &body["status"]["conditions"][0];
        assert_eq!(
            (&opened["type"], &opened["status"]),
            (&"KruisePodReady".into(), &"True".into())
        );

        // Once any KruisePodReady condition exists (a hold's False included), nothing more.
        let held = crate::pod::add_not_ready_hold(
            &p,
            &crate::pod::NotReadyHold::new("Lifecycle", "preDeleteHook"),
            now,
        )
        .expect("a hold");
        held.apply_to(&mut p);
        assert!(plan(&p, now).actions.is_empty());

        // A pod being deleted is left alone.
        let mut leaving = pod(Some(("apps.kruise.io/v1alpha1", true)));
        inject_gate(leaving.spec.as_mut().expect("spec"));
        leaving.spec.as_mut().expect("spec").node_name = Some("node-1".into());
        leaving.metadata.deletion_timestamp = Some(Time(now));
        assert!(plan(&leaving, now).actions.is_empty());
    }
}
