//! The Job sidecar terminator: the sidecars of a job pod stop once its main containers have
//! finished, so that the pod (and its Job) can finish.
//!
//! A sidecar is a container with the env `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true` (any
//! case), or, on a virtual kubelet (a node labelled `type: virtual-kubelet`), one with
//! `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE=<image>`. The other containers are the
//! main ones. A pod is acted on when it is not being deleted, not `Pending`, its
//! `restartPolicy` is not `Always`, some sidecar has not terminated, and its main containers
//! are done: all terminated under `Never`, all terminated with exit code 0 under `OnFailure`.
//!
//! [`plan`] then, as upstream's controller does:
//! - on a virtual kubelet, swaps in the `..._WITH_IMAGE` image of each sidecar still running
//!   (an in-place update the virtual kubelet carries out by stopping the container);
//! - elsewhere, creates the ContainerRecreateRequest `sidecar-termination-<pod uid>` that
//!   stops the sidecars still running (`forceRecreate`, `failurePolicy: Ignore`, owned by the
//!   pod); kruise-daemon on the pod's node carries it out. A request that exists already is
//!   waited for;
//! - for sidecars with `KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE=true` too: once the other
//!   sidecars have terminated, the pod's phase is set from its main containers alone
//!   (`Succeeded` when they all exited 0, else `Failed`) with the condition
//!   `SidecarTerminated`, before those sidecars are stopped, so that their exit codes (a
//!   killed `sleep infinity` exits 137) do not fail the pod. The kubelet keeps a terminal
//!   phase it did not set.

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod};
use kruise_api::well_known::conditions::pod::SIDECAR_TERMINATED;
use kruise_api::well_known::env::container::{
    KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE, KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT,
    KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE,
};
use serde_json::json;

use crate::expectations::ControllerExpectations;
use crate::plan::{
    Action, Event, EventType, ObjectKind, Patch, Plan, PodPatchPurpose, PodStatusPurpose, Target,
};

/// The label and value of a virtual kubelet's node.
pub const VIRTUAL_KUBELET_LABEL: (&str, &str) = ("type", "virtual-kubelet");
/// The Event reason of each action.
pub const EVENT_REASON: &str = "SidecarTerminator";
/// The message of the `SidecarTerminated` condition.
pub const CONDITION_MESSAGE: &str = "Terminated by Sidecar Terminator";

/// The name of the request that stops a pod's sidecars.
pub fn request_name(pod_uid: &str) -> String {
    format!("sidecar-termination-{pod_uid}")
}

fn env<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
    c.env.iter().flatten().find(|e| e.name == name).and_then(|e| e.value.as_deref())
}

fn is_true(c: &Container, name: &str) -> bool {
    c.env.iter().flatten().any(|e| {
        e.name == name && e.value.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("true"))
    })
}

fn is_normal(c: &Container) -> bool {
    is_true(c, KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT)
}

fn with_image(c: &Container) -> Option<&str> {
    env(c, KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE).filter(|i| !i.is_empty())
}

fn is_sidecar(c: &Container) -> bool {
    is_normal(c) || with_image(c).is_some()
}

/// Whether the pod asks for the sidecar terminator at all: some container is a sidecar.
pub fn has_sidecars(pod: &Pod) -> bool {
    pod.spec.iter().flat_map(|s| s.containers.iter()).any(is_sidecar)
}

/// The pod's sidecars, by how they are stopped.
#[derive(Debug, Default, PartialEq, Eq)]
struct Sidecars {
    /// Stopped by a request.
    normal: BTreeSet<String>,
    /// Stopped by a request once the pod's phase is set from its main containers.
    ignore_exit_code: BTreeSet<String>,
    /// Stopped by swapping in an image (on a virtual kubelet).
    in_place: BTreeSet<String>,
}

fn sidecars(pod: &Pod, virtual_kubelet: bool) -> Sidecars {
    let mut out = Sidecars::default();
    for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        if virtual_kubelet && with_image(c).is_some() {
            out.in_place.insert(c.name.clone());
        } else if !virtual_kubelet && is_normal(c) {
            if is_true(c, KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE) {
                out.ignore_exit_code.insert(c.name.clone());
            } else {
                out.normal.insert(c.name.clone());
            }
        }
    }
    out
}

