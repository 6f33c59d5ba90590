//! What `kubectl kruise rollout` reads and writes, without IO: whether a workload's rollout is
//! done (partitions and in-place updates counted), the patches that pause, resume, restart and
//! roll a workload back, and a CloneSet's selective scale-down.
//!
//! Messages follow kubectl's own `rollout status` wording for the matching native kind.

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet as KubeDaemonSet, Deployment, StatefulSet as KubeStatefulSet,
};
use kruise_api::apps::v1beta1::{CloneSet, DaemonSet, StatefulSet};
use serde_json::{Value, json};

use crate::intstr::{Rounding, scaled_value};

pub mod migrate;
pub mod set;

/// The template annotation `rollout restart` sets, as upstream's plugin names it.
pub const RESTARTED_AT: &str = "kubectl.kruise.io/restartedAt";

/// Where a rollout stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutStatus {
    /// The rollout is finished (up to the partition, if any).
    pub done: bool,
    /// One line, as kubectl prints it (without the new line).
    pub message: String,
}

impl RolloutStatus {
    fn waiting(message: String) -> Self {
        Self { done: false, message }
    }

    fn done(message: String) -> Self {
        Self { done: true, message }
    }
}

/// Why a rollout status cannot be given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RolloutError {
    /// The workload's update strategy has no rollout to follow.
    #[error("rollout status is only available for {0} strategy type")]
    Strategy(&'static str),
    /// A partition that does not parse.
    #[error("{field}: Invalid value: {value:?}: {detail}")]
    Partition {
        /// Its field path.
        field: &'static str,
        /// The value.
        value: String,
        /// What is wrong.
        detail: String,
    },
}

fn shown(value: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString) -> String {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    match value {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// A `spec.updateStrategy.rollingUpdate.partition` scaled against `total` (0 when unset).
fn partition_of(
    value: Option<&k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    total: i32,
    rounding: Rounding,
) -> Result<i32, RolloutError> {
    let Some(value) = value else { return Ok(0) };
    scaled_value(value, total, rounding).map_err(|e| RolloutError::Partition {
        field: "spec.updateStrategy.rollingUpdate.partition",
        value: shown(value),
        detail: e.to_string(),
    })
}

fn observed(generation: Option<i64>, observed: i64) -> bool {
    generation.unwrap_or(0) <= observed
}

/// A CloneSet: done when the pods up to the partition are updated and available and no old
/// pod is left above it.
///
/// # Errors
/// A partition that does not parse.
pub fn cloneset_status(set: &CloneSet) -> Result<RolloutStatus, RolloutError> {
    let name = set.metadata.name.as_deref().unwrap_or_default();
    let status = set.status.clone().unwrap_or_default();
    if !observed(set.metadata.generation, status.observed_generation) {
        return Ok(RolloutStatus::waiting(
            "Waiting for cloneset spec update to be observed...".into(),
        ));
    }
    let replicas = set.spec.replicas.unwrap_or(1);
    let partition = partition_of(
        set.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.partition.as_ref()),
        replicas,
        Rounding::Up,
    )?;
    let wanted = (replicas - partition.clamp(0, replicas)).max(0);
    if status.updated_replicas < wanted {
        return Ok(RolloutStatus::waiting(format!(
            "Waiting for cloneset {name:?} rollout to finish: {} out of {wanted} new replicas have been updated...",
            status.updated_replicas
        )));
    }
    if partition == 0 && status.replicas > status.updated_replicas {
        return Ok(RolloutStatus::waiting(format!(
            "Waiting for cloneset {name:?} rollout to finish: {} old replicas are pending termination...",
            status.replicas - status.updated_replicas
        )));
    }
    if status.updated_available_replicas < wanted.min(status.updated_replicas) {
        return Ok(RolloutStatus::waiting(format!(
            "Waiting for cloneset {name:?} rollout to finish: {} of {} updated replicas are available...",
            status.updated_available_replicas,
            wanted.min(status.updated_replicas)
        )));
    }
    if partition > 0 {
        return Ok(RolloutStatus::done(format!(
            "partitioned roll out complete: {wanted} new pods have been updated..."
        )));
    }
    Ok(RolloutStatus::done(format!("cloneset {name:?} successfully rolled out")))
}

/// An Advanced StatefulSet, as kubectl follows a StatefulSet: with a partition, done when the
/// ordinals from it are updated; otherwise when every pod is ready at the update revision.
///
/// # Errors
/// An `OnDelete` strategy.
pub fn advanced_statefulset_status(set: &StatefulSet) -> Result<RolloutStatus, RolloutError> {
    let strategy = &set.spec.update_strategy;
    if strategy.type_.as_ref().is_some_and(|t| t.as_str() == "OnDelete") {
        return Err(RolloutError::Strategy("RollingUpdate"));
    }
    let status = set.status.clone().unwrap_or_default();
    let replicas = set.spec.replicas.unwrap_or(1);
    let partition = strategy.rolling_update.as_ref().and_then(|r| r.partition).unwrap_or(0);
    stateful_status(
        observed(set.metadata.generation, status.observed_generation),
        replicas,
        partition,
        (status.ready_replicas, status.updated_replicas),
        (&status.current_revision, &status.update_revision),
    )
}

fn stateful_status(
    observed: bool,
    replicas: i32,
    partition: i32,
    (ready, updated): (i32, i32),
    (current, update): (&str, &str),
) -> Result<RolloutStatus, RolloutError> {
    if !observed {
        return Ok(RolloutStatus::waiting(
            "Waiting for statefulset spec update to be observed...".into(),
        ));
    }
    if ready < replicas {
        return Ok(RolloutStatus::waiting(format!(
            "Waiting for {} pods to be ready...",
            replicas - ready
        )));
    }
    if partition > 0 {
        let wanted = (replicas - partition).max(0);
        if updated < wanted {
            return Ok(RolloutStatus::waiting(format!(
                "Waiting for partitioned roll out to finish: {updated} out of {wanted} new pods have been updated..."
            )));
        }
        return Ok(RolloutStatus::done(format!(
            "partitioned roll out complete: {updated} new pods have been updated..."
        )));
    }
    if update != current {
        return Ok(RolloutStatus::waiting(format!(
            "waiting for statefulset rolling update to complete {updated} pods at revision {update}..."
        )));
    }
    Ok(RolloutStatus::done(format!(
        "statefulset rolling update complete {replicas} pods at revision {current}..."
    )))
}

/// An Advanced DaemonSet: done when the pods up to the partition are updated and available.
///
/// # Errors
/// An `OnDelete` strategy, or a partition that does not parse.
pub fn advanced_daemonset_status(set: &DaemonSet) -> Result<RolloutStatus, RolloutError> {
    if set.spec.update_strategy.type_.as_ref().is_some_and(|t| t.as_str() == "OnDelete") {
        return Err(RolloutError::Strategy("RollingUpdate"));
    }
    let name = set.metadata.name.as_deref().unwrap_or_default();
    let status = set.status.clone().unwrap_or_default();
    if !observed(set.metadata.generation, status.observed_generation) {
        return Ok(RolloutStatus::waiting(
            "Waiting for daemon set spec update to be observed...".into(),
        ));
    }
    let desired = status.desired_number_scheduled;
    let partition = partition_of(
        set.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.partition.as_ref()),
        desired,
        Rounding::Down,
    )?;
    let wanted = (desired - partition.clamp(0, desired)).max(0);
    daemon_status(name, wanted, status.updated_number_scheduled, status.number_available, desired)
}

