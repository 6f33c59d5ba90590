//! Object metadata as kube-apiserver 1.36 validates it for every kind
//! (`validateObjectMetaAccessorWithOptsCommon` in `k8s.io/apimachinery/pkg/api/validation`):
//! labels (`ValidateLabels`), annotations (`ValidateAnnotations`), owner references
//! (`ValidateOwnerReferences`) and finalizers (`ValidateFinalizers`). The messages are Go's,
//! from `k8s.io/apimachinery/pkg/api/validate/content` (whose `MaxLenError` says "bytes").

use crate::error::Cause;
use serde_json::{Map, Value, json};

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_MAX: usize = 63;
const SUBDOMAIN_MAX: usize = 253;
/// `TotalAnnotationSizeLimitB`.
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// `content.MaxLenError`.
fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `RegexError`: Go's punctuation, with its doubled space between examples.
fn regex_error(msg: &str, pattern: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{pattern}')"));
    out
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_label_key(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => ok(f) && ok(l) && b.iter().all(|c| ok(c) || *c == b'-'),
        _ => false,
    }
}

/// `content.IsDNS1123Subdomain`.
pub(crate) fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        errs.push(max_len_error(SUBDOMAIN_MAX));
    }
    if !value.split('.').all(matches_dns1123_label) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `IsDNS1035Label`.
