//! The enhanced liveness probe's webhook step (gate `EnhancedLivenessProbe`): a pod that asks
//! for it (`apps.kruise.io/using-enhanced-liveness: "true"`) and that a Kruise workload
//! controls has its containers' liveness probes taken out of the spec, so the kubelet does not
//! restart the containers itself, and saved in the annotation
//! `apps.kruise.io/container-probe-context` as `[{"name": <container>, "livenessProbe":
//! <probe>}]`, as upstream's webhook does. [`probe_context`] reads the annotation back for
//! whatever runs the probes instead.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Probe};
use kruise_api::apps::v1alpha1::{ContainerProbeState, ProbeState};
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kruise_api::well_known::annotations::{CONTAINER_PROBE_CONTEXT, USING_ENHANCED_LIVENESS};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;
use crate::plan::{Action, Event, EventType, ObjectKind, Plan, Target};

/// One container's saved liveness probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerLivenessProbe {
    /// The container.
    pub name: String,
    /// Its liveness probe as the pod was created with it.
    pub liveness_probe: Probe,
}

/// Why a pod's probe context cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeContextError {
    /// The annotation is not the JSON list the webhook writes.
    #[error("metadata.annotations[{CONTAINER_PROBE_CONTEXT}]: Invalid value: {source}")]
    Invalid {
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
}

/// Whether the pod asks for the enhanced liveness probe.
pub fn asks(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(USING_ENHANCED_LIVENESS))
        .is_some_and(|v| v == "true")
}

/// The saved probes of `pod`, by container name; empty when it has none.
///
/// # Errors
/// An annotation that is not the list the webhook writes, naming the annotation.
pub fn probe_context(pod: &Pod) -> Result<BTreeMap<String, Probe>, ProbeContextError> {
    let Some(text) = pod.metadata.annotations.as_ref().and_then(|a| a.get(CONTAINER_PROBE_CONTEXT))
    else {
        return Ok(BTreeMap::new());
    };
    let list: Vec<ContainerLivenessProbe> =
        serde_json::from_str(text).map_err(|source| ProbeContextError::Invalid { source })?;
    Ok(list.into_iter().map(|c| (c.name, c.liveness_probe)).collect())
}

/// The pod webhook's enhanced-liveness step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnhancedLivenessStep;

impl PodMutator for EnhancedLivenessStep {
    fn step(&self) -> PodStep {
        PodStep::EnhancedLiveness
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        if !asks(pod.pod()) {
            return Ok(());
        }
        // A context the pod brings must be one the daemon can read (beside upstream, which
        // lets it through and so runs nothing): refused, naming the annotation.
        let existing = probe_context(pod.pod()).map_err(|e| PodMutationError::Step {
            step: PodStep::EnhancedLiveness,
            message: e.to_string(),
        })?;
        if !crate::readiness::owned_by_kruise(pod.pod()) {
            return Ok(());
        }
        let has_probe = pod
            .pod()
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .any(|c| c.liveness_probe.is_some());
        if !has_probe {
            return Ok(());
        }
        // The probes the pod brought in the annotation stay, but for containers whose spec
        // has one now.
        let mut saved: Vec<ContainerLivenessProbe> = Vec::new();
        let mut brought = existing;
        for container in pod.containers_mut() {
            if let Some(probe) = container.liveness_probe.take() {
                brought.remove(&container.name);
                saved.push(ContainerLivenessProbe {
                    name: container.name.clone(),
                    liveness_probe: probe,
                });
            }
        }
        saved.extend(
            brought
                .into_iter()
                .map(|(name, liveness_probe)| ContainerLivenessProbe { name, liveness_probe }),
        );
        let text = serde_json::to_string(&saved).map_err(|e| PodMutationError::Step {
            step: PodStep::EnhancedLiveness,
            message: format!("encoding the liveness probes: {e}"),
        })?;
        pod.annotations_mut()
            .get_or_insert_with(Default::default)
            .insert(CONTAINER_PROBE_CONTEXT.to_owned(), text);
        Ok(())
    }
}

