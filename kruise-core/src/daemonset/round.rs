//! One planning round, top-down: revisions, expectations, nodes, refresh, rolling update,
//! history, status.

use std::collections::{BTreeSet, HashMap, HashSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::common::Lifecycle;
use kruise_api::apps::v1beta1::{
    DaemonSet, DaemonSetStatus, DaemonSetUpdateStrategyType, RollingUpdateType,
};

use super::eligibility::{self, Eligibility};
use super::predownload;
use super::{DEFAULT_BURST_REPLICAS, DaemonSetPlan, DaemonSetSnapshot, SnapshotNode, SpecError};
use crate::admission::meta::{Selector, label_selector_as_selector};
use crate::inplace::{self, UpdateOptions};
use crate::intstr::{Rounding, scaled_value};
use crate::lifecycle::{self, DeleteStep, LifecycleState};
use crate::pod;
use crate::revision as rev;
use crate::workload::inplace::{PlanSink, SharedPatches};
use crate::workload::{
    self, Action, Blocked, DeletePurpose, Event, EventType, WorkloadPlan, revisions,
};

/// Pod label holding the DaemonSet's template generation.
const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// DaemonSet annotation holding its template generation.
const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";
/// Pod and revision label holding the revision's hash.
const HASH_LABEL: &str = rev::POD_REVISION_LABEL;
/// Longest name prefix before the generated suffix (as `generateName` allows).
const MAX_PREFIX: usize = 58;
/// The characters Kubernetes draws generated name suffixes from.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A pod of the snapshot, by its position there.
type Ix = usize;

/// What the round reads of a claimed pod, read once from its facts.
#[derive(Clone, Copy, Debug, Default)]
struct View {
    terminating: bool,
    /// Phase `Failed` (and not terminating).
    failed: bool,
    /// In the `PreparingDelete` lifecycle state.
    pre_deleting: bool,
    /// Upstream's `IsPodUpdated`: the revision hash or the template generation matches.
    updated: bool,
    /// The revision hash label is the update revision's.
    at_update_hash: bool,
    ready: bool,
    ready_since: Option<Timestamp>,
    in_place_gate: bool,
    in_place_ready: bool,
    /// No in-place bookkeeping due.
    idle: bool,
}

/// The parsed spec, as the round reads it.
struct Spec<'a> {
    ds: &'a DaemonSet,
    /// The daemon pod spec nodes are judged against.
    judged: PodSpec,
    rolling: bool,
    paused: bool,
    in_place: bool,
    max_unavailable: Option<&'a IntOrString>,
    max_surge: Option<&'a IntOrString>,
    /// The partition, scaled on the last status' desiredNumberScheduled; `None` when unset.
    partition: Option<i32>,
    update_selector: Option<Selector>,
    progressive: bool,
    burst: i32,
    min_ready: i32,
    generation: Option<String>,
    lifecycle: Option<&'a Lifecycle>,
}

impl<'a> Spec<'a> {
    fn new(ds: &'a DaemonSet) -> Result<Self, SpecError> {
        let spec = &ds.spec;
        let strategy = &spec.update_strategy;
        let rolling =
            matches!(strategy.type_, None | Some(DaemonSetUpdateStrategyType::RollingUpdate));
        let ru = strategy.rolling_update.as_ref();
        let last_desired =
            ds.status.as_ref().map(|s| s.desired_number_scheduled).unwrap_or_default();
        let scaled = |field: &'static str, value: &IntOrString, total: i32, rounding| {
            scaled_value(value, total, rounding)
                .map_err(|err| SpecError::IntOrPercent { field, message: err.to_string() })
        };
        let partition = match ru.and_then(|r| r.partition.as_ref()) {
            Some(value) => Some(scaled(
                "spec.updateStrategy.rollingUpdate.partition",
                value,
                last_desired,
                Rounding::Down,
            )?),
            None => None,
        };
        let update_selector = match ru.and_then(|r| r.selector.as_ref()) {
            Some(selector) => {
                Some(label_selector_as_selector(Some(selector)).map_err(|message| {
                    SpecError::Selector {
                        field: "spec.updateStrategy.rollingUpdate.selector",
                        message,
                    }
                })?)
            }
            None => None,
        };
        let burst = scaled(
            "spec.burstReplicas",
            spec.burst_replicas.as_ref().unwrap_or(&IntOrString::Int(DEFAULT_BURST_REPLICAS)),
            last_desired,
            Rounding::Down,
        )?;
        let (max_unavailable, max_surge) = match ru {
            Some(r) if rolling => (r.max_unavailable.as_ref(), r.max_surge.as_ref()),
            _ => (None, None),
        };
        for (field, value) in [
            ("spec.updateStrategy.rollingUpdate.maxUnavailable", max_unavailable),
            ("spec.updateStrategy.rollingUpdate.maxSurge", max_surge),
        ] {
            if let Some(value) = value {
                scaled(field, value, 1, Rounding::Up)?;
            }
        }
        Ok(Self {
            ds,
            judged: eligibility::daemon_pod_spec(&spec.template),
            rolling,
            paused: ru.and_then(|r| r.paused).unwrap_or(false),
            in_place: rolling
                && ru.and_then(|r| r.type_.as_ref()) == Some(&RollingUpdateType::InPlaceIfPossible),
            max_unavailable,
            max_surge,
            partition,
            update_selector,
            progressive: spec.scale_strategy.as_ref().is_some_and(|s| s.partitioned_scaling),
            burst: burst.max(0),
            min_ready: spec.min_ready_seconds,
            generation: ds
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(TEMPLATE_GENERATION_ANNOTATION))
                .filter(|g| g.parse::<i64>().is_ok())
                .cloned(),
            lifecycle: spec.lifecycle.as_ref(),
        })
    }

    /// `maxSurge` and `maxUnavailable` out of `desired`, rounded up; both zero means one
    /// unavailable.
    fn budgets(&self, desired: i32) -> (i32, i32) {
        let scale = |v: Option<&IntOrString>| {
            v.and_then(|v| scaled_value(v, desired, Rounding::Up).ok()).unwrap_or(0).max(0)
        };
        let (surge, mut unavailable) = (scale(self.max_surge), scale(self.max_unavailable));
        if desired > 0 && surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        (surge, unavailable)
    }

    /// Whether a node may run two pods (upstream's `allowSurge`).
    fn allow_surge(&self) -> bool {
        self.max_surge.and_then(|v| scaled_value(v, 1, Rounding::Up).ok()).unwrap_or(0) > 0
    }
}

