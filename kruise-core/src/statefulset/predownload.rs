//! Image pre-download before an Advanced StatefulSet's in-place update (upstream's
//! `PreDownloadImageForInPlaceUpdate`, `statefulset_predownload_image.go`): ImagePullJobs pull
//! the update revision's changed images onto the nodes of the pods still at other revisions.
//! The jobs are the shared ones of [`crate::workload::predownload`].
//!
//! Upstream's rules, on the set's last written status:
//!
//! - with the current and update revisions equal, the jobs the set controls are deleted;
//! - otherwise nothing happens until `status.updatedReadyReplicas` (0 when
//!   `status.updateRevision` is another revision) reaches the annotation
//!   `apps.kruise.io/image-predownload-min-updated-ready-pods` (an integer or a percentage of
//!   `replicas`, rounded up; default 0);
//! - a revision labelled created or ignored was handled already;
//! - the revision is labelled ignored, without jobs, for `OnDelete`, without `rollingUpdate`,
//!   with `podUpdatePolicy: ReCreate`, with at most 3 replicas, when every pod updates in one
//!   batch (no partition and `maxUnavailable`, default 1, covering `replicas`), or when the
//!   change from the current revision cannot be made in place;
//! - otherwise one job per container whose image differs from the current revision's, with
//!   the annotations `apps.kruise.io/image-predownload-parallelism` (an integer, default 1)
//!   and `apps.kruise.io/image-predownload-timeout-seconds` (default 300), then the revision
//!   is labelled created.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    PodUpdateStrategyType, StatefulSet, StatefulSetUpdateStrategyType,
};
use kruise_api::well_known::{annotations, labels};

use crate::inplace::UpdateOptions;
use crate::intstr::{Rounding, fractional_value, lenient_value};
use crate::revision::HASH_LABEL;
use crate::workload::predownload as shared;
use crate::workload::{Action, Event};

/// At most this many replicas, no image is pre-downloaded (upstream's
/// `minimumReplicasToPreDownloadImage`).
const MINIMUM_REPLICAS_TO_PRE_DOWNLOAD: i32 = 3;

/// What the pre-download step reads.
pub(super) struct Inputs<'a> {
    /// The set (v1beta1), with the status last written.
    pub set: &'a StatefulSet,
    /// `spec.replicas`.
    pub replicas: i32,
    /// The current and update revisions' names.
    pub current_name: &'a str,
    pub update_name: &'a str,
    /// The current and update revisions.
    pub current: Option<&'a ControllerRevision>,
    pub update: Option<&'a ControllerRevision>,
    /// The set's in-place update options.
    pub in_place: &'a UpdateOptions,
    /// The ImagePullJobs the set controls, by name.
    pub jobs: &'a [String],
}

