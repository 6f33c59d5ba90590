//! Who is asking, and may they: service account tokens (TokenRequest), impersonation, RBAC
//! authorization of resource requests, and SelfSubjectAccessReview.
//!
//! The server's own bearer token (or no token, when none is set) is the cluster admin
//! (`system:masters`): every request is allowed, as before. A token issued by
//! `serviceaccounts/<name>/token` authenticates as `system:serviceaccount:<ns>:<name>`, and
//! `Impersonate-User`/`Impersonate-Group` headers (what `kubectl --as` sends) make the admin
//! act as another user; those identities are authorized by the RBAC objects in the store, as
//! kube-apiserver's RBAC authorizer does (Roles and ClusterRoles bound by RoleBindings and
//! ClusterRoleBindings to users, groups and service accounts). Discovery, OpenAPI and
//! `/version` are open to every authenticated identity, as the default `system:discovery`
//! and `system:basic-user` roles allow, and so is SelfSubjectAccessReview.
//!
//! Not done: aggregated ClusterRoles (`aggregationRule`), the rest of the default bootstrap
//! roles, token expiry and audiences, and RBAC's escalation checks on writes of roles.

use serde_json::{Value, json};

use crate::store::Store;

/// An authenticated identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    /// The user name (`system:serviceaccount:ns:name` for a service account).
    pub user: String,
    /// The groups.
    pub groups: Vec<String>,
}

