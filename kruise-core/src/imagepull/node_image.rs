//! The NodeImage controller: one NodeImage per node.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::{
    ImagePullPhase, ImageTagStatus, NodeImage, NodeImageSpec, NodeImageStatus,
};
use kruise_api::well_known::labels::FAKE_NODE_IMAGE;
use serde::Serialize;

use super::{ImagePullConfig, REFERENCE_MODE_BATCH, merge_requeue, time};
use crate::workload::{Event, EventType};

/// How long the daemon has to report on a tag before it counts as failed.
pub const RESPONSE_TIMEOUT: SignedDuration = SignedDuration::from_secs(600);
/// Smallest requeue of the NodeImage controller.
const MIN_REQUEUE: SignedDuration = SignedDuration::from_secs(3);

/// The NodeImage of a node: same name, same labels, empty spec.
pub fn node_image_for(node: &Node) -> NodeImage {
    NodeImage {
        metadata: ObjectMeta {
            name: node.metadata.name.clone(),
            labels: node.metadata.labels.clone(),
            ..Default::default()
        },
        spec: NodeImageSpec::default(),
        status: None,
    }
}

/// A spec update of a NodeImage.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageUpdate {
    /// The labels to set (the node's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The pruned spec.
    pub spec: NodeImageSpec,
    /// Why, one line per change.
    pub reasons: Vec<String>,
}

/// What the NodeImage controller asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeImagePlan {
    /// Create this NodeImage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create: Option<NodeImage>,
    /// Delete the NodeImage (its node is gone).
    pub delete: bool,
    /// Update labels and spec (the status waits for the next round).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<NodeImageUpdate>,
    /// The new status, when it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<NodeImageStatus>,
    /// Warning Events `PullImageFailed`, each with the `namespace/name` of the job it is
    /// about (`None`: on the NodeImage).
    pub events: Vec<(Option<String>, Event)>,
    /// When to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after: Option<SignedDuration>,
}

