//! Image pre-download before a CloneSet's in-place update (upstream's
//! `PreDownloadImageForInPlaceUpdate`): ImagePullJobs pull the update revision's changed images
//! onto the nodes of the pods still at other revisions, so that their in-place update is
//! quicker. The jobs themselves are the shared ones of [`crate::workload::predownload`].
//!
//! Upstream's rules, on the CloneSet's last written status:
//!
//! - with the current and update revisions equal, the jobs the CloneSet controls are deleted;
//! - otherwise nothing happens until `status.updatedReadyReplicas` (0 when
//!   `status.updateRevision` is another revision) reaches
//!   `inPlaceUpdateStrategy.imagePreDownloadMinUpdatedReadyPods` (default 0);
//! - a revision labelled created or ignored was handled already;
//! - the revision is labelled ignored, without jobs, when the update recreates pods
//!   (`podUpdatePolicy: ReCreate` or no `rollingUpdate`), when `replicas` is at most 3, when
//!   every pod updates in one batch (no partition and `maxUnavailable`, default `20%` rounded
//!   down, covering `replicas`), or when the change from the current revision cannot be made
//!   in place;
//! - otherwise one job per container whose image differs from the current revision's, with
//!   `imagePreDownloadParallelism` (default 1) and `imagePreDownloadTimeoutSeconds` (default
//!   300), then the revision is labelled created.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::well_known::labels;

use super::round::Round;
use super::spec::UpdatePolicy;
use crate::intstr::{
    DEFAULT_CLONESET_MAX_UNAVAILABLE, Rounding, lenient_value, partition_replicas,
};
use crate::revision::HASH_LABEL;
use crate::workload::predownload::{self as shared, DEFAULT_PULL_TIMEOUT_SECONDS};

/// At most this many replicas, no image is pre-downloaded (upstream's
/// `minimumReplicasToPreDownloadImage`).
const MINIMUM_REPLICAS_TO_PRE_DOWNLOAD: i32 = 3;