pub(crate) fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX {
        errs.push(max_len_error(LABEL_MAX));
    }
    if !(matches_dns1123_label(value) && value.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName` (`content.IsLabelKey`).
pub(crate) fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_MAX {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX)));
    }
    if !matches_label_key(name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `IsValidLabelValue` (`content.IsLabelValue`).
pub(crate) fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX {
        errs.push(max_len_error(LABEL_MAX));
    }
    if !value.is_empty() && !matches_label_key(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// A string as Go's `json.Marshal` writes it (`<`, `>`, `&` escaped).
fn go_json_string(s: &str) -> String {
    serde_json::to_string(s)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A `metav1.OwnerReference` as Go's `json.Marshal` writes it: its fields in declaration
/// order, `controller` and `blockOwnerDeletion` omitted when unset.
fn owner_reference_json(r: &Value) -> String {
    let mut out = String::from("{");
    for (i, k) in ["apiVersion", "kind", "name", "uid"].iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("\"{k}\":{}", go_json_string(text(r, k))));
    }
    for k in ["controller", "blockOwnerDeletion"] {
        if let Some(b) = r.get(k).and_then(Value::as_bool) {
            out.push_str(&format!(",\"{k}\":{b}"));
        }
    }
    out.push('}');
    out
}

/// The causes of labels, annotations, owner references and finalizers, in Go's order.
pub(crate) fn object_meta_causes(meta: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    // Labels: each key a qualified name, each value a label value.
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            for msg in is_qualified_name(k) {
                causes.push(Cause::invalid("metadata.labels", &json!(k), &msg));
            }
            let v = v.as_str().unwrap_or_default();
            for msg in is_label_value(v) {
                causes.push(Cause::invalid("metadata.labels", &json!(v), &msg));
            }
        }
    }
    // Annotations: keys are qualified names whatever their case; 256 KiB in all.
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        let mut total = 0usize;
        for (k, v) in annotations {
            for msg in is_qualified_name(&k.to_lowercase()) {
                causes.push(Cause::invalid("metadata.annotations", &json!(k), &msg));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > ANNOTATIONS_MAX_BYTES {
            causes.push(Cause {
                reason: "FieldValueTooLong".into(),
                message: format!("Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes"),
                field: "metadata.annotations".into(),
            });
        }
    }
    // Owner references.
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        let field = "metadata.ownerReferences";
        let mut first_controller: Option<String> = None;
        for r in refs {
            let api_version = text(r, "apiVersion");
            let kind = text(r, "kind");
            // `schema.FromAPIVersionAndKind`: `group/version` or `version`; more slashes
            // parse as nothing.
            let (group, version) = match api_version.matches('/').count() {
                _ if api_version.is_empty() || api_version == "/" => ("", ""),
                0 => ("", api_version),
                1 => api_version.split_once('/').unwrap_or_default(),
                _ => ("", ""),
            };
            if version.is_empty() {
                causes.push(Cause::invalid(
                    &format!("{field}.apiVersion"),
                    &json!(api_version),
                    "version must not be empty",
                ));
            }
            if kind.is_empty() {
                causes.push(Cause::invalid(
                    &format!("{field}.kind"),
                    &json!(kind),
                    "must not be empty",
                ));
            }
            let name = text(r, "name");
            if name.is_empty() {
                causes.push(Cause::invalid(
                    &format!("{field}.name"),
                    &json!(name),
                    "must not be empty",
                ));
            }
            let uid = text(r, "uid");
            if uid.is_empty() {
                causes.push(Cause::invalid(
                    &format!("{field}.uid"),
                    &json!(uid),
                    "must not be empty",
                ));
            }
            // `BannedOwners`: a core Event.
            if (group, version, kind) == ("", "v1", "Event") {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: {}: /v1, Kind=Event is disallowed from being an owner",
                        owner_reference_json(r)
                    ),
                    field: field.into(),
                });
            }
            if r.get("controller").and_then(Value::as_bool) == Some(true) {
                let current = format!("{kind}/{name}");
                match &first_controller {
                    Some(first) => {
                        let all: Vec<String> = refs.iter().map(owner_reference_json).collect();
                        causes.push(Cause {
                            reason: "FieldValueInvalid".into(),
                            message: format!(
                                "Invalid value: [{}]: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}",
                                all.join(",")
                            ),
                            field: field.into(),
                        });
                    }
                    None => first_controller = Some(current),
                }
            }
        }
    }
    // Finalizers: qualified names; not both orphan and foregroundDeletion.
    if let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) {
        let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
        for f in &names {
            for msg in is_qualified_name(f) {
                causes.push(Cause::invalid("metadata.finalizers", &json!(f), &msg));
            }
        }
        if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
            let listed: Vec<String> = names.iter().map(|f| go_json_string(f)).collect();
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: [{}]: finalizer orphan and foregroundDeletion cannot be both set",
                    listed.join(",")
                ),
                field: "metadata.finalizers".into(),
            });
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(meta: Value) -> Vec<String> {
        object_meta_causes(meta.as_object().expect("object"))
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn label_keys_and_values() {
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert!(is_qualified_name("A_b.c-1").is_empty());
        assert_eq!(
            is_qualified_name("bad key!"),
            vec![
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(is_qualified_name("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(
            is_qualified_name("Example.com/a"),
            vec![
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec![
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 bytes"]
        );
        assert_eq!(is_qualified_name("a/").len(), 2);
        assert!(is_label_value("").is_empty());
        assert!(is_label_value(&"a".repeat(63)).is_empty());
        assert_eq!(is_label_value(&"a".repeat(64)), vec!["must be no more than 63 bytes"]);
        assert_eq!(
            is_label_value("-x"),
            vec![
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
    }

    #[test]
    fn annotations_owner_references_and_finalizers() {
        assert!(messages(json!({
            "labels": {"a": "", "x.io/b": "B_1"},
            "annotations": {"Example.COM/Mixed": "any value at all"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "1", "controller": true}],
            "finalizers": ["kubernetes", "example.com/f"],
        }))
        .is_empty());
        let big = "x".repeat(ANNOTATIONS_MAX_BYTES);
        assert_eq!(
            messages(json!({"annotations": {"a": big}})),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        assert_eq!(
            messages(
                json!({"ownerReferences": [{"apiVersion": "apps/", "kind": "", "name": "n"}]})
            ),
            vec![
                r#"metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty"#,
                r#"metadata.ownerReferences.kind: Invalid value: "": must not be empty"#,
                r#"metadata.ownerReferences.uid: Invalid value: "": must not be empty"#,
            ]
        );
        assert_eq!(
            messages(json!({"ownerReferences": [
                {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true, "blockOwnerDeletion": false},
            ]})),
            vec![
                r#"metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","kind":"A","name":"a","uid":"1","controller":true},{"apiVersion":"v1","kind":"B","name":"b","uid":"2","controller":true,"blockOwnerDeletion":false}]: Only one reference can have Controller set to true. Found "true" in references for A/a and B/b"#
            ]
        );
        assert_eq!(
            messages(
                json!({"ownerReferences": [{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"}]})
            ),
            vec![
                r#"metadata.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"1"}: /v1, Kind=Event is disallowed from being an owner"#
            ]
        );
        assert_eq!(
            messages(json!({"finalizers": ["orphan", "foregroundDeletion"]})),
            vec![
                r#"metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set"#
            ]
        );
        assert_eq!(messages(json!({"finalizers": ["a/b/c"]})).len(), 1);
    }
}
