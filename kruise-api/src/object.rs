//! [`KruiseObject`]: any Kruise object of any served version, decoded from JSON by its
//! `apiVersion` and `kind`.

use kube::Resource;
use serde_json::Value;

use crate::well_known::groups;

/// Why a JSON document is not a valid Kruise object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The document is not a JSON object.
    #[error("expected a Kubernetes object, found {found}")]
    NotAnObject {
        /// What was found instead (`array`, `string`, ...).
        found: &'static str,
    },
    /// `apiVersion` or `kind` is missing or not a string.
    #[error("`{field}` is missing or not a string")]
    MissingTypeField {
        /// `apiVersion` or `kind`.
        field: &'static str,
    },
    /// The group is not a Kruise group.
    #[error(
        "{api_version}, Kind={kind} is not a Kruise kind (groups apps.kruise.io, policy.kruise.io and rollouts.kruise.io)"
    )]
    NotKruise {
        /// The document's apiVersion.
        api_version: String,
        /// The document's kind.
        kind: String,
    },
    /// The group is Kruise's but the kind does not exist there.
    #[error("no kind {kind:?} is registered for {api_version}{hint}")]
    UnknownKind {
        /// The document's apiVersion.
        api_version: String,
        /// The document's kind.
        kind: String,
        /// A suggestion, if a known kind or version is close.
        hint: String,
    },
    /// The document does not fit the kind's schema.
    #[error("{api_version}, Kind={kind}: invalid value at `{path}`: {message}")]
    Invalid {
        /// The document's apiVersion.
        api_version: String,
        /// The document's kind.
        kind: String,
        /// The field path that failed, such as `spec.updateStrategy.partition`.
        path: String,
        /// What was wrong.
        message: String,
    },
}

impl DecodeError {
    /// The field path an [`DecodeError::Invalid`] error points at.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::Invalid { path, .. } => Some(path),
            _ => None,
        }
    }
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes `value` into `T`, naming the failing field path on error.
pub(crate) fn decode_as<T: serde::de::DeserializeOwned>(
    value: Value,
    api_version: &str,
    kind: &str,
) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|err| DecodeError::Invalid {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        path: err.path().to_string(),
        message: err.into_inner().to_string(),
    })
}

/// Decodes a document into `T` and records what the typed encoding adds to it.
pub(crate) fn decode_document<T: serde::de::DeserializeOwned + serde::Serialize>(
    source: Value,
    api_version: &str,
    kind: &str,
) -> Result<(T, crate::embedded::FilledFields), DecodeError> {
    let object: T =
        decode_as(crate::embedded::with_required_root_fields(source.clone()), api_version, kind)?;
    let filled = match serde_json::to_value(&object) {
        Ok(written) => crate::embedded::FilledFields::record(&written, &source),
        Err(_) => crate::embedded::FilledFields::default(),
    };
    Ok((object, filled))
}

/// Reads `apiVersion` and `kind` from a document.
pub(crate) fn type_fields(value: &Value) -> Result<(&str, &str), DecodeError> {
    let Value::Object(map) = value else {
        return Err(DecodeError::NotAnObject { found: json_type_name(value) });
    };
    let field = |name: &'static str| {
        map.get(name).and_then(Value::as_str).ok_or(DecodeError::MissingTypeField { field: name })
    };
    Ok((field("apiVersion")?, field("kind")?))
}

/// The apiVersion and kind of every registered Kruise type.
pub(crate) fn registered<T: Resource<DynamicType = ()>>() -> (String, String) {
    (T::api_version(&()).into_owned(), T::kind(&()).into_owned())
}

/// Builds the error for a document that matched no registered type.
pub(crate) fn unmatched(api_version: &str, kind: &str, known: &[(String, String)]) -> DecodeError {
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    if ![groups::APPS, groups::POLICY, groups::ROLLOUTS].contains(&group) {
        return DecodeError::NotKruise { api_version: api_version.into(), kind: kind.into() };
    }
    let same_kind: Vec<&str> =
        known.iter().filter(|(_, k)| k == kind).map(|(v, _)| v.as_str()).collect();
    let hint = if !same_kind.is_empty() {
        format!(" ({kind} is served at {})", same_kind.join(", "))
    } else if let Some((_, close)) =
        known.iter().find(|(_, k)| k.eq_ignore_ascii_case(kind) || edit_distance(k, kind) <= 2)
    {
        format!(" (did you mean {close}?)")
    } else {
        String::new()
    };
    DecodeError::UnknownKind { api_version: api_version.into(), kind: kind.into(), hint }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb { previous } else { 1 + previous.min(row[j]).min(current) };
            previous = current;
        }
    }
    row[b.len()]
}