/// Exit codes of the terminated containers; `None` until every container has a status.
fn exits(pod: &Pod) -> Option<std::collections::BTreeMap<&str, Option<i32>>> {
    let spec = pod.spec.as_ref()?;
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref())?;
    if statuses.len() != spec.containers.len() {
        return None;
    }
    Some(
        statuses
            .iter()
            .map(|s| {
                let code =
                    s.state.as_ref().and_then(|st| st.terminated.as_ref()).map(|t| t.exit_code);
                (s.name.as_str(), code)
            })
            .collect(),
    )
}

/// Whether every container named in `names` has terminated (and every container has a
/// status).
fn completed<'a>(pod: &Pod, mut names: impl Iterator<Item = &'a String>) -> bool {
    exits(pod).is_some_and(|e| names.all(|n| e.get(n.as_str()).copied().flatten().is_some()))
}

/// Whether every container named in `names` has exited 0.
fn succeeded<'a>(pod: &Pod, mut names: impl Iterator<Item = &'a String>) -> bool {
    exits(pod).is_some_and(|e| names.all(|n| e.get(n.as_str()).copied().flatten() == Some(0)))
}

fn main_containers(pod: &Pod) -> BTreeSet<String> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter(|c| !is_sidecar(c))
        .map(|c| c.name.clone())
        .collect()
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default()
}

/// Whether the terminator acts on `pod` now (upstream's `isInterestingPod`).
pub fn wanted(pod: &Pod) -> bool {
    let policy = pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("Always");
    if pod.metadata.deletion_timestamp.is_some() || phase(pod) == "Pending" || policy == "Always" {
        return false;
    }
    let sidecar_names: BTreeSet<String> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter(|c| is_sidecar(c))
        .map(|c| c.name.clone())
        .collect();
    if sidecar_names.is_empty() || completed(pod, sidecar_names.iter()) {
        return false;
    }
    let main = main_containers(pod);
    match policy {
        "Never" => completed(pod, main.iter()),
        "OnFailure" => succeeded(pod, main.iter()),
        _ => false,
    }
}

/// The sidecars of `names` that have not terminated.
fn running<'a>(pod: &Pod, names: &'a BTreeSet<String>) -> Vec<&'a String> {
    let exits = exits(pod).unwrap_or_default();
    names.iter().filter(|n| exits.get(n.as_str()).copied().flatten().is_none()).collect()
}

/// What [`plan`] reads besides the pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The pod's node is a virtual kubelet.
    pub virtual_kubelet: bool,
    /// The request [`request_name`] exists already.
    pub request_exists: bool,
}

/// The terminator's plan for `pod` (see the module documentation).
pub fn plan(pod: &Pod, context: Context, now: Timestamp) -> Plan<()> {
    let mut plan = Plan::empty(ControllerExpectations::default());
    if !wanted(pod) {
        return plan;
    }
    let name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let sidecars = sidecars(pod, context.virtual_kubelet);

    let swaps: Vec<serde_json::Value> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter(|c| running(pod, &sidecars.in_place).contains(&&c.name))
        .filter_map(|c| {
            let image = with_image(c)?;
            (c.image.as_deref() != Some(image)).then(|| json!({"name": c.name, "image": image}))
        })
        .collect();
    if !swaps.is_empty() {
        let names: Vec<&str> = swaps.iter().filter_map(|s| s["name"].as_str()).collect();
        plan.actions.push(Action::PatchPod {
            namespace: pod.metadata.namespace.clone(),
            name: name.clone(),
            uid: uid.clone(),
            purpose: PodPatchPurpose::SidecarTerminatorImage,
            patch: Patch::strategic(json!({"spec": {"containers": swaps}})),
        });
        plan.events.push(event(
            &plan,
            format!("Kruise SidecarTerminator is trying to terminate sidecar {names:?} using in-place update"),
        ));
    }

    let mut request_planned = context.request_exists;
    push_request(&mut plan, pod, &running(pod, &sidecars.normal), &mut request_planned);

    let others_done =
        completed(pod, sidecars.normal.iter()) && completed(pod, sidecars.in_place.iter());
    if sidecars.ignore_exit_code.is_empty() || !others_done {
        return plan;
    }
    if !matches!(phase(pod), "Succeeded" | "Failed") {
        let main = main_containers(pod);
        let phase = if succeeded(pod, main.iter()) { "Succeeded" } else { "Failed" };
        plan.actions.push(Action::PatchPodStatus {
            namespace: pod.metadata.namespace.clone(),
            name: name.clone(),
            uid: uid.clone(),
            purpose: PodStatusPurpose::SidecarTerminated,
            patch: Patch::strategic(json!({"status": {
                "phase": phase,
                "conditions": [{
                    "type": SIDECAR_TERMINATED,
                    "status": "True",
                    "lastTransitionTime": crate::pod::format_rfc3339(now),
                    "message": CONDITION_MESSAGE,
                }],
            }})),
        });
    }
    push_request(&mut plan, pod, &running(pod, &sidecars.ignore_exit_code), &mut request_planned);
    plan
}

