//! Label selectors, the one implementation every kind uses: parsed once from a
//! [`LabelSelector`], matched against labels, rendered in Kubernetes' string form, and read back
//! from that form.
//!
//! Two ways in, one [`Selector`]:
//! - [`label_selector_as_selector`] is `metav1.LabelSelectorAsSelector`: keys and values are
//!   validated and refusals carry Go's error text (admission, and planners that report what
//!   Kubernetes would);
//! - [`Selector::parse`] (and [`PodSelector::parse`]) only refuses what cannot be matched
//!   (unknown operators, malformed value lists) with a [`SelectorError`] (the workload
//!   planners' own check of `spec.selector`).
//!
//! Either way `None` matches nothing and an empty selector matches everything; requirements
//! are kept sorted by key with their values sorted and deduplicated (as Go's `Selector.Add`
//! sorts them), which no match depends on.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::names::{is_qualified_name, is_valid_label_value};

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Self::Equals(key, _)
            | Self::In(key, _)
            | Self::NotIn(key, _)
            | Self::Exists(key)
            | Self::DoesNotExist(key) => key,
        }
    }

    /// Whether the requirement holds when its key has `value` (`None`: the label is absent).
    fn holds(&self, value: Option<&str>) -> bool {
        let listed = |values: &[String], v: &str| values.iter().any(|x| x == v);
        match self {
            Self::Equals(_, expected) => value == Some(expected.as_str()),
            Self::In(_, values) => value.is_some_and(|v| listed(values, v)),
            Self::NotIn(_, values) => value.is_none_or(|v| !listed(values, v)),
            Self::Exists(_) => value.is_some(),
            Self::DoesNotExist(_) => value.is_none(),
        }
    }

    fn render(&self) -> String {
        match self {
            Self::Equals(key, value) => format!("{key}={value}"),
            Self::In(key, values) => format!("{key} in ({})", values.join(",")),
            Self::NotIn(key, values) => format!("{key} notin ({})", values.join(",")),
            Self::Exists(key) => key.clone(),
            Self::DoesNotExist(key) => format!("!{key}"),
        }
    }
}

/// A requirement of a [`Selector`] (kept opaque).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequirementView(Requirement);

/// A parsed label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// From a nil selector: matches nothing and is not empty.
    Nothing,
    /// The requirements, sorted by key; none at all matches everything.
    Requirements(Vec<RequirementView>),
}

/// Why [`Selector::parse`] refused a `matchExpressions` entry. The text names
/// `spec.selector.matchExpressions`, as the workload planners have always reported it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("spec.selector.matchExpressions: key {key:?} with operator {operator:?}: {reason}")]
pub struct SelectorError {
    /// The requirement's key.
    pub key: String,
    /// The requirement's operator.
    pub operator: String,
    /// What is wrong.
    pub reason: String,
}

/// The selector of `reqs`, normalised: values sorted and deduplicated, requirements sorted by
/// key (stably).
fn normalised(mut reqs: Vec<Requirement>) -> Selector {
    for req in &mut reqs {
        if let Requirement::In(_, values) | Requirement::NotIn(_, values) = req {
            values.sort();
            values.dedup();
        }
    }
    reqs.sort_by(|a, b| a.key().cmp(b.key()));
    Selector::Requirements(reqs.into_iter().map(RequirementView).collect())
}

