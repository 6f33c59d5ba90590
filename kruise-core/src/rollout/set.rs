//! The rest of `kubectl kruise set`, without IO: `set env --from` (a Secret's or ConfigMap's
//! keys as variables), `set selector` (a Service's selector) and `set subject` (a role
//! binding's subjects), with kubectl's rules and words.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{EnvEdit, SetImageError, env_patch};

/// Why a `set` cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetError {
    /// `--from` names neither a Secret nor a ConfigMap.
    #[error("unsupported --from kind {0:?}: expected secret/NAME or configmap/NAME")]
    FromKind(String),
    /// `--keys` names a key the source lacks.
    #[error("{source_name} has no key {key:?}")]
    NoKey {
        /// `secret/NAME` or `configmap/NAME`.
        source_name: String,
        /// The key.
        key: String,
    },
    /// A selector entry is not `KEY=VALUE`, or its key or value is not a valid label.
    #[error("invalid selector {0:?}: {1}")]
    Selector(String, String),
    /// `set selector` on something else than a Service.
    #[error("the selector of {0} cannot be set: selectors can only be set on Service objects")]
    NotAService(String),
    /// `set subject` on something else than a RoleBinding or ClusterRoleBinding.
    #[error("{0} is not a RoleBinding or ClusterRoleBinding: subjects cannot be set")]
    NotABinding(String),
    /// `--serviceaccount` is not `NAMESPACE:NAME`.
    #[error("serviceaccount must be <namespace>:<name>, got {0:?}")]
    ServiceAccount(String),
    /// `set subject` was given no subject.
    #[error("you must specify at least one value of user, group or serviceaccount")]
    NoSubject,
    /// The template change itself.
    #[error(transparent)]
    Template(#[from] SetImageError),
}

/// The variable name kubectl gives a key: `prefix` then the key in upper case, with every
/// character other than a letter, a digit or `_` turned into `_`.
pub fn env_name(prefix: &str, key: &str) -> String {
    let converted: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c.to_ascii_uppercase() } else { '_' })
        .collect();
    format!("{prefix}{converted}")
}

/// The JSON patch of `set env TYPE/NAME --from=secret/NAME|configmap/NAME [--prefix P]
/// [--keys a,b]` on a workload (its JSON): one variable per key of the source's `data` (and
/// a ConfigMap's `binaryData`), or only `keys`, each taken from the source by reference
/// (`secretKeyRef` / `configMapKeyRef`), in every container (or only `container`).
///
/// # Errors
/// See [`SetError`].
pub fn env_from_patch(
    object: &Value,
    container: Option<&str>,
    source: &Value,
    prefix: &str,
    keys: &[String],
) -> Result<Option<Value>, SetError> {
    let name = source["metadata"]["name"].as_str().unwrap_or_default();
    let (reference, shown) = match source["kind"].as_str() {
        Some("Secret") => ("secretKeyRef", format!("secret/{name}")),
        Some("ConfigMap") => ("configMapKeyRef", format!("configmap/{name}")),
        other => return Err(SetError::FromKind(other.unwrap_or_default().to_owned())),
    };
    let mut available: Vec<&str> = ["data", "binaryData"]
        .into_iter()
        .flat_map(|field| source[field].as_object().into_iter().flat_map(|m| m.keys()))
        .map(String::as_str)
        .collect();
    available.sort_unstable();
    available.dedup();
    let chosen: Vec<&str> = if keys.is_empty() {
        available
    } else {
        for key in keys {
            if !available.contains(&key.as_str()) {
                return Err(SetError::NoKey { source_name: shown, key: key.clone() });
            }
        }
        keys.iter().map(String::as_str).collect()
    };
    let edits: Vec<EnvEdit> = chosen
        .into_iter()
        .map(|key| {
            EnvEdit::Set(json!({
                "name": env_name(prefix, key),
                "valueFrom": {reference: {"name": name, "key": key}},
            }))
        })
        .collect();
    Ok(env_patch(object, container, &edits)?)
}