fn event(plan: &Plan<()>, message: String) -> Event {
    Event {
        type_: EventType::Normal,
        reason: EVENT_REASON.into(),
        message,
        after_action: plan.actions.len().checked_sub(1),
    }
}

/// Plans the request stopping `containers`, unless there is one (or one is planned).
fn push_request(plan: &mut Plan<()>, pod: &Pod, containers: &[&String], planned: &mut bool) {
    if containers.is_empty() || *planned {
        return;
    }
    *planned = true;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.clone();
    let name = request_name(&uid);
    let list: Vec<serde_json::Value> = containers.iter().map(|c| json!({"name": c})).collect();
    plan.actions.push(Action::CreateObject {
        target: Target::new(ObjectKind::CONTAINER_RECREATE_REQUEST, namespace.as_deref(), &name),
        body: Arc::new(json!({
            "apiVersion": ObjectKind::CONTAINER_RECREATE_REQUEST.api_version(),
            "kind": "ContainerRecreateRequest",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [{
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_name,
                    "uid": uid,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "spec": {
                "podName": pod_name,
                "containers": list,
                "strategy": {"forceRecreate": true, "failurePolicy": "Ignore"},
            },
        })),
    });
    let names: Vec<&str> = containers.iter().map(|c| c.as_str()).collect();
    let e = event(
        plan,
        format!("Kruise SidecarTerminator is trying to terminate sidecar {names:?} using crr"),
    );
    plan.events.push(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-12-06T00:00:00Z".parse().expect("time")
    }

    /// A job pod: `main` and `side` (a sidecar with `envs`), in `phase`, with the exit codes
    /// given (`None`: running).
    fn pod(policy: &str, envs: serde_json::Value, main: Option<i32>, side: Option<i32>) -> Pod {
        let state = |code: Option<i32>| match code {
            Some(c) => json!({"terminated": {"exitCode": c}}),
            None => json!({"running": {}}),
        };
        serde_json::from_value(json!({
            "metadata": {"name": "job-abc", "namespace": "ns", "uid": "u1"},
            "spec": {"restartPolicy": policy, "containers": [
                {"name": "main", "image": "app:1"},
                {"name": "side", "image": "proxy:1", "env": envs},
            ]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "ready": false, "restartCount": 0, "image": "app:1", "imageID": "", "state": state(main)},
                {"name": "side", "ready": true, "restartCount": 0, "image": "proxy:1", "imageID": "", "state": state(side)},
            ]},
        }))
        .expect("a pod")
    }

    fn terminate() -> serde_json::Value {
        json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "True"}])
    }

    fn kinds(plan: &Plan<()>) -> Vec<String> {
        plan.actions
            .iter()
            .map(|a| match a {
                Action::CreateObject { body, .. } => {
                    format!("crr {}", body["spec"]["containers"])
                }
                Action::PatchPodStatus { patch: Patch::Strategic(b), .. } => {
                    format!("phase {}", b["status"]["phase"])
                }
                Action::PatchPod { patch: Patch::Strategic(b), .. } => {
                    format!("image {}", b["spec"]["containers"])
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_finished_main_container_gets_its_sidecar_stopped_by_a_request() {
        let p = pod("Never", terminate(), Some(1), None);
        let planned = plan(&p, Context::default(), now());
        assert_eq!(kinds(&planned), [r#"crr [{"name":"side"}]"#]);
        let Action::CreateObject { body, target } = &planned.actions[0] else { unreachable!() };
        assert_eq!(target.name, "sidecar-termination-u1");
        assert_eq!(
            body["spec"]["strategy"],
            json!({"forceRecreate": true, "failurePolicy": "Ignore"})
        );
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(body["spec"]["podName"], "job-abc");
        assert_eq!(planned.events.len(), 1);
        // A request that exists is waited for.
        let waiting = plan(&p, Context { request_exists: true, ..Context::default() }, now());
        assert!(waiting.actions.is_empty());
    }

    #[test]
    fn nothing_before_the_main_containers_are_done() {
        assert!(
            plan(&pod("Never", terminate(), None, None), Context::default(), now())
                .actions
                .is_empty()
        );
        // OnFailure: a failed main container will run again.
        assert!(
            plan(&pod("OnFailure", terminate(), Some(2), None), Context::default(), now())
                .actions
                .is_empty()
        );
        assert_eq!(
            plan(&pod("OnFailure", terminate(), Some(0), None), Context::default(), now())
                .actions
                .len(),
            1
        );
        // Always: not a job pod; a sidecar already stopped; no sidecar at all; a pending pod.
        assert!(
            plan(&pod("Always", terminate(), Some(0), None), Context::default(), now())
                .actions
                .is_empty()
        );
        assert!(
            plan(&pod("Never", terminate(), Some(0), Some(143)), Context::default(), now())
                .actions
                .is_empty()
        );
        assert!(
            plan(&pod("Never", json!([]), Some(0), None), Context::default(), now())
                .actions
                .is_empty()
        );
        let mut pending = pod("Never", terminate(), Some(0), None);
        pending.status.as_mut().expect("status").phase = Some("Pending".into());
        assert!(plan(&pending, Context::default(), now()).actions.is_empty());
        // Not every container has a status yet.
        let mut partial = pod("Never", terminate(), Some(0), None);
        partial
            .status
            .as_mut()
            .and_then(|s| s.container_statuses.as_mut())
            .expect("statuses")
            .pop();
        assert!(plan(&partial, Context::default(), now()).actions.is_empty());
    }

    #[test]
    fn an_ignored_exit_code_sets_the_phase_from_the_main_containers_first() {
        let envs = json!([
            {"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"},
            {"name": "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "value": "true"},
        ]);
        let ok = plan(&pod("Never", envs.clone(), Some(0), None), Context::default(), now());
        assert_eq!(kinds(&ok), [r#"phase "Succeeded""#, r#"crr [{"name":"side"}]"#]);
        let Action::PatchPodStatus { patch: Patch::Strategic(body), .. } = &ok.actions[0] else {
            unreachable!()
        };
        let condition = &body["status"]["conditions"][0];
        assert_eq!(
            (&condition["type"], &condition["status"]),
            (&json!("SidecarTerminated"), &json!("True"))
        );
        assert_eq!(condition["message"], CONDITION_MESSAGE);
        let failed = plan(&pod("Never", envs.clone(), Some(3), None), Context::default(), now());
        assert_eq!(kinds(&failed)[0], r#"phase "Failed""#);
        // Once the phase is set, only the request is left; once it exists, nothing.
        let mut marked = pod("Never", envs, Some(0), None);
        marked.status.as_mut().expect("status").phase = Some("Succeeded".into());
        assert_eq!(kinds(&plan(&marked, Context::default(), now())), [r#"crr [{"name":"side"}]"#]);
        let done = plan(&marked, Context { request_exists: true, ..Context::default() }, now());
        assert!(done.actions.is_empty());
    }

    #[test]
    fn a_virtual_kubelet_swaps_the_image_instead() {
        let envs = json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE", "value": "pause:3"}]);
        let vk = Context { virtual_kubelet: true, ..Context::default() };
        let swapped = plan(&pod("Never", envs.clone(), Some(0), None), vk, now());
        assert_eq!(kinds(&swapped), [r#"image [{"image":"pause:3","name":"side"}]"#]);
        // Off a virtual kubelet, a with-image sidecar is a sidecar no one stops (upstream).
        assert!(
            plan(&pod("Never", envs, Some(0), None), Context::default(), now()).actions.is_empty()
        );
    }
}
