//! Custom workloads named in `kruise-configuration`: the whitelist shape upstream's
//! `WorkloadSpread_Watch_Custom_Workload_WhiteList` and `PPS_Watch_Custom_Workload_WhiteList`
//! entries share (`{"workloads":[{"Group":..,"Version":..,"Kind":..}]}`, WorkloadSpread's with
//! sub-resources and a replicas path), parsed as Go's decoder reads it.

use serde_json::Value;

/// A group, version and kind as upstream's configuration writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionKind {
    /// API group (empty for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// One custom workload of the whitelist.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomWorkload {
    /// The workload's group, version and kind.
    pub gvk: GroupVersionKind,
    /// Kinds between the workload and its pods (a pod's controller may be one of them).
    pub sub_resources: Vec<GroupVersionKind>,
    /// The dotted path of the replicas field (`spec.replicas`), if given.
    pub replicas_path: String,
}

/// The `WorkloadSpread_Watch_Custom_Workload_WhiteList` entry of the `kruise-configuration`
/// ConfigMap: custom workloads a WorkloadSpread may target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomWorkloadWhitelist {
    /// The workloads, in the ConfigMap's order.
    pub workloads: Vec<CustomWorkload>,
}

/// Why the whitelist could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WhitelistError {
    /// The text is not JSON.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// The JSON does not have the whitelist's shape.
    #[error("unexpected value at {path}: {detail}")]
    Shape {
        /// Where (`workloads[0].Kind`).
        path: String,
        /// What was wrong.
        detail: String,
    },
}

/// Go's decoder: the exact key, else the first key equal ignoring case.
fn go_field<'v>(map: &'v serde_json::Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key).or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v))
}

fn go_string(
    map: &serde_json::Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<String, WhitelistError> {
    match go_field(map, key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(WhitelistError::Shape {
            path: format!("{at}.{key}"),
            detail: format!("expected a string, got {other}"),
        }),
    }
}

fn go_object<'v>(
    value: &'v Value,
    at: &str,
) -> Result<Option<&'v serde_json::Map<String, Value>>, WhitelistError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(WhitelistError::Shape {
            path: at.to_owned(),
            detail: format!("expected an object, got {other}"),
        }),
    }
}

fn go_list<'v>(value: Option<&'v Value>, at: &str) -> Result<&'v [Value], WhitelistError> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(WhitelistError::Shape {
            path: at.to_owned(),
            detail: format!("expected a list, got {other}"),
        }),
    }
}

fn parse_gvk(
    map: &serde_json::Map<String, Value>,
    at: &str,
) -> Result<GroupVersionKind, WhitelistError> {
    Ok(GroupVersionKind {
        group: go_string(map, "Group", at)?,
        version: go_string(map, "Version", at)?,
        kind: go_string(map, "Kind", at)?,
    })
}

impl CustomWorkloadWhitelist {
    /// Parses the ConfigMap value: `{"workloads":[{"Group":..,"Version":..,"Kind":..,
    /// "subResources":[{"Group":..,"Version":..,"Kind":..}],"replicasPath":"spec.replicas"}]}`.
    /// Keys are matched as Go's decoder matches them (exactly, else ignoring case); unknown keys
    /// are ignored. Empty text is an empty whitelist.
    pub fn parse(text: &str) -> Result<Self, WhitelistError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| WhitelistError::Json(e.to_string()))?;
        let Some(root) = go_object(&value, "")? else {
            return Ok(Self::default());
        };
        let mut workloads = Vec::new();
        for (i, item) in go_list(go_field(root, "workloads"), "workloads")?.iter().enumerate() {
            let at = format!("workloads[{i}]");
            let Some(map) = go_object(item, &at)? else {
                workloads.push(CustomWorkload::default());
                continue;
            };
            let mut sub_resources = Vec::new();
            let sub_at = format!("{at}.subResources");
            for (j, sub) in go_list(go_field(map, "subResources"), &sub_at)?.iter().enumerate() {
                let sub_at = format!("{sub_at}[{j}]");
                match go_object(sub, &sub_at)? {
                    Some(sub) => sub_resources.push(parse_gvk(sub, &sub_at)?),
                    None => sub_resources.push(GroupVersionKind::default()),
                }
            }
            workloads.push(CustomWorkload {
                gvk: parse_gvk(map, &at)?,
                sub_resources,
                replicas_path: go_string(map, "replicasPath", &at)?,
            });
        }
        Ok(CustomWorkloadWhitelist { workloads })
    }

    /// Whether the whitelist names the group and kind, as a workload or a sub-resource.
    pub fn contains(&self, group: &str, kind: &str) -> bool {
        self.workloads.iter().any(|w| {
            (w.gvk.group == group && w.gvk.kind == kind)
                || w.sub_resources.iter().any(|s| s.group == group && s.kind == kind)
        })
    }

    /// Whether the whitelist names the group and kind as a workload (not a sub-resource), as
    /// the validating webhook checks a `targetRef`.
    pub fn contains_workload(&self, group: &str, kind: &str) -> bool {
        self.workloads.iter().any(|w| w.gvk.group == group && w.gvk.kind == kind)
    }

    /// The replicas path of the whitelisted workload with this group, version and kind.
    pub fn replicas_path(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.workloads
            .iter()
            .find(|w| w.gvk.group == group && w.gvk.version == version && w.gvk.kind == kind)
            .map(|w| w.replicas_path.as_str())
            .filter(|p| !p.is_empty())
    }
}

/// The group of `schema.ParseGroupVersion(api_version)`, or `None` when it does not parse
/// (more than one `/`).
pub fn parse_group(api_version: &str) -> Option<&str> {
    if api_version.is_empty() || api_version == "/" {
        return Some("");
    }
    match api_version.split_once('/') {
        None => Some(""),
        Some((group, version)) if !version.contains('/') => Some(group),
        Some(_) => None,
    }
}