fn daemon_status(
    name: &str,
    wanted: i32,
    updated: i32,
    available: i32,
    desired: i32,
) -> Result<RolloutStatus, RolloutError> {
    if updated < wanted {
        return Ok(RolloutStatus::waiting(format!(
            "Waiting for daemon set {name:?} rollout to finish: {updated} out of {wanted} new pods have been updated..."
        )));
    }
    if available < desired {
        return Ok(RolloutStatus::waiting(format!(
            "Waiting for daemon set {name:?} rollout to finish: {available} of {desired} updated pods are available..."
        )));
    }
    Ok(RolloutStatus::done(format!("daemon set {name:?} successfully rolled out")))
}

/// A Deployment, as kubectl follows it (without its progress deadline check).
pub fn deployment_status(deployment: &Deployment) -> RolloutStatus {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let status = deployment.status.clone().unwrap_or_default();
    if !observed(deployment.metadata.generation, status.observed_generation.unwrap_or(0)) {
        return RolloutStatus::waiting(
            "Waiting for deployment spec update to be observed...".into(),
        );
    }
    let replicas = deployment.spec.replicas.unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    if updated < replicas {
        return RolloutStatus::waiting(format!(
            "Waiting for deployment {name:?} rollout to finish: {updated} out of {replicas} new replicas have been updated..."
        ));
    }
    if total > updated {
        return RolloutStatus::waiting(format!(
            "Waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination...",
            total - updated
        ));
    }
    if available < updated {
        return RolloutStatus::waiting(format!(
            "Waiting for deployment {name:?} rollout to finish: {available} of {updated} updated replicas are available..."
        ));
    }
    RolloutStatus::done(format!("deployment {name:?} successfully rolled out"))
}