impl Selector {
    /// Parses `selector`, refusing only unknown operators and malformed value lists (keys and
    /// values are not validated; see [`label_selector_as_selector`] for Go's checks).
    ///
    /// # Errors
    /// The first `matchExpressions` entry that cannot be matched.
    pub fn parse(selector: Option<&LabelSelector>) -> Result<Self, SelectorError> {
        let Some(selector) = selector else {
            return Ok(Self::Nothing);
        };
        let mut reqs = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            reqs.push(Requirement::Equals(key.clone(), value.clone()));
        }
        for expr in selector.match_expressions.iter().flatten() {
            let values = expr.values.clone().unwrap_or_default();
            let key = expr.key.clone();
            let bad = |why: &str| SelectorError {
                key: expr.key.clone(),
                operator: expr.operator.clone(),
                reason: why.to_owned(),
            };
            let req = match expr.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(bad("values must be non-empty for In and NotIn"));
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(bad("values must be empty for Exists and DoesNotExist"));
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                _ => return Err(bad("not a valid selector operator")),
            };
            reqs.push(req);
        }
        Ok(normalised(reqs))
    }

    /// Whether the selector has no requirements (matches everything); a nil selector is not
    /// empty.
    pub fn is_empty(&self) -> bool {
        matches!(self, Selector::Requirements(reqs) if reqs.is_empty())
    }

    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_lookup(|key| labels.get(key).map(String::as_str))
    }

    /// Whether the labels that `label` looks up satisfy the selector (for labels kept in
    /// another form than a map, such as [`PodFacts`](crate::workload::PodFacts)).
    pub fn matches_lookup<'v>(&self, label: impl Fn(&str) -> Option<&'v str>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Requirements(reqs) => reqs.iter().all(|r| r.0.holds(label(r.0.key()))),
        }
    }

    /// The key of each requirement, in order (see [`Selector::matches_values`]).
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Self::Nothing => Vec::new(),
            Self::Requirements(reqs) => reqs.iter().map(|r| r.0.key()).collect(),
        }
    }

    /// [`Selector::matches`] with the labels already looked up: `value(i)` is the value of the
    /// key of requirement `i` (the i-th of [`Selector::keys`]).
    pub fn matches_values<'v>(&self, value: impl Fn(usize) -> Option<&'v str>) -> bool {
        match self {
            Self::Nothing => false,
            Self::Requirements(reqs) => {
                reqs.iter().enumerate().all(|(i, req)| req.0.holds(value(i)))
            }
        }
    }

    /// The canonical string form, e.g. `app=demo,tier in (a,b)` (empty for a nil selector).
    pub fn render(&self) -> String {
        match self {
            Self::Nothing => String::new(),
            Self::Requirements(reqs) => {
                reqs.iter().map(|r| r.0.render()).collect::<Vec<_>>().join(",")
            }
        }
    }
}

/// A workload's `spec.selector` (or a budget's), parsed once with [`Selector::parse`] and
/// matched against pod labels (for adopting orphan pods and mapping pod events to their
/// owners).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSelector(Selector);

impl PodSelector {
    /// Parses a label selector. `None` matches nothing and an empty selector matches
    /// everything, as Kubernetes has it; unknown operators and malformed value lists are
    /// refused, naming the requirement.
    ///
    /// # Errors
    /// The first `matchExpressions` entry that cannot be matched.
    pub fn parse(selector: Option<&LabelSelector>) -> Result<Self, SelectorError> {
        Selector::parse(selector).map(Self)
    }

    /// True when `labels` satisfy every requirement (`None`: no labels at all).
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.0.matches_lookup(|key| labels.and_then(|l| l.get(key)).map(String::as_str))
    }

    /// The label keys the selector reads, in the order [`PodSelector::matches_values`] takes
    /// their values.
    pub fn keys(&self) -> Vec<&str> {
        self.0.keys()
    }

    /// [`PodSelector::matches`] with the labels already looked up: `value(i)` is the value of
    /// the `i`-th of [`PodSelector::keys`].
    pub fn matches_values<'v>(&self, value: impl Fn(usize) -> Option<&'v str>) -> bool {
        self.0.matches_values(value)
    }

    /// The selector in Kubernetes' string form, e.g. `app=demo,tier in (a,b)`.
    pub fn render(&self) -> String {
        self.0.render()
    }
}

