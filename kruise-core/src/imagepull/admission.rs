//! ImagePullJob, ImageListPullJob and NodeImage admission: upstream's defaulting and
//! validation (`vimagepulljob.kb.io`, `vimagelistpulljob.kb.io`, `vnodeimage.kb.io` and their
//! mutating twins), over v1beta1; v1alpha1 objects are converted first.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1 as alpha;
use kruise_api::apps::v1beta1::{
    CompletionPolicyType, ImageListPullJob, ImagePullJob, ImagePullJobTemplate, ImageTagPullPolicy,
    NodeImage,
};
use kruise_api::conversion::HubConvertible;

use crate::admission::meta::label_selector_as_selector;
use crate::field::{FieldError, FieldErrors, FieldPath};

/// Most images one NodeImage may list.
pub const MAX_IMAGES_PER_NODE: usize = 256;
pub use crate::admission::image_pull_template::{MAX_IMAGES_PER_LIST_JOB, default_template};

/// ImagePullJob defaulting.
pub fn default_image_pull_job(job: &mut ImagePullJob) {
    default_template(&mut job.spec.template, true);
}

/// ImageListPullJob defaulting.
pub fn default_image_list_pull_job(job: &mut ImageListPullJob) {
    default_template(&mut job.spec.template, false);
}

/// NodeImage defaulting: `createdAt` (now) and the tag pull policy's timeout and retries.
pub fn default_node_image(ni: &mut NodeImage, now: jiff::Timestamp) {
    for spec in ni.spec.images.values_mut() {
        for tag in &mut spec.tags {
            tag.created_at.get_or_insert_with(|| {
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(now.as_second()).unwrap_or(now),
                )
            });
            let policy = tag.pull_policy.get_or_insert_with(ImageTagPullPolicy::default);
            policy.timeout_seconds.get_or_insert(600);
            policy.backoff_limit.get_or_insert(3);
        }
        spec.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
    }
    if let Some(status) = ni.status.as_mut() {
        for st in status.image_statuses.values_mut() {
            st.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
        }
    }
}

/// Validates an ImagePullJob (create and update; on update `old` makes `pullSecrets`
/// immutable).
pub fn validate_image_pull_job(job: &ImagePullJob, old: Option<&ImagePullJob>) -> FieldErrors {
    let spec = FieldPath::new("spec");
    let mut errs = FieldErrors::new();
    if let Some(old) = old
        && old.spec.template.pull_secrets != job.spec.template.pull_secrets
    {
        errs.push(FieldError::forbidden(
            &spec.child("pullSecrets"),
            "spec.pullSecrets is immutable",
        ));
        return errs;
    }
    errs.extend(validate_selectors(&job.spec.template, &spec));
    if !errs.is_empty() {
        return errs;
    }
    if job.spec.image.is_empty() {
        errs.push(FieldError::required(&spec.child("image"), "image can not be empty"));
        return errs;
    }
    if let Err(e) = crate::image::ImageRef::parse(&job.spec.image) {
        errs.push(FieldError::invalid(
            &spec.child("image"),
            job.spec.image.as_str(),
            format!("invalid image {}: {e}", job.spec.image),
        ));
        return errs;
    }
    errs.extend(validate_parallelism(&job.spec.template, &spec));
    if !errs.is_empty() {
        return errs;
    }
    errs.extend(validate_completion(&job.spec.template, &spec, true));
    errs
}

/// Validates an ImageListPullJob.
pub fn validate_image_list_pull_job(job: &ImageListPullJob) -> FieldErrors {
    let spec = FieldPath::new("spec");
    let mut errs = FieldErrors::new();
    errs.extend(validate_selectors(&job.spec.template, &spec));
    if !errs.is_empty() {
        return errs;
    }
    let images = &job.spec.images;
    let path = spec.child("images");
    if images.is_empty() {
        errs.push(FieldError::required(&path, "image can not be empty"));
        return errs;
    }
    let mut seen = BTreeSet::new();
    for (i, image) in images.iter().enumerate() {
        if !seen.insert(image) {
            errs.push(FieldError::duplicate(&path.index(i), image.as_str()));
            return errs;
        }
    }
    if images.len() > MAX_IMAGES_PER_LIST_JOB {
        errs.push(FieldError::too_many(&path, images.len(), MAX_IMAGES_PER_LIST_JOB));
        return errs;
    }
    for (i, image) in images.iter().enumerate() {
        if let Err(e) = crate::image::ImageRef::parse(image) {
            errs.push(FieldError::invalid(
                &path.index(i),
                image.as_str(),
                format!("invalid image {image}: {e}"),
            ));
            return errs;
        }
    }
    errs.extend(validate_parallelism(&job.spec.template, &spec));
    if !errs.is_empty() {
        return errs;
    }
    errs.extend(validate_completion(&job.spec.template, &spec, false));
    errs
}