/// The name of a container's saved liveness probe in its pod's NodePodProbe entry
/// (`<pod>-<container>`, as upstream's proposal names it).
pub fn probe_name(pod_name: &str, container: &str) -> String {
    format!("{pod_name}-{container}")
}

/// The saved liveness probes kruise-daemon runs for `pod`, as `(probe name, container,
/// probe)`: those of a pod that asks for the enhanced liveness probe, whatever owns it (the
/// webhook step is for Kruise-owned pods; a pod may carry the annotation itself). Nothing
/// when the annotation does not parse.
pub fn daemon_probes(pod: &Pod) -> Vec<(String, String, Probe)> {
    if !asks(pod) {
        return Vec::new();
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    probe_context(pod)
        .map(|probes| {
            probes
                .into_iter()
                .map(|(container, probe)| (probe_name(name, &container), container, probe))
                .collect()
        })
        .unwrap_or_default()
}

/// The label on the ContainerRecreateRequests the restarter makes (its global rate limit
/// counts them).
pub const RESTART_LABEL: &str = "apps.kruise.io/enhanced-liveness-restart";

/// The Event reason of a restart.
pub const RESTART_REASON: &str = "EnhancedLivenessRestart";

/// What the restarter reads about one pod.
#[derive(Clone, Debug)]
pub struct RestartSnapshot<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The probe results of the pod's NodePodProbe entry (same UID).
    pub states: &'a [ContainerProbeState],
    /// The restart requests made for the pod (labelled [`RESTART_LABEL`]).
    pub requests: Vec<&'a ContainerRecreateRequest>,
    /// Restart requests created cluster-wide within the last minute.
    pub recent_restarts: usize,
    /// The global limit of restarts per minute.
    pub restarts_per_minute: usize,
}

/// The restarter's answer for one pod.
#[derive(Clone, Debug, PartialEq)]
pub struct RestartPlan {
    /// The container to restart, when one is; its request is the plan's action. The caller
    /// asks the pod's PodUnavailableBudget before applying it.
    pub container: Option<String>,
    /// The request and its Event, or a requeue while the rate limit holds.
    pub plan: Plan<()>,
}

/// When a probe's current state began.
fn since(state: &ContainerProbeState) -> Option<Timestamp> {
    state.last_transition_time.as_ref().map(|t| t.0)
}

/// Whether a request is finished (the daemon's terminal phases).
fn finished(request: &ContainerRecreateRequest) -> bool {
    use kruise_api::apps::v1beta1::ContainerRecreateRequestPhase as Phase;
    matches!(
        request.status.as_ref().map(|s| &s.phase),
        Some(Phase::Succeeded | Phase::Failed | Phase::Completed)
    )
}