/// `labels.NewRequirement`'s checks, with its error text (an aggregate of field errors on the
/// relative paths `key` and `values`).
fn new_requirement(key: &str, op: &str, values: &[String]) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    let key_msgs = is_qualified_name(key);
    if !key_msgs.is_empty() {
        errs.push(FieldError::invalid(&FieldPath::new("key"), key, key_msgs.join("; ")));
    }
    let values_path = FieldPath::new("values");
    let values_value = || BadValue::Go(go::string_slice((!values.is_empty()).then_some(values)));
    match op {
        "in" | "notin" if values.is_empty() => errs.push(FieldError::invalid(
            &values_path,
            values_value(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        "=" if values.len() != 1 => errs.push(FieldError::invalid(
            &values_path,
            values_value(),
            "exact-match compatibility requires one single value",
        )),
        "exists" | "!" if !values.is_empty() => errs.push(FieldError::invalid(
            &values_path,
            values_value(),
            "values set must be empty for exists and does not exist",
        )),
        _ => {}
    }
    for (i, value) in values.iter().enumerate() {
        let msgs = is_valid_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(&values_path.index(i).key(key), value, msgs.join("; ")));
        }
    }
    if !errs.is_empty() {
        return Err(FieldErrors(errs).to_string());
    }
    Ok(match (op, values) {
        ("=", [value]) => Requirement::Equals(key.to_owned(), value.clone()),
        ("in" | "=", _) => Requirement::In(key.to_owned(), values.to_vec()),
        ("notin", _) => Requirement::NotIn(key.to_owned(), values.to_vec()),
        ("exists", _) => Requirement::Exists(key.to_owned()),
        _ => Requirement::DoesNotExist(key.to_owned()),
    })
}

/// `metav1.LabelSelectorAsSelector`: the selector, or the text of the first error Go reports.
///
/// # Errors
/// Go's text for the first requirement it refuses.
pub fn label_selector_as_selector(selector: Option<&LabelSelector>) -> Result<Selector, String> {
    let Some(selector) = selector else {
        return Ok(Selector::Nothing);
    };
    let mut reqs = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        reqs.push(new_requirement(key, "=", std::slice::from_ref(value))?);
    }
    for expr in selector.match_expressions.iter().flatten() {
        let op = match expr.operator.as_str() {
            "In" => "in",
            "NotIn" => "notin",
            "Exists" => "exists",
            "DoesNotExist" => "!",
            other => {
                return Err(format!("{} is not a valid label selector operator", go::quote(other)));
            }
        };
        let values = expr.values.as_deref().unwrap_or_default();
        reqs.push(new_requirement(&expr.key, op, values)?);
    }
    Ok(normalised(reqs))
}

/// Whether two selectors are equal as Kubernetes' semantic equality sees them (nil and empty
/// maps and lists are equal).
pub fn selectors_semantically_equal(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> bool {
    type Normalized = (BTreeMap<String, String>, Vec<(String, String, Vec<String>)>);
    fn norm(s: &LabelSelector) -> Normalized {
        let labels = s.match_labels.clone().unwrap_or_default();
        let exprs = s
            .match_expressions
            .iter()
            .flatten()
            .map(|e| (e.key.clone(), e.operator.clone(), e.values.clone().unwrap_or_default()))
            .collect();
        (labels, exprs)
    }
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => norm(a) == norm(b),
        _ => false,
    }
}

