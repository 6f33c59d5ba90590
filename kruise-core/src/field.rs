//! Field errors as Kubernetes' `k8s.io/apimachinery/pkg/util/validation/field` writes them.
//!
//! A [`FieldError`] names the field by its [`FieldPath`] (`spec.template.spec.containers[0].name`,
//! `metadata.labels[app]`), says what kind of error it is, shows the offending value the way Go
//! prints it and adds a detail. [`FieldErrors`] is a list of them and prints like
//! `ErrorList.ToAggregate()`: one error alone, several as `[e1, e2]`, duplicates dropped.
//!
//! The value is kept as the text Go prints (see [`BadValue`]): integers and booleans plainly,
//! strings quoted like Go's `%q`, and structured values (selectors, maps, slices) in Go's `%#v`
//! syntax, as apimachinery v0.32 (the version upstream OpenKruise builds with) renders them. The
//! helpers in [`go`] produce that syntax for the types the validators report.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// One step of a [`FieldPath`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Segment {
    /// A field name, written after a `.` (or first).
    Name(String),
    /// A list index or map key, written as `[..]`.
    Subscript(String),
}

/// The path from an object's root to one of its fields, as `field.Path` builds and prints it.
///
/// ```
/// use kruise_core::field::FieldPath;
/// let p = FieldPath::new("spec").child("containers").index(0).child("name");
/// assert_eq!(p.to_string(), "spec.containers[0].name");
/// assert_eq!(FieldPath::new("metadata").child("labels").key("app").to_string(), "metadata.labels[app]");
/// ```
#[derive(Clone)]
pub struct FieldPath {
    /// The last segment, linked to its parent: extending a path allocates one node and
    /// copies nothing, so walking a large object costs little until an error is printed.
    last: Arc<PathNode>,
}

struct PathNode {
    parent: Option<Arc<PathNode>>,
    segment: Segment,
}

impl FieldPath {
    /// A root path with one field name.
    pub fn new(name: &str) -> Self {
        Self { last: Arc::new(PathNode { parent: None, segment: Segment::Name(name.to_owned()) }) }
    }

    fn push(&self, segment: Segment) -> Self {
        Self { last: Arc::new(PathNode { parent: Some(self.last.clone()), segment }) }
    }

    /// This path extended by a field name.
    pub fn child(&self, name: &str) -> Self {
        self.push(Segment::Name(name.to_owned()))
    }

    /// This path subscripted by a list index.
    pub fn index(&self, index: usize) -> Self {
        self.push(Segment::Subscript(index.to_string()))
    }

    /// This path subscripted by a map key.
    pub fn key(&self, key: &str) -> Self {
        self.push(Segment::Subscript(key.to_owned()))
    }

    /// The first element of this path (`field.Path.Root()`).
    pub fn root(&self) -> Self {
        let mut node = &self.last;
        while let Some(parent) = &node.parent {
            node = parent;
        }
        Self { last: node.clone() }
    }

    /// The segments from the root.
    fn segments(&self) -> Vec<&Segment> {
        let mut out = Vec::new();
        let mut node = Some(&self.last);
        while let Some(n) = node {
            out.push(&n.segment);
            node = n.parent.as_ref();
        }
        out.reverse();
        out
    }
}

impl PartialEq for FieldPath {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.last, &other.last) || self.segments() == other.segments()
    }
}

impl Eq for FieldPath {}

impl std::hash::Hash for FieldPath {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.segments().hash(state);
    }
}

impl fmt::Debug for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FieldPath({self})")
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments().into_iter().enumerate() {
            match segment {
                // Go prints an empty name as an (empty) subscript.
                Segment::Name(name) if !name.is_empty() => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(name)?;
                }
                Segment::Name(_) => f.write_str("[]")?,
                Segment::Subscript(sub) => write!(f, "[{sub}]")?,
            }
        }
        Ok(())
    }
}

/// What is wrong with a field (`field.ErrorType`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldErrorKind {
    /// A value that must be given is missing (`Required value`).
    Required,
    /// The value is malformed or out of range (`Invalid value`).
    Invalid,
    /// The value is well formed but not allowed here (`Forbidden`).
    Forbidden,
    /// The value is not one of an enumeration (`Unsupported value`).
    NotSupported {
        /// The values that are supported.
        allowed: Vec<String>,
    },
    /// The value must be unique but is not (`Duplicate value`).
    Duplicate,
    /// A referenced value does not exist (`Not found`).
    NotFound,
    /// The value is too long; it is not shown (`Too long`).
    TooLong,
    /// A list has too many items (`Too many`).
    TooMany,
    /// Something failed that is not the user's fault (`Internal error`).
    Internal,
}

