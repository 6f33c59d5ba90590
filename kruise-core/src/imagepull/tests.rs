#![allow(clippy::unwrap_used)]

use serde_json::json;

use crate::imagepull::admission::{validate_image_list_pull_job, validate_image_pull_job};
use kruise_api::apps::v1beta1::{ImageListPullJob, ImagePullJob};

#[test]
fn bad_image_names_spec_image() {
    let job: ImagePullJob = serde_json::from_value(json!({
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"image": "Nginx:1", "completionPolicy": {"type": "Always"}}
    }))
    .unwrap();
    let errs = validate_image_pull_job(&job, None);
    assert_eq!(errs.iter().next().unwrap().to_string().split(':').next().unwrap(), "spec.image");
    let list: ImageListPullJob = serde_json::from_value(json!({
        "metadata": {"name": "l", "namespace": "ns"},
        "spec": {"images": ["nginx", "nginx"], "completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 3}}
    }))
    .unwrap();
    assert!(!validate_image_list_pull_job(&list).is_empty());
}

mod pod_events {
    use std::collections::BTreeMap;

    use serde_json::json;

    use crate::imagepull::{PodPlacement, pod_selector_jobs_to_wake};
    use kruise_api::apps::v1beta1::ImagePullJob;

    fn job(name: &str, pod_selector: Option<serde_json::Value>, done: bool) -> ImagePullJob {
        let mut spec = json!({"image": "nginx:1", "completionPolicy": {"type": "Always"}});
        if let Some(selector) = pod_selector {
            spec["podSelector"] = selector;
        }
        let mut job = json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec});
        if done {
            job["status"] = json!({"completionTime": "2026-11-27T00:00:00Z"});
        }
        serde_json::from_value(job).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn names(jobs: Vec<&ImagePullJob>) -> Vec<&str> {
        jobs.iter().map(|j| j.metadata.name.as_deref().unwrap()).collect()
    }

    #[test]
    fn only_active_pod_selector_jobs_matching_a_scheduled_pod_wake() {
        let jobs = [
            job("web", Some(json!({"matchLabels": {"app": "web"}})), false),
            job("web-done", Some(json!({"matchLabels": {"app": "web"}})), true),
            job("db", Some(json!({"matchLabels": {"app": "db"}})), false),
            job("nodes", None, false),
            job(
                "bad",
                Some(json!({"matchExpressions": [{"key": "app", "operator": "Nope"}]})),
                false,
            ),
        ];
        let web = labels(&[("app", "web")]);
        let db = labels(&[("app", "db")]);
        let at = |labels, node| PodPlacement { labels, node, deleting: false };

        // Created unscheduled, then scheduled: only the scheduling wakes, the matching job.
        assert!(pod_selector_jobs_to_wake(None, Some(at(&web, "")), &jobs).is_empty());
        let scheduled = pod_selector_jobs_to_wake(Some(at(&web, "")), Some(at(&web, "n1")), &jobs);
        assert_eq!(names(scheduled), ["web"]);
        // Created already scheduled; deleted; being deleted.
        assert_eq!(names(pod_selector_jobs_to_wake(None, Some(at(&web, "n1")), &jobs)), ["web"]);
        assert_eq!(names(pod_selector_jobs_to_wake(Some(at(&db, "n1")), None, &jobs)), ["db"]);
        let deleting = PodPlacement { deleting: true, ..at(&web, "n1") };
        let woken = pod_selector_jobs_to_wake(Some(at(&web, "n1")), Some(deleting), &jobs);
        assert_eq!(names(woken), ["web"]);
        // A status-only update of a scheduled pod wakes nothing; a relabel wakes both sides.
        assert!(
            pod_selector_jobs_to_wake(Some(at(&web, "n1")), Some(at(&web, "n1")), &jobs).is_empty()
        );
        let relabelled =
            pod_selector_jobs_to_wake(Some(at(&web, "n1")), Some(at(&db, "n1")), &jobs);
        assert_eq!(names(relabelled), ["web", "db"]);
        // A label the selectors do not read wakes nothing.
        let extra = labels(&[("app", "web"), ("tier", "x")]);
        assert!(
            pod_selector_jobs_to_wake(Some(at(&web, "n1")), Some(at(&extra, "n1")), &jobs)
                .is_empty()
        );
        // A deleted pod that never got a node wakes nothing.
        assert!(pod_selector_jobs_to_wake(Some(at(&web, "")), None, &jobs).is_empty());
    }
}
