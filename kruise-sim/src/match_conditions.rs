//! Webhook `matchConditions`: CEL expressions over the admission request that decide whether
//! a webhook is called, evaluated with `cel-interpreter`.
//!
//! As kube-apiserver decides: when any condition is `false` the webhook is skipped; when all
//! are `true` it is called; otherwise (an expression fails to parse or evaluate, or gives a
//! non-boolean) the webhook's `failurePolicy` decides (`Fail`: the request is refused as
//! forbidden). The variables are `object`, `oldObject` (null where the request has none),
//! `request` (the AdmissionRequest) and `namespaceObject`, which webhooks get as null
//! (kube-apiserver's webhook matcher passes no namespace), so reading it fails. The
//! `authorizer` variable and Kubernetes' CEL library extensions (`quantity`, `url`, ...) are
//! not available: expressions that use them fail to evaluate.

use cel_interpreter::{Context, Program, Value as CelValue};
use serde_json::Value;

/// One `matchConditions` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MatchCondition {
    pub name: String,
    pub expression: String,
}

impl MatchCondition {
    /// The entries of a webhook's `matchConditions`.
    pub(crate) fn of_webhook(webhook: &Value) -> Vec<Self> {
        webhook
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                MatchCondition { name: s("name"), expression: s("expression") }
            })
            .collect()
    }
}

/// Whether to call a webhook, by its conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Every condition holds (or there are none).
    Call,
    /// A condition is false.
    Skip,
    /// No condition is false, but one could not be evaluated: the failure policy decides.
    Error(String),
}

/// Evaluates `conditions` for the AdmissionRequest `request`.
pub(crate) fn decide(conditions: &[MatchCondition], request: &Value) -> Decision {
    if conditions.is_empty() {
        return Decision::Call;
    }
    let mut context = Context::default();
    let variables = [
        ("object", request.get("object").unwrap_or(&Value::Null)),
        ("oldObject", request.get("oldObject").unwrap_or(&Value::Null)),
        ("request", request),
        ("namespaceObject", &Value::Null),
    ];
    for (name, value) in variables {
        if let Err(e) = context.add_variable(name, value) {
            return Decision::Error(format!("variable {name}: {e}"));
        }
    }
    let mut errors = Vec::new();
    for condition in conditions {
        match evaluate(&condition.expression, &context) {
            Ok(true) => {}
            Ok(false) => return Decision::Skip,
            // kube-apiserver's words; the cause after them is the CEL library's own.
            Err(e) => {
                errors.push(format!("expression '{}' resulted in error: {e}", condition.expression))
            }
        }
    }
    // One error as itself, several as an aggregate (`[a, b]`), as kube-apiserver prints them.
    match errors.len() {
        0 => Decision::Call,
        1 => Decision::Error(errors.remove(0)),
        _ => Decision::Error(format!("[{}]", errors.join(", "))),
    }
}

/// Parses and runs one expression. A panic inside the CEL library (its parser has had them on
/// malformed input) becomes an evaluation error, so bad input never takes the server down.
fn evaluate(expression: &str, context: &Context<'_>) -> Result<bool, String> {
    let run = || -> Result<bool, String> {
        let program = Program::compile(expression).map_err(|e| e.to_string())?;
        match program.execute(context).map_err(|e| e.to_string())? {
            CelValue::Bool(b) => Ok(b),
            other => Err(format!("expression gave {other:?}, not a bool")),
        }
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .unwrap_or_else(|_| Err(format!("the CEL library failed on {expression:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(expressions: &[&str]) -> Vec<MatchCondition> {
        expressions
            .iter()
            .enumerate()
            .map(|(i, e)| MatchCondition { name: format!("c{i}"), expression: (*e).to_owned() })
            .collect()
    }

    fn request() -> Value {
        json!({
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["dev"]},
            "object": {"metadata": {"name": "p", "labels": {"team": "a"}}},
            "oldObject": null,
        })
    }

    #[test]
    fn all_true_calls_any_false_skips() {
        let decide = |e: &[&str]| decide(&conditions(e), &request());
        assert_eq!(decide(&[]), Decision::Call);
        assert_eq!(decide(&["true"]), Decision::Call);
        assert_eq!(
            decide(&[
                "object.metadata.labels.team == 'a'",
                "request.operation == 'CREATE'",
                "request.userInfo.username != 'system:admin'",
                "oldObject == null",
            ]),
            Decision::Call
        );
        assert_eq!(decide(&["true", "object.metadata.name == 'q'"]), Decision::Skip);
        assert_eq!(decide(&["'dev' in request.userInfo.groups"]), Decision::Call);
        assert_eq!(decide(&["!('ops' in request.userInfo.groups)"]), Decision::Call);
    }

    /// kube-apiserver gives webhooks no namespace: `namespaceObject` is null, so reading it is
    /// an error the failure policy decides, never a match.
    #[test]
    fn webhooks_get_no_namespace_object() {
        let d = decide(&conditions(&["namespaceObject.metadata.labels.env == 'prod'"]), &request());
        assert!(matches!(d, Decision::Error(_)), "{d:?}");
        assert_eq!(decide(&conditions(&["namespaceObject == null"]), &request()), Decision::Call);
    }

    #[test]
    fn errors_leave_the_decision_to_the_failure_policy_unless_a_condition_is_false() {
        let d = decide(&conditions(&["object.spec.missing == 1"]), &request());
        let expected = "expression 'object.spec.missing == 1' resulted in error: ";
        assert!(matches!(d, Decision::Error(ref m) if m.starts_with(expected)), "{d:?}");
        let d = decide(&conditions(&["'not a bool'"]), &request());
        assert!(matches!(d, Decision::Error(_)), "{d:?}");
        let d = decide(&conditions(&["(((", "false"]), &request());
        assert_eq!(d, Decision::Skip);
    }

    #[test]
    fn malformed_expressions_are_errors_not_panics() {
        for e in ["(((", ")", "a..b", "1 +", "'unterminated", "x[", "{1:", "size(", "?:", ""] {
            let d = decide(&conditions(&[e]), &request());
            assert!(matches!(d, Decision::Error(_)), "{e:?}: {d:?}");
        }
    }
}
