//! What every workload planner shares: the action vocabulary ([`Action`], [`Patch`],
//! [`WorkloadPlan`]), the expectation gate each plan starts with, and small builders of the
//! actions several planners emit (releasing a pod, lifecycle transitions).
//!
//! CloneSet ([`crate::cloneset`]) and Advanced StatefulSet ([`crate::statefulset`]) plans are
//! both a [`WorkloadPlan`] over their own status type, so kruise-kube carries any of them out
//! with one applier.

mod adopt;
mod facts;
pub mod inplace;
mod plan;
pub(crate) mod predownload;
pub mod revisions;

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

pub use adopt::adoption_plan;
pub(crate) use facts::LabelLookup;
pub use facts::{PodFacts, PodSource, SnapshotPod};
pub use plan::{
    Action, Blocked, DeletePurpose, Event, EventType, Guard, NewPod, NodePin, ObjectKind, Patch,
    Plan, PodPatchPurpose, PodStatusPurpose, Subresource, Target, WorkloadPlan,
};

use crate::expectations::{ControllerExpectations, ExpectationState, ScaleAction};

/// Defines a workload object at either of its served API versions (`apps.kruise.io/v1beta1`,
/// the stored one, and `v1alpha1`): an enum with both, conversion to v1beta1, and serde that
/// decodes by `apiVersion` (none means v1beta1).
macro_rules! versioned_object {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $field:literal, $beta:ty, $alpha:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            /// `apps.kruise.io/v1beta1` (the stored version).
            V1beta1(Box<$beta>),
            /// `apps.kruise.io/v1alpha1`.
            V1alpha1(Box<$alpha>),
        }

        impl From<$beta> for $name {
            fn from(object: $beta) -> Self {
                Self::V1beta1(Box::new(object))
            }
        }

        impl From<$alpha> for $name {
            fn from(object: $alpha) -> Self {
                Self::V1alpha1(Box::new(object))
            }
        }

        impl $name {
            /// The object as v1beta1, converting a v1alpha1 one.
            pub fn to_v1beta1(&self) -> Result<$beta, kruise_api::conversion::ConversionError> {
                match self {
                    Self::V1beta1(object) => Ok(object.as_ref().clone()),
                    Self::V1alpha1(object) => {
                        kruise_api::conversion::to_hub(object.as_ref().clone())
                    }
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    Self::V1beta1(object) => object.serialize(serializer),
                    Self::V1alpha1(object) => object.serialize(serializer),
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            /// Decodes by `apiVersion`: `apps.kruise.io/v1alpha1` gives the v1alpha1 object;
            /// `apps.kruise.io/v1beta1` or no `apiVersion` gives the v1beta1 one.
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use serde::de::Error;
                let mut value = serde_json::Value::deserialize(deserializer)?;
                let api_version =
                    value.get("apiVersion").and_then(|v| v.as_str()).map(str::to_owned);
                if let serde_json::Value::Object(map) = &mut value {
                    map.entry("kind").or_insert_with(|| $kind.into());
                }
                match api_version.as_deref() {
                    Some("apps.kruise.io/v1alpha1") => serde_json::from_value(value)
                        .map(|object| Self::V1alpha1(Box::new(object)))
                        .map_err(D::Error::custom),
                    Some("apps.kruise.io/v1beta1") | None => {
                        if let serde_json::Value::Object(map) = &mut value {
                            map.entry("apiVersion")
                                .or_insert_with(|| "apps.kruise.io/v1beta1".into());
                        }
                        serde_json::from_value(value)
                            .map(|object| Self::V1beta1(Box::new(object)))
                            .map_err(D::Error::custom)
                    }
                    Some(other) => Err(D::Error::custom(format_args!(
                        "{}.apiVersion {other:?} is not apps.kruise.io/v1alpha1 or v1beta1",
                        $field
                    ))),
                }
            }
        }
    };
}
pub(crate) use versioned_object;

use crate::lifecycle::LifecycleTransition;

/// The first expectation gate of every workload plan: scale expectations.
///
/// Pending creations and deletions are observed against `owned` (the metadata of the owned
/// pods and PVCs: a name is live while its object exists and is not being deleted). While a write of an earlier plan is not yet
/// visible, the answer is the plan to return instead: nothing to do,
/// [`WorkloadPlan::blocked`] saying what is awaited, and a requeue when the wait would time
/// out. Expectations older than `timeout` are dropped with a Warning Event, and planning goes
/// on.
pub fn settle_scale_expectations<'m, S>(
    expectations: &mut ControllerExpectations,
    owned: impl IntoIterator<Item = &'m ObjectMeta>,
    now: Timestamp,
    timeout: SignedDuration,
) -> Result<Vec<Event>, Box<WorkloadPlan<S>>> {
    let mut events = Vec::new();
    if expectations.scale.is_empty() {
        return Ok(events);
    }
    let live: std::collections::BTreeSet<&str> = owned
        .into_iter()
        .filter(|meta| meta.deletion_timestamp.is_none())
        .filter_map(|meta| meta.name.as_deref())
        .collect();
    expectations.scale.observe_all(|name| live.contains(name));
    match expectations.scale.state(now, timeout) {
        ExpectationState::Satisfied => {}
        ExpectationState::Waiting { remaining, .. } => {
            let blocked = Blocked::ScaleExpectations {
                creations: pending(expectations, ScaleAction::Create),
                deletions: pending(expectations, ScaleAction::Delete),
            };
            return Err(waiting(expectations, blocked, remaining));
        }
        ExpectationState::TimedOut { waited } => {
            let mut names = pending(expectations, ScaleAction::Create);
            names.extend(pending(expectations, ScaleAction::Delete));
            events.push(Event {
                type_: EventType::Warning,
                reason: "ExpectationTimeout".into(),
                message: format!(
                    "scale expectations unsatisfied for {waited:#}, dropping them: {}",
                    names.join(", ")
                ),
                after_action: None,
            });
            expectations.scale.clear();
        }
    }
    Ok(events)
}

