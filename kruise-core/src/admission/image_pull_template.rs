//! The defaults an image-pull template gets, shared by the ImagePullJob and ImageListPullJob
//! webhooks and by an AdvancedCronJob's `imageListPullJobTemplate`.

use kruise_api::apps::v1beta1::{
    CompletionPolicyType, ImagePullJobTemplate, ImagePullPolicy, PullPolicy,
};

/// Most images one ImageListPullJob may list.
pub const MAX_IMAGES_PER_LIST_JOB: usize = 255;

/// The mutating webhook's defaults: completion policy Always, timeout 600 s, 3 retries, and
/// (when `image_pull_policy`) `imagePullPolicy: IfNotPresent`.
pub fn default_template(template: &mut ImagePullJobTemplate, image_pull_policy: bool) {
    if template.completion_policy.type_.is_none() {
        template.completion_policy.type_ = Some(CompletionPolicyType::Always);
    }
    let pull = template.pull_policy.get_or_insert_with(PullPolicy::default);
    pull.timeout_seconds.get_or_insert(600);
    pull.backoff_limit.get_or_insert(3);
    if image_pull_policy && template.image_pull_policy.is_none() {
        template.image_pull_policy = Some(ImagePullPolicy::IfNotPresent);
    }
}