/// Plans the pre-download step of the round, with the gate on.
pub(super) fn plan(r: &mut Round<'_, '_>) {
    let snapshot = r.snapshot;
    if !r.gates.pre_download_image_for_in_place_update {
        return;
    }
    if r.current.name == r.update.name {
        r.actions.extend(shared::delete_jobs(&snapshot.image_pull_jobs));
        return;
    }
    let spec = r.spec;
    let cs = spec.cs;
    let status = cs.status.clone().unwrap_or_default();
    let min_updated_ready =
        spec.in_place.and_then(|s| s.image_pre_download_min_updated_ready_pods).unwrap_or(0);
    let updated_ready =
        if r.update.name == status.update_revision { status.updated_ready_replicas } else { 0 };
    if min_updated_ready > updated_ready {
        return;
    }
    let (Some(current), Some(update)) = (r.current.object.as_ref(), r.update.object.as_ref())
    else {
        return;
    };
    if shared::handled(update) {
        return;
    }
    let ignore = |r: &mut Round<'_, '_>| {
        r.actions.push(shared::mark(&r.update.name, labels::IMAGE_PREDOWNLOAD_IGNORED));
    };
    if spec.policy == UpdatePolicy::ReCreate || spec.replicas <= MINIMUM_REPLICAS_TO_PRE_DOWNLOAD {
        return ignore(r);
    }
    let rolling = cs.spec.update_strategy.rolling_update.as_ref();
    let partition =
        match partition_replicas(rolling.and_then(|ru| ru.partition.as_ref()), cs.spec.replicas) {
            Ok(partition) => partition,
            // Upstream gives up on this round; the validating webhook rejects such values.
            Err(_) => return,
        };
    let default_max_unavailable = IntOrString::String(DEFAULT_CLONESET_MAX_UNAVAILABLE.to_owned());
    let max_unavailable =
        rolling.and_then(|ru| ru.max_unavailable.as_ref()).unwrap_or(&default_max_unavailable);
    let max_unavailable =
        lenient_value(max_unavailable, spec.replicas, Rounding::Down).unwrap_or(0);
    if partition == 0 && max_unavailable >= spec.replicas {
        return ignore(r);
    }
    if crate::inplace::calculate_revision_update_spec(current, update, &r.in_place_options)
        .is_none()
    {
        return ignore(r);
    }

    let settings = shared::PullSettings {
        parallelism: spec
            .in_place
            .and_then(|s| s.image_pre_download_parallelism.clone())
            .unwrap_or(IntOrString::Int(1)),
        timeout_seconds: spec
            .in_place
            .and_then(|s| s.image_pre_download_timeout_seconds)
            .unwrap_or(DEFAULT_PULL_TIMEOUT_SECONDS),
    };
    let owner = shared::Owner {
        kind: "CloneSet",
        metadata: &cs.metadata,
        template: &cs.spec.template,
        selector: cs.spec.selector.as_ref(),
    };
    let hash = update
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(HASH_LABEL))
        .map(String::as_str)
        .unwrap_or_default();
    shared::create_jobs(
        &owner,
        &settings,
        &[current],
        update,
        hash,
        &snapshot.image_pull_jobs,
        &mut r.actions,
        &mut r.events,
    );
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use k8s_openapi::api::apps::v1::ControllerRevision;
    use kruise_api::apps::v1beta1::{CloneSet, CloneSetStatus, ImagePullJob};
    use serde_json::{Value, json};

    use super::super::{Action, CloneSetPlan, CloneSetSnapshot, plan};

    const CREATED: &str = "apps.kruise.io/pre-predownload-created";
    const IGNORED: &str = "apps.kruise.io/image-predownload-ignored";

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("time")
    }

    fn cloneset(replicas: i32, image: &str, command: &str, rolling: &Value) -> CloneSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "CloneSet",
            "metadata": {"name": "cs", "namespace": "default", "uid": "cs-uid", "generation": 1},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "c"}},
                "template": {
                    "metadata": {"labels": {"app": "c"}, "annotations": {"note": "x"}},
                    "spec": {
                        "containers": [
                            {"name": "main", "image": image, "command": [command]},
                            {"name": "side", "image": "side:v1"}
                        ],
                        "imagePullSecrets": [{"name": "regcred"}]
                    }
                },
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}
            }
        }))
        .expect("cloneset")
    }

    fn created_revision(snapshot: &CloneSetSnapshot) -> ControllerRevision {
        plan(snapshot, now())
            .actions
            .into_iter()
            .find_map(|a| match a {
                Action::CreateRevision { revision } => Some(*revision),
                _ => None,
            })
            .expect("revision")
    }

    /// A CloneSet of `replicas` in the middle of an update from `img:v1` to `img:v2` (and
    /// from command `run` to `command`), with the gate on; and the update revision.
    fn updating(
        replicas: i32,
        command: &str,
        rolling: Value,
    ) -> (CloneSetSnapshot, ControllerRevision) {
        let old =
            created_revision(&CloneSetSnapshot::new(cloneset(replicas, "img:v1", "run", &rolling)));
        let mut with_old = CloneSetSnapshot::new(cloneset(replicas, "img:v2", command, &rolling));
        with_old.revisions = vec![old.clone()];
        let new = created_revision(&with_old);
        let mut cs = cloneset(replicas, "img:v2", command, &rolling);
        cs.status = Some(CloneSetStatus {
            observed_generation: 1,
            current_revision: old.metadata.name.clone().expect("name"),
            update_revision: new.metadata.name.clone().expect("name"),
            ..CloneSetStatus::default()
        });
        let mut snapshot = CloneSetSnapshot::new(cs);
        snapshot.revisions = vec![old, new.clone()];
        snapshot.feature_gates.pre_download_image_for_in_place_update = true;
        (snapshot, new)
    }

    fn in_place(extra: Value) -> Value {
        let mut rolling =
            json!({"partition": 2, "maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"});
        for (k, v) in extra.as_object().expect("object") {
            rolling[k] = v.clone();
        }
        rolling
    }

    fn jobs(plan: &CloneSetPlan) -> Vec<&ImagePullJob> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::CreateImagePullJob { job } => Some(job.as_ref()),
                _ => None,
            })
            .collect()
    }

    /// The revision label patches of `plan`, as (revision, label key).
    fn marks(plan: &CloneSetPlan) -> Vec<(String, String)> {
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

    fn hash_of(revision: &ControllerRevision) -> String {
        revision
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::revision::HASH_LABEL))
            .cloned()
            .expect("hash")
    }

    #[test]
    fn a_partitioned_in_place_update_pre_downloads_the_changed_image() {
        let rolling = in_place(json!({"inPlaceUpdateStrategy": {
            "imagePreDownloadParallelism": "50%",
            "imagePreDownloadTimeoutSeconds": 60,
        }}));
        let (snapshot, update) = updating(5, "run", rolling);
        let (name, hash) = (name_of(&update), hash_of(&update));
        let plan = plan(&snapshot, now());
        let jobs = jobs(&plan);
        assert_eq!(jobs.len(), 1, "only the container whose image changed: {jobs:?}");
        let job = serde_json::to_value(jobs[0]).expect("json");
        assert_eq!(job["metadata"]["name"], json!(format!("{name}-main")));
        assert_eq!(job["metadata"]["namespace"], "default");
        assert_eq!(
            job["metadata"]["labels"],
            json!({"app": "c", "controller.kubernetes.io/hash": hash})
        );
        let owner = &job["metadata"]["ownerReferences"][0];
        assert_eq!(
            [
                &owner["apiVersion"],
                &owner["kind"],
                &owner["name"],
                &owner["uid"],
                &owner["controller"]
            ],
            [
                &json!("apps.kruise.io/v1beta1"),
                &json!("CloneSet"),
                &json!("cs"),
                &json!("cs-uid"),
                &json!(true)
            ]
        );
        let spec = &job["spec"];
        assert_eq!(spec["image"], "img:v2");
        assert_eq!(spec["pullSecrets"], json!(["regcred"]));
        assert_eq!(spec["parallelism"], "50%");
        assert_eq!(spec["pullPolicy"], json!({"timeoutSeconds": 60, "backoffLimit": 1}));
        assert_eq!(
            spec["completionPolicy"],
            json!({"type": "Always", "ttlSecondsAfterFinished": 600})
        );
        assert_eq!(
            spec["podSelector"],
            json!({
                "matchLabels": {"app": "c"},
                "matchExpressions": [{"key": "controller-revision-hash", "operator": "NotIn", "values": [name, hash]}]
            })
        );
        assert_eq!(spec["sandboxConfig"]["annotations"], json!({"note": "x"}));
        let created =
            plan.events.iter().find(|e| e.reason == "CreatedImagePullJob").expect("event");
        assert_eq!(created.message, format!("created ImagePullJob {name}-main for image: img:v2"));
        let at = created.after_action.expect("tied to its action");
        assert!(matches!(plan.actions[at], Action::CreateImagePullJob { .. }));
        assert_eq!(marks(&plan), [(name, CREATED.to_owned())]);

        // Off by default.
        let mut off = snapshot.clone();
        off.feature_gates = Default::default();
        let plan = super::super::plan(&off, now());
        assert!(jobs_and_marks_empty(&plan));
    }

    fn jobs_and_marks_empty(plan: &CloneSetPlan) -> bool {
        jobs(plan).is_empty() && marks(plan).is_empty()
    }

    #[test]
    fn defaults_and_v1alpha1_annotations_set_parallelism_and_timeout() {
        let (snapshot, _) = updating(5, "run", in_place(json!({})));
        let plan = plan(&snapshot, now());
        let job = serde_json::to_value(jobs(&plan)[0]).expect("json");
        assert_eq!(job["spec"]["parallelism"], 1);
        assert_eq!(job["spec"]["pullPolicy"]["timeoutSeconds"], 300);

        // A v1alpha1 CloneSet carries them as annotations.
        let mut alpha =
            serde_json::to_value(cloneset(5, "img:v2", "run", &json!({}))).expect("json");
        alpha["apiVersion"] = json!("apps.kruise.io/v1alpha1");
        alpha["metadata"]["annotations"] = json!({
            "apps.kruise.io/image-predownload-parallelism": "2",
            "apps.kruise.io/image-predownload-timeout-seconds": "30",
        });
        alpha["spec"]["updateStrategy"] =
            json!({"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": 1});
        alpha["status"] = serde_json::to_value(
            snapshot.cloneset.to_v1beta1().expect("v1beta1").status.expect("status"),
        )
        .expect("json");
        let alpha: kruise_api::apps::v1alpha1::CloneSet =
            serde_json::from_value(alpha).expect("v1alpha1");
        let mut snapshot = snapshot.clone();
        snapshot.cloneset = alpha.into();
        let plan = super::super::plan(&snapshot, now());
        let job = serde_json::to_value(jobs(&plan)[0]).expect("json");
        assert_eq!(job["spec"]["parallelism"], 2);
        assert_eq!(job["spec"]["pullPolicy"]["timeoutSeconds"], 30);
    }

    #[test]
    fn updates_that_get_no_job_mark_the_revision_ignored() {
        let cases = [
            (
                "recreate",
                5,
                "run",
                json!({"partition": 2, "maxUnavailable": 1, "podUpdatePolicy": "ReCreate"}),
            ),
            ("three replicas", 3, "run", in_place(json!({}))),
            ("one batch", 5, "run", in_place(json!({"partition": 0, "maxUnavailable": "100%"}))),
            ("not in place", 5, "serve", in_place(json!({}))),
        ];
        for (case, replicas, command, rolling) in cases {
            let (snapshot, update) = updating(replicas, command, rolling);
            let plan = super::super::plan(&snapshot, now());
            assert!(jobs(&plan).is_empty(), "{case}");
            assert_eq!(marks(&plan), [(name_of(&update), IGNORED.to_owned())], "{case}");
        }
        // A partition, or a default 20% maxUnavailable (rounded down), is not one batch.
        for rolling in [
            in_place(json!({"maxUnavailable": "100%"})),
            json!({"partition": 0, "podUpdatePolicy": "InPlaceIfPossible"}),
        ] {
            let (snapshot, update) = updating(5, "run", rolling.clone());
            let plan = super::super::plan(&snapshot, now());
            assert_eq!(jobs(&plan).len(), 1, "{rolling}");
            assert_eq!(marks(&plan), [(name_of(&update), CREATED.to_owned())]);
        }
    }

    #[test]
    fn a_revision_already_handled_gets_no_job() {
        for key in [CREATED, IGNORED] {
            let (mut snapshot, _) = updating(5, "run", in_place(json!({})));
            let labels = snapshot.revisions[1].metadata.labels.get_or_insert_with(Default::default);
            labels.insert(key.into(), "true".into());
            assert!(jobs_and_marks_empty(&plan(&snapshot, now())), "{key}");
        }
    }

    #[test]
    fn jobs_wait_for_the_minimum_of_updated_ready_pods() {
        let rolling =
            in_place(json!({"inPlaceUpdateStrategy": {"imagePreDownloadMinUpdatedReadyPods": 2}}));
        let (snapshot, _) = updating(5, "run", rolling);
        let with_ready = |ready: i32, same_revision: bool| {
            let mut snapshot = snapshot.clone();
            let mut cs = snapshot.cloneset.to_v1beta1().expect("v1beta1");
            let status = cs.status.as_mut().expect("status");
            status.updated_ready_replicas = ready;
            if !same_revision {
                status.update_revision = "cs-other".into();
            }
            snapshot.cloneset = cs.into();
            plan(&snapshot, now())
        };
        assert!(jobs_and_marks_empty(&with_ready(1, true)));
        assert_eq!(jobs(&with_ready(2, true)).len(), 1);
        // Ready pods of another update revision do not count.
        assert!(jobs_and_marks_empty(&with_ready(2, false)));
    }

    #[test]
    fn an_existing_job_is_not_created_again_and_jobs_go_once_revisions_agree() {
        let (mut snapshot, update) = updating(5, "run", in_place(json!({})));
        snapshot.image_pull_jobs = vec![format!("{}-main", name_of(&update))];
        let plan = plan(&snapshot, now());
        assert!(jobs(&plan).is_empty());
        assert_eq!(marks(&plan), [(name_of(&update), CREATED.to_owned())]);
        assert!(!plan.actions.iter().any(|a| matches!(a, Action::DeleteImagePullJob { .. })));

        let mut cs = snapshot.cloneset.to_v1beta1().expect("v1beta1");
        cs.status.as_mut().expect("status").current_revision = name_of(&update);
        snapshot.cloneset = cs.into();
        let plan = super::super::plan(&snapshot, now());
        let removed: Vec<&Action> = plan
            .actions
            .iter()
            .filter(|a| matches!(a, Action::DeleteImagePullJob { .. }))
            .collect();
        assert_eq!(
            removed,
            [&Action::DeleteImagePullJob { name: snapshot.image_pull_jobs[0].clone() }]
        );
        assert!(jobs_and_marks_empty(&plan));
    }
}