impl Identity {
    /// The cluster admin: every request is allowed.
    pub fn admin() -> Self {
        Identity {
            user: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    /// A service account's identity.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Identity {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }

    /// A user named in `Impersonate-User`, with the `Impersonate-Group` groups (service
    /// account users get their implied groups).
    pub fn impersonated(user: &str, groups: Vec<String>) -> Self {
        if let Some((namespace, name)) =
            user.strip_prefix("system:serviceaccount:").and_then(|rest| rest.split_once(':'))
        {
            let mut identity = Self::service_account(namespace, name);
            identity.groups.extend(groups);
            return identity;
        }
        let mut groups = groups;
        groups.push("system:authenticated".into());
        Identity { user: user.to_owned(), groups }
    }

    /// Whether this is the cluster admin (`system:masters`).
    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }

    /// The service account this identity is, if any: (namespace, name).
    fn service_account_name(&self) -> Option<(&str, &str)> {
        self.user.strip_prefix("system:serviceaccount:").and_then(|rest| rest.split_once(':'))
    }
}

/// What a request does to which resource (Kubernetes' authorizer attributes).
#[derive(Clone, Debug, Default)]
pub(crate) struct Attributes {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// Whether `who` may do `what`, and why (`RBAC: allowed by ...` as kube-apiserver words it;
/// empty for the admin and for a denial).
pub(crate) fn authorize(store: &Store, who: &Identity, what: &Attributes) -> (bool, String) {
    if who.is_admin() {
        return (true, String::new());
    }
    let table = |plural: &str| ("rbac.authorization.k8s.io".to_string(), plural.to_string());
    let role_rules = |kind: &str, namespace: &str, name: &str| -> Vec<Value> {
        let (plural, ns) =
            if kind == "ClusterRole" { ("clusterroles", "") } else { ("roles", namespace) };
        store
            .get(&table(plural), &(ns.to_string(), name.to_string()))
            .and_then(|role| role.get("rules").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    };
    let (cluster_bindings, _) = store.list(&table("clusterrolebindings"), None);
    for binding in &cluster_bindings {
        if let Some(reason) = binding_allows(binding, who, what, "", &role_rules) {
            return (true, reason);
        }
    }
    if !what.namespace.is_empty() {
        let (bindings, _) = store.list(&table("rolebindings"), Some(&what.namespace));
        for binding in &bindings {
            if let Some(reason) = binding_allows(binding, who, what, &what.namespace, &role_rules) {
                return (true, reason);
            }
        }
    }
    (false, String::new())
}

/// The reason a binding lets `who` do `what`, if it does.
fn binding_allows(
    binding: &Value,
    who: &Identity,
    what: &Attributes,
    namespace: &str,
    role_rules: &dyn Fn(&str, &str, &str) -> Vec<Value>,
) -> Option<String> {
    let str_at =
        |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
    let subject = binding
        .get("subjects")
        .and_then(Value::as_array)?
        .iter()
        .find(|s| subject_matches(s, who, namespace))?
        .clone();
    let (role_kind, role_name) =
        (str_at(binding, "/roleRef/kind"), str_at(binding, "/roleRef/name"));
    let rules = role_rules(&role_kind, namespace, &role_name);
    if !rules.iter().any(|rule| rule_allows(rule, what)) {
        return None;
    }
    let binding_name = str_at(binding, "/metadata/name");
    let source = if namespace.is_empty() {
        format!("ClusterRoleBinding {binding_name:?}")
    } else {
        format!("RoleBinding {:?}", format!("{binding_name}/{namespace}"))
    };
    let kind = str_at(&subject, "/kind");
    let name = str_at(&subject, "/name");
    let subject_ns = str_at(&subject, "/namespace");
    let described = if kind == "ServiceAccount" && !subject_ns.is_empty() {
        format!("{kind} {:?}", format!("{name}/{subject_ns}"))
    } else {
        format!("{kind} {name:?}")
    };
    Some(format!("RBAC: allowed by {source} of {role_kind} {role_name:?} to {described}"))
}

fn subject_matches(subject: &Value, who: &Identity, binding_namespace: &str) -> bool {
    let field = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or_default();
    match field("kind") {
        "User" => field("name") == who.user,
        "Group" => who.groups.iter().any(|g| g == field("name")),
        "ServiceAccount" => {
            let namespace =
                if field("namespace").is_empty() { binding_namespace } else { field("namespace") };
            who.service_account_name() == Some((namespace, field("name")))
        }
        _ => false,
    }
}

/// Whether one PolicyRule covers the request (RBAC's `RuleAllows` for resource requests).
fn rule_allows(rule: &Value, what: &Attributes) -> bool {
    let list = |f: &str| -> Vec<&str> {
        rule.get(f)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let has = |f: &str, want: &str| list(f).iter().any(|v| *v == "*" || *v == want);
    let resource_ok = {
        let combined = if what.subresource.is_empty() {
            what.resource.clone()
        } else {
            format!("{}/{}", what.resource, what.subresource)
        };
        list("resources").iter().any(|r| {
            *r == "*"
                || *r == combined
                || (!what.subresource.is_empty() && *r == format!("*/{}", what.subresource))
        })
    };
    let names = list("resourceNames");
    has("verbs", &what.verb)
        && has("apiGroups", &what.group)
        && resource_ok
        && (names.is_empty() || names.contains(&what.name.as_str()))
}

/// The Forbidden message kube-apiserver answers for a denied resource request.
pub(crate) fn forbidden_message(who: &Identity, what: &Attributes) -> String {
    let qualified = crate::error::qualified(&what.group, &what.resource);
    let resource = if what.subresource.is_empty() {
        what.resource.clone()
    } else {
        format!("{}/{}", what.resource, what.subresource)
    };
    let target =
        if what.name.is_empty() { qualified } else { format!("{qualified} {:?}", what.name) };
    let scope = if what.namespace.is_empty() {
        "at the cluster scope".to_owned()
    } else {
        format!("in the namespace {:?}", what.namespace)
    };
    format!(
        "{target} is forbidden: User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        who.user, what.verb, what.group
    )
}

/// The answer to a SelfSubjectAccessReview from `who`: the review with its status.
pub(crate) fn self_subject_access_review(store: &Store, who: &Identity, review: &Value) -> Value {
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let (allowed, reason) = match spec.get("resourceAttributes") {
        Some(attrs) => {
            let field =
                |f: &str| attrs.get(f).and_then(Value::as_str).unwrap_or_default().to_owned();
            let what = Attributes {
                verb: field("verb"),
                group: field("group"),
                resource: field("resource"),
                subresource: field("subresource"),
                namespace: field("namespace"),
                name: field("name"),
            };
            authorize(store, who, &what)
        }
        // Non-resource URLs: the admin may fetch anything; others the discovery paths.
        None => {
            let path = spec
                .pointer("/nonResourceAttributes/path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            (who.is_admin() || open_path(path), String::new())
        }
    };
    let mut status = json!({"allowed": allowed});
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    })
}

/// The non-resource paths every authenticated identity may read (`system:discovery`,
/// `system:public-info-viewer`).
pub(crate) fn open_path(path: &str) -> bool {
    ["/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz"]
        .iter()
        .any(|open| path == *open || path.starts_with(&format!("{open}/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_as_rbac_does() {
        let what = Attributes {
            verb: "get".into(),
            group: "apps.kruise.io".into(),
            resource: "clonesets".into(),
            subresource: "status".into(),
            namespace: "default".into(),
            name: "web".into(),
        };
        let rule = |r: Value| rule_allows(&r, &what);
        assert!(rule(
            json!({"verbs": ["get"], "apiGroups": ["apps.kruise.io"], "resources": ["clonesets/status"]})
        ));
        assert!(rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]})));
        assert!(!rule(
            json!({"verbs": ["get"], "apiGroups": ["apps.kruise.io"], "resources": ["clonesets"]})
        ));
        assert!(!rule(
            json!({"verbs": ["list"], "apiGroups": ["apps.kruise.io"], "resources": ["clonesets/status"]})
        ));
        assert!(!rule(
            json!({"verbs": ["get"], "apiGroups": ["apps.kruise.io"], "resources": ["clonesets/status"], "resourceNames": ["other"]})
        ));
    }

    #[test]
    fn forbidden_messages_read_as_kube_apiservers() {
        let who = Identity::service_account("kruise-system", "kruise-manager");
        let what = Attributes {
            verb: "list".into(),
            resource: "pods".into(),
            namespace: "default".into(),
            ..Default::default()
        };
        assert_eq!(
            forbidden_message(&who, &what),
            r#"pods is forbidden: User "system:serviceaccount:kruise-system:kruise-manager" cannot list resource "pods" in API group "" in the namespace "default""#
        );
        let what = Attributes {
            verb: "get".into(),
            group: "apps".into(),
            resource: "deployments".into(),
            name: "web".into(),
            ..Default::default()
        };
        assert_eq!(
            forbidden_message(&who, &what),
            r#"deployments.apps "web" is forbidden: User "system:serviceaccount:kruise-system:kruise-manager" cannot get resource "deployments" in API group "apps" at the cluster scope"#
        );
    }
}