/// Parses a selector in its string form (`app=web,tier in (a,b),!legacy`, as a scale
/// subresource's `status.selector` writes it) into a [`LabelSelector`]: equality (`=`, `==`,
/// `!=`), set (`in`, `notin`) and existence (`key`, `!key`) requirements. An empty string
/// selects everything (an empty selector).
///
/// # Errors
/// The requirement that cannot be read.
pub fn label_selector_from_str(text: &str) -> Result<LabelSelector, String> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let mut labels = BTreeMap::new();
    let mut expressions = Vec::new();
    // Split on commas outside parentheses.
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    let expr = |key: &str, operator: &str, values: Option<Vec<String>>| LabelSelectorRequirement {
        key: key.trim().to_owned(),
        operator: operator.to_owned(),
        values,
    };
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let set = |rest: &str| -> Result<Vec<String>, String> {
            let inner = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("expected a parenthesised set of values in {part:?}"))?;
            Ok(inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect())
        };
        let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
        if let [key, rest] = words.as_slice() {
            let rest = rest.trim_start();
            if let Some(values) = rest.strip_prefix("notin") {
                expressions.push(expr(key, "NotIn", Some(set(values)?)));
                continue;
            }
            if let Some(values) = rest.strip_prefix("in") {
                expressions.push(expr(key, "In", Some(set(values)?)));
                continue;
            }
        }
        if let Some((key, value)) = part.split_once("!=") {
            expressions.push(expr(key, "NotIn", Some(vec![value.trim().to_owned()])));
        } else if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
            labels.insert(key.trim().to_owned(), value.trim().to_owned());
        } else if let Some(key) = part.strip_prefix('!') {
            expressions.push(expr(key, "DoesNotExist", None));
        } else if part.chars().all(|c| c.is_alphanumeric() || "-_./".contains(c)) {
            expressions.push(expr(part, "Exists", None));
        } else {
            return Err(format!("unable to parse requirement: {part:?}"));
        }
    }
    Ok(LabelSelector {
        match_labels: (!labels.is_empty()).then_some(labels),
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn renders_and_matches_like_kubernetes() {
        let selector = LabelSelector {
            match_labels: Some(labels(&[("app", "demo")])),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "In".into(),
                    values: Some(vec!["web".into(), "api".into()]),
                },
                LabelSelectorRequirement {
                    key: "canary".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        let parsed = PodSelector::parse(Some(&selector)).expect("valid");
        assert_eq!(parsed.render(), "app=demo,!canary,tier in (api,web)");
        assert!(parsed.matches(Some(&labels(&[("app", "demo"), ("tier", "web")]))));
        assert!(!parsed.matches(Some(&labels(&[("app", "demo"), ("tier", "db")]))));
        assert!(!parsed.matches(Some(&labels(&[
            ("app", "demo"),
            ("tier", "web"),
            ("canary", "x")
        ]))));
        assert!(!PodSelector(Selector::Nothing).matches(Some(&labels(&[("app", "demo")]))));
        assert!(PodSelector::parse(Some(&LabelSelector::default())).expect("valid").matches(None));
    }

    #[test]
    fn rejects_bad_operators() {
        let selector = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "Near".into(),
                values: None,
            }]),
            ..Default::default()
        };
        let err = Selector::parse(Some(&selector)).expect_err("invalid");
        assert!(err.to_string().contains("tier"), "{err}");
        assert!(err.to_string().contains("Near"), "{err}");
    }
}

#[cfg(test)]
mod as_selector_tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn selector_matching() {
        let sel = LabelSelector {
            match_labels: Some(labels(&[("a", "b")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "env".into(),
                operator: "NotIn".into(),
                values: Some(vec!["prod".into()]),
            }]),
        };
        let s = label_selector_as_selector(Some(&sel)).expect("valid");
        assert!(s.matches(&labels(&[("a", "b")])));
        assert!(!s.matches(&labels(&[("a", "b"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[])));
        assert!(!label_selector_as_selector(None).expect("nil").matches(&labels(&[])));
        assert!(!label_selector_as_selector(None).expect("nil").is_empty());
        assert!(label_selector_as_selector(Some(&LabelSelector::default())).expect("x").is_empty());
    }

    #[test]
    fn selector_errors_are_go_text() {
        let bad_op = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Foo".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            label_selector_as_selector(Some(&bad_op)),
            Err("\"Foo\" is not a valid label selector operator".to_owned())
        );
        let empty_in = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "In".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            label_selector_as_selector(Some(&empty_in)),
            Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".to_owned())
        );
    }
}

#[cfg(test)]
mod selector_string_tests {
    use super::*;

    #[test]
    fn selector_strings_parse_into_label_selectors() {
        let s = label_selector_from_str("app=web, tier in (a, b),env notin (x),legacy,!old,z!=1")
            .expect("parses");
        assert_eq!(s.match_labels.clone().unwrap_or_default()["app"], "web");
        let exprs = s.match_expressions.clone().unwrap_or_default();
        let ops: Vec<(&str, &str)> =
            exprs.iter().map(|e| (e.key.as_str(), e.operator.as_str())).collect();
        assert_eq!(
            ops,
            [
                ("tier", "In"),
                ("env", "NotIn"),
                ("legacy", "Exists"),
                ("old", "DoesNotExist"),
                ("z", "NotIn")
            ]
        );
        assert_eq!(exprs[0].values.clone().unwrap_or_default(), ["a", "b"]);
        assert_eq!(label_selector_from_str("").expect("empty"), LabelSelector::default());
        assert!(label_selector_from_str("a in b").is_err());
        assert!(label_selector_from_str("a b c").is_err());
    }
}
