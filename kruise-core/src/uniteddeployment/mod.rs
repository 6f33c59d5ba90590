//! UnitedDeployment: one application run as several workloads, one per subset of nodes.
//!
//! [`plan`] takes a [`Snapshot`] (the UnitedDeployment, the workloads and ControllerRevisions
//! it controls, and its pods) and `now`, and answers with a [`Plan`]: the revision to create
//! or roll back to, the subset workloads to create, update or delete, the new status, the
//! Events, and when to look again. It follows upstream's controller
//! (`pkg/controller/uniteddeployment`):
//!
//! - **Revisions**: a ControllerRevision `<name>-<hash>` holds `spec.template` (nothing else:
//!   topology, replicas and partitions are not revisions). A template equal to an older
//!   revision's rolls back to it (its number raised), so no pod moves for nothing; equality
//!   is by content, so the revisions upstream wrote are found again.
//! - **Subsets** ([`subset`]): one workload of the template's kind per `topology.subsets[]`,
//!   named `<name>-<subset>-<5 characters>`; workloads of other kinds, of subsets no longer
//!   in the topology, and duplicates (the oldest stays) are deleted.
//! - **Replicas** ([`allocation`]): upstream's four allocators; with `scheduleStrategy:
//!   Adaptive`, subsets whose pods wait for a node too long are held to their ready pods for
//!   a while ([`adaptive`]).
//! - **Updates**: a workload is written when its revision, replicas, partition
//!   (`updateStrategy.manualUpdate.partitions[subset]`, at most its replicas) or patch
//!   differs, as upstream decides; the write is a JSON merge patch from the workload as it
//!   is to the template stamped for the subset (fields the template dropped are removed),
//!   guarded by its resourceVersion.
//! - **Status**: replicas, ready, updated and updated-ready counts, one `subsetStatuses` entry
//!   per subset (its allocation, ready pods, partition and `Schedulable` condition), the
//!   `SubsetProvisioned`, `SubsetUpdated` and `UnitedDeploymentUpdated` conditions,
//!   `currentRevision` (moved to `updatedRevision` once every pod is updated and ready),
//!   `labelSelector` for the scale subresource, and `observedGeneration`.
//!
//! `reserveUnschedulablePods` ([`adaptive::reservation`]): pods that wait for a node are kept
//! and labelled reserved, and their replicas go, as temporary pods, to the subsets after theirs.

pub mod adaptive;
pub mod admission;
pub mod allocation;
pub mod subset;

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kruise_api::apps::v1beta1::{
    SubsetTemplate, UnitedDeployment, UnitedDeploymentCondition, UnitedDeploymentConditionType,
    UnitedDeploymentScheduleStrategyType, UnitedDeploymentStatus, UnitedDeploymentSubsetStatus,
};
use kruise_api::well_known::labels::{CONTROLLER_REVISION_HASH, SUBSET_NAME};
use serde_json::{Value, json};

use self::allocation::{AllocationSpec, ObservedSubset, allocate};
use self::subset::{ObservedWorkload, SubsetKind, desired_workload, observe, written_part};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};
use crate::revision::{
    DEFAULT_REVISION_HISTORY_LIMIT, HASH_LABEL, build_revision, compare_revisions, gojson,
    hash_revision_bytes, history_to_prune, revision_data, revision_name, revision_number,
};
use crate::selector::Selector;

/// What [`plan`] reads.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The UnitedDeployment.
    pub ud: UnitedDeployment,
    /// The workloads it controls, of any of the four kinds, as JSON.
    pub workloads: Vec<(SubsetKind, Value)>,
    /// The ControllerRevisions it controls.
    pub revisions: Vec<ControllerRevision>,
    /// Its pods (those of its namespace its selector matches). Only their metadata and
    /// status are read; their specs may be left out.
    pub pods: Vec<Pod>,
}

/// The revision data of the template: `{"spec":{"template":{"$patch":"replace", ...}}}` with
/// sorted keys, and its bytes.
fn revision_document(ud: &UnitedDeployment) -> (Value, String) {
    let mut template = serde_json::to_value(&ud.spec.template).unwrap_or_else(|_| json!({}));
    if let Some(map) = template.as_object_mut() {
        map.insert("$patch".into(), json!("replace"));
    }
    let value = gojson::with_sorted_keys(&json!({"spec": {"template": template}}));
    let bytes = gojson::encode_sorted(&value);
    (value, bytes)
}