/// A selector written `KEY=VALUE,...` (or `KEY==VALUE`), each key and value a valid label.
///
/// # Errors
/// [`SetError::Selector`], naming the entry and what is wrong with it.
pub fn parse_selector(text: &str) -> Result<BTreeMap<String, String>, SetError> {
    let mut out = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let wrong = |why: String| SetError::Selector(entry.to_owned(), why);
        let (key, value) = entry
            .split_once("==")
            .or_else(|| entry.split_once('='))
            .ok_or_else(|| wrong("expected KEY=VALUE".to_owned()))?;
        let problems =
            [crate::names::is_qualified_name(key), crate::names::is_valid_label_value(value)];
        if let Some(problem) = problems.iter().flatten().next() {
            return Err(wrong(problem.clone()));
        }
        out.insert(key.to_owned(), value.to_owned());
    }
    if out.is_empty() {
        return Err(SetError::Selector(text.to_owned(), "expected KEY=VALUE".to_owned()));
    }
    Ok(out)
}

/// The JSON patch of `set selector service/NAME KEY=VALUE,...`: the Service's whole
/// `spec.selector` replaced, guarded by the resourceVersion. `None` when it is already so.
///
/// # Errors
/// See [`SetError`].
pub fn selector_patch(object: &Value, selector: &str) -> Result<Option<Value>, SetError> {
    if object["kind"] != "Service" {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default().to_ascii_lowercase();
        return Err(SetError::NotAService(format!("{kind}/{name}")));
    }
    let wanted = json!(parse_selector(selector)?);
    Ok((object["spec"]["selector"] != wanted).then(|| {
        json!([
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": object["metadata"]["resourceVersion"].clone()},
            {"op": "add", "path": "/spec/selector", "value": wanted},
        ])
    }))
}

/// The subjects `set subject` adds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subjects {
    /// `--user`.
    pub users: Vec<String>,
    /// `--group`.
    pub groups: Vec<String>,
    /// `--serviceaccount`, each `NAMESPACE:NAME`.
    pub service_accounts: Vec<String>,
}