/// An apps/v1 StatefulSet, as kubectl follows it.
///
/// # Errors
/// An `OnDelete` strategy.
pub fn statefulset_status(set: &KubeStatefulSet) -> Result<RolloutStatus, RolloutError> {
    let spec = set.spec.clone();
    let strategy = spec.update_strategy.unwrap_or_default();
    if strategy.type_.as_deref() == Some("OnDelete") {
        return Err(RolloutError::Strategy("RollingUpdate"));
    }
    let status = set.status.clone().unwrap_or_default();
    stateful_status(
        observed(set.metadata.generation, status.observed_generation.unwrap_or(0)),
        spec.replicas.unwrap_or(1),
        strategy.rolling_update.and_then(|r| r.partition).unwrap_or(0),
        (status.ready_replicas.unwrap_or(0), status.updated_replicas.unwrap_or(0)),
        (
            status.current_revision.as_deref().unwrap_or_default(),
            status.update_revision.as_deref().unwrap_or_default(),
        ),
    )
}

/// An apps/v1 DaemonSet, as kubectl follows it.
///
/// # Errors
/// An `OnDelete` strategy.
pub fn kube_daemonset_status(set: &KubeDaemonSet) -> Result<RolloutStatus, RolloutError> {
    let spec = set.spec.clone();
    if spec.update_strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("OnDelete") {
        return Err(RolloutError::Strategy("RollingUpdate"));
    }
    let name = set.metadata.name.as_deref().unwrap_or_default();
    let status = set.status.clone().unwrap_or_default();
    if !observed(set.metadata.generation, status.observed_generation.unwrap_or(0)) {
        return Ok(RolloutStatus::waiting(
            "Waiting for daemon set spec update to be observed...".into(),
        ));
    }
    let desired = status.desired_number_scheduled;
    daemon_status(
        name,
        desired,
        status.updated_number_scheduled.unwrap_or(0),
        status.number_available.unwrap_or(0),
        desired,
    )
}

/// The JSON path of a Kruise workload's `paused` switch, by kind: CloneSet, Advanced
/// StatefulSet and Advanced DaemonSet (`rollingUpdate.paused`), Deployment (`spec.paused`).
pub fn pause_patch(kind: &str, paused: bool) -> Option<Value> {
    match kind {
        "CloneSet" | "StatefulSet" | "DaemonSet" => {
            Some(json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": paused}}}}))
        }
        "Deployment" => Some(json!({"spec": {"paused": paused}})),
        _ => None,
    }
}

/// Whether a workload (its JSON) is paused already.
pub fn is_paused(object: &Value) -> bool {
    object["spec"]["paused"].as_bool().unwrap_or(false)
        || object["spec"]["updateStrategy"]["rollingUpdate"]["paused"].as_bool().unwrap_or(false)
}

/// The merge patch of `rollout restart`: the template annotation [`RESTARTED_AT`] set to `now`.
pub fn restart_patch(now: jiff::Timestamp) -> Value {
    let at = now.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string();
    json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: at}}}}})
}

/// A workload's revisions, oldest first: `(revision number, change cause)`.
pub fn history(revisions: &[&ControllerRevision]) -> Vec<(i64, String)> {
    let mut list: Vec<(i64, String)> = revisions
        .iter()
        .map(|r| {
            let cause = r
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/change-cause"))
                .cloned()
                .unwrap_or_else(|| "<none>".into());
            (r.revision.unwrap_or(0), cause)
        })
        .collect();
    list.sort();
    list
}

/// Why a rollback cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UndoError {
    /// No revision to go back to.
    #[error("no rollout history found")]
    NoHistory,
    /// `--to-revision` names none.
    #[error("unable to find specified revision {0} in history")]
    NoSuchRevision(i64),
    /// The revision holds no template.
    #[error("{0}")]
    Template(String),
}

/// The JSON patch rolling a workload back to `to_revision` (0: the one before the newest):
/// its template replaced by the revision's, guarded by the workload's resourceVersion. Also
/// the revision number chosen.
///
/// # Errors
/// See [`UndoError`].
pub fn undo_patch(
    revisions: &[&ControllerRevision],
    to_revision: i64,
    resource_version: &str,
) -> Result<(i64, Value), UndoError> {
    let mut sorted: Vec<&ControllerRevision> = revisions.to_vec();
    sorted.sort_by_key(|r| r.revision.unwrap_or(0));
    let chosen = if to_revision == 0 {
        if sorted.len() < 2 {
            return Err(UndoError::NoHistory);
        }
        sorted[sorted.len() - 2]
    } else {
        sorted
            .iter()
            .find(|r| r.revision == Some(to_revision))
            .copied()
            .ok_or(UndoError::NoSuchRevision(to_revision))?
    };
    let template = crate::revision::template_from_revision(chosen)
        .map_err(|e| UndoError::Template(e.to_string()))?;
    let patch = json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "replace", "path": "/spec/template", "value": template},
    ]);
    Ok((chosen.revision.unwrap_or(0), patch))
}