/// A node of the snapshot with its verdict.
struct NodeView<'a> {
    name: &'a str,
    node: &'a SnapshotNode,
    eligibility: Eligibility,
    /// The claimed pods targeting it: `node_pods[pods.0..pods.1]`.
    pods: (u32, u32),
}

struct Round<'a> {
    snapshot: &'a DaemonSetSnapshot,
    spec: Spec<'a>,
    now: Timestamp,
    hash: String,
    update_revision: Option<ControllerRevision>,
    nodes: Vec<NodeView<'a>>,
    /// The claimed pods of every node, node after node (oldest first within a node).
    node_pods: Vec<Ix>,
    /// Claimed pods whose node is not in the snapshot.
    orphans: Vec<Ix>,
    /// Claimed pods (matching the selector).
    claimed: Vec<Ix>,
    /// By the pod's position in the snapshot (default for pods not claimed).
    views: Vec<View>,
    actions: Vec<Action>,
    events: Vec<Event>,
    requeue: Option<SignedDuration>,
    shared: SharedPatches,
    in_place_opts: UpdateOptions,
    taken_names: Option<HashSet<String>>,
    template: Option<PodTemplateSpec>,
}

impl PlanSink for Round<'_> {
    fn actions(&mut self) -> &mut Vec<Action> {
        &mut self.actions
    }
    fn shared_patches(&mut self) -> &mut SharedPatches {
        &mut self.shared
    }
    fn requeue_after(&mut self, after: SignedDuration) {
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }
}

fn invalid(snapshot: &DaemonSetSnapshot, err: SpecError) -> DaemonSetPlan {
    let mut plan = WorkloadPlan::empty(snapshot.expectations.clone());
    plan.blocked = Some(Blocked::Invalid { message: err.to_string() });
    plan
}

fn label<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn revision_hash(revision: &ControllerRevision) -> String {
    match revision.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)) {
        Some(hash) if !hash.is_empty() => hash.clone(),
        _ => rev::short_hash(revision.metadata.name.as_deref().unwrap_or_default()).to_owned(),
    }
}

/// Upstream's `podByCreationTimestampAndPhase`: scheduled first, then oldest, then by name.
fn age_key(pod: &Pod) -> (bool, Option<Timestamp>, &str) {
    (
        pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default().is_empty(),
        pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        pod.metadata.name.as_deref().unwrap_or_default(),
    )
}