/// `value` without what Go's `omitempty` and our encoder may disagree on: nulls, `false`,
/// zeros, empty strings, lists and objects.
fn semantic(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "$patch")
                .map(|(k, v)| (k.clone(), semantic(v)))
                .filter(|(_, v)| !crate::field::go::is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

/// Whether a revision holds this template, by content.
fn holds_template(revision: &ControllerRevision, template: &SubsetTemplate) -> bool {
    let Some(data) = revision_data(revision) else { return false };
    let theirs = semantic(&data["spec"]["template"]);
    let ours = semantic(&serde_json::to_value(template).unwrap_or_default());
    theirs == ours
}

/// The revisions' outcome: the update and current revision names and what to write.
struct Revisions {
    update: String,
    current: String,
    collision_count: Option<i32>,
}

fn ud_owner(ud: &UnitedDeployment) -> OwnerReference {
    OwnerReference {
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "UnitedDeployment".into(),
        name: ud.metadata.name.clone().unwrap_or_default(),
        uid: ud.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn resolve_revisions(
    ud: &UnitedDeployment,
    revisions: &[ControllerRevision],
    out: &mut Plan<UnitedDeploymentStatus>,
) -> Revisions {
    let namespace = ud.metadata.namespace.clone().unwrap_or_default();
    let name = ud.metadata.name.clone().unwrap_or_default();
    let status = ud.status.clone().unwrap_or_default();
    let mut sorted: Vec<&ControllerRevision> = revisions.iter().collect();
    sorted.sort_by(|a, b| compare_revisions(a, b));
    let next_number = sorted.last().map_or(1, |r| revision_number(r).saturating_add(1));
    let equal: Vec<&ControllerRevision> =
        sorted.iter().copied().filter(|r| holds_template(r, &ud.spec.template)).collect();
    let mut collision_count = status.collision_count;
    let update = match (sorted.last(), equal.last()) {
        (Some(latest), Some(last_equal)) if latest.metadata.name == last_equal.metadata.name => {
            latest.metadata.name.clone().unwrap_or_default()
        }
        (_, Some(last_equal)) => {
            // Roll back: the equal revision becomes the newest.
            let revision_name = last_equal.metadata.name.clone().unwrap_or_default();
            let rv = last_equal.metadata.resource_version.clone().unwrap_or_default();
            out.actions.push(Action::PatchObject {
                target: Target::new(
                    ObjectKind::CONTROLLER_REVISION,
                    Some(&namespace),
                    &revision_name,
                )
                .guarded(Guard::ResourceVersion(rv)),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"revision": next_number})),
            });
            revision_name
        }
        (_, None) => {
            let (value, bytes) = revision_document(ud);
            let mut count = collision_count.unwrap_or(0);
            let mut hash = hash_revision_bytes(bytes.as_bytes(), Some(count));
            let taken = |candidate: &str| {
                revisions.iter().any(|r| r.metadata.name.as_deref() == Some(candidate))
            };
            while taken(&revision_name(&name, &hash)) && count < i32::MAX {
                count += 1;
                hash = hash_revision_bytes(bytes.as_bytes(), Some(count));
            }
            if count > 0 {
                collision_count = Some(count);
            }
            let mut labels: BTreeMap<String, String> = template_labels(ud).into_iter().collect();
            labels.insert(HASH_LABEL.into(), hash.clone());
            let revision = build_revision(
                ObjectMeta {
                    name: Some(revision_name(&name, &hash)),
                    namespace: Some(namespace.clone()),
                    labels: Some(labels),
                    owner_references: Some(vec![ud_owner(ud)]),
                    ..ObjectMeta::default()
                },
                value,
                next_number,
            );
            let revision_name = revision_name(&name, &hash);
            out.actions.push(Action::CreateObject {
                target: Target::new(
                    ObjectKind::CONTROLLER_REVISION,
                    Some(&namespace),
                    &revision_name,
                ),
                body: std::sync::Arc::new(serde_json::to_value(&revision).unwrap_or_default()),
            });
            revision_name
        }
    };
    let current = revisions
        .iter()
        .filter_map(|r| r.metadata.name.clone())
        .find(|n| !status.current_revision.is_empty() && *n == status.current_revision)
        .unwrap_or_else(|| update.clone());

    // History: beyond the limit, the oldest go (never the current or update revision).
    let limit = usize::try_from(
        ud.spec.revision_history_limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(0),
    )
    .unwrap_or(0);
    let names: Vec<&str> =
        sorted.iter().map(|r| r.metadata.name.as_deref().unwrap_or_default()).collect();
    for gone in history_to_prune(&names, &Default::default(), &current, &update, limit) {
        out.actions.push(Action::DeleteObject {
            target: Target::new(ObjectKind::CONTROLLER_REVISION, Some(&namespace), gone),
        });
    }
    Revisions { update, current, collision_count }
}