/// Why a selective scale-down is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScaleDownError {
    /// No pod named.
    #[error("--pods: Required value: name at least one pod")]
    NoPods,
    /// A pod the CloneSet does not own.
    #[error("pod {0:?} does not belong to cloneset {1:?}")]
    NotOwned(String, String),
    /// More pods than replicas.
    #[error("cannot scale down {0} pods: the cloneset has {1} replicas")]
    TooMany(usize, i32),
}

/// The JSON patch of `scaledown cloneset/NAME --pods a,b`: the pods added to
/// `scaleStrategy.podsToDelete` and `replicas` lowered by as many, guarded by the
/// resourceVersion. `owned` are the names of the pods the CloneSet controls.
///
/// # Errors
/// See [`ScaleDownError`].
pub fn scale_down_patch(
    set: &CloneSet,
    pods: &[String],
    owned: &[String],
) -> Result<Value, ScaleDownError> {
    let name = set.metadata.name.clone().unwrap_or_default();
    if pods.is_empty() {
        return Err(ScaleDownError::NoPods);
    }
    if let Some(stranger) = pods.iter().find(|p| !owned.contains(p)) {
        return Err(ScaleDownError::NotOwned(stranger.clone(), name));
    }
    let replicas = set.spec.replicas.unwrap_or(1);
    let mut to_delete = set.spec.scale_strategy.pods_to_delete.clone();
    let new: Vec<&String> = pods.iter().filter(|p| !to_delete.contains(p)).collect();
    let count = i32::try_from(new.len()).unwrap_or(i32::MAX);
    if count > replicas {
        return Err(ScaleDownError::TooMany(new.len(), replicas));
    }
    to_delete.extend(new.into_iter().cloned());
    Ok(json!([
        {"op": "test", "path": "/metadata/resourceVersion",
         "value": set.metadata.resource_version.clone().unwrap_or_default()},
        {"op": "add", "path": "/spec/replicas", "value": replicas - count},
        {"op": "add", "path": "/spec/scaleStrategy", "value": merged_scale_strategy(set, &to_delete)},
    ]))
}

fn merged_scale_strategy(set: &CloneSet, to_delete: &[String]) -> Value {
    let mut strategy = serde_json::to_value(&set.spec.scale_strategy).unwrap_or_else(|_| json!({}));
    if !strategy.is_object() {
        strategy = json!({});
    }
    strategy["podsToDelete"] = json!(to_delete);
    strategy
}

/// Why `set image` cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetImageError {
    /// An assignment is not `CONTAINER=IMAGE`.
    #[error("invalid image update {0:?}: expected CONTAINER=IMAGE")]
    Syntax(String),
    /// No container of that name in the template.
    #[error("unable to find container named {0:?}")]
    NoContainer(String),
    /// An environment change is neither `KEY=VALUE` nor `KEY-`.
    #[error("invalid environment variable {0:?}: expected KEY=VALUE or KEY-")]
    EnvSyntax(String),
    /// A resource list entry is not `NAME=QUANTITY`.
    #[error("invalid resource {0:?}: expected NAME=QUANTITY")]
    ResourceSyntax(String),
    /// `set resources` was given neither limits nor requests.
    #[error(
        "you must specify an update to requests or limits (in the form of --requests/--limits)"
    )]
    NoResources,
}

/// The JSON patch of `set image CONTAINER=IMAGE...` on a workload (its JSON): each named
/// container's (or init container's) image, `*` for all of them, guarded by the
/// resourceVersion. `None` when every image is already so.
///
/// # Errors
/// See [`SetImageError`].
pub fn set_image_patch(
    object: &Value,
    assignments: &[String],
) -> Result<Option<Value>, SetImageError> {
    let mut ops = vec![json!({"op": "test", "path": "/metadata/resourceVersion",
        "value": object["metadata"]["resourceVersion"].clone()})];
    for assignment in assignments {
        let (container, image) = assignment
            .split_once('=')
            .filter(|(c, i)| !c.is_empty() && !i.is_empty())
            .ok_or_else(|| SetImageError::Syntax(assignment.clone()))?;
        let mut found = false;
        for list in ["initContainers", "containers"] {
            let path = format!("/spec/template/spec/{list}");
            for (i, c) in
                object.pointer(&path).and_then(Value::as_array).into_iter().flatten().enumerate()
            {
                if container == "*" || c["name"] == container {
                    found = true;
                    if c["image"] != image {
                        ops.push(json!({"op": "replace", "path": format!("{path}/{i}/image"), "value": image}));
                    }
                }
            }
        }
        if !found {
            return Err(SetImageError::NoContainer(container.to_owned()));
        }
    }
    Ok((ops.len() > 1).then_some(Value::Array(ops)))
}