/// Generates [`KruiseObject`], CRD listing and conversion dispatch from the registry.
#[macro_export]
#[doc(hidden)]
macro_rules! kruise_registry {
    (
        multi { $( $mkind:ident : $av:ident($aty:ty) <=> $bv:ident($bty:ty), )* }
        single { $( $skind:ident : $sv:ident($sty:ty), )* }
    ) => {
        /// Any Kruise object, of any kind and served version.
        ///
        /// Decode one with [`KruiseObject::from_value`]; it serializes back to the same JSON.
        /// Each variant holds the typed object and what its document left out that the typed
        /// encoding writes (see [`embedded`]($crate::embedded)); objects built in code use
        /// `FilledFields::default()` and encode in full.
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub enum KruiseObject {
            $(
                #[doc = concat!("`", stringify!($mkind), "` at v1alpha1.")]
                $av(Box<$aty>, $crate::embedded::FilledFields),
                #[doc = concat!("`", stringify!($mkind), "` at v1beta1.")]
                $bv(Box<$bty>, $crate::embedded::FilledFields),
            )*
            $(
                #[doc = concat!("`", stringify!($skind), "` at v1alpha1.")]
                $sv(Box<$sty>, $crate::embedded::FilledFields),
            )*
        }

        impl KruiseObject {
            /// Decodes a document by its `apiVersion` and `kind`. Errors name the kind, or the
            /// field path that failed to decode.
            pub fn from_value(
                value: ::serde_json::Value,
            ) -> Result<Self, $crate::object::DecodeError> {
                let (api_version, kind) = $crate::object::type_fields(&value)?;
                let (api_version, kind) = (api_version.to_owned(), kind.to_owned());
                                $(
                    if $crate::object::registered::<$aty>() == (api_version.clone(), kind.clone()) {
                        return $crate::object::decode_document::<$aty>(value, &api_version, &kind)
                            .map(|(o, filled)| Self::$av(Box::new(o), filled));
                    }
                    if $crate::object::registered::<$bty>() == (api_version.clone(), kind.clone()) {
                        return $crate::object::decode_document::<$bty>(value, &api_version, &kind)
                            .map(|(o, filled)| Self::$bv(Box::new(o), filled));
                    }
                )*
                $(
                    if $crate::object::registered::<$sty>() == (api_version.clone(), kind.clone()) {
                        return $crate::object::decode_document::<$sty>(value, &api_version, &kind)
                            .map(|(o, filled)| Self::$sv(Box::new(o), filled));
                    }
                )*
                Err($crate::object::unmatched(&api_version, &kind, &Self::registered()))
            }

            /// Every registered `(apiVersion, kind)` pair.
            pub fn registered() -> Vec<(String, String)> {
                vec![
                    $( $crate::object::registered::<$aty>(), $crate::object::registered::<$bty>(), )*
                    $( $crate::object::registered::<$sty>(), )*
                ]
            }

            /// The object's `apiVersion`.
            pub fn api_version(&self) -> String {
                match self {
                    $(
                        Self::$av(..) => $crate::object::registered::<$aty>().0,
                        Self::$bv(..) => $crate::object::registered::<$bty>().0,
                    )*
                    $( Self::$sv(..) => $crate::object::registered::<$sty>().0, )*
                }
            }

            /// The object's `kind`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( Self::$av(..) | Self::$bv(..) => stringify!($mkind), )*
                    $( Self::$sv(..) => stringify!($skind), )*
                }
            }

            /// The object's metadata.
            pub fn metadata(&self) -> &::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                use ::kube::Resource;
                match self {
                    $( Self::$av(o, _) => o.meta(), Self::$bv(o, _) => o.meta(), )*
                    $( Self::$sv(o, _) => o.meta(), )*
                }
            }

            /// Converts to another served version of the same kind (`apps.kruise.io/v1beta1`,
            /// say), without losing fields; see [`conversion`]($crate::conversion).
            pub fn convert_to(
                self,
                api_version: &str,
            ) -> Result<Self, $crate::conversion::ConversionError> {
                if self.api_version() == api_version {
                    return Ok(self);
                }
                match self {
                    $(
                        Self::$av(o, filled) if api_version == $crate::object::registered::<$bty>().0 => {
                            $crate::conversion::to_hub(*o).map(|o| Self::$bv(Box::new(o), filled))
                        }
                        Self::$bv(o, filled) if api_version == $crate::object::registered::<$aty>().0 => {
                            $crate::conversion::from_hub::<$aty>(*o).map(|o| Self::$av(Box::new(o), filled))
                        }
                    )*
                    other => Err($crate::conversion::ConversionError::UnsupportedVersion {
                        kind: other.kind().to_owned(),
                        api_version: api_version.to_owned(),
                    }),
                }
            }
        }

        impl ::serde::Serialize for KruiseObject {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let (value, filled) = match self {
                    $(
                        Self::$av(o, filled) => (::serde_json::to_value(o), filled),
                        Self::$bv(o, filled) => (::serde_json::to_value(o), filled),
                    )*
                    $( Self::$sv(o, filled) => (::serde_json::to_value(o), filled), )*
                };
                let mut value = value.map_err(::serde::ser::Error::custom)?;
                filled.strip(&mut value);
                ::serde::Serialize::serialize(&value, serializer)
            }
        }

        /// Every Kruise CRD, one per kind with all its versions merged, storage version marked.
        pub fn crds() -> Vec<::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> {
            use ::kube::CustomResourceExt;
            vec![
                $( $crate::crd::merge(vec![<$aty>::crd(), <$bty>::crd()]), )*
                $( $crate::crd::complete(<$sty>::crd()), )*
            ]
        }
    };
}