/// The labels of the template's metadata (which the selector matches).
fn template_labels(ud: &UnitedDeployment) -> BTreeMap<String, String> {
    let t = &ud.spec.template;
    let meta = t
        .stateful_set_template
        .as_ref()
        .map(|x| &x.metadata)
        .or(t.advanced_stateful_set_template.as_ref().map(|x| &x.metadata))
        .or(t.clone_set_template.as_ref().map(|x| &x.metadata))
        .or(t.deployment_template.as_ref().map(|x| &x.metadata));
    meta.and_then(|m| m.labels.clone()).unwrap_or_default()
}

fn event(type_: EventType, reason: &'static str, message: String) -> Event {
    Event { type_, reason: reason.into(), message, after_action: None }
}

/// Sets a top-level condition; its time moves only when its status does.
fn set_condition(
    status: &mut UnitedDeploymentStatus,
    type_: UnitedDeploymentConditionType,
    state: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) {
    let fresh = UnitedDeploymentCondition {
        type_: Some(type_),
        status: state.into(),
        last_transition_time: Some(Time(now)),
        reason: reason.into(),
        message,
    };
    match status.conditions.iter_mut().find(|c| c.type_ == fresh.type_) {
        Some(c)
            if c.status == fresh.status
                && c.reason == fresh.reason
                && c.message == fresh.message => {}
        Some(c) if c.status == fresh.status => {
            c.reason = fresh.reason;
            c.message = fresh.message;
        }
        Some(c) => *c = fresh,
        None => status.conditions.push(fresh),
    }
}

fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The pods of an apps/v1 StatefulSet subset that block its rolling update (kubernetes#67250):
/// ordinal at or past `partition`, not at `revision`, not ready, not being deleted; as
/// (name, uid).
fn stuck_pods<'p>(pods: &[&'p Pod], revision: &str, partition: i32) -> Vec<(&'p str, &'p str)> {
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            crate::ordinal::parent_and_ordinal(name).is_some_and(|(_, o)| o >= partition)
        })
        .filter(|pod| label(pod, CONTROLLER_REVISION_HASH) != Some(revision))
        .filter(|pod| !is_ready(pod))
        .filter_map(|pod| Some((pod.metadata.name.as_deref()?, pod.metadata.uid.as_deref()?)))
        .collect()
}