pub(super) fn plan(snapshot: &DaemonSetSnapshot, now: Timestamp) -> DaemonSetPlan {
    let ds = match snapshot.daemonset.to_v1beta1() {
        Ok(ds) => ds,
        Err(err) => return invalid(snapshot, SpecError::Conversion(err.to_string())),
    };
    if ds.metadata.deletion_timestamp.is_some() {
        return WorkloadPlan::empty(snapshot.expectations.clone());
    }
    let selector = match label_selector_as_selector(ds.spec.selector.as_ref()) {
        Ok(selector) => selector,
        Err(message) => {
            return invalid(snapshot, SpecError::Selector { field: "spec.selector", message });
        }
    };
    if selector.is_empty() {
        let mut plan = WorkloadPlan::empty(snapshot.expectations.clone());
        plan.events.push(Event {
            type_: EventType::Warning,
            reason: "SelectingAll".into(),
            message: "This DaemonSet is selecting all pods. A non-empty selector is required."
                .into(),
            after_action: None,
        });
        return plan;
    }
    let spec = match Spec::new(&ds) {
        Ok(spec) => spec,
        Err(err) => return invalid(snapshot, err),
    };
    let resolved = match revisions::resolve(&ds, &snapshot.revisions) {
        Ok(resolved) => resolved,
        Err(err) => return invalid(snapshot, SpecError::Revision(err.to_string())),
    };
    let mut revision_actions = resolved.actions;
    let mut update_revision = resolved.update.object.clone();
    let hash = match &mut update_revision {
        Some(revision) => {
            let hash = revision_hash(revision);
            let labels = revision.metadata.labels.get_or_insert_with(Default::default);
            if !labels.contains_key(HASH_LABEL) {
                labels.remove(rev::HASH_LABEL);
                labels.insert(HASH_LABEL.to_owned(), hash.clone());
            }
            hash
        }
        None => rev::short_hash(&resolved.update.name).to_owned(),
    };
    for action in &mut revision_actions {
        if let (Action::CreateRevision { revision }, Some(updated)) =
            (action, update_revision.as_ref())
        {
            **revision = updated.clone();
        }
    }

    let gates = &snapshot.feature_gates;
    let in_place_opts = UpdateOptions {
        vertical_scaling: gates.in_place_workload_vertical_scaling,
        env_from_metadata: gates.in_place_update_env_from_metadata,
        resize_subresource: snapshot.options.resize_subresource,
        short_hash: true,
        pod_template_hash_label: false,
        ..UpdateOptions::default()
    };

    let mut round = Round {
        snapshot,
        spec,
        now,
        hash,
        update_revision,
        nodes: Vec::new(),
        node_pods: Vec::new(),
        orphans: Vec::new(),
        claimed: Vec::new(),
        views: Vec::new(),
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
        shared: SharedPatches::default(),
        in_place_opts,
        taken_names: None,
        template: None,
    };
    round.index(&selector);
    round.run(revision_actions, resolved.collision_count)
}

impl<'a> Round<'a> {
    /// The claimed pods on node `n`, oldest first.
    fn pods_of(&self, n: usize) -> &[Ix] {
        let (start, end) = self.nodes[n].pods;
        self.node_pods.get(start as usize..end as usize).unwrap_or_default()
    }

