//! Helpers that keep the Rust types byte-compatible with upstream's Go JSON encoding.
//!
//! Go's `omitempty` on a value field drops the field when it holds the zero value; the types
//! in this crate mirror that with `#[serde(default, skip_serializing_if = "is_default")]`.
//! Pointer fields become `Option`, and string "enum" types become [`wire_enum!`] types that
//! keep unknown values verbatim instead of failing or losing them.

use schemars::{Schema, SchemaGenerator, json_schema};

/// True when `value` equals its type's default: the Go zero value that `omitempty` drops.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Schema for a field that upstream stores with `x-kubernetes-preserve-unknown-fields` and no
/// type (embedded pod templates, PVC templates, volumes, raw objects).
pub(crate) fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// Defines a string enumeration as Go's typed strings behave on the wire.
///
/// Every known value is a variant; any other string decodes to `Other(String)` and encodes
/// back unchanged, so an object written by a newer upstream never loses data here. The schema
/// is a plain `string`, as upstream's is.
#[macro_export]
#[doc(hidden)]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this version of kruise-api does not know, kept verbatim.
            Other(::std::string::String),
        }

        impl $name {
            /// Every known value, in declaration order.
            pub const KNOWN: &'static [&'static str] = &[$($value),+];

            /// The exact string written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )+
                    Self::Other(value) => value.as_str(),
                }
            }
        }

        impl ::std::convert::From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl ::std::convert::From<::std::string::String> for $name {
            fn from(value: ::std::string::String) -> Self {
                match value.as_str() {
                    $( $value => Self::$variant, )+
                    _ => Self::Other(value),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <::std::string::String as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::from(value))
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string" })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    wire_enum! {
        /// Test enum.
        pub enum Colour {
            /// Red.
            Red = "Red",
            /// Blue.
            Blue = "Blue",
        }
    }

    #[test]
    fn wire_enum_keeps_unknown_values() {
        let known: Colour = serde_json::from_str("\"Red\"").expect("decode");
        assert_eq!(known, Colour::Red);
        let unknown: Colour = serde_json::from_str("\"Green\"").expect("decode");
        assert_eq!(unknown, Colour::Other("Green".into()));
        assert_eq!(serde_json::to_string(&unknown).expect("encode"), "\"Green\"");
        assert!(serde_json::from_str::<Colour>("3").is_err());
        assert_eq!(Colour::KNOWN, ["Red", "Blue"]);
    }
}
