//! Deciding whether a template change can be made in place (upstream's
//! `defaultCalculateInPlaceUpdateSpec`).
//!
//! Both templates are first normalised to what Go would have written for them (see
//! [`crate::revision::gojson`]), so that two encodings of the same template never count as
//! a change. The diff is then read operation by operation:
//!
//! - `replace` of `/spec/containers/<i>/image`: an image change of that container;
//! - with vertical scaling, `replace` of `/spec/containers/<i>/resources/{limits,requests}/
//!   {cpu,memory}`: a resize (adding or removing a value is not, nor is a change of QoS class);
//! - anything under `/metadata/`: labels and annotations, applied as a metadata patch; with
//!   the env-from-metadata gate, added or changed keys that a container reads through a
//!   downward-API env var move to that container's ref-metadata (it restarts);
//! - anything else: not in place.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::jsondiff::{self, Op, OpKind};
use super::{UpdateOptions, UpdateSpec, metapatch, vertical};
use crate::revision::quantity::Quantity;
use crate::revision::{self, gojson, goschema};

/// Env var names that never count as reading metadata (SidecarSet bookkeeping).
const EXCLUDED_ENV: [&str; 2] = ["SIDECARSET_VERSION", "SIDECARSET_VERSION_ALT"];

/// The in-place update from `old` to `new` (the new revision named `revision`), or `None`
/// when the change requires recreating the pod.
pub fn calculate_update_spec(
    old: &PodTemplateSpec,
    new: &PodTemplateSpec,
    revision: &str,
    opts: &UpdateOptions,
) -> Option<UpdateSpec> {
    let old_value = serde_json::to_value(old).ok()?;
    let new_value = serde_json::to_value(new).ok()?;
    calculate(&old_value, &new_value, old.clone(), new.clone(), revision, opts)
}

/// [`calculate_update_spec`] between two ControllerRevisions, as upstream calls it: the
/// templates are read from the revisions' data (unknown fields included), and, with the
/// volume-claim-template gate, differing volume-claim-template hashes force recreation.
/// `None` also when either revision's data is unreadable.
pub fn calculate_revision_update_spec(
    old: &ControllerRevision,
    new: &ControllerRevision,
    opts: &UpdateOptions,
) -> Option<UpdateSpec> {
    if opts.recreate_on_volume_claim_template_change
        && !opts.ignore_volume_claim_template_change
        && !revision::volume_claim_templates_allow_in_place(old, new)
    {
        return None;
    }
    let template_value = |r: &ControllerRevision| -> Option<Value> {
        let mut t = revision::revision_data(r)?.get("spec")?.get("template")?.clone();
        if let Value::Object(map) = &mut t {
            map.remove("$patch");
        }
        Some(t)
    };
    let (old_value, new_value) = (template_value(old)?, template_value(new)?);
    let old_typed = revision::template_from_revision(old).ok()?;
    let new_typed = revision::template_from_revision(new).ok()?;
    let name = new.metadata.name.clone().unwrap_or_default();
    calculate(&old_value, &new_value, old_typed, new_typed, &name, opts)
}

fn calculate(
    old_value: &Value,
    new_value: &Value,
    mut old: PodTemplateSpec,
    mut new: PodTemplateSpec,
    revision: &str,
    opts: &UpdateOptions,
) -> Option<UpdateSpec> {
    let old_norm = gojson::normalize_struct(old_value, goschema::POD_TEMPLATE_SPEC);
    let new_norm = gojson::normalize_struct(new_value, goschema::POD_TEMPLATE_SPEC);
    let ops = jsondiff::diff(&old_norm, &new_norm);

    let mut spec = UpdateSpec {
        revision: revision.to_owned(),
        grace_seconds: opts.grace_period_seconds,
        ..UpdateSpec::default()
    };
    let old_containers: Vec<Container> =
        old.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();

    let mut metadata_ops: Vec<&Op> = Vec::new();
    for op in &ops {
        if !op.path.starts_with("/spec/") {
            if op.path.starts_with("/metadata/") {
                metadata_ops.push(op);
                continue;
            }
            return None;
        }
        if op.kind != OpKind::Replace {
            return None;
        }
        let words: Vec<&str> = op.path.split('/').collect();
        // ["", "spec", "containers", index, field, ...]
        let container_index = match words.get(2..4) {
            Some(["containers", index]) => index.parse::<usize>().ok(),
            _ => None,
        };
        let index = container_index?;
        match words.get(4..) {
            Some(["image"]) => {
                let name = &old_containers.get(index)?.name;
                let image = op.value.as_ref()?.as_str()?;
                spec.container_images.insert(name.clone(), image.to_owned());
            }
            Some(["resources", _, ..]) if opts.vertical_scaling => {
                resize_op(op, &words, &old_containers, &mut spec.container_resources)?;
            }
            _ => return None,
        }
    }

    if opts.vertical_scaling && !spec.container_resources.is_empty() {
        let qos = |t: &PodTemplateSpec| t.spec.as_ref().map(vertical::pod_qos_class);
        if qos(&old) != qos(&new) {
            return None;
        }
    }

    if !metadata_ops.is_empty() {
        if opts.env_from_metadata {
            move_env_metadata(&metadata_ops, &mut old, &mut new, &mut spec);
        }
        let empty = ObjectMeta::default();
        spec.metadata_patch = Some(metapatch::metadata_patch(
            old.metadata.as_ref().unwrap_or(&empty),
            new.metadata.as_ref().unwrap_or(&empty),
        ));
    }
    Some(spec)
}