    fn pod(&self, i: Ix) -> &'a Pod {
        let snapshot: &'a DaemonSetSnapshot = self.snapshot;
        snapshot.pods[i].pod()
    }

    fn name(&self, i: Ix) -> &'a str {
        self.pod(i).metadata.name.as_deref().unwrap_or_default()
    }

    fn terminating(&self, i: Ix) -> bool {
        self.views[i].terminating
    }

    fn pre_deleting(&self, i: Ix) -> bool {
        self.views[i].pre_deleting
    }

    fn ready(&self, i: Ix) -> bool {
        self.views[i].ready
    }

    /// Kubernetes' `IsPodAvailable`: ready for more than `minReadySeconds`.
    fn available(&self, i: Ix) -> bool {
        let view = &self.views[i];
        if !view.ready {
            return false;
        }
        if self.spec.min_ready == 0 {
            return true;
        }
        let Some(since) = view.ready_since else { return false };
        match since.checked_add(SignedDuration::from_secs(i64::from(self.spec.min_ready))) {
            Ok(at) => at < self.now,
            Err(_) => self.spec.min_ready < 0,
        }
    }

    fn updated(&self, i: Ix) -> bool {
        self.views[i].updated
    }

    /// The view of a claimed pod.
    fn view(&self, i: Ix) -> View {
        let sp = &self.snapshot.pods[i];
        let (pod, facts) = (sp.pod(), sp.facts());
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let hash = facts.revision_hash();
        let at_update_hash = !self.hash.is_empty() && hash == self.hash;
        let generation_matches = self
            .spec
            .generation
            .as_deref()
            .is_some_and(|g| facts.label(TEMPLATE_GENERATION_LABEL) == Some(g));
        View {
            terminating,
            failed: !terminating && !facts.active() && pod::phase_of(pod) == pod::PHASE_FAILED,
            pre_deleting: facts.lifecycle_state() == Some(&LifecycleState::PreparingDelete),
            updated: at_update_hash || generation_matches,
            at_update_hash,
            ready: facts.ready(),
            ready_since: facts.ready_since(),
            in_place_gate: facts.in_place_gate(),
            in_place_ready: facts.in_place_ready(),
            idle: facts.in_place_idle(),
        }
    }

    /// Sorts nodes by name, judges them, and maps claimed pods to them. Pods the selector no
    /// longer matches are released.
    fn index(&mut self, selector: &Selector) {
        let snapshot: &'a DaemonSetSnapshot = self.snapshot;
        let mut nodes: Vec<NodeView<'a>> = snapshot
            .nodes
            .iter()
            .map(|node| NodeView {
                name: node.facts().name(),
                node,
                eligibility: eligibility::node_should_run_facts(&self.spec.judged, node.facts()),
                pods: (0, 0),
            })
            .collect();
        if !nodes.is_sorted_by(|a, b| a.name < b.name) {
            nodes.sort_by(|a, b| a.name.cmp(b.name));
            nodes.dedup_by(|a, b| a.name == b.name);
        }
        let owner_uid = self.spec.ds.metadata.uid.as_deref().unwrap_or_default();
        self.views = vec![View::default(); snapshot.pods.len()];
        let position: HashMap<&str, u32> =
            nodes.iter().enumerate().map(|(i, n)| (n.name, i as u32)).collect();
        // (node, pod) pairs, then grouped by node with a counting sort.
        let mut pairs: Vec<(u32, Ix)> = Vec::with_capacity(snapshot.pods.len());
        let mut counts = vec![0u32; nodes.len() + 1];
        for (i, sp) in snapshot.pods.iter().enumerate() {
            let facts = sp.facts();
            if !selector.matches_lookup(|key| facts.label(key)) {
                let pod = sp.pod();
                if pod.metadata.deletion_timestamp.is_none() {
                    self.actions.push(workload::release_pod(pod, owner_uid));
                }
                continue;
            }
            self.claimed.push(i);
            self.views[i] = self.view(i);
            let Some(target) = eligibility::target_node_name(sp.pod()) else { continue };
            match position.get(target) {
                Some(&n) => {
                    pairs.push((n, i));
                    counts[n as usize + 1] += 1;
                }
                None => self.orphans.push(i),
            }
        }
        for n in 1..counts.len() {
            counts[n] += counts[n - 1];
        }
        let mut node_pods = vec![0; pairs.len()];
        let mut next = counts.clone();
        for &(n, i) in &pairs {
            node_pods[next[n as usize] as usize] = i;
            next[n as usize] += 1;
        }
        for (n, node) in nodes.iter_mut().enumerate() {
            node.pods = (counts[n], counts[n + 1]);
            let pods = &mut node_pods[counts[n] as usize..counts[n + 1] as usize];
            if pods.len() > 1 {
                pods.sort_by(|&a, &b| {
                    age_key(snapshot.pods[a].pod()).cmp(&age_key(snapshot.pods[b].pod()))
                });
            }
        }
        self.node_pods = node_pods;
        self.nodes = nodes;
    }

    fn run(mut self, revision_actions: Vec<Action>, collision_count: i32) -> DaemonSetPlan {
        let snapshot = self.snapshot;
        let mut expectations = snapshot.expectations.clone();
        let timeout = snapshot.options.expectation_timeout;
        let owned = snapshot.pods.iter().map(|p| &p.pod().metadata);
        match workload::settle_scale_expectations::<DaemonSetStatus>(
            &mut expectations,
            owned,
            self.now,
            timeout,
        ) {
            Ok(events) => self.events.extend(events),
            Err(plan) => return self.blocked(*plan, collision_count),
        }
        if !expectations.resource_versions.is_empty() {
            let by_uid = workload::pods_by_uid(snapshot.pods.iter().map(|p| p.metadata()));
            if let Err(plan) = workload::settle_resource_versions::<DaemonSetStatus>(
                &mut expectations,
                |uid| by_uid.get(uid).copied(),
                self.now,
                timeout,
            ) {
                return self.blocked(*plan, collision_count);
            }
        }

        let mut actions = revision_actions;
        actions.append(&mut self.actions);
        self.actions = actions;

        let scaled = self.manage();
        let mut observed = false;
        if !scaled {
            self.refresh();
            if self.spec.rolling && !self.spec.paused {
                self.rolling_update();
            }
            self.cleanup_history();
            observed = true;
        }
        let status = self.status(observed, collision_count);
        // Last, so that a job the API server refuses holds up nothing else.
        self.pre_download();
        DaemonSetPlan {
            actions: self.actions,
            status,
            events: self.events,
            requeue_after: self.requeue,
            expectations,
            blocked: None,
        }
    }

    /// Image pre-download for the update revision, with the gate on
    /// ([`predownload`](super::predownload)).
    fn pre_download(&mut self) {
        let snapshot = self.snapshot;
        if !snapshot.feature_gates.pre_download_image_for_daemon_set_update {
            return;
        }
        let Some(update) = self.update_revision.as_ref() else { return };
        let update_name = update.metadata.name.as_deref();
        let inputs = predownload::Inputs {
            ds: self.spec.ds,
            update,
            hash: &self.hash,
            old: snapshot
                .revisions
                .iter()
                .filter(|r| r.metadata.name.as_deref() != update_name)
                .collect(),
            jobs: &snapshot.image_pull_jobs,
        };
        predownload::plan(&inputs, &mut self.actions, &mut self.events);
    }

    /// A plan waiting on expectations still carries the status.
    fn blocked(mut self, mut plan: DaemonSetPlan, collision_count: i32) -> DaemonSetPlan {
        plan.status = self.status(false, collision_count);
        if let Some(after) = self.requeue.take() {
            plan.requeue_after = Some(plan.requeue_after.map_or(after, |r| r.min(after)));
        }
        plan.events.append(&mut self.events);
        plan
    }

    /// The new and old pod of a node, or `None` when it has more than one of either
    /// (upstream's `findUpdatedPodsOnNode`).
    fn find_updated(&self, pods: &[Ix]) -> Option<(Option<Ix>, Option<Ix>)> {
        let (mut new, mut old) = (None, None);
        for &i in pods {
            if self.terminating(i) {
                continue;
            }
            let slot = if self.updated(i) { &mut new } else { &mut old };
            if slot.is_some() {
                return None;
            }
            *slot = Some(i);
        }
        Some((new, old))
    }

    /// Upstream's `manage`: which nodes need a pod and which pods must go. Returns whether
    /// anything was planned (the round then stops, as upstream's does on unsatisfied
    /// expectations).
    fn manage(&mut self) -> bool {
        let surge = self.spec.allow_surge();
        let mut need: Vec<usize> = Vec::new();
        let mut delete: Vec<(Ix, DeletePurpose)> = Vec::new();
        let (mut desired, mut new_pods) = (0i32, 0i32);
        let mut wait: Option<SignedDuration> = None;
        for n in 0..self.nodes.len() {
            let (start, end) = self.nodes[n].pods;
            let pods = self.node_pods.get(start as usize..end as usize).unwrap_or_default();
            let el = self.nodes[n].eligibility;
            if el.should_run {
                desired += 1;
            }
            if let Some((Some(_), _)) = self.find_updated(pods) {
                new_pods += 1;
            }
            if el.should_run && pods.is_empty() {
                need.push(n);
            } else if el.should_continue_running {
                let mut running = Vec::new();
                for &i in pods {
                    if self.terminating(i) {
                        continue;
                    }
                    if self.views[i].failed {
                        // Deleting a failed pod and creating another in a tight loop fights
                        // the kubelet that keeps rejecting it: within the node's back-off
                        // the failed pod stays, and the round looks again when it ends.
                        let node = self.nodes[n].name;
                        if let Some(&until) = self.snapshot.failed_pod_backoff.get(node)
                            && until > self.now
                        {
                            let left = workload::round_up_seconds(until.duration_since(self.now));
                            wait = Some(wait.map_or(left, |w| w.min(left)));
                            continue;
                        }
                        let event = Event {
                            type_: EventType::Warning,
                            reason: "FailedDaemonPod".into(),
                            message: format!(
                                "Found failed daemon pod {}/{} on node {}, will try to kill it",
                                self.pod(i).metadata.namespace.as_deref().unwrap_or_default(),
                                self.name(i),
                                self.nodes[n].name
                            ),
                            after_action: None,
                        };
                        self.events.push(event);
                        delete.push((i, DeletePurpose::Finished));
                    } else if self.pre_deleting(i) {
                        delete.push((i, DeletePurpose::PreDeleteFinished));
                    } else {
                        running.push(i);
                    }
                }
                // `pods` is sorted oldest first, and so is `running`.
                if !surge {
                    delete.extend(running.iter().skip(1).map(|&i| (i, DeletePurpose::ScaleIn)));
                    continue;
                }
                if running.len() <= 1 {
                    if running.is_empty() && el.should_run {
                        need.push(n);
                    }
                    continue;
                }
                let (mut oldest_new, mut oldest_old) = (None, None);
                for &i in &running {
                    let slot = if self.views[i].at_update_hash {
                        &mut oldest_new
                    } else {
                        &mut oldest_old
                    };
                    if slot.is_none() {
                        *slot = Some(i);
                    } else {
                        delete.push((i, DeletePurpose::ScaleIn));
                    }
                }
                if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
                    if !self.ready(old) || self.available(new) {
                        delete.push((old, DeletePurpose::Recreate));
                    } else if self.ready(new) && self.spec.min_ready > 0 {
                        let left = self.available_in(new);
                        wait = Some(wait.map_or(left, |w| w.min(left)));
                    }
                }
            } else {
                delete.extend(
                    pods.iter()
                        .filter(|&&i| !self.terminating(i))
                        .map(|&i| (i, DeletePurpose::ScaleIn)),
                );
            }
        }
        if let Some(wait) = wait {
            self.requeue_after(wait);
        }
        for &i in &self.orphans {
            let pod = self.pod(i);
            let unscheduled =
                pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default() == "";
            if unscheduled && pod.metadata.deletion_timestamp.is_none() {
                delete.push((i, DeletePurpose::ScaleIn));
            }
        }
        if self.spec.rolling
            && let Some(partition) = self.spec.partition.filter(|p| *p != 0)
            && self.spec.progressive
        {
            let partition = partition.clamp(0, desired.max(0));
            let max_create = (desired - new_pods - partition).max(0) as usize;
            need.truncate(max_create);
        }
        let before = self.actions.len();
        self.sync_nodes(delete, need);
        self.actions[before..].iter().any(|a| !matches!(a, Action::PatchPodStatus { .. }))
    }

    /// How long until a ready pod is available.
    fn available_in(&self, i: Ix) -> SignedDuration {
        let min_ready = SignedDuration::from_secs(i64::from(self.spec.min_ready));
        match self.views[i].ready_since.filter(|_| self.views[i].ready) {
            Some(since) => workload::round_up_seconds(min_ready - self.now.duration_since(since)),
            None => workload::round_up_seconds(min_ready),
        }
    }

    /// Upstream's `syncNodes`: pods the preDelete hook holds go to `PreparingDelete`; the
    /// rest are deleted, and nodes get pods, at most `burstReplicas` of each.
    fn sync_nodes(&mut self, delete: Vec<(Ix, DeletePurpose)>, create: Vec<usize>) {
        let mut deletable = Vec::with_capacity(delete.len());
        let pre_delete = self.spec.lifecycle.and_then(|l| l.pre_delete.as_ref());
        let mut seen = BTreeSet::new();
        for (i, purpose) in delete {
            if !seen.insert(i) {
                continue;
            }
            if pre_delete.is_none() {
                deletable.push((i, purpose));
                continue;
            }
            let pod = self.pod(i);
            match lifecycle::cloneset_delete_step(self.spec.lifecycle, pod, self.now) {
                DeleteStep::PrepareDelete(transition) => {
                    if !transition.is_noop() {
                        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
                        let name = self.name(i);
                        workload::push_lifecycle(&mut self.actions, name, uid, transition);
                    }
                }
                _ => deletable.push((i, purpose)),
            }
        }
        let burst = self.spec.burst as usize;
        for &n in create.iter().take(burst) {
            let pod = self.new_pod(n);
            let name = pod.metadata.name.clone().unwrap_or_default();
            self.actions.push(Action::CreatePod { pod: pod.into() });
            self.events.push(Event {
                type_: EventType::Normal,
                reason: "SuccessfulCreate".into(),
                message: format!("Created pod: {name}"),
                after_action: Some(self.actions.len() - 1),
            });
        }
        for &(i, purpose) in deletable.iter().take(burst) {
            let pod = self.pod(i);
            let name = self.name(i);
            self.actions.push(Action::DeletePod {
                name: name.to_owned(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                purpose,
            });
            self.events.push(Event {
                type_: EventType::Normal,
                reason: "SuccessfulDelete".into(),
                message: format!("Deleted pod: {name}"),
                after_action: Some(self.actions.len() - 1),
            });
        }
    }

    /// The template new pods are made from: the DaemonSet's, with the revision labels and,
    /// for in-place rollouts, the `InPlaceUpdateReady` readiness gate.
    fn template(&mut self) -> &PodTemplateSpec {
        let spec = &self.spec;
        let hash = &self.hash;
        self.template.get_or_insert_with(|| {
            let mut template = spec.ds.spec.template.clone();
            let meta = template.metadata.get_or_insert_with(Default::default);
            let labels = meta.labels.get_or_insert_with(Default::default);
            if let Some(generation) = &spec.generation {
                labels.insert(TEMPLATE_GENERATION_LABEL.to_owned(), generation.clone());
            }
            labels.insert(HASH_LABEL.to_owned(), hash.clone());
            if spec.in_place {
                inplace::inject_readiness_gate(template.spec.get_or_insert_with(Default::default));
            }
            template
        })
    }

    /// A name for a new pod on `node`: `<daemonset>-<5 characters>`, derived from the node,
    /// the revision and a counter, free among the snapshot's pods and this plan's.
    fn pod_name(&mut self, node: &str) -> String {
        let snapshot = self.snapshot;
        let taken = self.taken_names.get_or_insert_with(|| {
            snapshot.pods.iter().filter_map(|p| p.pod().metadata.name.clone()).collect()
        });
        let ds_name = self.spec.ds.metadata.name.as_deref().unwrap_or_default();
        let mut end = ds_name.len().min(MAX_PREFIX);
        while !ds_name.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = &ds_name[..end];
        let mut salt = 0u64;
        loop {
            let mut h = rev::hash::fnv1a_32(format!("{node}/{}/{salt}", self.hash).as_bytes());
            let mut name = String::with_capacity(prefix.len() + 6);
            name.push_str(prefix);
            name.push('-');
            for _ in 0..5 {
                let c = SUFFIX_ALPHABET[(h % SUFFIX_ALPHABET.len() as u32) as usize];
                name.push(char::from(c));
                h /= SUFFIX_ALPHABET.len() as u32;
            }
            if taken.insert(name.clone()) {
                return name;
            }
            salt += 1;
        }
    }

    /// The pod to create on node `n`.
    fn new_pod(&mut self, n: usize) -> Pod {
        let node = self.nodes[n].name;
        let name = self.pod_name(node);
        let ds = self.spec.ds;
        let mut pod = if self.snapshot.options.assign_by_scheduler {
            eligibility::pod_for_node(self.template(), node)
        } else {
            eligibility::pod_bound_to_node(self.template(), node)
        };
        let ds_name = ds.metadata.name.as_deref().unwrap_or_default();
        pod.metadata.generate_name = Some(format!("{ds_name}-"));
        pod.metadata.name = Some(name);
        pod.metadata.namespace = ds.metadata.namespace.clone();
        pod.metadata.owner_references = Some(vec![rev::controller_ref(ds)]);
        if self.snapshot.feature_gates.pod_webhook && crate::readiness::wants_gate(&pod, false) {
            crate::readiness::inject_gate(pod.spec.get_or_insert_with(Default::default));
        }
        pod
    }

    /// Upstream's `refreshUpdateStates`: the in-place bookkeeping of every pod.
    fn refresh(&mut self) {
        let opts = self.in_place_opts.clone();
        for k in 0..self.claimed.len() {
            let i = self.claimed[k];
            if self.views[i].terminating || self.views[i].idle {
                continue;
            }
            let pod = self.pod(i);
            if let Err(message) = workload::inplace::refresh(self, pod, &opts, self.now) {
                self.events.push(Event {
                    type_: EventType::Warning,
                    reason: "FailedRefreshPod".into(),
                    message,
                    after_action: None,
                });
            }
        }
    }

    /// The nodes a rolling update considers, in upstream's order, with partition and
    /// selector applied (`filterDaemonPodsToUpdate`).
    fn update_order(&self, candidates: &[usize]) -> Vec<usize> {
        let (mut updated, mut updating, mut chosen) = (Vec::new(), Vec::new(), Vec::new());
        for &n in candidates.iter().rev() {
            let node = &self.nodes[n];
            match self.find_updated(self.pods_of(n)) {
                None | Some((Some(_), _)) => updated.push(n),
                Some((None, old)) if old.is_none_or(|o| self.pre_deleting(o)) => updating.push(n),
                Some(_) => match &self.spec.update_selector {
                    Some(selector) => {
                        let empty = Default::default();
                        if selector.matches(node.node.metadata.labels.as_ref().unwrap_or(&empty)) {
                            chosen.push(n);
                        }
                    }
                    None => chosen.push(n),
                },
            }
        }
        let max_update = candidates.len() as i64 - i64::from(self.spec.partition.unwrap_or(0));
        if max_update <= 0 {
            return Vec::new();
        }
        updated.append(&mut updating);
        updated.append(&mut chosen);
        updated.truncate(max_update as usize);
        updated
    }

    /// Upstream's `rollingUpdate`.
    fn rolling_update(&mut self) {
        let prune = self.snapshot.feature_gates.daemon_set_prune_ineligible_nodes;
        let desired = self.nodes.iter().filter(|n| n.eligibility.should_run).count() as i32;
        let candidates: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| {
                let node = &self.nodes[n];
                node.eligibility.should_run || (!prune && node.pods.0 != node.pods.1)
            })
            .collect();
        let (max_surge, max_unavailable) = self.spec.budgets(desired);
        let order = self.update_order(&candidates);
        if max_surge == 0 {
            let mut unavailable = 0;
            let mut replace = Vec::new();
            let mut chosen = Vec::new();
            for &n in &order {
                let Some((new, old)) = self.find_updated(self.pods_of(n)) else {
                    unavailable += 1;
                    continue;
                };
                let old_gone = old.is_none_or(|i| self.pre_deleting(i));
                let new_gone = new.is_none_or(|i| self.pre_deleting(i));
                if old_gone == new_gone {
                    unavailable += 1;
                } else if let Some(new) = new {
                    if !self.available(new) {
                        unavailable += 1;
                    }
                    if self.pre_deleting(new) {
                        unavailable += 1;
                    }
                } else if let Some(old) = old {
                    if !self.available(old) {
                        replace.push(old);
                    } else if unavailable < max_unavailable {
                        chosen.push(old);
                    }
                }
            }
            let remaining = (max_unavailable - unavailable).max(0) as usize;
            chosen.truncate(remaining);
            replace.append(&mut chosen);
            let to_delete =
                if self.spec.in_place { self.update_in_place(replace) } else { replace };
            let delete = to_delete.into_iter().map(|i| (i, DeletePurpose::Recreate)).collect();
            self.sync_nodes(delete, Vec::new());
            return;
        }
        let mut surge = 0;
        let mut old_to_delete = Vec::new();
        let (mut allowed, mut chosen) = (Vec::new(), Vec::new());
        for &n in &order {
            let Some((new, old)) = self.find_updated(self.pods_of(n)) else {
                surge += 1;
                continue;
            };
            let Some(old) = old.filter(|&i| !self.pre_deleting(i)) else { continue };
            match new {
                None if !self.available(old) => allowed.push(n),
                None if surge >= max_surge => {}
                None => chosen.push(n),
                Some(new) if !self.available(new) || self.pre_deleting(new) => surge += 1,
                Some(_) => old_to_delete.push((old, DeletePurpose::Recreate)),
            }
        }
        chosen.truncate((max_surge - surge).max(0) as usize);
        allowed.append(&mut chosen);
        self.sync_nodes(old_to_delete, allowed);
    }

    /// Upstream's `inPlaceUpdatePods`: the pods that can move in place do (at most
    /// `burstReplicas`); the others are returned to be recreated.
    fn update_in_place(&mut self, pods: Vec<Ix>) -> Vec<Ix> {
        let mut recreate = Vec::new();
        let mut updated = 0usize;
        let opts = self.in_place_opts.clone();
        let snapshot = self.snapshot;
        for i in pods {
            let pod = self.pod(i);
            let spec = self.in_place_spec(pod, &snapshot.revisions, &opts);
            let Some(spec) = spec else {
                recreate.push(i);
                continue;
            };
            if updated >= self.spec.burst as usize {
                continue;
            }
            updated += 1;
            workload::inplace::update_in_place_plain(self, pod, &spec, &opts, self.now);
            self.events.push(Event {
                type_: EventType::Normal,
                reason: "SuccessfulUpdatePodInPlace".into(),
                message: format!("successfully update pod {} in-place", self.name(i)),
                after_action: Some(self.actions.len() - 1),
            });
        }
        recreate
    }

    /// The in-place change of `pod` to the update revision, when it has the readiness gate,
    /// its revision is known and only in-place fields changed.
    fn in_place_spec(
        &self,
        pod: &Pod,
        revisions: &[ControllerRevision],
        opts: &UpdateOptions,
    ) -> Option<inplace::UpdateSpec> {
        if !inplace::has_readiness_gate(pod) {
            return None;
        }
        let new = self.update_revision.as_ref()?;
        let pod_hash = label(pod, HASH_LABEL)?;
        let old =
            revisions.iter().find(|r| rev::revision_label_matches(pod_hash, &revision_hash(r)))?;
        inplace::calculate_revision_update_spec(old, new, opts)
    }

    /// Upstream's `cleanupHistory`: old revisions beyond the limit that no pod uses go.
    fn cleanup_history(&mut self) {
        let limit = self.spec.ds.spec.revision_history_limit.unwrap_or(10).max(0) as usize;
        let update_name = self.update_revision.as_ref().and_then(|r| r.metadata.name.as_deref());
        let mut old: Vec<&ControllerRevision> = self
            .snapshot
            .revisions
            .iter()
            .filter(|r| r.metadata.name.as_deref() != update_name)
            .collect();
        if old.len() <= limit {
            return;
        }
        let mut to_kill = old.len() - limit;
        let live: BTreeSet<&str> =
            self.claimed.iter().filter_map(|&i| label(self.pod(i), HASH_LABEL)).collect();
        old.sort_by(|a, b| rev::compare_revisions(a, b));
        for revision in old {
            if to_kill == 0 {
                break;
            }
            if live.contains(revision_hash(revision).as_str()) {
                continue;
            }
            self.actions.push(Action::DeleteRevision {
                name: revision.metadata.name.clone().unwrap_or_default(),
            });
            to_kill -= 1;
        }
    }

    /// Upstream's `updateDaemonSetStatus`, written only when something changed.
    fn status(&mut self, observed: bool, collision_count: i32) -> Option<DaemonSetStatus> {
        let ds = self.spec.ds;
        let old = ds.status.clone().unwrap_or_default();
        let mut status = old.clone();
        let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
        let (mut ready, mut available, mut updated) = (0, 0, 0);
        let mut wait: Option<SignedDuration> = None;
        for (n, node) in self.nodes.iter().enumerate() {
            let first = self.pods_of(n).first().copied();
            if node.eligibility.should_run {
                desired += 1;
                let Some(i) = first else { continue };
                current += 1;
                let view = self.views[i];
                if view.ready {
                    ready += 1;
                    if self.available(i) && (!view.in_place_gate || view.in_place_ready) {
                        available += 1;
                    } else if self.spec.min_ready > 0 {
                        let left = self.available_in(i);
                        wait = Some(wait.map_or(left, |w| w.min(left)));
                    }
                }
                if self.updated(i) {
                    updated += 1;
                }
            } else if first.is_some() {
                misscheduled += 1;
            }
        }
        if let Some(wait) = wait {
            self.requeue_after(wait);
        }
        status.desired_number_scheduled = desired;
        status.current_number_scheduled = current;
        status.number_misscheduled = misscheduled;
        status.number_ready = ready;
        status.number_available = available;
        status.number_unavailable = desired - available;
        status.updated_number_scheduled = updated;
        status.update_revision = self.hash.clone();
        if collision_count != 0 || status.collision_count.is_some() {
            status.collision_count = Some(collision_count);
        }
        if observed {
            status.observed_generation = ds.metadata.generation.unwrap_or_default();
        }
        (status != old || ds.status.is_none()).then_some(status)
    }
}