/// The second expectation gate: pods patched by an earlier plan must show the
/// resourceVersion the patch returned (or a newer one) before the next plan reads them.
///
/// `observed` gives an owned pod's name and resourceVersion by UID; a pod it does not know is
/// gone, and nothing is awaited for it. The answer while waiting is as in
/// [`settle_scale_expectations`]; expectations older than `timeout` are dropped.
pub fn settle_resource_versions<'p, S>(
    expectations: &mut ControllerExpectations,
    observed: impl Fn(&str) -> Option<(&'p str, &'p str)>,
    now: Timestamp,
    timeout: SignedDuration,
) -> Result<(), Box<WorkloadPlan<S>>> {
    let tracked: Vec<String> =
        expectations.resource_versions.iter().map(|(uid, _)| uid.to_owned()).collect();
    for uid in tracked {
        let Some((name, resource_version)) = observed(&uid) else {
            expectations.resource_versions.remove(&uid);
            continue;
        };
        match expectations.resource_versions.state(&uid, resource_version, now, timeout) {
            ExpectationState::Satisfied => {
                expectations.resource_versions.observe(&uid, resource_version)
            }
            ExpectationState::Waiting { remaining, .. } => {
                let blocked = Blocked::ResourceVersion { pod: name.to_owned() };
                return Err(waiting(expectations, blocked, remaining));
            }
            ExpectationState::TimedOut { .. } => expectations.resource_versions.remove(&uid),
        }
    }
    Ok(())
}

fn pending(expectations: &ControllerExpectations, action: ScaleAction) -> Vec<String> {
    expectations.scale.pending(action).map(str::to_owned).collect()
}

fn waiting<S>(
    expectations: &mut ControllerExpectations,
    blocked: Blocked,
    remaining: SignedDuration,
) -> Box<WorkloadPlan<S>> {
    let mut plan = WorkloadPlan::empty(std::mem::take(expectations));
    plan.blocked = Some(blocked);
    plan.requeue_after = Some(remaining);
    Box::new(plan)
}

/// The owned pods by UID, as [`settle_resource_versions`] reads them: name and
/// resourceVersion.
pub fn pods_by_uid<'p>(
    pods: impl IntoIterator<Item = &'p ObjectMeta>,
) -> BTreeMap<&'p str, (&'p str, &'p str)> {
    pods.into_iter()
        .map(|meta| {
            (
                meta.uid.as_deref().unwrap_or_default(),
                (
                    meta.name.as_deref().unwrap_or_default(),
                    meta.resource_version.as_deref().unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// The action that drops the workload's ownerReference (UID `owner_uid`) from a pod its
/// selector no longer matches. The patch names the pod's UID, so it cannot reach a pod of the
/// same name created since.
pub fn release_pod(pod: &Pod, owner_uid: &str) -> Action {
    Action::PatchPod {
        namespace: None,
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        purpose: PodPatchPurpose::Release,
        patch: Patch::strategic(json!({
            "metadata": {
                "ownerReferences": [{ "$patch": "delete", "uid": owner_uid }],
                "uid": pod.metadata.uid,
            }
        })),
    }
}

/// Appends the actions of a lifecycle `transition` of the pod `name`/`uid`: the
/// `KruisePodReady` status change first, then the metadata patch. Returns whether the state
/// label changes.
pub fn push_lifecycle(
    actions: &mut Vec<Action>,
    name: &str,
    uid: &str,
    transition: LifecycleTransition,
) -> bool {
    if let Some(readiness) = &transition.readiness {
        actions.push(Action::PatchPodStatus {
            namespace: None,
            name: name.to_owned(),
            uid: uid.to_owned(),
            purpose: PodStatusPurpose::KruisePodReady,
            patch: Patch::strategic(readiness.to_status_patch()),
        });
    }
    match &transition.patch {
        Some(patch) => {
            actions.push(Action::PatchPod {
                namespace: None,
                name: name.to_owned(),
                uid: uid.to_owned(),
                purpose: PodPatchPurpose::Lifecycle,
                patch: Patch::strategic(patch.to_strategic_merge_patch()),
            });
            true
        }
        None => false,
    }
}

/// Whole seconds, rounded up, at least one: requeue delays for minReadySeconds and grace
/// periods, so that the next plan runs once the time has passed.
pub fn round_up_seconds(d: SignedDuration) -> SignedDuration {
    let secs = d.as_secs() + i64::from(d.subsec_nanos() > 0);
    SignedDuration::from_secs(secs.max(1))
}

/// Serde for [`SignedDuration`] in jiff's friendly form (`5m`, `1h 30s`).
pub(crate) mod duration_serde {
    use jiff::SignedDuration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        value: &SignedDuration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{value:#}"))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SignedDuration, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse::<SignedDuration>().map_err(|err| {
            serde::de::Error::custom(format_args!("invalid duration {text:?}: {err}"))
        })
    }

    /// The same for `Option<SignedDuration>`.
    pub(crate) mod option {
        use jiff::SignedDuration;
        use serde::Serializer;

        pub(crate) fn serialize<S: Serializer>(
            value: &Option<SignedDuration>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match value {
                Some(value) => serializer.collect_str(&format_args!("{value:#}")),
                None => serializer.serialize_none(),
            }
        }
    }
}
