//! The Gateway API (gateway.networking.k8s.io) types a Rollout step embeds: header, query and
//! path matches and the request header filter, as the Gateway API spells them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// How a header or query parameter value is compared.
    pub enum MatchType {
        /// Equal to the value (the default).
        Exact = "Exact",
        /// Matches the value as a regular expression.
        RegularExpression = "RegularExpression",
    }
}

crate::wire_enum! {
    /// How a request path is compared.
    pub enum PathMatchType {
        /// Equal to the value.
        Exact = "Exact",
        /// Starts with the value, by path segment (the default).
        PathPrefix = "PathPrefix",
        /// Matches the value as a regular expression.
        RegularExpression = "RegularExpression",
    }
}

/// A request header to match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpHeaderMatch {
    /// How the value is compared (Exact when unset).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<MatchType>,
    /// Header name, compared case-insensitively.
    #[serde(default)]
    pub name: String,
    /// Header value.
    #[serde(default)]
    pub value: String,
}

/// A query parameter to match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpQueryParamMatch {
    /// How the value is compared (Exact when unset).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<MatchType>,
    /// Parameter name.
    #[serde(default)]
    pub name: String,
    /// Parameter value.
    #[serde(default)]
    pub value: String,
}

/// A request path to match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpPathMatch {
    /// How the value is compared (PathPrefix when unset).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<PathMatchType>,
    /// The path ("/" when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A header name and value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpHeader {
    /// Header name.
    #[serde(default)]
    pub name: String,
    /// Header value.
    #[serde(default)]
    pub value: String,
}

/// Request headers to set, add or remove on the way to the canary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpHeaderFilter {
    /// Headers to overwrite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<HttpHeader>,
    /// Headers to append.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<HttpHeader>,
    /// Header names to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}