/// The JSON patch of `set subject rolebinding/NAME --user U --group G --serviceaccount NS:SA`:
/// the binding's subjects with those added (none twice), guarded by the resourceVersion.
/// `None` when it has them all already.
///
/// # Errors
/// See [`SetError`].
pub fn subject_patch(object: &Value, subjects: &Subjects) -> Result<Option<Value>, SetError> {
    let kind = object["kind"].as_str().unwrap_or_default();
    if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        return Err(SetError::NotABinding(format!("{}/{name}", kind.to_ascii_lowercase())));
    }
    if subjects.users.is_empty()
        && subjects.groups.is_empty()
        && subjects.service_accounts.is_empty()
    {
        return Err(SetError::NoSubject);
    }
    let rbac = "rbac.authorization.k8s.io";
    let mut wanted: Vec<Value> = Vec::new();
    wanted.extend(
        subjects.users.iter().map(|u| json!({"kind": "User", "apiGroup": rbac, "name": u})),
    );
    wanted.extend(
        subjects.groups.iter().map(|g| json!({"kind": "Group", "apiGroup": rbac, "name": g})),
    );
    for sa in &subjects.service_accounts {
        let Some((namespace, name)) =
            sa.split_once(':').filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
        else {
            return Err(SetError::ServiceAccount(sa.clone()));
        };
        wanted.push(json!({"kind": "ServiceAccount", "name": name, "namespace": namespace}));
    }
    let mut all: Vec<Value> = object["subjects"].as_array().cloned().unwrap_or_default();
    let before = all.len();
    let same = |a: &Value, b: &Value| {
        a["kind"] == b["kind"] && a["name"] == b["name"] && a["namespace"] == b["namespace"]
    };
    for subject in wanted {
        if !all.iter().any(|s| same(s, &subject)) {
            all.push(subject);
        }
    }
    Ok((all.len() != before).then(|| {
        json!([
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": object["metadata"]["resourceVersion"].clone()},
            {"op": "add", "path": "/subjects", "value": all},
        ])
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn workload() -> Value {
        json!({"metadata": {"name": "web", "resourceVersion": "7"},
               "spec": {"template": {"spec": {"containers": [
                   {"name": "main", "env": [{"name": "DB_HOST", "value": "old"}]},
                   {"name": "side"}]}}}})
    }

    #[test]
    fn env_from_a_secret_references_each_key() {
        let secret = json!({"kind": "Secret", "metadata": {"name": "db"},
                            "data": {"db-host": "eA==", "password": "eQ=="}});
        let patch = env_from_patch(&workload(), Some("main"), &secret, "", &[]).unwrap().unwrap();
        assert_eq!(
            patch[0],
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"})
        );
        assert_eq!(
            patch[1]["value"],
            json!([
                {"name": "DB_HOST", "valueFrom": {"secretKeyRef": {"name": "db", "key": "db-host"}}},
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
            ])
        );
        assert_eq!(patch.as_array().map(Vec::len), Some(2), "only `main`");
        let cm = json!({"kind": "ConfigMap", "metadata": {"name": "cfg"},
                        "data": {"a.b": "1"}, "binaryData": {"c": "AA=="}});
        let patch =
            env_from_patch(&workload(), None, &cm, "APP_", &["a.b".into()]).unwrap().unwrap();
        assert_eq!(patch.as_array().map(Vec::len), Some(3), "both containers");
        assert_eq!(
            patch[2]["value"],
            json!([{"name": "APP_A_B", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a.b"}}}])
        );
        let err = env_from_patch(&workload(), None, &cm, "", &["nope".into()]).unwrap_err();
        assert_eq!(err.to_string(), "configmap/cfg has no key \"nope\"");
        let err = env_from_patch(&workload(), Some("x"), &cm, "", &[]).unwrap_err();
        assert_eq!(err.to_string(), "unable to find container named \"x\"");
    }

    #[test]
    fn selectors_replace_a_services_whole_selector() {
        let svc = json!({"kind": "Service", "metadata": {"name": "web", "resourceVersion": "3"},
                         "spec": {"selector": {"app": "web", "old": "x"}}});
        let patch = selector_patch(&svc, "app=web, tier==front").unwrap().unwrap();
        assert_eq!(patch[1]["value"], json!({"app": "web", "tier": "front"}));
        assert_eq!(selector_patch(&svc, "app=web,old=x").unwrap(), None);
        assert!(matches!(selector_patch(&svc, "app"), Err(SetError::Selector(..))));
        let err = selector_patch(&svc, "app=-bad").unwrap_err();
        assert!(err.to_string().starts_with("invalid selector \"app=-bad\": "), "{err}");
        let deploy = json!({"kind": "Deployment", "metadata": {"name": "web"}});
        assert_eq!(
            selector_patch(&deploy, "a=b").unwrap_err().to_string(),
            "the selector of deployment/web cannot be set: selectors can only be set on Service objects"
        );
    }

    #[test]
    fn subjects_are_added_once() {
        let binding = json!({"kind": "RoleBinding", "metadata": {"name": "admin", "resourceVersion": "1"},
                             "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "ann"}]});
        let subjects = Subjects {
            users: vec!["ann".into(), "bob".into()],
            groups: vec!["ops".into()],
            service_accounts: vec!["ns1:robot".into()],
        };
        let patch = subject_patch(&binding, &subjects).unwrap().unwrap();
        let names: Vec<&str> = patch[1]["value"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        assert_eq!(names, ["ann", "bob", "ops", "robot"]);
        assert_eq!(patch[1]["value"][3]["namespace"], "ns1");
        let only_ann = Subjects { users: vec!["ann".into()], ..Default::default() };
        assert_eq!(subject_patch(&binding, &only_ann).unwrap(), None);
        let bad = Subjects { service_accounts: vec!["robot".into()], ..Default::default() };
        assert_eq!(
            subject_patch(&binding, &bad).unwrap_err().to_string(),
            "serviceaccount must be <namespace>:<name>, got \"robot\""
        );
        assert_eq!(subject_patch(&binding, &Subjects::default()).unwrap_err(), SetError::NoSubject);
    }
}