impl FieldErrorKind {
    /// The phrase Go prints for this kind.
    pub fn as_str(&self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::NotSupported { .. } => "Unsupported value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Internal => "Internal error",
        }
    }

    /// Whether Go prints the bad value for this kind.
    fn shows_value(&self) -> bool {
        !matches!(
            self,
            FieldErrorKind::Required
                | FieldErrorKind::Forbidden
                | FieldErrorKind::TooLong
                | FieldErrorKind::Internal
        )
    }
}

/// An offending value, to be printed as Go prints it in a field error.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BadValue {
    /// An integer, printed plainly.
    Int(i64),
    /// A boolean, printed plainly.
    Bool(bool),
    /// A string, printed quoted like Go's `%q`.
    Str(String),
    /// A nil pointer, printed `null`.
    Null,
    /// Text already in Go's syntax (see [`go`]), printed as is.
    Go(String),
}

impl BadValue {
    /// The text Go prints for this value.
    pub fn render(&self) -> String {
        match self {
            BadValue::Int(n) => n.to_string(),
            BadValue::Bool(b) => b.to_string(),
            BadValue::Str(s) => go::quote(s),
            BadValue::Null => "null".to_owned(),
            BadValue::Go(text) => text.clone(),
        }
    }
}

impl From<i64> for BadValue {
    fn from(value: i64) -> Self {
        BadValue::Int(value)
    }
}

impl From<i32> for BadValue {
    fn from(value: i32) -> Self {
        BadValue::Int(i64::from(value))
    }
}

impl From<bool> for BadValue {
    fn from(value: bool) -> Self {
        BadValue::Bool(value)
    }
}

impl From<&str> for BadValue {
    fn from(value: &str) -> Self {
        BadValue::Str(value.to_owned())
    }
}

impl From<String> for BadValue {
    fn from(value: String) -> Self {
        BadValue::Str(value)
    }
}

impl From<&String> for BadValue {
    fn from(value: &String) -> Self {
        BadValue::Str(value.clone())
    }
}

impl<T: Into<BadValue>> From<Option<T>> for BadValue {
    /// `None` is a nil pointer; Go dereferences non-nil pointers before printing.
    fn from(value: Option<T>) -> Self {
        value.map_or(BadValue::Null, Into::into)
    }
}

/// One field error (`field.Error`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldError {
    /// The field.
    pub path: FieldPath,
    /// What is wrong with it.
    pub kind: FieldErrorKind,
    /// The offending value as Go prints it; `None` when Go leaves it out.
    pub value: Option<String>,
    /// Further explanation; may be empty.
    pub detail: String,
}

impl FieldError {
    /// `field.Required`.
    pub fn required(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::plain(path, FieldErrorKind::Required, detail)
    }

    /// `field.Forbidden`.
    pub fn forbidden(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::plain(path, FieldErrorKind::Forbidden, detail)
    }

    /// `field.InternalError` with the error's text.
    pub fn internal(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::plain(path, FieldErrorKind::Internal, detail)
    }

    /// `field.Invalid`.
    pub fn invalid(
        path: &FieldPath,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::valued(path, FieldErrorKind::Invalid, value, detail)
    }

    /// `field.Duplicate`.
    pub fn duplicate(path: &FieldPath, value: impl Into<BadValue>) -> Self {
        Self::valued(path, FieldErrorKind::Duplicate, value, "")
    }

    /// `field.NotFound`.
    pub fn not_found(path: &FieldPath, value: impl Into<BadValue>) -> Self {
        Self::valued(path, FieldErrorKind::NotFound, value, "")
    }