/// The template's containers, checked to hold `container` when one is named, and the first
/// operation of a patch of them: the resourceVersion test.
fn template_containers(
    object: &Value,
    container: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), SetImageError> {
    let containers = object
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(wanted) = container
        && !containers.iter().any(|c| c["name"] == wanted)
    {
        return Err(SetImageError::NoContainer(wanted.to_owned()));
    }
    let guard = json!({"op": "test", "path": "/metadata/resourceVersion",
        "value": object["metadata"]["resourceVersion"].clone()});
    Ok((containers, vec![guard]))
}

/// One change `set env` makes to a container's env.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvEdit {
    /// Set this entry (`{"name": ..., "value" | "valueFrom": ...}`), replacing one of its name.
    Set(Value),
    /// Remove the variable of this name.
    Remove(String),
}

/// The JSON patch of `set env KEY=VALUE... KEY-...` on a workload (its JSON): in every
/// container of the template (or only `container`), each `KEY=VALUE` set (replacing a value or
/// a `valueFrom`) and each `KEY-` removed, guarded by the resourceVersion. `None` when nothing
/// changes.
///
/// # Errors
/// An assignment that is neither, or a container the template lacks.
pub fn set_env_patch(
    object: &Value,
    container: Option<&str>,
    assignments: &[String],
) -> Result<Option<Value>, SetImageError> {
    let mut edits = Vec::with_capacity(assignments.len());
    for assignment in assignments {
        if let Some(key) = assignment.strip_suffix('-').filter(|k| !k.contains('=')) {
            edits.push(EnvEdit::Remove(key.to_owned()));
        } else if let Some((key, value)) = assignment.split_once('=').filter(|(k, _)| !k.is_empty())
        {
            edits.push(EnvEdit::Set(json!({"name": key, "value": value})));
        } else {
            return Err(SetImageError::EnvSyntax(assignment.clone()));
        }
    }
    env_patch(object, container, &edits)
}

/// The JSON patch making `edits` to the env of every container of a workload's template (or
/// only `container`), guarded by the resourceVersion. `None` when nothing changes.
///
/// # Errors
/// A container the template lacks.
pub fn env_patch(
    object: &Value,
    container: Option<&str>,
    edits: &[EnvEdit],
) -> Result<Option<Value>, SetImageError> {
    let path = "/spec/template/spec/containers";
    let (containers, mut ops) = template_containers(object, container)?;
    for (i, c) in containers.iter().enumerate() {
        if container.is_some_and(|wanted| c["name"] != wanted) {
            continue;
        }
        let mut env: Vec<Value> = c["env"].as_array().cloned().unwrap_or_default();
        let before = env.clone();
        for edit in edits {
            match edit {
                EnvEdit::Remove(key) => env.retain(|e| e["name"] != key.as_str()),
                EnvEdit::Set(entry) => match env.iter_mut().find(|e| e["name"] == entry["name"]) {
                    Some(existing) => *existing = entry.clone(),
                    None => env.push(entry.clone()),
                },
            }
        }
        if env != before {
            ops.push(json!({"op": "add", "path": format!("{path}/{i}/env"), "value": env}));
        }
    }
    Ok((ops.len() > 1).then_some(Value::Array(ops)))
}

/// The JSON patch of `set serviceaccount` on a workload (its JSON): the pod template's
/// `serviceAccountName`, guarded by the resourceVersion. `None` when it is already so.
pub fn set_service_account_patch(object: &Value, service_account: &str) -> Option<Value> {
    let path = "/spec/template/spec/serviceAccountName";
    (object.pointer(path).and_then(Value::as_str) != Some(service_account)).then(|| {
        json!([
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": object["metadata"]["resourceVersion"].clone()},
            {"op": "add", "path": path, "value": service_account},
        ])
    })
}

/// `cpu=200m,memory=512Mi` as pairs.
fn resource_list(text: &str) -> Result<Vec<(String, String)>, SetImageError> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(|entry| {
            entry
                .split_once('=')
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| SetImageError::ResourceSyntax(entry.to_owned()))
        })
        .collect()
}