/// The controller's plan for the node and NodeImage of one name (upstream's `Reconcile`).
/// `job_uid` looks an ImagePullJob up by namespace and name and gives its UID (`None` when it
/// does not exist); `secret_exists` says whether a pull secret exists.
///
/// - Node gone or deleting: the NodeImage is deleted (unless labelled
///   `apps.kruise.io/fake-nodeimage`).
/// - No NodeImage: created once the node has been Ready for the creation delay.
/// - Spec: the node's labels; a tag without `createdAt` is dropped; ImagePullJob owners that
///   no longer exist (or have another UID) are dropped, and a tag without owners with them;
///   a tag whose pull of its current version completed `ttlSecondsAfterFinished` ago is
///   dropped; non-batch pull secrets that no longer exist are dropped; an image without tags
///   is dropped. A spec change is written alone.
/// - Status: a tag the daemon has not reported on for its version within
///   [`RESPONSE_TIMEOUT`] of `createdAt` is Failed ("node has not responded for a long time");
///   an unfinished one past `activeDeadlineSeconds` + [`RESPONSE_TIMEOUT`] is Failed ("pulling
///   exceeds the activeDeadlineSeconds"); statuses of tags no longer in the spec are dropped
///   and the counts recomputed.
pub fn plan_node_image(
    name: &str,
    node: Option<&Node>,
    node_image: Option<&NodeImage>,
    job_uid: &dyn Fn(&str, &str) -> Option<String>,
    secret_exists: &dyn Fn(&str, &str) -> bool,
    config: &ImagePullConfig,
    now: Timestamp,
) -> NodeImagePlan {
    let mut plan = NodeImagePlan::default();
    let node = node.filter(|n| n.metadata.deletion_timestamp.is_none());
    let Some(node) = node else {
        if let Some(ni) = node_image.filter(|n| n.metadata.deletion_timestamp.is_none()) {
            let fake = ni.metadata.labels.as_ref().is_some_and(|l| l.contains_key(FAKE_NODE_IMAGE));
            plan.delete = !fake;
        }
        return plan;
    };
    let Some(ni) = node_image else {
        let ready_since = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready" && c.status == "True"))
            .map(|c| c.last_transition_time.as_ref().map_or(now, |t| t.0));
        if let Some(since) = ready_since {
            let left = config.node_image_creation_delay - now.duration_since(since);
            if left > SignedDuration::ZERO {
                plan.requeue_after = Some(left);
            } else {
                let mut created = node_image_for(node);
                created.metadata.name = Some(name.to_owned());
                created.metadata.labels = None;
                plan.create = Some(created);
            }
        }
        return plan;
    };
    if ni.metadata.deletion_timestamp.is_some() {
        return plan;
    }

    let mut requeue = None;
    let mut reasons = Vec::new();
    let labels_changed = ni.metadata.labels != node.metadata.labels;
    if labels_changed {
        reasons.push("node labels changed".to_owned());
    }
    let statuses = ni.status.as_ref().map(|s| &s.image_statuses);
    let mut spec = ni.spec.clone();
    spec.images.retain(|image, image_spec| {
        image_spec.tags.retain_mut(|tag| {
            let full = format!("{image}:{}", tag.tag);
            if tag.created_at.is_none() {
                reasons.push(format!("image {full} has no createAt field"));
                return false;
            }
            let before = tag.owner_references.len();
            tag.owner_references.retain(|owner| {
                let is_job = owner.kind.as_deref() == Some("ImagePullJob")
                    && owner
                        .api_version
                        .as_deref()
                        .is_some_and(|v| v.starts_with("apps.kruise.io/"));
                if !is_job {
                    return true;
                }
                job_uid(
                    owner.namespace.as_deref().unwrap_or_default(),
                    owner.name.as_deref().unwrap_or_default(),
                )
                .is_some_and(|uid| Some(&uid) == owner.uid.as_ref())
            });
            if tag.owner_references.len() != before {
                if tag.owner_references.is_empty() {
                    reasons.push(format!("image {full} owners is cleared"));
                    return false;
                }
                reasons.push(format!("image {full} owners changed"));
            }
            if let Some(ttl) = tag.pull_policy.as_ref().and_then(|p| p.ttl_seconds_after_finished) {
                let completed = statuses
                    .and_then(|s| s.get(image))
                    .and_then(|s| {
                        s.tags.iter().find(|t| t.tag == tag.tag && t.version == tag.version)
                    })
                    .and_then(|t| t.completion_time.as_ref());
                if let Some(completed) = completed {
                    let left =
                        SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(completed.0);
                    if left <= SignedDuration::ZERO {
                        reasons.push(format!("image {full} has exceeded TTL ({ttl})s"));
                        return false;
                    }
                    merge_requeue(&mut requeue, left);
                }
            }
            true
        });
        let before = image_spec.pull_secrets.len();
        image_spec
            .pull_secrets
            .retain(|s| s.mode == REFERENCE_MODE_BATCH || secret_exists(&s.namespace, &s.name));
        if image_spec.pull_secrets.len() != before {
            reasons.push(format!("image {image} pull secrets changed"));
        }
        if image_spec.tags.is_empty() {
            reasons.push(format!("no longer has {image} image spec"));
            return false;
        }
        true
    });
    if !reasons.is_empty() {
        plan.update = Some(NodeImageUpdate {
            labels: labels_changed.then(|| node.metadata.labels.clone().unwrap_or_default()),
            spec,
            reasons,
        });
        return plan;
    }

    let old = ni.status.clone().unwrap_or_default();
    let mut image_statuses = old.image_statuses.clone();
    let mut spec_tags = BTreeSet::new();
    for (image, image_spec) in &ni.spec.images {
        let entry = image_statuses.entry(image.clone()).or_default();
        for tag in &image_spec.tags {
            spec_tags.insert((image.clone(), tag.tag.clone()));
            let Some(created) = tag.created_at.as_ref() else {
                continue;
            };
            let full = format!("{image}:{}", tag.tag);
            let age = now.duration_since(created.0);
            let pos = entry.tags.iter().position(|t| t.tag == tag.tag);
            let mut failed_message = None;
            match pos.map(|i| &entry.tags[i]) {
                Some(st) if st.version == tag.version => {
                    let deadline = tag.pull_policy.as_ref().and_then(|p| p.active_deadline_seconds);
                    if st.completion_time.is_none()
                        && let Some(deadline) = deadline
                    {
                        let left = SignedDuration::from_secs(deadline) + RESPONSE_TIMEOUT - age;
                        if left > SignedDuration::ZERO {
                            merge_requeue(&mut requeue, left);
                        } else {
                            failed_message = Some("pulling exceeds the activeDeadlineSeconds");
                        }
                    }
                }
                _ => {
                    let left = RESPONSE_TIMEOUT - age;
                    if left > SignedDuration::ZERO {
                        merge_requeue(&mut requeue, left);
                        continue;
                    }
                    failed_message = Some("node has not responded for a long time");
                }
            }
            let Some(message) = failed_message else {
                continue;
            };
            let failed = ImageTagStatus {
                tag: tag.tag.clone(),
                phase: ImagePullPhase::Failed,
                completion_time: Some(time(now)),
                version: tag.version,
                message: message.to_owned(),
                ..pos.map(|i| entry.tags[i].clone()).unwrap_or_default()
            };
            match pos {
                Some(i) => entry.tags[i] = failed,
                None => entry.tags.push(failed),
            }
            let text = format!("Failed to pull image {full} on node {name} for {message}");
            for owner in &tag.owner_references {
                let key = format!(
                    "{}/{}",
                    owner.namespace.as_deref().unwrap_or_default(),
                    owner.name.as_deref().unwrap_or_default()
                );
                plan.events.push((Some(key), warning(&text)));
            }
            plan.events.push((None, warning(&text)));
        }
        entry.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
    }
    let mut counts = (0, 0, 0);
    image_statuses.retain(|image, st| {
        st.tags.retain(|t| spec_tags.contains(&(image.clone(), t.tag.clone())));
        for t in &st.tags {
            match t.phase {
                ImagePullPhase::Succeeded => counts.0 += 1,
                ImagePullPhase::Pulling => counts.1 += 1,
                ImagePullPhase::Failed => counts.2 += 1,
                _ => {}
            }
        }
        !st.tags.is_empty()
    });
    if image_statuses != old.image_statuses {
        plan.status = Some(NodeImageStatus {
            image_statuses,
            desired: i32::try_from(spec_tags.len()).unwrap_or(i32::MAX),
            succeeded: counts.0,
            pulling: counts.1,
            failed: counts.2,
            ..old
        });
    }
    plan.requeue_after = requeue.map(|r| r.max(MIN_REQUEUE));
    plan
}

fn warning(message: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: "PullImageFailed".into(),
        message: message.to_owned(),
        after_action: None,
    }
}