/// Reads a `/spec/containers/<i>/resources/<limits|requests>/<name>` replacement.
fn resize_op(
    op: &Op,
    words: &[&str],
    old_containers: &[Container],
    resources: &mut BTreeMap<String, ResourceRequirements>,
) -> Option<()> {
    if words.len() != 7 {
        return None;
    }
    let index: usize = words[3].parse().ok()?;
    let container = old_containers.get(index)?;
    let text = op.value.as_ref()?.as_str()?;
    Quantity::parse(text).ok()?;
    let resource = words[6];
    if !vertical::can_resize(resource) {
        return None;
    }
    let entry = resources.entry(container.name.clone()).or_default();
    let section = match words[5] {
        "limits" => entry.limits.get_or_insert_with(BTreeMap::new),
        "requests" => entry.requests.get_or_insert_with(BTreeMap::new),
        _ => return Some(()),
    };
    section.insert(resource.to_owned(), K8sQuantity(text.to_owned()));
    Some(())
}

/// Whether a container reads `<path>['<key>']` (e.g. `metadata.labels['app']`) through a
/// downward-API env var.
pub(crate) fn container_reads_metadata(container: &Container, path: &str, key: &str) -> bool {
    metadata_env(container).any(|(_, p, k)| p == path && k == key)
}

/// The container's env vars that read pod metadata: `(name, path, key)`.
pub(crate) fn metadata_env(container: &Container) -> impl Iterator<Item = (&str, &str, &str)> {
    container.env.iter().flatten().filter_map(|env| {
        if env.value.as_deref().is_some_and(|v| !v.is_empty())
            || EXCLUDED_ENV.contains(&env.name.as_str())
        {
            return None;
        }
        let field_path = &env.value_from.as_ref()?.field_ref.as_ref()?.field_path;
        let (path, key) = split_subscripted_path(field_path)?;
        Some((env.name.as_str(), path, key))
    })
}

/// Splits `path['key']` into `(path, key)`.
fn split_subscripted_path(field_path: &str) -> Option<(&str, &str)> {
    let inner = field_path.strip_suffix("']")?;
    let (path, key) = inner.split_once("['")?;
    (!path.is_empty()).then_some((path, key))
}

/// Moves label/annotation changes read by containers into `container_ref_metadata`, taking
/// them out of both templates so that the metadata patch leaves them alone.
fn move_env_metadata(
    ops: &[&Op],
    old: &mut PodTemplateSpec,
    new: &mut PodTemplateSpec,
    spec: &mut UpdateSpec,
) {
    let containers: Vec<Container> =
        new.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();
    for op in ops {
        if op.kind == OpKind::Remove {
            continue;
        }
        let words: Vec<&str> = op.path.splitn(4, '/').collect();
        let [_, _, section, escaped] = words.as_slice() else { continue };
        let (path, is_labels) = match *section {
            "labels" => ("metadata.labels", true),
            "annotations" => ("metadata.annotations", false),
            _ => continue,
        };
        let key = jsondiff::unescape_key(escaped);
        let Some(value) = op.value.as_ref().and_then(Value::as_str) else { continue };
        for container in &containers {
            if !container_reads_metadata(container, path, &key) {
                continue;
            }
            let meta = spec.container_ref_metadata.entry(container.name.clone()).or_default();
            let target = if is_labels { &mut meta.labels } else { &mut meta.annotations };
            target.get_or_insert_with(BTreeMap::new).insert(key.clone(), value.to_owned());
            for template in [&mut *old, &mut *new] {
                if let Some(m) = template.metadata.as_mut() {
                    let map = if is_labels { m.labels.as_mut() } else { m.annotations.as_mut() };
                    if let Some(map) = map {
                        map.remove(&key);
                    }
                }
            }
            spec.update_env_from_metadata = true;
        }
    }
}