/// The JSON patch of `set resources --limits=... --requests=...` on a workload (its JSON):
/// in every container of the template (or only `container`; `*` for all), the named limits
/// and requests set, the others kept, guarded by the resourceVersion. `None` when nothing
/// changes.
///
/// # Errors
/// Neither limits nor requests, an entry that is not `NAME=QUANTITY`, or a container the
/// template lacks.
pub fn set_resources_patch(
    object: &Value,
    container: Option<&str>,
    limits: Option<&str>,
    requests: Option<&str>,
) -> Result<Option<Value>, SetImageError> {
    if limits.is_none_or(str::is_empty) && requests.is_none_or(str::is_empty) {
        return Err(SetImageError::NoResources);
    }
    let limits = resource_list(limits.unwrap_or_default())?;
    let requests = resource_list(requests.unwrap_or_default())?;
    let container = container.filter(|c| *c != "*");
    let path = "/spec/template/spec/containers";
    let (containers, mut ops) = template_containers(object, container)?;
    for (i, c) in containers.iter().enumerate() {
        if container.is_some_and(|wanted| c["name"] != wanted) {
            continue;
        }
        let mut resources = c.get("resources").cloned().unwrap_or_else(|| json!({}));
        if !resources.is_object() {
            resources = json!({});
        }
        let before = resources.clone();
        for (field, list) in [("limits", &limits), ("requests", &requests)] {
            for (name, quantity) in list {
                if !resources[field].is_object() {
                    resources[field] = json!({});
                }
                resources[field][name] = json!(quantity);
            }
        }
        if resources != before {
            ops.push(
                json!({"op": "add", "path": format!("{path}/{i}/resources"), "value": resources}),
            );
        }
    }
    Ok((ops.len() > 1).then_some(Value::Array(ops)))
}

/// Why a workload cannot be exposed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExposeError {
    /// Its selector has no `matchLabels`, or uses expressions a Service cannot.
    #[error(
        "couldn't retrieve selectors via --selector flag or introspection: the selector of {0:?} cannot be used by a Service (it needs matchLabels only)"
    )]
    Selector(String),
    /// No `--port`, and no container port in the template.
    #[error("couldn't find port via --port flag or introspection")]
    NoPort,
    /// `--selector` is not `KEY=VALUE,...` of valid labels.
    #[error(transparent)]
    BadSelector(#[from] set::SetError),
}

/// What `expose` is asked for: kubectl's flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExposeOptions {
    /// `--selector` (default: the workload's `matchLabels`).
    pub selector: Option<String>,
    /// `--name` (default: the workload's name).
    pub name: Option<String>,
    /// `--port` (default: the template's first container port).
    pub port: Option<i32>,
    /// `--target-port` (default: the port).
    pub target_port: Option<String>,
    /// `--protocol` (default TCP).
    pub protocol: Option<String>,
    /// `--type` (default ClusterIP).
    pub type_: Option<String>,
}

/// The Service `kubectl expose` makes for a workload (its JSON): the workload's labels,
/// selecting its `matchLabels`, on `--port` (or its first container port).
///
/// # Errors
/// See [`ExposeError`].
pub fn expose_service(object: &Value, options: &ExposeOptions) -> Result<Value, ExposeError> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let match_labels = match &options.selector {
        Some(text) => json!(set::parse_selector(text)?),
        None => {
            let selector = &object["spec"]["selector"];
            let labels = selector["matchLabels"].as_object().filter(|m| !m.is_empty());
            let expressions =
                selector["matchExpressions"].as_array().is_some_and(|e| !e.is_empty());
            match labels.filter(|_| !expressions) {
                Some(labels) => Value::Object(labels.clone()),
                None => return Err(ExposeError::Selector(name.to_owned())),
            }
        }
    };
    let first_port = object
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
        .find_map(|p| p["containerPort"].as_i64());
    let port = options.port.map(i64::from).or(first_port).ok_or(ExposeError::NoPort)?;
    let target_port = match &options.target_port {
        Some(t) => t.parse::<i64>().map_or_else(|_| json!(t), |n| json!(n)),
        None => json!(port),
    };
    let mut service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": options.name.clone().unwrap_or_else(|| name.to_owned()),
            "namespace": object["metadata"]["namespace"].clone(),
        },
        "spec": {
            "selector": match_labels,
            "ports": [{
                "port": port,
                "targetPort": target_port,
                "protocol": options.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
            }],
        },
    });
    if let Some(labels) = object["metadata"]["labels"].as_object().filter(|l| !l.is_empty()) {
        service["metadata"]["labels"] = json!(labels);
    }
    if let Some(type_) = &options.type_ {
        service["spec"]["type"] = json!(type_);
    }
    Ok(service)
}