/// Plans one reconcile of the UnitedDeployment in `snapshot` at `now`.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<UnitedDeploymentStatus> {
    let ud = &snapshot.ud;
    let mut out: Plan<UnitedDeploymentStatus> = Plan::empty(Default::default());
    if ud.metadata.deletion_timestamp.is_some() {
        return out;
    }
    let namespace = ud.metadata.namespace.clone().unwrap_or_default();
    let old = ud.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let Some(kind) = subset::template_kind(ud) else {
        return out;
    };
    let revisions = resolve_revisions(ud, &snapshot.revisions, &mut out);
    let expected = revisions.update.clone();
    set_condition(
        &mut status,
        UnitedDeploymentConditionType::UnitedDeploymentUpdated,
        if revisions.current == expected { "True" } else { "False" },
        if revisions.current == expected {
            "UnitedDeploymentRevisionUpdated"
        } else {
            "UnitedDeploymentRevisionUpdating"
        },
        if revisions.current == expected {
            format!("updated to revision {expected}")
        } else {
            format!("updating to revision {expected}")
        },
        now,
    );

    // The workloads by subset; the rest goes.
    let topology: Vec<&str> = ud.spec.topology.subsets.iter().map(|s| s.name.as_str()).collect();
    let mut by_subset: BTreeMap<String, (ObservedWorkload, &Value)> = BTreeMap::new();
    let mut doomed: Vec<(SubsetKind, ObservedWorkload)> = Vec::new();
    let mut workloads: Vec<(SubsetKind, ObservedWorkload, &Value)> = snapshot
        .workloads
        .iter()
        .map(|(k, v)| (*k, observe(*k, v), v))
        .filter(|(_, w, _)| !w.deleting)
        .collect();
    workloads.sort_by(|a, b| a.1.created.cmp(&b.1.created).then_with(|| a.1.name.cmp(&b.1.name)));
    for (k, w, object) in workloads {
        match &w.subset {
            Some(s)
                if k == kind && topology.contains(&s.as_str()) && !by_subset.contains_key(s) =>
            {
                by_subset.insert(s.clone(), (w, object));
            }
            _ => doomed.push((k, w)),
        }
    }
    let mut deleted: BTreeMap<SubsetKind, usize> = BTreeMap::new();
    for (k, w) in &doomed {
        out.actions.push(Action::DeleteObject {
            target: Target::new(k.object_kind(), Some(&namespace), &w.name)
                .guarded(Guard::Uid(w.uid.clone())),
        });
        *deleted.entry(*k).or_default() += 1;
    }
    for (k, n) in deleted {
        out.events.push(event(
            EventType::Normal,
            "SuccessfulUpdateSubset",
            format!("Delete {n} Subset ({})", k.type_name()),
        ));
    }

    // Pods by subset.
    let mut pods_of: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for pod in &snapshot.pods {
        if let Some(s) = label(pod, SUBSET_NAME) {
            pods_of.entry(s).or_default().push(pod);
        }
    }

    // Adaptive: which subsets cannot take more pods.
    let strategy = &ud.spec.topology.schedule_strategy;
    let adaptive = strategy.type_ == Some(UnitedDeploymentScheduleStrategyType::Adaptive);
    let reserve =
        adaptive && strategy.adaptive.as_ref().is_some_and(|a| a.reserve_unschedulable_pods);
    let times = adaptive::AdaptiveTimes::of(strategy.adaptive.as_ref());
    let updated_since = status
        .conditions
        .iter()
        .find(|c| c.type_ == Some(UnitedDeploymentConditionType::UnitedDeploymentUpdated))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    let mut observed: BTreeMap<String, ObservedSubset> = BTreeMap::new();
    let mut schedulable_conditions = BTreeMap::new();
    let mut reservations: BTreeMap<String, adaptive::Reservation> = BTreeMap::new();
    for name in &topology {
        let Some((w, _)) = by_subset.get(*name) else { continue };
        let mut state = ObservedSubset {
            replicas: w.replicas,
            ready_replicas: w.ready_replicas,
            ..ObservedSubset::default()
        };
        if adaptive {
            let current = old
                .subset_statuses
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| s.conditions.first());
            let pods = pods_of.get(name).cloned().unwrap_or_default();
            if reserve {
                let r = adaptive::reservation(current, &expected, updated_since, &pods, times, now);
                state.unschedulable = r.unschedulable;
                state.marked_unschedulable = r.marked;
                state.reserved_pods = r.reserved_pods;
                if let Some(after) = r.recheck_after {
                    out.requeue_after =
                        Some(out.requeue_after.map_or(after, |a: SignedDuration| a.min(after)));
                }
                for (pod, uid, reserved) in &r.labels {
                    out.actions.push(Action::PatchPod {
                        namespace: Some(namespace.clone()),
                        name: pod.clone(),
                        uid: uid.clone(),
                        purpose: crate::workload::PodPatchPurpose::ReservedLabel,
                        patch: Patch::merge(serde_json::json!({"metadata": {"labels": {
                            adaptive::RESERVED_POD_LABEL: if *reserved { "true" } else { "false" }
                        }}})),
                    });
                }
                reservations.insert((*name).to_owned(), r);
                observed.insert((*name).to_owned(), state);
                continue;
            }
            let s = adaptive::schedulability(
                current,
                w.status_replicas,
                w.ready_replicas,
                &pods,
                times,
                now,
            );
            state.unschedulable = s.unschedulable;
            if let Some(after) = s.recheck_after {
                out.requeue_after =
                    Some(out.requeue_after.map_or(after, |a: SignedDuration| a.min(after)));
            }
            if let Some(c) = s.condition {
                schedulable_conditions.insert((*name).to_owned(), c);
            }
        }
        observed.insert((*name).to_owned(), state);
    }

    let allocation = match allocate(&AllocationSpec::of(&ud.spec), &observed) {
        Ok(allocation) => allocation,
        Err(e) => {
            out.events.push(event(
                EventType::Warning,
                "Failed SpecifySubsetReplicas",
                format!("Specified subset replicas is ineffective: {e}"),
            ));
            return out;
        }
    };
    let manual = ud.spec.update_strategy.manual_update.as_ref();
    for (name, r) in &mut reservations {
        let current = by_subset.get(name).map_or(0, |(w, _)| w.replicas);
        adaptive::recovered_and_scaled_up(r, current, allocation.of(name), now);
        schedulable_conditions.insert(name.clone(), r.condition.clone());
    }

    // Each subset's workload.
    let mut created = 0usize;
    let mut failures: Vec<String> = Vec::new();
    for s in &ud.spec.topology.subsets {
        let replicas = allocation.of(&s.name);
        let partition =
            manual.and_then(|m| m.partitions.get(&s.name)).copied().unwrap_or(0).min(replicas);
        let existing = by_subset.get(&s.name);
        let desired = match desired_workload(
            ud,
            kind,
            s,
            &expected,
            replicas,
            partition,
            existing.map(|(_, v)| *v),
        ) {
            Ok(desired) => desired,
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        match existing {
            None => {
                let name = desired["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                out.actions.push(Action::CreateObject {
                    target: Target::new(kind.object_kind(), Some(&namespace), &name),
                    body: std::sync::Arc::new(desired),
                });
                created += 1;
            }
            Some((w, object)) => {
                let mut desired = desired;
                // An unschedulable subset's rollout must not wait on the pods reserved in it
                // (upstream's override): as many may be unavailable as are not ready, plus the
                // old pods past their update timeout; at least one.
                // A Deployment with the Recreate strategy takes no rollingUpdate (upstream
                // would write one, and the API server would refuse the update).
                let recreate = desired.pointer("/spec/strategy/type").and_then(Value::as_str)
                    == Some("Recreate");
                if let Some(r) = reservations.get(&s.name).filter(|r| r.unschedulable && !recreate)
                {
                    let most = (w.replicas - w.ready_replicas + r.update_timeout_pods).max(1);
                    let path = match kind {
                        SubsetKind::Deployment => "/spec/strategy/rollingUpdate/maxUnavailable",
                        _ => "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                    };
                    set_at(&mut desired, path, serde_json::json!(most));
                }
                let patch_text = s.patch.as_ref().map(|p| p.0.to_string()).unwrap_or_default();
                let stale = w.revision != expected
                    || w.replicas != replicas
                    || w.partition != partition
                    || w.patch != patch_text;
                if !stale {
                    continue;
                }
                // A JSON merge patch (custom resources take no strategic merge patch) from
                // the workload as it is to the template stamped for the subset.
                let patch =
                    crate::merge_patch::replacing(&written_part(object), &written_part(&desired));
                out.actions.push(Action::PatchObject {
                    target: Target::new(kind.object_kind(), Some(&namespace), &w.name)
                        .guarded(Guard::ResourceVersion(w.resource_version.clone())),
                    subresource: Subresource::Main,
                    patch: Patch::merge(patch),
                });
                // Upstream's work-around for kubernetes#67250: an apps/v1 StatefulSet's
                // rolling update waits for ever on a pod that will not become ready, so with
                // the update such pods (past the partition, not at the new revision, not
                // ready) are deleted, to come back at the new revision.
                let rolling = desired.pointer("/spec/updateStrategy/type").and_then(Value::as_str)
                    != Some("OnDelete");
                if kind == SubsetKind::StatefulSet && rolling {
                    let pods = pods_of.get(s.name.as_str()).cloned().unwrap_or_default();
                    for pod in stuck_pods(&pods, &expected, partition) {
                        out.actions.push(Action::DeleteObject {
                            target: Target::new(ObjectKind::POD, Some(&namespace), pod.0)
                                .guarded(Guard::Uid(pod.1.to_owned())),
                        });
                    }
                }
            }
        }
    }
    if created > 0 {
        out.events.push(Event {
            after_action: Some(out.actions.len() - 1),
            ..event(
                EventType::Normal,
                "SuccessfulUpdateSubset",
                format!("Create {created} Subset ({})", kind.type_name()),
            )
        });
    }
    if !failures.is_empty() {
        out.events.push(event(EventType::Warning, "FailedUpdateSubset", failures.join("; ")));
    }
    set_condition(
        &mut status,
        UnitedDeploymentConditionType::SubsetProvisioned,
        "True",
        "",
        String::new(),
        now,
    );
    if failures.is_empty() {
        set_condition(
            &mut status,
            UnitedDeploymentConditionType::SubsetUpdated,
            "True",
            "",
            String::new(),
            now,
        );
    } else {
        set_condition(
            &mut status,
            UnitedDeploymentConditionType::SubsetUpdated,
            "False",
            "Error",
            failures.join("; "),
            now,
        );
    }

    // Status.
    let (mut replicas, mut ready, mut updated, mut updated_ready) = (0, 0, 0, 0);
    let mut reserved_total = 0;
    let mut subset_statuses = Vec::new();
    for s in &ud.spec.topology.subsets {
        let observed = by_subset.get(&s.name).map(|(w, _)| w);
        let reserved = reservations.get(&s.name).map_or(0, |r| r.reserved_pods);
        reserved_total += reserved;
        if let Some(w) = observed {
            replicas += w.status_replicas - reserved;
            ready += w.ready_replicas;
            for pod in pods_of.get(s.name.as_str()).into_iter().flatten() {
                if is_active(pod) && label(pod, CONTROLLER_REVISION_HASH) == Some(expected.as_str())
                {
                    updated += 1;
                    if is_ready(pod) {
                        updated_ready += 1;
                    }
                }
            }
        }
        let partition = manual
            .and_then(|m| m.partitions.get(&s.name))
            .copied()
            .unwrap_or(0)
            .min(allocation.of(&s.name));
        let old_entry = old.subset_statuses.iter().find(|e| e.name == s.name);
        subset_statuses.push(UnitedDeploymentSubsetStatus {
            name: s.name.clone(),
            replicas: allocation.of(&s.name),
            ready_replicas: observed.map_or(0, |w| w.ready_replicas),
            partition,
            reserved_pods: reserved,
            conditions: schedulable_conditions
                .remove(&s.name)
                .map(|c| vec![c])
                .or_else(|| old_entry.filter(|_| adaptive).map(|e| e.conditions.clone()))
                .unwrap_or_default(),
        });
    }
    status.replicas = replicas;
    status.ready_replicas = ready;
    status.updated_replicas = updated;
    status.updated_ready_replicas = updated_ready;
    status.subset_statuses = subset_statuses;
    status.updated_revision = expected.clone();
    status.current_revision = revisions.current.clone();
    if status.current_revision != expected
        && updated_ready >= replicas
        && replicas == ud.spec.replicas.unwrap_or(replicas)
    {
        status.current_revision = expected.clone();
    }
    status.collision_count = revisions.collision_count;
    status.observed_generation = ud.metadata.generation.unwrap_or(0);
    status.label_selector =
        Selector::parse(ud.spec.selector.as_ref()).map(|s| s.render()).unwrap_or_default();
    status.reserved_pods = reserved_total;
    if reserve {
        // The scale subresource's selector (an HPA's) leaves reserved pods out, as upstream's.
        status.label_selector.push_str(&format!(",{}=false", adaptive::RESERVED_POD_LABEL));
    }
    out.status = (status != old).then_some(status);
    out
}

#[cfg(test)]
mod tests;

/// Sets the value at the JSON pointer `path`, creating the objects on the way.
fn set_at(object: &mut Value, path: &str, value: Value) {
    let mut at = object;
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if !at.is_object() {
            *at = serde_json::json!({});
        }
        let Some(map) = at.as_object_mut() else { return };
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return;
        }
        at = map.entry((*part).to_owned()).or_insert_with(|| serde_json::json!({}));
    }
}