/// The restarter: a running pod's container whose saved liveness probe has failed (the
/// daemon applied its `failureThreshold`) is restarted by a ContainerRecreateRequest, one
/// container of a pod at a time, and not again for the same failure: a failure that began
/// before the container's last restart finished waits for the probe's next result. Within
/// `restarts_per_minute` cluster-wide; past it the pod is looked at again in 5 s.
pub fn plan_restart(snapshot: &RestartSnapshot<'_>, _now: Timestamp) -> RestartPlan {
    let mut plan = Plan::empty(Default::default());
    let pod = snapshot.pod;
    let nothing = |plan| RestartPlan { container: None, plan };
    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    if !running || pod.metadata.deletion_timestamp.is_some() {
        return nothing(plan);
    }
    // One request at a time per pod.
    if snapshot.requests.iter().any(|r| !finished(r)) {
        return nothing(plan);
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let failed = daemon_probes(pod).into_iter().find_map(|(probe, container, _)| {
        let state = snapshot.states.iter().find(|s| s.name == probe)?;
        (state.state == ProbeState::Failed).then_some((container, state))
    });
    let Some((container, state)) = failed else { return nothing(plan) };
    let failed_at = since(state);
    let last_restart = snapshot
        .requests
        .iter()
        .filter(|r| r.spec.containers.iter().any(|c| c.name == container))
        .filter_map(|r| r.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(|t| t.0))
        .max();
    if let (Some(restarted), Some(failed)) = (last_restart, failed_at)
        && failed <= restarted
    {
        return nothing(plan);
    }
    if snapshot.recent_restarts >= snapshot.restarts_per_minute {
        plan.requeue_after = Some(jiff::SignedDuration::from_secs(5));
        return nothing(plan);
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let request = request_name(name, &uid, &container, failed_at);
    let namespace = pod.metadata.namespace.clone();
    plan.actions.push(Action::CreateObject {
        target: Target::new(ObjectKind::CONTAINER_RECREATE_REQUEST, namespace.as_deref(), &request),
        body: Arc::new(json!({
            "apiVersion": ObjectKind::CONTAINER_RECREATE_REQUEST.api_version(),
            "kind": "ContainerRecreateRequest",
            "metadata": {
                "name": request,
                "namespace": namespace,
                "labels": {RESTART_LABEL: "true"},
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid,
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": {
                "podName": name,
                "containers": [{"name": container}],
                "strategy": {"failurePolicy": "Fail", "terminationGracePeriodSeconds": 1},
                "activeDeadlineSeconds": 300,
                "ttlSecondsAfterFinished": 600,
            },
        })),
    });
    let message = if state.message.is_empty() {
        format!("restarting container {container}: its liveness probe failed")
    } else {
        format!("restarting container {container}: its liveness probe failed: {}", state.message)
    };
    plan.events.push(Event {
        type_: EventType::Warning,
        reason: RESTART_REASON.into(),
        message,
        after_action: Some(0),
    });
    RestartPlan { container: Some(container), plan }
}

/// The request restarting `container` of the pod for the failure that began at `failed_at`:
/// `<pod>-<12 hex digits>`, the same for the same failure, so that a request made twice is
/// refused as existing.
pub fn request_name(pod: &str, uid: &str, container: &str, failed_at: Option<Timestamp>) -> String {
    use sha2::Digest as _;
    let mut hash = sha2::Sha256::new();
    hash.update(uid.as_bytes());
    hash.update([0]);
    hash.update(container.as_bytes());
    hash.update([0]);
    hash.update(failed_at.map(|t| t.to_string()).unwrap_or_default().as_bytes());
    let digest = hash.finalize();
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    // A pod name is at most 253 characters; keep the request's within that.
    let head: String = pod.chars().take(253 - 13).collect();
    format!("{head}-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_chain::PodChain;
    use serde_json::json;

    fn pod(annotations: serde_json::Value, owner: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p",
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": owner, "kind": "CloneSet", "name": "c", "uid": "u", "controller": true}],
            },
            "spec": {"containers": [
                {"name": "main", "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "failureThreshold": 3}},
                {"name": "side"},
            ]},
        }))
        .expect("a pod")
    }

    fn run(p: &mut Pod) -> Option<Vec<u8>> {
        let step = EnhancedLivenessStep;
        PodChain::new(vec![&step]).run(p).expect("runs").patch().expect("encodes")
    }

    #[test]
    fn the_probe_moves_into_the_annotation() {
        let mut p = pod(
            json!({"apps.kruise.io/using-enhanced-liveness": "true"}),
            "apps.kruise.io/v1alpha1",
        );
        assert!(run(&mut p).is_some());
        let spec = p.spec.as_ref().expect("spec");
        assert!(spec.containers.iter().all(|c| c.liveness_probe.is_none()));
        let saved = probe_context(&p).expect("parses");
        assert_eq!(saved.len(), 1);
        let probe = &saved["main"];
        assert_eq!(probe.failure_threshold, Some(3));
        assert_eq!(probe.http_get.as_ref().map(|h| h.path.as_deref()), Some(Some("/healthz")));
        let text = &p.metadata.annotations.as_ref().expect("notes")[CONTAINER_PROBE_CONTEXT];
        let value: serde_json::Value = serde_json::from_str(text).expect("json");
        assert_eq!(value[0]["name"], "main");
        assert_eq!(value[0]["livenessProbe"]["httpGet"]["port"], 8080);
    }

    #[test]
    fn other_pods_are_left_alone() {
        for (notes, owner) in [
            (json!({}), "apps.kruise.io/v1alpha1"),
            (json!({"apps.kruise.io/using-enhanced-liveness": "yes"}), "apps.kruise.io/v1alpha1"),
            (json!({"apps.kruise.io/using-enhanced-liveness": "true"}), "apps/v1"),
        ] {
            let mut p = pod(notes, owner);
            assert_eq!(run(&mut p), None);
            assert!(p.spec.as_ref().expect("spec").containers[0].liveness_probe.is_some());
        }
    }

    #[test]
    fn a_pod_bringing_a_bad_context_is_refused_and_a_good_one_kept() {
        let mut bad = pod(
            json!({"apps.kruise.io/using-enhanced-liveness": "true", CONTAINER_PROBE_CONTEXT: "[{"}),
            "apps/v1",
        );
        let step = EnhancedLivenessStep;
        let err = PodChain::new(vec![&step]).run(&mut bad).expect_err("refused").to_string();
        assert!(
            err.contains(
                "metadata.annotations[apps.kruise.io/container-probe-context]: Invalid value"
            ),
            "{err}"
        );
        let brought = json!([{"name": "side", "livenessProbe": {"tcpSocket": {"port": 81}}}]);
        let mut kept = pod(
            json!({"apps.kruise.io/using-enhanced-liveness": "true", CONTAINER_PROBE_CONTEXT: brought.to_string()}),
            "apps.kruise.io/v1alpha1",
        );
        assert!(run(&mut kept).is_some());
        let saved = probe_context(&kept).expect("parses");
        assert_eq!(saved.keys().collect::<Vec<_>>(), ["main", "side"], "nothing lost");
    }

    #[test]
    fn a_bad_context_is_an_error_naming_the_annotation() {
        let p = pod(json!({CONTAINER_PROBE_CONTEXT: "{not json"}), "apps.kruise.io/v1alpha1");
        let err = probe_context(&p).expect_err("refused").to_string();
        assert!(
            err.starts_with(
                "metadata.annotations[apps.kruise.io/container-probe-context]: Invalid value"
            ),
            "{err}"
        );
        let none = pod(json!({}), "apps.kruise.io/v1alpha1");
        assert!(probe_context(&none).expect("no context").is_empty());
    }

    fn running(context: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "web-1", "namespace": "ns", "uid": "u1",
                "annotations": {
                    "apps.kruise.io/using-enhanced-liveness": "true",
                    CONTAINER_PROBE_CONTEXT: context.to_string(),
                },
            },
            "spec": {"nodeName": "n1", "containers": [{"name": "app"}, {"name": "side"}]},
            "status": {"phase": "Running"},
        }))
        .expect("a pod")
    }

    fn context() -> serde_json::Value {
        json!([
            {"name": "app", "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]}, "failureThreshold": 2}},
            {"name": "side", "livenessProbe": {"tcpSocket": {"port": 80}}},
        ])
    }

    fn state(name: &str, state: &str, since: &str) -> ContainerProbeState {
        serde_json::from_value(json!({
            "name": name, "state": state, "lastTransitionTime": since, "message": "no such file",
        }))
        .expect("a state")
    }

    fn request(container: &str, phase: &str, completed: Option<&str>) -> ContainerRecreateRequest {
        serde_json::from_value(json!({
            "metadata": {"name": "r", "namespace": "ns", "labels": {RESTART_LABEL: "true"}},
            "spec": {"podName": "web-1", "containers": [{"name": container}]},
            "status": {"phase": phase, "completionTime": completed},
        }))
        .expect("a request")
    }

    fn decide(
        pod: &Pod,
        states: &[ContainerProbeState],
        requests: &[ContainerRecreateRequest],
        recent: usize,
    ) -> RestartPlan {
        let snapshot = RestartSnapshot {
            pod,
            states,
            requests: requests.iter().collect(),
            recent_restarts: recent,
            restarts_per_minute: 2,
        };
        plan_restart(&snapshot, Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn the_daemon_gets_each_saved_probe_by_pod_and_container() {
        let pod = running(context());
        let probes = daemon_probes(&pod);
        let names: Vec<(&str, &str)> =
            probes.iter().map(|(n, c, _)| (n.as_str(), c.as_str())).collect();
        assert_eq!(names, [("web-1-app", "app"), ("web-1-side", "side")]);
        assert_eq!(probes[0].2.failure_threshold, Some(2));
        let mut off = pod.clone();
        off.metadata.annotations.as_mut().expect("notes").remove(USING_ENHANCED_LIVENESS);
        assert!(daemon_probes(&off).is_empty());
        let mut bad = pod;
        bad.metadata
            .annotations
            .as_mut()
            .expect("notes")
            .insert(CONTAINER_PROBE_CONTEXT.into(), "[".into());
        assert!(daemon_probes(&bad).is_empty(), "a context that does not parse runs nothing");
    }

    #[test]
    fn a_failed_probe_restarts_its_container_once_per_failure() {
        let pod = running(context());
        let failed = [
            state("web-1-app", "Succeeded", "2026-01-01T00:00:00Z"),
            state("web-1-side", "Failed", "2026-01-01T00:01:00Z"),
        ];
        let first = decide(&pod, &failed, &[], 0);
        assert_eq!(first.container.as_deref(), Some("side"));
        let Action::CreateObject { target, body } = &first.plan.actions[0] else {
            panic!("a create")
        };
        assert!(
            target.name.starts_with("web-1-") && target.name.len() == "web-1-".len() + 12,
            "{}",
            target.name
        );
        assert_eq!(body["spec"]["containers"], json!([{"name": "side"}]));
        assert_eq!(body["metadata"]["labels"][RESTART_LABEL], "true");
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(first.plan.events[0].reason, RESTART_REASON);
        assert!(first.plan.events[0].message.ends_with("its liveness probe failed: no such file"));
        // The same failure names the same request.
        assert_eq!(decide(&pod, &failed, &[], 0).plan.actions, first.plan.actions);

        // While the request runs, nothing more for the pod.
        let running_request = request("side", "Recreating", None);
        assert!(decide(&pod, &failed, &[running_request], 0).container.is_none());
        // Finished after the failure began: that failure is done with.
        let done = request("side", "Succeeded", Some("2026-01-01T00:02:00Z"));
        assert!(decide(&pod, &failed, std::slice::from_ref(&done), 0).container.is_none());
        // A failure that began after the restart finished is a new one.
        let again = [state("web-1-side", "Failed", "2026-01-01T00:03:00Z")];
        let second = decide(&pod, &again, &[done], 0);
        assert_eq!(second.container.as_deref(), Some("side"));
        assert_ne!(second.plan.actions, first.plan.actions, "another request");
    }

    #[test]
    fn restarts_wait_for_the_global_limit_and_a_running_pod() {
        let pod = running(context());
        let failed = [state("web-1-app", "Failed", "2026-01-01T00:00:00Z")];
        let limited = decide(&pod, &failed, &[], 2);
        assert!(limited.container.is_none() && limited.plan.actions.is_empty());
        assert_eq!(limited.plan.requeue_after, Some(jiff::SignedDuration::from_secs(5)));
        let mut pending = pod.clone();
        pending.status.as_mut().expect("status").phase = Some("Pending".into());
        assert!(decide(&pending, &failed, &[], 0).container.is_none());
        let healthy = [state("web-1-app", "Succeeded", "2026-01-01T00:00:00Z")];
        assert!(decide(&pod, &healthy, &[], 0).container.is_none());
        // A failed marker probe of the same pod is not a liveness probe.
        let marker = [state("marker#app", "Failed", "2026-01-01T00:00:00Z")];
        assert!(decide(&pod, &marker, &[], 0).container.is_none());
    }
}