/// Why an object cannot be made from an AdvancedCronJob.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CreateFromError {
    /// The AdvancedCronJob has no template of that kind.
    #[error("advancedcronjob {name:?} has no {template}")]
    NoTemplate {
        /// The AdvancedCronJob.
        name: String,
        /// The template asked for (`jobTemplate`, `broadcastJobTemplate`).
        template: &'static str,
    },
}

/// A Job (`broadcast`: a BroadcastJob) named `name`, made from an AdvancedCronJob's template
/// as `kubectl create job --from=cronjob/...` makes one: the template's labels and
/// annotations, `cronjob.kubernetes.io/instantiate: manual`, and the AdvancedCronJob as its
/// controller.
///
/// # Errors
/// The AdvancedCronJob has no such template.
pub fn job_from_advanced_cron_job(
    cron_job: &Value,
    name: &str,
    broadcast: bool,
) -> Result<Value, CreateFromError> {
    let (field, api_version, kind) = if broadcast {
        ("broadcastJobTemplate", "apps.kruise.io/v1beta1", "BroadcastJob")
    } else {
        ("jobTemplate", "batch/v1", "Job")
    };
    let source = cron_job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let template = cron_job
        .pointer(&format!("/spec/template/{field}"))
        .filter(|t| t.is_object())
        .ok_or(CreateFromError::NoTemplate {
        name: source.clone(),
        template: if broadcast { "broadcastJobTemplate" } else { "jobTemplate" },
    })?;
    let mut annotations =
        template["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
    annotations.insert("cronjob.kubernetes.io/instantiate".into(), json!("manual"));
    Ok(json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": cron_job["metadata"]["namespace"].clone(),
            "labels": template["metadata"]["labels"].clone(),
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": cron_job["apiVersion"].clone(),
                "kind": "AdvancedCronJob",
                "name": source,
                "uid": cron_job["metadata"]["uid"].clone(),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": template["spec"].clone(),
    }))
}

/// A ContainerRecreateRequest `name` recreating `containers` of `pod` (all its containers when
/// none is named), failing on the first failure, as `kubectl kruise create
/// ContainerRecreateRequest` makes one.
///
/// # Errors
/// A named container the pod does not have.
pub fn container_recreate_request(
    pod: &Value,
    name: &str,
    containers: &[String],
) -> Result<Value, SetImageError> {
    let own: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let chosen: Vec<String> = if containers.is_empty() {
        own.iter().map(|c| (*c).to_owned()).collect()
    } else {
        if let Some(missing) = containers.iter().find(|c| !own.contains(&c.as_str())) {
            return Err(SetImageError::NoContainer(missing.clone()));
        }
        containers.to_vec()
    };
    let list: Vec<Value> = chosen.iter().map(|c| json!({"name": c})).collect();
    Ok(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ContainerRecreateRequest",
        "metadata": {"name": name, "namespace": pod["metadata"]["namespace"].clone()},
        "spec": {
            "podName": pod["metadata"]["name"].clone(),
            "containers": list,
            "strategy": {"failurePolicy": "Fail"},
        },
    }))
}

/// The container of a pod that serves `sidecar` now: for a hot-upgrade sidecar, the one the
/// pod's `kruise.io/sidecarset-working-hotupgrade-container` names; otherwise the container
/// of that name.
///
/// # Errors
/// No such sidecar in the pod.
pub fn working_container(pod: &Value, sidecar: &str) -> Result<String, SetImageError> {
    let working = pod["metadata"]["annotations"]
        [kruise_api::well_known::annotations::SIDECARSET_WORKING_HOTUPGRADE_CONTAINER]
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|map| map[sidecar].as_str().map(str::to_owned));
    if let Some(container) = working {
        return Ok(container);
    }
    let exists =
        pod["spec"]["containers"].as_array().into_iter().flatten().any(|c| c["name"] == sidecar);
    if exists {
        Ok(sidecar.to_owned())
    } else {
        Err(SetImageError::NoContainer(sidecar.to_owned()))
    }
}

