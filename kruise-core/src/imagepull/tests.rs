#![allow(clippy::unwrap_used)]

use serde_json::json;

use crate::admission::imagepulljob::{validate_image_list_pull_job, validate_image_pull_job};
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
