//! Label selectors, parsed once: matching and the canonical string form upstream writes to
//! `status.labelSelector`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::SpecError;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Requirement {
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

    fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.holds(labels.and_then(|labels| labels.get(self.key())).map(String::as_str))
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

/// A parsed label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Selector {
    /// No selector at all: matches nothing.
    Nothing,
    /// The requirements, sorted by key; empty matches everything.
    Requirements(Vec<Requirement>),
}

impl Selector {
    /// Parses `selector`, rejecting unknown operators and malformed value lists.
    pub(crate) fn parse(selector: Option<&LabelSelector>) -> Result<Self, SpecError> {
        let Some(selector) = selector else {
            return Ok(Self::Nothing);
        };
        let mut reqs = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            reqs.push(Requirement::Equals(key.clone(), value.clone()));
        }
        for expr in selector.match_expressions.iter().flatten() {
            let mut values = expr.values.clone().unwrap_or_default();
            values.sort();
            values.dedup();
            let key = expr.key.clone();
            let bad = |why: &str| SpecError::Selector {
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
        reqs.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(Self::Requirements(reqs))
    }

    /// True when `labels` satisfy every requirement.
    pub(crate) fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        match self {
            Self::Nothing => false,
            Self::Requirements(reqs) => reqs.iter().all(|req| req.matches(labels)),
        }
    }

    /// The canonical string form, e.g. `app=demo,tier in (a,b)`.
    /// The key of each requirement, in order (see [`Selector::matches_values`]).
    pub(crate) fn keys(&self) -> Vec<&str> {
        match self {
            Self::Nothing => Vec::new(),
            Self::Requirements(reqs) => reqs.iter().map(Requirement::key).collect(),
        }
    }

    /// [`Selector::matches`] with the labels already looked up: `value(i)` is the value of the
    /// key of requirement `i` (the i-th of [`Selector::keys`]).
    pub(crate) fn matches_values<'v>(&self, value: impl Fn(usize) -> Option<&'v str>) -> bool {
        match self {
            Self::Nothing => false,
            Self::Requirements(reqs) => reqs.iter().enumerate().all(|(i, req)| req.holds(value(i))),
        }
    }

    pub(crate) fn render(&self) -> String {
        match self {
            Self::Nothing => String::new(),
            Self::Requirements(reqs) => {
                reqs.iter().map(Requirement::render).collect::<Vec<_>>().join(",")
            }
        }
    }
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
        let parsed = Selector::parse(Some(&selector)).expect("valid");
        assert_eq!(parsed.render(), "app=demo,!canary,tier in (api,web)");
        assert!(parsed.matches(Some(&labels(&[("app", "demo"), ("tier", "web")]))));
        assert!(!parsed.matches(Some(&labels(&[("app", "demo"), ("tier", "db")]))));
        assert!(!parsed.matches(Some(&labels(&[
            ("app", "demo"),
            ("tier", "web"),
            ("canary", "x")
        ]))));
        assert!(!Selector::Nothing.matches(Some(&labels(&[("app", "demo")]))));
        assert!(Selector::parse(Some(&LabelSelector::default())).expect("valid").matches(None));
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