/// The objects of a file as kubectl reads one: its YAML (or JSON) documents, empty ones
/// skipped, and the items of any `List`.
///
/// # Errors
/// A document that is not YAML, with serde_yaml's position.
pub fn documents(text: &str) -> Result<Vec<Value>, serde_yaml::Error> {
    use serde::Deserialize as _;
    let mut out = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        match Value::deserialize(document)? {
            Value::Null => {}
            Value::Object(map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
                out.extend(map.get("items").and_then(Value::as_array).cloned().unwrap_or_default());
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// One line per action of a plan (its JSON, as [`crate::plan::Plan`] serializes), for people:
/// the action, the object it names, and why (`createPod web-x7k2p`, `deletePod web-a (scaleIn)`).
pub fn describe_actions(plan: &Value) -> Vec<String> {
    let name_of = |action: &Value| -> String {
        for pointer in [
            "/name",
            "/pod/metadata/name",
            "/revision/metadata/name",
            "/pvc/metadata/name",
            "/claim/metadata/name",
            "/target/name",
            "/job/metadata/name",
        ] {
            if let Some(name) = action.pointer(pointer).and_then(Value::as_str) {
                return name.to_owned();
            }
        }
        String::new()
    };
    plan["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|action| {
            let kind = action["action"].as_str().unwrap_or("action");
            let mut line = format!("{kind} {}", name_of(action));
            let revision = action
                .pointer("/pod/metadata/labels/controller-revision-hash")
                .and_then(Value::as_str);
            let purpose = action["purpose"].as_str();
            match (purpose, revision) {
                (Some(p), _) => line.push_str(&format!(" ({p})")),
                (None, Some(r)) => line.push_str(&format!(" (revision {r})")),
                (None, None) => {}
            }
            line.trim_end().to_owned()
        })
        .collect()
}

/// The rollout ahead ([`crate::forecast`]) as `kubectl kruise plan` prints it:
/// the budget that spaces the waves (from the workload's `updateStrategy`), one line per
/// wave with each pod's change, then where the rollout ends and what holds the rest.
pub fn describe_forecast(
    ahead: &crate::forecast::Forecast,
    update_strategy: &Value,
) -> Vec<String> {
    use crate::forecast::Change;
    let mut lines = vec![format!(
        "the rollout ahead (the planner stepped on a model of the cluster: {} plan{}, {}s):",
        ahead.rounds,
        if ahead.rounds == 1 { "" } else { "s" },
        ahead.elapsed_seconds
    )];
    let rolling = &update_strategy["rollingUpdate"];
    let knobs: Vec<String> = ["partition", "maxUnavailable", "maxSurge", "paused"]
        .into_iter()
        .filter_map(|key| {
            let value = rolling.get(key)?;
            let shown = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            Some(format!("{key} {shown}"))
        })
        .collect();
    if !knobs.is_empty() {
        lines.push(format!(
            "  {}: each wave waits for the pods before it to be available",
            knobs.join(", ")
        ));
    }
    if ahead.waves.is_empty() {
        lines.push("  no pod changes".to_owned());
    }
    for (n, wave) in ahead.waves.iter().enumerate() {
        let pods: Vec<String> = wave
            .pods
            .iter()
            .map(|c| {
                let at = |text: String| match &c.revision {
                    Some(revision) => format!("{text} ({revision})"),
                    None => text,
                };
                match c.change {
                    Change::InPlace => at(format!("{} in place", c.pod)),
                    Change::Recreate => match &c.replacement {
                        Some(new) if *new == c.pod => at(format!("{} recreated", c.pod)),
                        Some(new) => at(format!("{} recreated as {new}", c.pod)),
                        None => format!("{} deleted to be recreated", c.pod),
                    },
                    Change::Create => at(format!("{} created", c.pod)),
                    Change::Delete => format!("{} deleted", c.pod),
                    Change::Hook => format!(
                        "{} held by a lifecycle hook ({})",
                        c.pod,
                        c.state.as_deref().unwrap_or_default()
                    ),
                }
            })
            .collect();
        lines.push(format!("  wave {} (+{}s): {}", n + 1, wave.at_seconds, pods.join(", ")));
    }
    let outcome = &ahead.outcome;
    let live = ahead.end.pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count();
    if let Some(revision) = &outcome.update_revision {
        let updated = live.saturating_sub(outcome.not_updated.len());
        lines.push(format!("  then {updated} of {live} pods at {revision}"));
    }
    if !outcome.not_updated.is_empty() {
        let why = if knobs.is_empty() { String::new() } else { format!(" ({})", knobs.join(", ")) };
        lines.push(format!("  left at another revision{why}: {}", outcome.not_updated.join(", ")));
    }
    if !outcome.hooked.is_empty() {
        let held: Vec<String> =
            outcome.hooked.iter().map(|(pod, state)| format!("{pod} ({state})")).collect();
        lines.push(format!("  held by a lifecycle hook: {}", held.join(", ")));
    }
    if !outcome.not_ready.is_empty() {
        lines.push(format!("  not ready at the end: {}", outcome.not_ready.join(", ")));
    }
    if let Some(blocked) = &outcome.blocked {
        lines.push(format!("  blocked: {}", serde_json::to_string(blocked).unwrap_or_default()));
    }
    if !outcome.settled {
        lines.push(
            "  the forecast stopped at its limits: the rollout goes on beyond them".to_owned(),
        );
    }
    lines
}

#[cfg(test)]
mod tests;
