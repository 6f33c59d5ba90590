//! The per-round in-place bookkeeping of a pod (upstream's `Refresh`): finish a grace
//! period, start the next launch-priority batch, or put the pod back in service.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodCondition};

use super::patch::{PodPatch, patch_spec_to_pod, remove_grace, whole_seconds};
use super::{
    InPlaceError, PodUpdate, UpdateOptions, UpdateSpec, check_containers_update_completed,
    condition, grace_annotation, in_place_update_state, vertical,
};
use crate::revision;

/// What [`refresh`] asks for; at most one step per round, as upstream.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RefreshAction {
    /// Nothing to do (no update in progress, or the containers are still restarting).
    Nothing,
    /// A grace period is running; look again after this long.
    WaitGracePeriod {
        /// Time left, rounded up to whole seconds.
        requeue_after: SignedDuration,
    },
    /// The grace period is over: apply the postponed container changes.
    FinishGracePeriod(Box<PodUpdate>),
    /// The pod moved to another revision during its grace period: drop the postponed spec.
    DropGracePeriod(Box<PodUpdate>),
    /// The previous batch of containers runs: update the next one.
    NextBatch(Box<PodUpdate>),
    /// The update is complete: write these status conditions (`InPlaceUpdateReady` True).
    MarkReady {
        /// The pod's conditions to write.
        conditions: Vec<PodCondition>,
    },
}

/// Works out the next in-place step for `pod`.
///
/// One deviation from upstream: a later batch that only changes resources is started too
/// (upstream waits for image or metadata changes and would leave such a pod updating).
pub fn refresh(
    pod: &Pod,
    opts: &UpdateOptions,
    now: Timestamp,
) -> Result<RefreshAction, InPlaceError> {
    let now = whole_seconds(now);
    if let Some(text) = grace_annotation(pod).filter(|t| !t.is_empty()) {
        return finish_grace_period(pod, text, opts, now);
    }

    if let Some(state) = in_place_update_state(pod)? {
        if check_containers_update_completed(pod, &state, opts).is_err() {
            return Ok(RefreshAction::Nothing);
        }
        let more = !state.next_container_images.is_empty()
            || !state.next_container_ref_metadata.is_empty()
            || !state.next_container_resources.is_empty();
        if more {
            if !previous_batch_ready(pod, &state) {
                return Ok(RefreshAction::Nothing);
            }
            let spec = UpdateSpec {
                revision: state.revision.clone(),
                container_images: state.next_container_images.clone(),
                container_ref_metadata: state.next_container_ref_metadata.clone(),
                container_resources: state.next_container_resources.clone(),
                update_env_from_metadata: state.update_env_from_metadata,
                ..UpdateSpec::default()
            };
            let mut state = state;
            let mut patch = PodPatch::default();
            let expected = patch_spec_to_pod(pod, &spec, &mut state, opts, now, &mut patch);
            let resize =
                if opts.resize_subresource { vertical::resize_patch(pod, &expected) } else { None };
            return Ok(RefreshAction::NextBatch(Box::new(PodUpdate {
                patch: patch.into_value(),
                resize,
                state: Some(state),
            })));
        }
    }

    if !condition::has_readiness_gate(pod) {
        return Ok(RefreshAction::Nothing);
    }
    let already = condition::in_place_update_condition(pod).is_some_and(|c| {
        c.status == "True"
            && c.reason.as_deref().unwrap_or("").is_empty()
            && c.message.as_deref().unwrap_or("").is_empty()
    });
    if already {
        return Ok(RefreshAction::Nothing);
    }
    Ok(match condition::update_condition(pod, true, now) {
        Some(conditions) => RefreshAction::MarkReady { conditions },
        None => RefreshAction::Nothing,
    })
}

/// The containers of the previous batch that must be ready before the next one starts.
fn previous_batch_ready(pod: &Pod, state: &kruise_api::apps::common::InPlaceUpdateState) -> bool {
    let Some(check) = &state.pre_check_before_next else { return true };
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    check
        .containers_required_ready
        .iter()
        .all(|name| statuses.iter().any(|s| &s.name == name && s.ready))
}

fn finish_grace_period(
    pod: &Pod,
    text: &str,
    opts: &UpdateOptions,
    now: Timestamp,
) -> Result<RefreshAction, InPlaceError> {
    let spec = UpdateSpec::from_annotation(text)?;
    let mut state = in_place_update_state(pod)?.ok_or(InPlaceError::MissingState)?;
    let mut patch = PodPatch::default();

    if !revision::pod_matches_revision(pod, &spec.revision) {
        remove_grace(pod, &mut patch);
        return Ok(RefreshAction::DropGracePeriod(Box::new(PodUpdate {
            patch: patch.into_value(),
            resize: None,
            state: None,
        })));
    }

    let grace = SignedDuration::from_secs(i64::from(spec.grace_seconds));
    if let Some(started) = &state.update_timestamp {
        let elapsed = now.duration_since(started.0);
        if elapsed < grace {
            return Ok(RefreshAction::WaitGracePeriod {
                requeue_after: round_up_seconds(grace - elapsed),
            });
        }
    }

    let expected = patch_spec_to_pod(pod, &spec, &mut state, opts, now, &mut patch);
    remove_grace(pod, &mut patch);
    let resize =
        if opts.resize_subresource { vertical::resize_patch(pod, &expected) } else { None };
    Ok(RefreshAction::FinishGracePeriod(Box::new(PodUpdate {
        patch: patch.into_value(),
        resize,
        state: Some(state),
    })))
}

fn round_up_seconds(d: SignedDuration) -> SignedDuration {
    if d.subsec_nanos() == 0 { d } else { SignedDuration::from_secs(d.as_secs() + 1) }
}