/// Appends the pre-download actions, and their Events, to `actions` and `events`.
pub(super) fn plan(input: &Inputs<'_>, actions: &mut Vec<Action>, events: &mut Vec<Event>) {
    if input.current_name == input.update_name {
        actions.extend(shared::delete_jobs(input.jobs));
        return;
    }
    let set = input.set;
    let replicas = input.replicas;
    let set_annotations = set.metadata.annotations.as_ref();
    let annotated = |key: &str| set_annotations.and_then(|a| a.get(key));
    let min_updated_ready = annotated(annotations::IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS)
        .map_or(0, |value| {
            let value = match value.parse::<i32>() {
                Ok(n) => IntOrString::Int(n),
                Err(_) => IntOrString::String(value.clone()),
            };
            fractional_value(&value, replicas, Rounding::Up).unwrap_or(0)
        });
    let status = set.status.clone().unwrap_or_default();
    let updated_ready =
        if input.update_name == status.update_revision { status.updated_ready_replicas } else { 0 };
    if min_updated_ready > updated_ready {
        return;
    }
    let (Some(current), Some(update)) = (input.current, input.update) else { return };
    if shared::handled(update) {
        return;
    }
    let ignore = |actions: &mut Vec<Action>| {
        actions.push(shared::mark(input.update_name, labels::IMAGE_PREDOWNLOAD_IGNORED));
    };
    let strategy = &set.spec.update_strategy;
    let Some(rolling) = strategy.rolling_update.as_ref() else { return ignore(actions) };
    if strategy.type_ == Some(StatefulSetUpdateStrategyType::OnDelete)
        || rolling.pod_update_policy == Some(PodUpdateStrategyType::ReCreate)
        || replicas <= MINIMUM_REPLICAS_TO_PRE_DOWNLOAD
    {
        return ignore(actions);
    }
    let partition = rolling.partition.unwrap_or(0);
    let one = IntOrString::String("1".to_owned());
    let max_unavailable = rolling.max_unavailable.as_ref().unwrap_or(&one);
    let max_unavailable = lenient_value(max_unavailable, replicas, Rounding::Down).unwrap_or(0);
    if partition == 0 && max_unavailable >= replicas {
        return ignore(actions);
    }
    if crate::inplace::calculate_revision_update_spec(current, update, input.in_place).is_none() {
        return ignore(actions);
    }

    let settings = shared::PullSettings::from_annotations(set.metadata.annotations.as_ref());
    let owner = shared::Owner {
        kind: "StatefulSet",
        metadata: &set.metadata,
        template: &set.spec.template,
        selector: set.spec.selector.as_ref(),
    };
    let hash = update
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(HASH_LABEL))
        .map(String::as_str)
        .unwrap_or_default();
    shared::create_jobs(&owner, &settings, &[current], update, hash, input.jobs, actions, events);
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use k8s_openapi::api::apps::v1::ControllerRevision;
    use kruise_api::apps::v1beta1::{StatefulSet, StatefulSetStatus};
    use serde_json::{Value, json};

    use super::super::{StatefulSetPlan, StatefulSetSnapshot, plan};
    use crate::workload::Action;

    const CREATED: &str = "apps.kruise.io/pre-predownload-created";
    const IGNORED: &str = "apps.kruise.io/image-predownload-ignored";

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("time")
    }

    fn set(
        replicas: i32,
        image: &str,
        command: &str,
        strategy: &Value,
        annotations: &Value,
    ) -> StatefulSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet",
            "metadata": {
                "name": "web", "namespace": "default", "uid": "sts-uid", "generation": 1,
                "annotations": annotations,
            },
            "spec": {
                "replicas": replicas,
                "serviceName": "web",
                "selector": {"matchLabels": {"app": "s"}},
                "template": {
                    "metadata": {"labels": {"app": "s"}},
                    "spec": {"containers": [
                        {"name": "main", "image": image, "command": [command]},
                        {"name": "side", "image": "side:v1"}
                    ]}
                },
                "updateStrategy": strategy
            }
        }))
        .expect("statefulset")
    }

    fn created_revision(snapshot: &StatefulSetSnapshot) -> ControllerRevision {
        plan(snapshot, now())
            .actions
            .into_iter()
            .find_map(|a| match a {
                Action::CreateRevision { revision } => Some(*revision),
                _ => None,
            })
            .expect("revision")
    }

    fn in_place() -> Value {
        json!({"type": "RollingUpdate", "rollingUpdate": {
            "partition": 2, "maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"
        }})
    }

    /// A set of `replicas` updating from `img:v1` to `img:v2` (and from command `run` to
    /// `command`), with the gate on; and the update revision.
    fn updating(
        replicas: i32,
        command: &str,
        strategy: Value,
        annotations: Value,
    ) -> (StatefulSetSnapshot, ControllerRevision) {
        let old = created_revision(&StatefulSetSnapshot::new(set(
            replicas,
            "img:v1",
            "run",
            &strategy,
            &annotations,
        )));
        let mut with_old =
            StatefulSetSnapshot::new(set(replicas, "img:v2", command, &strategy, &annotations));
        with_old.revisions = vec![old.clone()];
        let new = created_revision(&with_old);
        let mut sts = set(replicas, "img:v2", command, &strategy, &annotations);
        sts.status = Some(StatefulSetStatus {
            observed_generation: 1,
            current_revision: old.metadata.name.clone().expect("name"),
            update_revision: new.metadata.name.clone().expect("name"),
            ..StatefulSetStatus::default()
        });
        let mut snapshot = StatefulSetSnapshot::new(sts);
        snapshot.revisions = vec![old, new.clone()];
        snapshot.feature_gates.pre_download_image_for_in_place_update = true;
        (snapshot, new)
    }

    fn jobs(plan: &StatefulSetPlan) -> Vec<Value> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::CreateImagePullJob { job } => serde_json::to_value(job).ok(),
                _ => None,
            })
            .collect()
    }

    fn marks(plan: &StatefulSetPlan) -> Vec<(String, String)> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::PatchRevision { name, patch } => {
                    let labels = patch.body()["metadata"]["labels"].as_object()?;
                    Some((name.clone(), labels.keys().next()?.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn name_of(revision: &ControllerRevision) -> String {
        revision.metadata.name.clone().expect("name")
    }

    #[test]
    fn a_partitioned_in_place_update_pre_downloads_the_changed_image() {
        let annotations = json!({
            "apps.kruise.io/image-predownload-parallelism": "2",
            "apps.kruise.io/image-predownload-timeout-seconds": "60",
        });
        let (snapshot, update) = updating(5, "run", in_place(), annotations);
        let name = name_of(&update);
        let plan = plan(&snapshot, now());
        let jobs = jobs(&plan);
        assert_eq!(jobs.len(), 1, "only the container whose image changed: {jobs:?}");
        let job = &jobs[0];
        assert_eq!(job["metadata"]["name"], json!(format!("{name}-main")));
        let owner = &job["metadata"]["ownerReferences"][0];
        assert_eq!((&owner["kind"], &owner["uid"]), (&json!("StatefulSet"), &json!("sts-uid")));
        assert_eq!(job["spec"]["image"], "img:v2");
        assert_eq!(job["spec"]["parallelism"], 2);
        assert_eq!(job["spec"]["pullPolicy"]["timeoutSeconds"], 60);
        assert!(plan.events.iter().any(|e| e.reason == "CreatedImagePullJob"));
        assert_eq!(marks(&plan), [(name, CREATED.to_owned())]);

        let mut off = snapshot.clone();
        off.feature_gates = Default::default();
        let plan = super::super::plan(&off, now());
        assert!(self::jobs(&plan).is_empty() && marks(&plan).is_empty());
    }

    #[test]
    fn updates_that_get_no_job_mark_the_revision_ignored() {
        let recreate = json!({"type": "RollingUpdate", "rollingUpdate": {
            "partition": 2, "podUpdatePolicy": "ReCreate"
        }});
        let on_delete = json!({"type": "OnDelete", "rollingUpdate": {"partition": 2}});
        let one_batch = json!({"type": "RollingUpdate", "rollingUpdate": {
            "maxUnavailable": "100%", "podUpdatePolicy": "InPlaceIfPossible"
        }});
        let cases = [
            ("recreate", 5, "run", recreate),
            ("on delete", 5, "run", on_delete),
            ("three replicas", 3, "run", in_place()),
            ("one batch", 5, "run", one_batch),
            ("not in place", 5, "serve", in_place()),
        ];
        for (case, replicas, command, strategy) in cases {
            let (snapshot, update) = updating(replicas, command, strategy, json!({}));
            let plan = plan(&snapshot, now());
            assert!(jobs(&plan).is_empty(), "{case}");
            assert_eq!(marks(&plan), [(name_of(&update), IGNORED.to_owned())], "{case}");
        }
    }

    #[test]
    fn jobs_wait_for_the_minimum_of_updated_ready_pods_and_go_once_revisions_agree() {
        let annotations = json!({"apps.kruise.io/image-predownload-min-updated-ready-pods": "40%"});
        let (snapshot, update) = updating(5, "run", in_place(), annotations);
        let with = |ready: i32, current: Option<String>| {
            let mut snapshot = snapshot.clone();
            let mut sts = snapshot.statefulset.to_v1beta1().expect("v1beta1");
            let status = sts.status.as_mut().expect("status");
            status.updated_ready_replicas = ready;
            if let Some(current) = current {
                status.current_revision = current;
            }
            snapshot.statefulset = sts.into();
            snapshot.image_pull_jobs = vec!["old-job".into()];
            plan(&snapshot, now())
        };
        // 40% of 5 is 2.
        let waiting = with(1, None);
        assert!(jobs(&waiting).is_empty() && marks(&waiting).is_empty());
        assert_eq!(jobs(&with(2, None)).len(), 1);
        let done = with(5, Some(name_of(&update)));
        assert!(jobs(&done).is_empty() && marks(&done).is_empty());
        assert!(done.actions.contains(&Action::DeleteImagePullJob { name: "old-job".into() }));
    }
}