/// Validates a NodeImage: at most [`MAX_IMAGES_PER_NODE`] images; each tag non-empty,
/// unique, with `createdAt`, a non-negative version and a pull policy with a TTL.
pub fn validate_node_image(ni: &NodeImage) -> FieldErrors {
    let images = FieldPath::new("spec").child("images");
    let mut errs = FieldErrors::new();
    if ni.spec.images.len() > MAX_IMAGES_PER_NODE {
        errs.push(FieldError::too_many(&images, ni.spec.images.len(), MAX_IMAGES_PER_NODE));
        return errs;
    }
    for (name, spec) in &ni.spec.images {
        let path = images.key(name);
        if name.is_empty() {
            errs.push(FieldError::required(&path, "image name can not be empty"));
            return errs;
        }
        let mut seen = BTreeSet::new();
        for (i, tag) in spec.tags.iter().enumerate() {
            let tp = path.child("tags").index(i);
            let full = format!("{name}/{}", tag.tag);
            let err = if tag.tag.is_empty() {
                Some(FieldError::required(
                    &tp.child("tag"),
                    format!("tag for image {name} can not be empty"),
                ))
            } else if !seen.insert(&tag.tag) {
                Some(FieldError::duplicate(&tp.child("tag"), tag.tag.as_str()))
            } else if tag.created_at.is_none() {
                Some(FieldError::required(
                    &tp.child("createdAt"),
                    format!("createAt field for {full} can not be empty"),
                ))
            } else if tag.version < 0 {
                Some(FieldError::invalid(
                    &tp.child("version"),
                    tag.version,
                    format!("version for {full} can not be less than 0"),
                ))
            } else if tag.pull_policy.is_none() {
                Some(FieldError::required(
                    &tp.child("pullPolicy"),
                    format!("pullPolicy field for {full} must set"),
                ))
            } else if tag
                .pull_policy
                .as_ref()
                .is_some_and(|p| p.ttl_seconds_after_finished.is_none())
            {
                Some(FieldError::required(
                    &tp.child("pullPolicy").child("ttlSecondsAfterFinished"),
                    format!("pullPolicy.ttlSecondsAfterFinished for {full} must set"),
                ))
            } else {
                None
            };
            if let Some(err) = err {
                errs.push(err);
                return errs;
            }
        }
    }
    errs
}

/// [`validate_image_pull_job`] for a v1alpha1 object.
pub fn validate_image_pull_job_v1alpha1(
    job: &alpha::ImagePullJob,
    old: Option<&alpha::ImagePullJob>,
) -> FieldErrors {
    let new = job.clone().map_to_hub();
    let old = old.map(|o| o.clone().map_to_hub());
    validate_image_pull_job(&new, old.as_ref())
}

/// [`validate_image_list_pull_job`] for a v1alpha1 object.
pub fn validate_image_list_pull_job_v1alpha1(job: &alpha::ImageListPullJob) -> FieldErrors {
    validate_image_list_pull_job(&job.clone().map_to_hub())
}

/// [`validate_node_image`] for a v1alpha1 object.
pub fn validate_node_image_v1alpha1(ni: &alpha::NodeImage) -> FieldErrors {
    validate_node_image(&ni.clone().map_to_hub())
}

fn validate_selectors(t: &ImagePullJobTemplate, spec: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(sel) = &t.selector {
        let path = spec.child("selector");
        let has_labels = sel.label_selector.match_labels.is_some()
            || sel.label_selector.match_expressions.is_some();
        if has_labels {
            if !sel.names.is_empty() {
                errs.push(FieldError::forbidden(
                    &path,
                    "can not set both names and labelSelector in this spec.selector",
                ));
                return errs;
            }
            if let Err(e) = label_selector_as_selector(Some(&sel.label_selector)) {
                errs.push(FieldError::invalid(&path, "", format!("invalid selector: {e}")));
                return errs;
            }
        }
        let unique: BTreeSet<&String> = sel.names.iter().collect();
        if unique.len() != sel.names.len() {
            errs.push(FieldError::invalid(
                &path.child("names"),
                "",
                "duplicated name in selector names",
            ));
            return errs;
        }
    }
    if let Some(pod_sel) = &t.pod_selector {
        let path = spec.child("podSelector");
        if t.selector.is_some() {
            errs.push(FieldError::forbidden(&path, "can not set both selector and podSelector"));
            return errs;
        }
        if let Err(e) = label_selector_as_selector(Some(&pod_sel.label_selector)) {
            errs.push(FieldError::invalid(&path, "", format!("invalid podSelector: {e}")));
        }
    }
    errs
}

fn validate_parallelism(t: &ImagePullJobTemplate, spec: &FieldPath) -> Vec<FieldError> {
    let path = spec.child("parallelism");
    let bad = |msg: String| vec![FieldError::invalid(&path, "", msg)];
    match &t.parallelism {
        Some(IntOrString::String(s)) if s.ends_with('%') => {
            bad("parallelism does not support percentage value".into())
        }
        Some(IntOrString::String(s)) => match s.parse::<i32>() {
            Err(e) => bad(format!("parallelism must be a valid integer: {e}")),
            Ok(v) if v < 0 => bad("parallelism must be non-negative".into()),
            Ok(_) => Vec::new(),
        },
        Some(IntOrString::Int(v)) if *v < 0 => bad("parallelism must be non-negative".into()),
        _ => Vec::new(),
    }
}

fn validate_completion(
    t: &ImagePullJobTemplate,
    spec: &FieldPath,
    check_deadline: bool,
) -> Vec<FieldError> {
    let path = spec.child("completionPolicy");
    let c = &t.completion_policy;
    let timeout = t.pull_policy.as_ref().and_then(|p| p.timeout_seconds).unwrap_or(600);
    match &c.type_ {
        Some(CompletionPolicyType::Always) => {
            if check_deadline && c.active_deadline_seconds.is_some_and(|d| i64::from(timeout) > d) {
                return vec![FieldError::invalid(
                    &path.child("activeDeadlineSeconds"),
                    c.active_deadline_seconds,
                    "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds(default 600)",
                )];
            }
            Vec::new()
        }
        Some(CompletionPolicyType::Never) => {
            if c.active_deadline_seconds.is_some() || c.ttl_seconds_after_finished.is_some() {
                return vec![FieldError::forbidden(
                    &path,
                    "activeDeadlineSeconds and ttlSecondsAfterFinished can only work with Always CompletionPolicyType",
                )];
            }
            Vec::new()
        }
        other => vec![FieldError::not_supported(
            &path.child("type"),
            other.as_ref().map_or("", |t| t.as_str()),
            &["Always", "Never"],
        )],
    }
}