    /// `field.NotSupported`: the detail lists the supported values, quoted.
    pub fn not_supported(path: &FieldPath, value: impl Into<BadValue>, allowed: &[&str]) -> Self {
        let detail = if allowed.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = allowed.iter().map(|v| go::quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        let allowed = allowed.iter().map(|v| (*v).to_owned()).collect();
        Self::valued(path, FieldErrorKind::NotSupported { allowed }, value, detail)
    }

    /// `field.TooLong` for a limit in bytes.
    pub fn too_long(path: &FieldPath, max_bytes: usize) -> Self {
        Self {
            path: path.clone(),
            kind: FieldErrorKind::TooLong,
            value: None,
            detail: format!("may not be more than {max_bytes} bytes"),
        }
    }

    /// `field.TooMany`.
    pub fn too_many(path: &FieldPath, actual: usize, max: usize) -> Self {
        Self {
            path: path.clone(),
            kind: FieldErrorKind::TooMany,
            value: Some(actual.to_string()),
            detail: format!("must have at most {max} items"),
        }
    }

    fn plain(path: &FieldPath, kind: FieldErrorKind, detail: impl Into<String>) -> Self {
        Self { path: path.clone(), kind, value: None, detail: detail.into() }
    }

    fn valued(
        path: &FieldPath,
        kind: FieldErrorKind,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self { path: path.clone(), kind, value: Some(value.into().render()), detail: detail.into() }
    }

    /// The message without the field (`ErrorBody()`).
    pub fn body(&self) -> String {
        let mut s = self.kind.as_str().to_owned();
        if self.kind.shows_value()
            && let Some(value) = &self.value
        {
            s.push_str(": ");
            s.push_str(value);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A list of field errors (`field.ErrorList`), printed like `ToAggregate()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    /// An empty list.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Whether there are no errors (the object is valid).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many errors there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds one error.
    pub fn push(&mut self, error: FieldError) {
        self.0.push(error);
    }

    /// Adds several errors.
    pub fn extend(&mut self, errors: impl IntoIterator<Item = FieldError>) {
        self.0.extend(errors);
    }

    /// The errors.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// The distinct messages, in order (`ToAggregate` drops repeated messages).
    pub fn messages(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.0.iter().map(ToString::to_string).filter(|m| seen.insert(m.clone())).collect()
    }

    /// `Ok(())` when empty, else the list as an error.
    pub fn into_result(self) -> Result<(), FieldErrors> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }
}

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let messages = self.messages();
        match messages.as_slice() {
            [] => Ok(()),
            [one] => f.write_str(one),
            many => write!(f, "[{}]", many.join(", ")),
        }
    }
}

impl std::error::Error for FieldErrors {}

impl IntoIterator for FieldErrors {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a FieldErrors {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<FieldError> for FieldErrors {
    fn from_iter<I: IntoIterator<Item = FieldError>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl From<Vec<FieldError>> for FieldErrors {
    fn from(errors: Vec<FieldError>) -> Self {
        Self(errors)
    }
}

/// The message the API server returns when a validating webhook denies a request:
/// `admission webhook "<webhook>" denied the request: <reason>`.
pub fn denied_message(webhook: &str, reason: &str) -> String {
    format!("admission webhook {} denied the request: {reason}", go::quote(webhook))
}

/// Go's printing of values: `%q` for strings and `%#v` for the structured values field errors
/// carry.
pub mod go {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// Whether a JSON value is what Go's `omitempty` leaves out of a scalar, slice or map
    /// field: `null`, `false`, `0`, `""`, `[]` or `{}`.
    pub fn is_empty(value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty(),
        }
    }

    /// A string quoted as Go's `strconv.Quote` (and `%q`) quotes it.
    pub fn quote(s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if is_print(c) => out.push(c),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if (c as u32) < 0x10000 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
        }
        out.push('"');
        out
    }

    /// An approximation of Go's `strconv.IsPrint`: ASCII graphic characters and the space,
    /// and any other character that is not a control, separator or format character.
    fn is_print(c: char) -> bool {
        if c.is_ascii() {
            return (' '..='~').contains(&c);
        }
        if c.is_control() || c.is_whitespace() {
            return false;
        }
        !matches!(
            c as u32,
            0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
                | 0x202A..=0x202E | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
                | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF
        )
    }

    /// `%#v` of a `map[string]string` (`None` is a nil map).
    pub fn string_map(map: Option<&BTreeMap<String, String>>) -> String {
        match map {
            None => "map[string]string(nil)".to_owned(),
            Some(map) => {
                let entries: Vec<String> =
                    map.iter().map(|(k, v)| format!("{}:{}", quote(k), quote(v))).collect();
                format!("map[string]string{{{}}}", entries.join(", "))
            }
        }
    }

    /// `%#v` of a `[]string` (`None` is a nil slice).
    pub fn string_slice(items: Option<&[String]>) -> String {
        match items {
            None => "[]string(nil)".to_owned(),
            Some(items) => {
                let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
                format!("[]string{{{}}}", quoted.join(", "))
            }
        }
    }

    /// `%v` of a `[]string`: `[a b c]`.
    pub fn string_list_plain(items: &[String]) -> String {
        format!("[{}]", items.join(" "))
    }

    /// `%#v` of a `metav1.LabelSelector` value.
    pub fn label_selector(selector: &LabelSelector) -> String {
        let expressions = match &selector.match_expressions {
            None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
            Some(exprs) => {
                let items: Vec<String> = exprs
                    .iter()
                    .map(|e| {
                        format!(
                            "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                            quote(&e.key),
                            quote(&e.operator),
                            string_slice(e.values.as_deref())
                        )
                    })
                    .collect();
                format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
            }
        };
        format!(
            "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
            string_map(selector.match_labels.as_ref()),
            expressions
        )
    }

    /// `%#v` of an `intstr.IntOrString` value.
    pub fn int_or_string(value: &IntOrString) -> String {
        match value {
            IntOrString::Int(n) => format!("intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:\"\"}}"),
            IntOrString::String(s) => {
                format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", quote(s))
            }
        }
    }

    /// `IntOrString.String()`: the number or the string, `<nil>` for a nil pointer.
    pub fn int_or_string_text(value: Option<&IntOrString>) -> String {
        match value {
            None => "<nil>".to_owned(),
            Some(IntOrString::Int(n)) => n.to_string(),
            Some(IntOrString::String(s)) => s.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_like_go() {
        let spec = FieldPath::new("spec");
        assert_eq!(spec.child("replicas").to_string(), "spec.replicas");
        assert_eq!(
            spec.child("template").child("spec").child("containers").index(3).to_string(),
            "spec.template.spec.containers[3]"
        );
        assert_eq!(spec.child("a").key("b/c").child("d").to_string(), "spec.a[b/c].d");
        assert_eq!(spec.child("x").root().to_string(), "spec");
        assert_eq!(FieldPath::new("").to_string(), "[]");
    }

    #[test]
    fn errors_print_like_go() {
        let p = FieldPath::new("spec").child("replicas");
        assert_eq!(
            FieldError::invalid(&p, -1i64, "must be greater than or equal to 0").to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(FieldError::required(&p, "").to_string(), "spec.replicas: Required value");
        assert_eq!(FieldError::forbidden(&p, "nope").to_string(), "spec.replicas: Forbidden: nope");
        assert_eq!(
            FieldError::not_supported(&p, "X", &["Always", "Never"]).to_string(),
            r#"spec.replicas: Unsupported value: "X": supported values: "Always", "Never""#
        );
        assert_eq!(
            FieldError::duplicate(&p, "a").to_string(),
            r#"spec.replicas: Duplicate value: "a""#
        );
        assert_eq!(FieldError::not_found(&p, "a").to_string(), r#"spec.replicas: Not found: "a""#);
        assert_eq!(
            FieldError::too_long(&p, 262144).to_string(),
            "spec.replicas: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::invalid(&p, BadValue::Null, "x").to_string(),
            "spec.replicas: Invalid value: null: x"
        );
    }

    #[test]
    fn aggregate_prints_one_or_a_bracketed_list_without_repeats() {
        let p = FieldPath::new("a");
        let e1 = FieldError::required(&p, "");
        let e2 = FieldError::forbidden(&p, "x");
        assert_eq!(FieldErrors::new().to_string(), "");
        assert_eq!(FieldErrors(vec![e1.clone()]).to_string(), "a: Required value");
        assert_eq!(FieldErrors(vec![e1.clone(), e1.clone()]).to_string(), "a: Required value");
        assert_eq!(
            FieldErrors(vec![e1.clone(), e2, e1]).to_string(),
            "[a: Required value, a: Forbidden: x]"
        );
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go::quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go::quote("\n\t\u{1}\u{7f}"), r#""\n\t\x01\x7f""#);
        assert_eq!(go::quote("héllo 世界"), "\"héllo 世界\"");
        assert_eq!(go::quote("\u{a0}\u{200b}"), r#""\u00a0\u200b""#);
    }

    #[test]
    fn go_syntax_of_structured_values() {
        use std::collections::BTreeMap;
        let map: BTreeMap<String, String> =
            [("b".to_owned(), "2".to_owned()), ("a".to_owned(), "1".to_owned())].into();
        assert_eq!(go::string_map(Some(&map)), r#"map[string]string{"a":"1", "b":"2"}"#);
        assert_eq!(go::string_map(None), "map[string]string(nil)");
        let items = vec!["p0".to_owned(), "p0".to_owned()];
        assert_eq!(go::string_slice(Some(&items)), r#"[]string{"p0", "p0"}"#);
        assert_eq!(go::string_list_plain(&items), "[p0 p0]");
    }
}
