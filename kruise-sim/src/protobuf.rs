//! Request bodies in the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`).
//!
//! kubectl's imperative generators (`create namespace`, `create configmap`, `create secret`,
//! `create deployment`, `create job`, `create service`, ...) send typed objects in protobuf.
//! This module decodes them, by hand, into the JSON objects the rest of the server handles,
//! shaped as Go's protobuf -> struct -> JSON round trip would shape them: zero scalars of
//! `omitempty` fields are left out, pointer fields keep their zero values, non-pointer
//! structs that were sent are kept (`"resources": {}`), and a zero `metav1.Time` is `null`.
//!
//! The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown` message
//! (`1: typeMeta{1: apiVersion, 2: kind}`, `2: raw`, `3: contentEncoding`, `4: contentType`);
//! `raw` is the object's own message. Field numbers come from the `generated.proto` files of
//! k8s.io/api and k8s.io/apimachinery. Fields the schema below does not know are skipped by
//! wire type; when such a field carried data, the caller gets a warning naming it.
//! Responses stay JSON (clients list JSON as an alternative in `Accept`).

use crate::error::ApiError;
use base64::Engine as _;
use serde_json::{Map, Value};

/// The media type of Kubernetes protobuf bodies.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Nesting depth up to which skipped fields are inspected for data (warnings only).
const BLANK_DEPTH: usize = 16;

/// `metav1.Time{}` as Unix seconds (0001-01-01T00:00:00Z); Go renders it as `null`.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// Why a protobuf body could not be turned into JSON.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PbError {
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NoMagic,
    /// The envelope names no kind.
    #[error("Object 'Kind' is missing in protobuf envelope")]
    MissingKind,
    /// A kind this decoder has no schema for.
    #[error(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (kruise-sim does not decode {kind} ({api_version}) from {MEDIA_TYPE})"
    )]
    UnsupportedKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// `contentEncoding` other than none.
    #[error("unsupported protobuf contentEncoding {0:?}")]
    ContentEncoding(String),
    /// Malformed wire data.
    #[error("failed to decode protobuf {what} at {path} (byte {offset}): {reason}")]
    Malformed {
        /// The envelope's kind, or `runtime.Unknown` for the envelope itself.
        what: String,
        /// The JSON path of the field being decoded (`<root>` for the top level).
        path: String,
        /// Offset in the request body.
        offset: usize,
        /// What went wrong.
        reason: String,
    },
}

impl From<PbError> for ApiError {
    fn from(e: PbError) -> ApiError {
        match e {
            PbError::UnsupportedKind { .. } => {
                ApiError::new(415, "UnsupportedMediaType", e.to_string())
            }
            _ => ApiError::bad_request(e.to_string()),
        }
    }
}

/// A decoded body.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Decoded {
    /// The object, as the JSON a client would have sent.
    pub object: Value,
    /// One line per skipped field that carried data.
    pub warnings: Vec<String>,
}

/// Decodes a whole request body (magic, envelope, object).
pub(crate) fn decode(body: &[u8]) -> Result<Decoded, PbError> {
    let rest = body.strip_prefix(MAGIC.as_slice()).ok_or(PbError::NoMagic)?;
    let mut ctx = Ctx { what: "runtime.Unknown".into(), path: Vec::new(), warnings: Vec::new() };
    let (mut api_version, mut kind, mut encoding) = (String::new(), String::new(), String::new());
    let mut raw: (&[u8], usize) = (&[], body.len());
    let mut r = Reader { buf: rest, pos: 0, base: MAGIC.len() };
    while !r.done() {
        let at = r.offset();
        let (num, wire) = r.field().map_err(|f| ctx.fail(f))?;
        match num {
            1 => {
                let (b, off) = ctx.bytes(&wire, at, "typeMeta")?;
                let mut t = Reader { buf: b, pos: 0, base: off };
                while !t.done() {
                    let at = t.offset();
                    let (n, w) = t.field().map_err(|f| ctx.fail(f))?;
                    match n {
                        1 => api_version = ctx.string(&w, at, "typeMeta.apiVersion")?,
                        2 => kind = ctx.string(&w, at, "typeMeta.kind")?,
                        _ => {}
                    }
                }
            }
            2 => raw = ctx.bytes(&wire, at, "raw")?,
            3 => encoding = ctx.string(&wire, at, "contentEncoding")?,
            _ => {}
        }
    }
    if !encoding.is_empty() {
        return Err(PbError::ContentEncoding(encoding));
    }
    if kind.is_empty() {
        return Err(PbError::MissingKind);
    }
    let Some(schema) = schema_for(&api_version, &kind) else {
        return Err(PbError::UnsupportedKind { api_version, kind });
    };
    let mut object = Map::new();
    object.insert("kind".into(), Value::String(kind.clone()));
    if !api_version.is_empty() {
        object.insert("apiVersion".into(), Value::String(api_version));
    }
    ctx.what = kind;
    decode_into(schema, raw.0, raw.1, &mut object, &mut ctx)?;
    Ok(Decoded { object: Value::Object(object), warnings: ctx.warnings })
}

// ---------------------------------------------------------------------------------------------
// Wire format.

/// One field value as read from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: the payload and its offset in the body.
    Bytes(&'a [u8], usize),
    /// Wire type 3 (skipped up to its end-group tag).
    Group,
    /// Wire type 5.
    Fixed32(u32),
}

impl Wire<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Wire::Varint(_) => "varint",
            Wire::Fixed64(_) => "64-bit",
            Wire::Bytes(..) => "length-delimited",
            Wire::Group => "group",
            Wire::Fixed32(_) => "32-bit",
        }
    }
}

/// A low-level decoding failure: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fail {
    offset: usize,
    reason: String,
}

/// A cursor over one message's bytes; `base` is their offset in the body.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn fail<T>(&self, at: usize, reason: impl Into<String>) -> Result<T, Fail> {
        Err(Fail { offset: self.base + at, reason: reason.into() })
    }

    fn varint(&mut self) -> Result<u64, Fail> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return self.fail(start, "unexpected EOF in varint");
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return self.fail(start, "varint overflows 64 bits");
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        self.fail(start, "varint overflows 64 bits")
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], Fail> {
        let start = self.pos;
        let left = self.buf.len() - self.pos.min(self.buf.len());
        if n > left as u64 {
            return self.fail(start, format!("unexpected EOF: {what} of {n} bytes, {left} left"));
        }
        // In range: n <= left, checked above.
        let n = n as usize;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reads a tag: (field number, wire type).
    fn tag(&mut self) -> Result<(u32, u8), Fail> {
        let at = self.pos;
        let tag = self.varint()?;
        let num = tag >> 3;
        if num == 0 || num > u64::from(u32::MAX >> 3) {
            return self.fail(at, format!("illegal field number {num}"));
        }
        Ok((num as u32, (tag & 7) as u8))
    }

    /// Reads the next field, whatever its type; groups are skipped whole. Errors point at the
    /// field's tag.
    fn field(&mut self) -> Result<(u32, Wire<'a>), Fail> {
        let at = self.pos;
        self.field_at(at).map_err(|f| Fail { offset: self.base + at, ..f })
    }

    fn field_at(&mut self, at: usize) -> Result<(u32, Wire<'a>), Fail> {
        let (num, wt) = self.tag()?;
        let wire = match wt {
            0 => Wire::Varint(self.varint()?),
            1 => {
                let b = self.take(8, "64-bit field")?;
                Wire::Fixed64(b.iter().rev().fold(0, |v, &x| v << 8 | u64::from(x)))
            }
            2 => {
                let len = self.varint()?;
                let off = self.base + self.pos;
                Wire::Bytes(self.take(len, "length-delimited field")?, off)
            }
            3 => {
                self.skip_group(at)?;
                Wire::Group
            }
            4 => return self.fail(at, format!("unexpected end-group tag for field {num}")),
            5 => {
                let b = self.take(4, "32-bit field")?;
                Wire::Fixed32(b.iter().rev().fold(0, |v, &x| v << 8 | u32::from(x)))
            }
            _ => return self.fail(at, format!("illegal wire type {wt} for field {num}")),
        };
        Ok((num, wire))
    }

    /// Skips a group's contents up to its matching end-group tag (nesting counted, no recursion).
    fn skip_group(&mut self, at: usize) -> Result<(), Fail> {
        let mut depth = 1usize;
        while depth > 0 {
            if self.done() {
                return self.fail(at, "unexpected EOF in group");
            }
            let (_, wt) = self.tag()?;
            match wt {
                0 => {
                    self.varint()?;
                }
                1 => {
                    self.take(8, "64-bit field")?;
                }
                2 => {
                    let len = self.varint()?;
                    self.take(len, "length-delimited field")?;
                }
                3 => depth += 1,
                4 => depth -= 1,
                5 => {
                    self.take(4, "32-bit field")?;
                }
                _ => return self.fail(self.pos, format!("illegal wire type {wt} in group")),
            }
        }
        Ok(())
    }
}

/// Whether a skipped value carried nothing (zero, empty, or messages of such), so that
/// skipping it loses nothing.
fn blank(w: &Wire<'_>, depth: usize) -> bool {
    match *w {
        Wire::Varint(v) | Wire::Fixed64(v) => v == 0,
        Wire::Fixed32(v) => v == 0,
        Wire::Group => false,
        Wire::Bytes(b, off) => {
            if b.is_empty() {
                return true;
            }
            if depth >= BLANK_DEPTH {
                return false;
            }
            let mut r = Reader { buf: b, pos: 0, base: off };
            while !r.done() {
                match r.field() {
                    Ok((_, w)) if blank(&w, depth + 1) => {}
                    _ => return false,
                }
            }
            true
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema-driven decoding.

/// How a field's value becomes JSON.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `string` (invalid UTF-8 replaced, as Go's JSON encoder does).
    Str,
    /// `bytes`, as base64.
    Bytes,
    /// `bool`.
    Bool,
    /// `int32` (varint, sign-extended).
    I32,
    /// `int64`.
    I64,
    /// A nested message, as a JSON object under the field's name.
    Msg(&'static Msg),
    /// An embedded Go struct (`json:""`): its fields land in the enclosing object.
    Inline(&'static Msg),
    /// `map<string, V>`.
    Map(Val),
    /// `metav1.Time` (`{1: seconds, 2: nanos}`), RFC 3339 in UTC or `null` when zero.
    Time,
    /// `intstr.IntOrString` (`{1: type, 2: intVal, 3: strVal}`).
    IntOrStr,
    /// `resource.Quantity` (`{1: string}`).
    Qty,
}

/// The value type of a map field.
#[derive(Clone, Copy, Debug)]
enum Val {
    Str,
    Bytes,
    Qty,
    Time,
}

/// One field of a message schema.
#[derive(Debug)]
struct Field {
    num: u32,
    name: &'static str,
    kind: Kind,
    /// `repeated`.
    rep: bool,
    /// Emit zero values too: Go pointer fields (sent only when set) and fields without
    /// `omitempty`.
    keep: bool,
}

/// A message schema: the fields decoded; others are skipped.
#[derive(Debug)]
struct Msg {
    name: &'static str,
    fields: &'static [Field],
}

/// Decoding state: what is decoded, where we are, what was skipped.
struct Ctx {
    what: String,
    path: Vec<String>,
    warnings: Vec<String>,
}

impl Ctx {
    fn path_str(&self) -> String {
        let mut s = String::new();
        for p in &self.path {
            if !s.is_empty() && !p.starts_with('[') {
                s.push('.');
            }
            s.push_str(p);
        }
        if s.is_empty() { "<root>".into() } else { s }
    }

    fn fail(&self, f: Fail) -> PbError {
        PbError::Malformed {
            what: self.what.clone(),
            path: self.path_str(),
            offset: f.offset,
            reason: f.reason,
        }
    }

    fn wrong(&self, w: &Wire<'_>, at: usize, want: &str) -> PbError {
        self.fail(Fail {
            offset: at,
            reason: format!("wrong wire type {} for a {want} field", w.type_name()),
        })
    }

    fn bytes<'a>(
        &self,
        w: &Wire<'a>,
        at: usize,
        field: &str,
    ) -> Result<(&'a [u8], usize), PbError> {
        match *w {
            Wire::Bytes(b, off) => Ok((b, off)),
            _ => Err(self.wrong(w, at, &format!("length-delimited ({field})"))),
        }
    }

    fn string(&self, w: &Wire<'_>, at: usize, field: &str) -> Result<String, PbError> {
        let (b, _) = self.bytes(w, at, field)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    fn varint(&self, w: &Wire<'_>, at: usize, want: &str) -> Result<u64, PbError> {
        match *w {
            Wire::Varint(v) => Ok(v),
            _ => Err(self.wrong(w, at, want)),
        }
    }
}

/// Decodes the fields of `msg` found in `buf` (at `base` in the body) into `out`; repeated
/// occurrences of a singular field merge (messages) or replace (scalars), as in protobuf.
fn decode_into(
    msg: &Msg,
    buf: &[u8],
    base: usize,
    out: &mut Map<String, Value>,
    ctx: &mut Ctx,
) -> Result<(), PbError> {
    let mut r = Reader { buf, pos: 0, base };
    while !r.done() {
        let at = r.offset();
        let (num, wire) = r.field().map_err(|f| ctx.fail(f))?;
        let Some(field) = msg.fields.iter().find(|f| f.num == num) else {
            if !blank(&wire, 0) {
                ctx.warnings.push(format!(
                    "kruise-sim dropped protobuf field {num} ({}) of {} at {}: not decoded",
                    wire.type_name(),
                    msg.name,
                    ctx.path_str()
                ));
            }
            continue;
        };
        decode_field(field, &wire, at, out, ctx)?;
    }
    Ok(())
}

fn decode_field(
    field: &Field,
    wire: &Wire<'_>,
    at: usize,
    out: &mut Map<String, Value>,
    ctx: &mut Ctx,
) -> Result<(), PbError> {
    if let Kind::Inline(m) = field.kind {
        let (b, off) = ctx.bytes(wire, at, field.name)?;
        return decode_into(m, b, off, out, ctx);
    }
    let index = match out.get(field.name) {
        Some(Value::Array(a)) if field.rep => a.len(),
        _ => 0,
    };
    ctx.path.push(field.name.to_string());
    if field.rep {
        ctx.path.push(format!("[{index}]"));
    }
    let res = decode_value(field, wire, at, out, ctx);
    if field.rep {
        ctx.path.pop();
    }
    ctx.path.pop();
    res
}

fn decode_value(
    field: &Field,
    wire: &Wire<'_>,
    at: usize,
    out: &mut Map<String, Value>,
    ctx: &mut Ctx,
) -> Result<(), PbError> {
    let name = field.name;
    match field.kind {
        Kind::Msg(m) => {
            let (b, off) = ctx.bytes(wire, at, name)?;
            if field.rep {
                let mut obj = Map::new();
                decode_into(m, b, off, &mut obj, ctx)?;
                push(out, name, Value::Object(obj));
            } else {
                let slot = out.entry(name).or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(obj) = slot {
                    decode_into(m, b, off, obj, ctx)?;
                }
            }
        }
        Kind::Map(v) => {
            let (b, off) = ctx.bytes(wire, at, name)?;
            let (k, val) = map_entry(v, b, off, ctx)?;
            let slot = out.entry(name).or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Value::Object(m) = slot {
                m.insert(k, val);
            }
        }
        Kind::Bool | Kind::I32 | Kind::I64 if field.rep && matches!(wire, Wire::Bytes(..)) => {
            // A packed repeated scalar.
            let (b, off) = ctx.bytes(wire, at, name)?;
            let mut r = Reader { buf: b, pos: 0, base: off };
            while !r.done() {
                let v = r.varint().map_err(|f| ctx.fail(f))?;
                push(out, name, varint_value(field.kind, v));
            }
        }
        _ => {
            let v = scalar(field.kind, wire, at, ctx)?;
            if field.rep {
                push(out, name, v);
            } else if field.keep || !is_zero(&v) {
                out.insert(name.to_string(), v);
            } else {
                out.remove(name);
            }
        }
    }
    Ok(())
}

fn push(out: &mut Map<String, Value>, name: &str, v: Value) {
    match out.get_mut(name) {
        Some(Value::Array(a)) => a.push(v),
        _ => {
            out.insert(name.to_string(), Value::Array(vec![v]));
        }
    }
}

/// Zero scalars are what Go's `omitempty` leaves out. Messages (`Time`, `IntOrString`,
/// `Quantity`) are never zero here: Go's JSON encoder keeps structs.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

fn varint_value(kind: Kind, v: u64) -> Value {
    match kind {
        Kind::Bool => Value::Bool(v != 0),
        // Truncation is the protobuf rule for int32 (values are sign-extended to 64 bits).
        Kind::I32 => Value::from(v as i32),
        _ => Value::from(v as i64),
    }
}

/// A non-message value (or one of the small well-known messages).
fn scalar(kind: Kind, w: &Wire<'_>, at: usize, ctx: &Ctx) -> Result<Value, PbError> {
    Ok(match kind {
        Kind::Str => Value::String(ctx.string(w, at, "string")?),
        Kind::Bytes => {
            let (b, _) = ctx.bytes(w, at, "bytes")?;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Kind::Bool => varint_value(kind, ctx.varint(w, at, "bool")?),
        Kind::I32 => varint_value(kind, ctx.varint(w, at, "int32")?),
        Kind::I64 => varint_value(kind, ctx.varint(w, at, "int64")?),
        Kind::Time => {
            let (b, off) = ctx.bytes(w, at, "Time")?;
            time(b, off, ctx)?
        }
        Kind::IntOrStr => {
            let (b, off) = ctx.bytes(w, at, "IntOrString")?;
            int_or_string(b, off, ctx)?
        }
        Kind::Qty => {
            let (b, off) = ctx.bytes(w, at, "Quantity")?;
            quantity(b, off, ctx)?
        }
        Kind::Msg(_) | Kind::Inline(_) | Kind::Map(_) => {
            return Err(ctx.fail(Fail { offset: at, reason: "not a scalar field".into() }));
        }
    })
}

/// `metav1.Time`: `{1: seconds (int64), 2: nanos (int32)}`; empty or the Go zero time is `null`.
fn time(b: &[u8], off: usize, ctx: &Ctx) -> Result<Value, PbError> {
    let (mut secs, mut nanos) = (0i64, 0i32);
    let mut r = Reader { buf: b, pos: 0, base: off };
    while !r.done() {
        let at = r.offset();
        let (n, w) = r.field().map_err(|f| ctx.fail(f))?;
        match n {
            1 => secs = ctx.varint(&w, at, "int64 (seconds)")? as i64,
            2 => nanos = ctx.varint(&w, at, "int32 (nanos)")? as i32,
            _ => {}
        }
    }
    if b.is_empty() || (secs == GO_ZERO_TIME && nanos == 0) {
        return Ok(Value::Null);
    }
    // metav1.Time marshals to JSON at second precision.
    match jiff::Timestamp::from_second(secs) {
        Ok(t) => Ok(Value::String(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())),
        Err(e) => Err(ctx.fail(Fail { offset: off, reason: format!("time out of range: {e}") })),
    }
}

/// `intstr.IntOrString`: `{1: type (0 int, 1 string), 2: intVal, 3: strVal}`.
fn int_or_string(b: &[u8], off: usize, ctx: &Ctx) -> Result<Value, PbError> {
    let (mut ty, mut int, mut s) = (0u64, 0i32, String::new());
    let mut r = Reader { buf: b, pos: 0, base: off };
    while !r.done() {
        let at = r.offset();
        let (n, w) = r.field().map_err(|f| ctx.fail(f))?;
        match n {
            1 => ty = ctx.varint(&w, at, "int64 (type)")?,
            2 => int = ctx.varint(&w, at, "int32 (intVal)")? as i32,
            3 => s = ctx.string(&w, at, "strVal")?,
            _ => {}
        }
    }
    Ok(if ty == 1 { Value::String(s) } else { Value::from(int) })
}

/// `resource.Quantity`: `{1: string}` (the canonical text; empty is Go's zero, `"0"`).
fn quantity(b: &[u8], off: usize, ctx: &Ctx) -> Result<Value, PbError> {
    let mut s = String::new();
    let mut r = Reader { buf: b, pos: 0, base: off };
    while !r.done() {
        let at = r.offset();
        let (n, w) = r.field().map_err(|f| ctx.fail(f))?;
        if n == 1 {
            s = ctx.string(&w, at, "string")?;
        }
    }
    Ok(Value::String(if s.is_empty() { "0".into() } else { s }))
}

/// One map entry: `{1: key, 2: value}` (both default to empty).
fn map_entry(v: Val, b: &[u8], off: usize, ctx: &Ctx) -> Result<(String, Value), PbError> {
    let mut key = String::new();
    let mut val = None;
    let mut r = Reader { buf: b, pos: 0, base: off };
    while !r.done() {
        let at = r.offset();
        let (n, w) = r.field().map_err(|f| ctx.fail(f))?;
        match n {
            1 => key = ctx.string(&w, at, "map key")?,
            2 => {
                let kind = match v {
                    Val::Str => Kind::Str,
                    Val::Bytes => Kind::Bytes,
                    Val::Qty => Kind::Qty,
                    Val::Time => Kind::Time,
                };
                val = Some(scalar(kind, &w, at, ctx)?);
            }
            _ => {}
        }
    }
    let val = val.unwrap_or_else(|| match v {
        Val::Str | Val::Bytes => Value::String(String::new()),
        Val::Qty => Value::String("0".into()),
        Val::Time => Value::Null,
    });
    Ok((key, val))
}

// ---------------------------------------------------------------------------------------------
// Schemas (field numbers from k8s.io/api and k8s.io/apimachinery generated.proto; `keep` from
// the Go types: pointer fields and fields without `omitempty`).

use Kind as K;

/// An optional field: zero scalars are omitted.
const fn opt(num: u32, name: &'static str, kind: Kind) -> Field {
    Field { num, name, kind, rep: false, keep: false }
}

/// A field whose zero value is still emitted (Go pointer, or no `omitempty`).
const fn keep(num: u32, name: &'static str, kind: Kind) -> Field {
    Field { num, name, kind, rep: false, keep: true }
}

/// A repeated field.
const fn rep(num: u32, name: &'static str, kind: Kind) -> Field {
    Field { num, name, kind, rep: true, keep: false }
}

/// The kinds decoded, by `(apiVersion, kind)`.
fn schema_for(api_version: &str, kind: &str) -> Option<&'static Msg> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "Secret") => &SECRET,
        ("v1", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("v1", "Service") => &SERVICE,
        ("v1", "Pod") => &POD,
        ("apps/v1", "Deployment") => &DEPLOYMENT,
        ("apps/v1", "ReplicaSet") => &REPLICA_SET,
        ("batch/v1", "Job") => &JOB,
        ("batch/v1", "CronJob") => &CRON_JOB,
        ("policy/v1", "PodDisruptionBudget") => &PDB,
        ("networking.k8s.io/v1", "Ingress") => &INGRESS,
        ("networking.k8s.io/v1", "IngressClass") => &INGRESS_CLASS,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => &SELF_SUBJECT_ACCESS_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => &TOKEN_REQUEST,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => &SELF_SUBJECT_REVIEW,
        _ => return None,
    })
}

const META: Field = opt(1, "metadata", K::Msg(&OBJECT_META));

static OBJECT_META: Msg = Msg {
    name: "ObjectMeta",
    fields: &[
        opt(1, "name", K::Str),
        opt(2, "generateName", K::Str),
        opt(3, "namespace", K::Str),
        opt(4, "selfLink", K::Str),
        opt(5, "uid", K::Str),
        opt(6, "resourceVersion", K::Str),
        opt(7, "generation", K::I64),
        opt(8, "creationTimestamp", K::Time),
        opt(9, "deletionTimestamp", K::Time),
        keep(10, "deletionGracePeriodSeconds", K::I64),
        opt(11, "labels", K::Map(Val::Str)),
        opt(12, "annotations", K::Map(Val::Str)),
        rep(13, "ownerReferences", K::Msg(&OWNER_REFERENCE)),
        rep(14, "finalizers", K::Str),
    ],
};

static OWNER_REFERENCE: Msg = Msg {
    name: "OwnerReference",
    fields: &[
        keep(5, "apiVersion", K::Str),
        keep(1, "kind", K::Str),
        keep(3, "name", K::Str),
        keep(4, "uid", K::Str),
        keep(6, "controller", K::Bool),
        keep(7, "blockOwnerDeletion", K::Bool),
    ],
};

static LABEL_SELECTOR: Msg = Msg {
    name: "LabelSelector",
    fields: &[
        opt(1, "matchLabels", K::Map(Val::Str)),
        rep(2, "matchExpressions", K::Msg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Msg = Msg {
    name: "LabelSelectorRequirement",
    fields: &[keep(1, "key", K::Str), keep(2, "operator", K::Str), rep(3, "values", K::Str)],
};

// core/v1 ------------------------------------------------------------------------------------

static NAMESPACE: Msg = Msg {
    name: "Namespace",
    fields: &[
        META,
        opt(2, "spec", K::Msg(&NAMESPACE_SPEC)),
        opt(3, "status", K::Msg(&NAMESPACE_STATUS)),
    ],
};

static NAMESPACE_SPEC: Msg = Msg { name: "NamespaceSpec", fields: &[rep(1, "finalizers", K::Str)] };

static NAMESPACE_STATUS: Msg = Msg { name: "NamespaceStatus", fields: &[opt(1, "phase", K::Str)] };

static CONFIG_MAP: Msg = Msg {
    name: "ConfigMap",
    fields: &[
        META,
        keep(4, "immutable", K::Bool),
        opt(2, "data", K::Map(Val::Str)),
        opt(3, "binaryData", K::Map(Val::Bytes)),
    ],
};

static SECRET: Msg = Msg {
    name: "Secret",
    fields: &[
        META,
        keep(5, "immutable", K::Bool),
        opt(2, "data", K::Map(Val::Bytes)),
        opt(4, "stringData", K::Map(Val::Str)),
        opt(3, "type", K::Str),
    ],
};

static SELF_SUBJECT_ACCESS_REVIEW: Msg = Msg {
    name: "SelfSubjectAccessReview",
    fields: &[META, opt(2, "spec", K::Msg(&SELF_SUBJECT_ACCESS_REVIEW_SPEC))],
};

static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Msg = Msg {
    name: "SelfSubjectAccessReviewSpec",
    fields: &[
        opt(1, "resourceAttributes", K::Msg(&RESOURCE_ATTRIBUTES)),
        opt(2, "nonResourceAttributes", K::Msg(&NON_RESOURCE_ATTRIBUTES)),
    ],
};

static RESOURCE_ATTRIBUTES: Msg = Msg {
    name: "ResourceAttributes",
    fields: &[
        opt(1, "namespace", K::Str),
        opt(2, "verb", K::Str),
        opt(3, "group", K::Str),
        opt(4, "version", K::Str),
        opt(5, "resource", K::Str),
        opt(6, "subresource", K::Str),
        opt(7, "name", K::Str),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Msg = Msg {
    name: "NonResourceAttributes",
    fields: &[opt(1, "path", K::Str), opt(2, "verb", K::Str)],
};

/// `kubectl auth whoami` sends only the metadata.
static SELF_SUBJECT_REVIEW: Msg = Msg { name: "SelfSubjectReview", fields: &[META] };

static TOKEN_REQUEST: Msg =
    Msg { name: "TokenRequest", fields: &[META, opt(2, "spec", K::Msg(&TOKEN_REQUEST_SPEC))] };

static TOKEN_REQUEST_SPEC: Msg = Msg {
    name: "TokenRequestSpec",
    fields: &[
        rep(1, "audiences", K::Str),
        keep(4, "expirationSeconds", K::I64),
        opt(3, "boundObjectRef", K::Msg(&BOUND_OBJECT_REFERENCE)),
    ],
};

static BOUND_OBJECT_REFERENCE: Msg = Msg {
    name: "BoundObjectReference",
    fields: &[
        opt(1, "kind", K::Str),
        opt(2, "apiVersion", K::Str),
        opt(3, "name", K::Str),
        opt(4, "uid", K::Str),
    ],
};

static SERVICE_ACCOUNT: Msg = Msg {
    name: "ServiceAccount",
    fields: &[
        META,
        rep(2, "secrets", K::Msg(&OBJECT_REFERENCE)),
        rep(3, "imagePullSecrets", K::Msg(&LOCAL_OBJECT_REFERENCE)),
        keep(4, "automountServiceAccountToken", K::Bool),
    ],
};

static OBJECT_REFERENCE: Msg = Msg {
    name: "ObjectReference",
    fields: &[
        opt(1, "kind", K::Str),
        opt(2, "namespace", K::Str),
        opt(3, "name", K::Str),
        opt(4, "uid", K::Str),
        opt(5, "apiVersion", K::Str),
        opt(6, "resourceVersion", K::Str),
        opt(7, "fieldPath", K::Str),
    ],
};

static LOCAL_OBJECT_REFERENCE: Msg =
    Msg { name: "LocalObjectReference", fields: &[opt(1, "name", K::Str)] };

static POD: Msg = Msg {
    name: "Pod",
    fields: &[META, opt(2, "spec", K::Msg(&POD_SPEC)), opt(3, "status", K::Msg(&POD_STATUS))],
};

static POD_STATUS: Msg = Msg {
    name: "PodStatus",
    fields: &[
        opt(17, "observedGeneration", K::I64),
        opt(1, "phase", K::Str),
        opt(3, "message", K::Str),
        opt(4, "reason", K::Str),
        opt(11, "nominatedNodeName", K::Str),
        opt(5, "hostIP", K::Str),
        opt(6, "podIP", K::Str),
        opt(7, "startTime", K::Time),
        opt(9, "qosClass", K::Str),
    ],
};

static POD_TEMPLATE_SPEC: Msg =
    Msg { name: "PodTemplateSpec", fields: &[META, opt(2, "spec", K::Msg(&POD_SPEC))] };

static POD_SPEC: Msg = Msg {
    name: "PodSpec",
    fields: &[
        rep(1, "volumes", K::Msg(&VOLUME)),
        rep(20, "initContainers", K::Msg(&CONTAINER)),
        rep(2, "containers", K::Msg(&CONTAINER)),
        opt(3, "restartPolicy", K::Str),
        keep(4, "terminationGracePeriodSeconds", K::I64),
        keep(5, "activeDeadlineSeconds", K::I64),
        opt(6, "dnsPolicy", K::Str),
        opt(7, "nodeSelector", K::Map(Val::Str)),
        opt(8, "serviceAccountName", K::Str),
        opt(9, "serviceAccount", K::Str),
        keep(21, "automountServiceAccountToken", K::Bool),
        opt(10, "nodeName", K::Str),
        opt(11, "hostNetwork", K::Bool),
        opt(12, "hostPID", K::Bool),
        opt(13, "hostIPC", K::Bool),
        keep(27, "shareProcessNamespace", K::Bool),
        opt(14, "securityContext", K::Msg(&POD_SECURITY_CONTEXT)),
        rep(15, "imagePullSecrets", K::Msg(&LOCAL_OBJECT_REFERENCE)),
        opt(16, "hostname", K::Str),
        opt(17, "subdomain", K::Str),
        opt(19, "schedulerName", K::Str),
        rep(22, "tolerations", K::Msg(&TOLERATION)),
        opt(24, "priorityClassName", K::Str),
        keep(25, "priority", K::I32),
        keep(29, "runtimeClassName", K::Str),
        keep(30, "enableServiceLinks", K::Bool),
        keep(31, "preemptionPolicy", K::Str),
        opt(32, "overhead", K::Map(Val::Qty)),
        keep(35, "setHostnameAsFQDN", K::Bool),
        opt(36, "os", K::Msg(&POD_OS)),
        keep(37, "hostUsers", K::Bool),
        opt(40, "resources", K::Msg(&RESOURCE_REQUIREMENTS)),
        keep(41, "hostnameOverride", K::Str),
    ],
};

static POD_OS: Msg = Msg { name: "PodOS", fields: &[keep(1, "name", K::Str)] };

static CONTAINER: Msg = Msg {
    name: "Container",
    fields: &[
        keep(1, "name", K::Str),
        opt(2, "image", K::Str),
        rep(3, "command", K::Str),
        rep(4, "args", K::Str),
        opt(5, "workingDir", K::Str),
        rep(6, "ports", K::Msg(&CONTAINER_PORT)),
        rep(19, "envFrom", K::Msg(&ENV_FROM_SOURCE)),
        rep(7, "env", K::Msg(&ENV_VAR)),
        opt(8, "resources", K::Msg(&RESOURCE_REQUIREMENTS)),
        rep(23, "resizePolicy", K::Msg(&CONTAINER_RESIZE_POLICY)),
        keep(24, "restartPolicy", K::Str),
        rep(9, "volumeMounts", K::Msg(&VOLUME_MOUNT)),
        opt(10, "livenessProbe", K::Msg(&PROBE)),
        opt(11, "readinessProbe", K::Msg(&PROBE)),
        opt(22, "startupProbe", K::Msg(&PROBE)),
        opt(13, "terminationMessagePath", K::Str),
        opt(20, "terminationMessagePolicy", K::Str),
        opt(14, "imagePullPolicy", K::Str),
        opt(15, "securityContext", K::Msg(&SECURITY_CONTEXT)),
        opt(16, "stdin", K::Bool),
        opt(17, "stdinOnce", K::Bool),
        opt(18, "tty", K::Bool),
    ],
};

static CONTAINER_PORT: Msg = Msg {
    name: "ContainerPort",
    fields: &[
        opt(1, "name", K::Str),
        opt(2, "hostPort", K::I32),
        keep(3, "containerPort", K::I32),
        opt(4, "protocol", K::Str),
        opt(5, "hostIP", K::Str),
    ],
};

static ENV_VAR: Msg = Msg {
    name: "EnvVar",
    fields: &[
        keep(1, "name", K::Str),
        opt(2, "value", K::Str),
        opt(3, "valueFrom", K::Msg(&ENV_VAR_SOURCE)),
    ],
};

static ENV_VAR_SOURCE: Msg = Msg {
    name: "EnvVarSource",
    fields: &[
        opt(1, "fieldRef", K::Msg(&OBJECT_FIELD_SELECTOR)),
        opt(2, "resourceFieldRef", K::Msg(&RESOURCE_FIELD_SELECTOR)),
        opt(3, "configMapKeyRef", K::Msg(&KEY_SELECTOR)),
        opt(4, "secretKeyRef", K::Msg(&KEY_SELECTOR)),
    ],
};

static OBJECT_FIELD_SELECTOR: Msg = Msg {
    name: "ObjectFieldSelector",
    fields: &[opt(1, "apiVersion", K::Str), keep(2, "fieldPath", K::Str)],
};

static RESOURCE_FIELD_SELECTOR: Msg = Msg {
    name: "ResourceFieldSelector",
    fields: &[
        opt(1, "containerName", K::Str),
        keep(2, "resource", K::Str),
        opt(3, "divisor", K::Qty),
    ],
};

/// `ConfigMapKeySelector` and `SecretKeySelector` (same shape).
static KEY_SELECTOR: Msg = Msg {
    name: "KeySelector",
    fields: &[
        opt(1, "", K::Inline(&LOCAL_OBJECT_REFERENCE)),
        keep(2, "key", K::Str),
        keep(3, "optional", K::Bool),
    ],
};

static ENV_FROM_SOURCE: Msg = Msg {
    name: "EnvFromSource",
    fields: &[
        opt(1, "prefix", K::Str),
        opt(2, "configMapRef", K::Msg(&ENV_SOURCE_REF)),
        opt(3, "secretRef", K::Msg(&ENV_SOURCE_REF)),
    ],
};

/// `ConfigMapEnvSource` and `SecretEnvSource` (same shape).
static ENV_SOURCE_REF: Msg = Msg {
    name: "EnvSource",
    fields: &[opt(1, "", K::Inline(&LOCAL_OBJECT_REFERENCE)), keep(2, "optional", K::Bool)],
};

static RESOURCE_REQUIREMENTS: Msg = Msg {
    name: "ResourceRequirements",
    fields: &[
        opt(1, "limits", K::Map(Val::Qty)),
        opt(2, "requests", K::Map(Val::Qty)),
        rep(3, "claims", K::Msg(&RESOURCE_CLAIM)),
    ],
};

static RESOURCE_CLAIM: Msg =
    Msg { name: "ResourceClaim", fields: &[keep(1, "name", K::Str), opt(2, "request", K::Str)] };

static CONTAINER_RESIZE_POLICY: Msg = Msg {
    name: "ContainerResizePolicy",
    fields: &[keep(1, "resourceName", K::Str), keep(2, "restartPolicy", K::Str)],
};

static VOLUME_MOUNT: Msg = Msg {
    name: "VolumeMount",
    fields: &[
        keep(1, "name", K::Str),
        opt(2, "readOnly", K::Bool),
        keep(7, "recursiveReadOnly", K::Str),
        keep(3, "mountPath", K::Str),
        opt(4, "subPath", K::Str),
        keep(5, "mountPropagation", K::Str),
        opt(6, "subPathExpr", K::Str),
    ],
};

static VOLUME: Msg = Msg {
    name: "Volume",
    fields: &[keep(1, "name", K::Str), opt(2, "", K::Inline(&VOLUME_SOURCE))],
};

static VOLUME_SOURCE: Msg = Msg {
    name: "VolumeSource",
    fields: &[
        opt(1, "hostPath", K::Msg(&HOST_PATH)),
        opt(2, "emptyDir", K::Msg(&EMPTY_DIR)),
        opt(6, "secret", K::Msg(&SECRET_VOLUME)),
        opt(10, "persistentVolumeClaim", K::Msg(&PVC_VOLUME)),
        opt(19, "configMap", K::Msg(&CONFIG_MAP_VOLUME)),
    ],
};

static HOST_PATH: Msg = Msg {
    name: "HostPathVolumeSource",
    fields: &[keep(1, "path", K::Str), keep(2, "type", K::Str)],
};

static EMPTY_DIR: Msg = Msg {
    name: "EmptyDirVolumeSource",
    fields: &[opt(1, "medium", K::Str), opt(2, "sizeLimit", K::Qty)],
};

static SECRET_VOLUME: Msg = Msg {
    name: "SecretVolumeSource",
    fields: &[
        opt(1, "secretName", K::Str),
        rep(2, "items", K::Msg(&KEY_TO_PATH)),
        keep(3, "defaultMode", K::I32),
        keep(4, "optional", K::Bool),
    ],
};

static CONFIG_MAP_VOLUME: Msg = Msg {
    name: "ConfigMapVolumeSource",
    fields: &[
        opt(1, "", K::Inline(&LOCAL_OBJECT_REFERENCE)),
        rep(2, "items", K::Msg(&KEY_TO_PATH)),
        keep(3, "defaultMode", K::I32),
        keep(4, "optional", K::Bool),
    ],
};

static KEY_TO_PATH: Msg = Msg {
    name: "KeyToPath",
    fields: &[keep(1, "key", K::Str), keep(2, "path", K::Str), keep(3, "mode", K::I32)],
};

static PVC_VOLUME: Msg = Msg {
    name: "PersistentVolumeClaimVolumeSource",
    fields: &[keep(1, "claimName", K::Str), opt(2, "readOnly", K::Bool)],
};

static PROBE: Msg = Msg {
    name: "Probe",
    fields: &[
        opt(1, "", K::Inline(&PROBE_HANDLER)),
        opt(2, "initialDelaySeconds", K::I32),
        opt(3, "timeoutSeconds", K::I32),
        opt(4, "periodSeconds", K::I32),
        opt(5, "successThreshold", K::I32),
        opt(6, "failureThreshold", K::I32),
        keep(7, "terminationGracePeriodSeconds", K::I64),
    ],
};

static PROBE_HANDLER: Msg = Msg {
    name: "ProbeHandler",
    fields: &[
        opt(1, "exec", K::Msg(&EXEC_ACTION)),
        opt(2, "httpGet", K::Msg(&HTTP_GET_ACTION)),
        opt(3, "tcpSocket", K::Msg(&TCP_SOCKET_ACTION)),
        opt(4, "grpc", K::Msg(&GRPC_ACTION)),
    ],
};

static EXEC_ACTION: Msg = Msg { name: "ExecAction", fields: &[rep(1, "command", K::Str)] };

static HTTP_GET_ACTION: Msg = Msg {
    name: "HTTPGetAction",
    fields: &[
        opt(1, "path", K::Str),
        opt(2, "port", K::IntOrStr),
        opt(3, "host", K::Str),
        opt(4, "scheme", K::Str),
        rep(5, "httpHeaders", K::Msg(&HTTP_HEADER)),
    ],
};

static HTTP_HEADER: Msg =
    Msg { name: "HTTPHeader", fields: &[keep(1, "name", K::Str), keep(2, "value", K::Str)] };

static TCP_SOCKET_ACTION: Msg =
    Msg { name: "TCPSocketAction", fields: &[opt(1, "port", K::IntOrStr), opt(2, "host", K::Str)] };

static GRPC_ACTION: Msg =
    Msg { name: "GRPCAction", fields: &[keep(1, "port", K::I32), keep(2, "service", K::Str)] };

static TOLERATION: Msg = Msg {
    name: "Toleration",
    fields: &[
        opt(1, "key", K::Str),
        opt(2, "operator", K::Str),
        opt(3, "value", K::Str),
        opt(4, "effect", K::Str),
        keep(5, "tolerationSeconds", K::I64),
    ],
};

static SECURITY_CONTEXT: Msg = Msg {
    name: "SecurityContext",
    fields: &[
        opt(1, "capabilities", K::Msg(&CAPABILITIES)),
        keep(2, "privileged", K::Bool),
        keep(4, "runAsUser", K::I64),
        keep(8, "runAsGroup", K::I64),
        keep(5, "runAsNonRoot", K::Bool),
        keep(6, "readOnlyRootFilesystem", K::Bool),
        keep(7, "allowPrivilegeEscalation", K::Bool),
        keep(9, "procMount", K::Str),
        opt(11, "seccompProfile", K::Msg(&SECCOMP_PROFILE)),
    ],
};

static CAPABILITIES: Msg =
    Msg { name: "Capabilities", fields: &[rep(1, "add", K::Str), rep(2, "drop", K::Str)] };

static SECCOMP_PROFILE: Msg = Msg {
    name: "SeccompProfile",
    fields: &[keep(1, "type", K::Str), keep(2, "localhostProfile", K::Str)],
};

static POD_SECURITY_CONTEXT: Msg = Msg {
    name: "PodSecurityContext",
    fields: &[
        keep(2, "runAsUser", K::I64),
        keep(6, "runAsGroup", K::I64),
        keep(3, "runAsNonRoot", K::Bool),
        rep(4, "supplementalGroups", K::I64),
        keep(12, "supplementalGroupsPolicy", K::Str),
        keep(5, "fsGroup", K::I64),
        keep(9, "fsGroupChangePolicy", K::Str),
        opt(10, "seccompProfile", K::Msg(&SECCOMP_PROFILE)),
        keep(13, "seLinuxChangePolicy", K::Str),
    ],
};

static SERVICE: Msg = Msg {
    name: "Service",
    fields: &[
        META,
        opt(2, "spec", K::Msg(&SERVICE_SPEC)),
        opt(3, "status", K::Msg(&SERVICE_STATUS)),
    ],
};

static SERVICE_SPEC: Msg = Msg {
    name: "ServiceSpec",
    fields: &[
        rep(1, "ports", K::Msg(&SERVICE_PORT)),
        opt(2, "selector", K::Map(Val::Str)),
        opt(3, "clusterIP", K::Str),
        rep(18, "clusterIPs", K::Str),
        opt(4, "type", K::Str),
        rep(5, "externalIPs", K::Str),
        opt(7, "sessionAffinity", K::Str),
        opt(8, "loadBalancerIP", K::Str),
        rep(9, "loadBalancerSourceRanges", K::Str),
        opt(10, "externalName", K::Str),
        opt(11, "externalTrafficPolicy", K::Str),
        opt(12, "healthCheckNodePort", K::I32),
        opt(13, "publishNotReadyAddresses", K::Bool),
        opt(14, "sessionAffinityConfig", K::Msg(&SESSION_AFFINITY_CONFIG)),
        rep(19, "ipFamilies", K::Str),
        keep(17, "ipFamilyPolicy", K::Str),
        keep(20, "allocateLoadBalancerNodePorts", K::Bool),
        keep(21, "loadBalancerClass", K::Str),
        keep(22, "internalTrafficPolicy", K::Str),
        keep(23, "trafficDistribution", K::Str),
    ],
};

static SERVICE_PORT: Msg = Msg {
    name: "ServicePort",
    fields: &[
        opt(1, "name", K::Str),
        opt(2, "protocol", K::Str),
        keep(6, "appProtocol", K::Str),
        keep(3, "port", K::I32),
        opt(4, "targetPort", K::IntOrStr),
        opt(5, "nodePort", K::I32),
    ],
};

static SESSION_AFFINITY_CONFIG: Msg =
    Msg { name: "SessionAffinityConfig", fields: &[opt(1, "clientIP", K::Msg(&CLIENT_IP_CONFIG))] };

static CLIENT_IP_CONFIG: Msg =
    Msg { name: "ClientIPConfig", fields: &[keep(1, "timeoutSeconds", K::I32)] };

static SERVICE_STATUS: Msg =
    Msg { name: "ServiceStatus", fields: &[opt(1, "loadBalancer", K::Msg(&LOAD_BALANCER_STATUS))] };

static LOAD_BALANCER_STATUS: Msg = Msg { name: "LoadBalancerStatus", fields: &[] };

// apps/v1 ------------------------------------------------------------------------------------

static DEPLOYMENT: Msg = Msg {
    name: "Deployment",
    fields: &[
        META,
        opt(2, "spec", K::Msg(&DEPLOYMENT_SPEC)),
        opt(3, "status", K::Msg(&DEPLOYMENT_STATUS)),
    ],
};

static DEPLOYMENT_SPEC: Msg = Msg {
    name: "DeploymentSpec",
    fields: &[
        keep(1, "replicas", K::I32),
        opt(2, "selector", K::Msg(&LABEL_SELECTOR)),
        opt(3, "template", K::Msg(&POD_TEMPLATE_SPEC)),
        opt(4, "strategy", K::Msg(&DEPLOYMENT_STRATEGY)),
        opt(5, "minReadySeconds", K::I32),
        keep(6, "revisionHistoryLimit", K::I32),
        opt(7, "paused", K::Bool),
        keep(9, "progressDeadlineSeconds", K::I32),
    ],
};

static DEPLOYMENT_STRATEGY: Msg = Msg {
    name: "DeploymentStrategy",
    fields: &[opt(1, "type", K::Str), opt(2, "rollingUpdate", K::Msg(&ROLLING_UPDATE))],
};

static ROLLING_UPDATE: Msg = Msg {
    name: "RollingUpdateDeployment",
    fields: &[opt(1, "maxUnavailable", K::IntOrStr), opt(2, "maxSurge", K::IntOrStr)],
};

static DEPLOYMENT_STATUS: Msg = Msg {
    name: "DeploymentStatus",
    fields: &[
        opt(1, "observedGeneration", K::I64),
        opt(2, "replicas", K::I32),
        opt(3, "updatedReplicas", K::I32),
        opt(7, "readyReplicas", K::I32),
        opt(4, "availableReplicas", K::I32),
        opt(5, "unavailableReplicas", K::I32),
        keep(9, "terminatingReplicas", K::I32),
        keep(8, "collisionCount", K::I32),
    ],
};

static REPLICA_SET: Msg = Msg {
    name: "ReplicaSet",
    fields: &[
        META,
        opt(2, "spec", K::Msg(&REPLICA_SET_SPEC)),
        opt(3, "status", K::Msg(&REPLICA_SET_STATUS)),
    ],
};

static REPLICA_SET_SPEC: Msg = Msg {
    name: "ReplicaSetSpec",
    fields: &[
        keep(1, "replicas", K::I32),
        opt(4, "minReadySeconds", K::I32),
        opt(2, "selector", K::Msg(&LABEL_SELECTOR)),
        opt(3, "template", K::Msg(&POD_TEMPLATE_SPEC)),
    ],
};

static REPLICA_SET_STATUS: Msg = Msg {
    name: "ReplicaSetStatus",
    fields: &[
        keep(1, "replicas", K::I32),
        opt(2, "fullyLabeledReplicas", K::I32),
        opt(4, "readyReplicas", K::I32),
        opt(5, "availableReplicas", K::I32),
        opt(3, "observedGeneration", K::I64),
    ],
};

// batch/v1 -----------------------------------------------------------------------------------

static JOB: Msg = Msg {
    name: "Job",
    fields: &[META, opt(2, "spec", K::Msg(&JOB_SPEC)), opt(3, "status", K::Msg(&JOB_STATUS))],
};

static JOB_SPEC: Msg = Msg {
    name: "JobSpec",
    fields: &[
        keep(1, "parallelism", K::I32),
        keep(2, "completions", K::I32),
        keep(3, "activeDeadlineSeconds", K::I64),
        keep(7, "backoffLimit", K::I32),
        keep(12, "backoffLimitPerIndex", K::I32),
        keep(13, "maxFailedIndexes", K::I32),
        opt(4, "selector", K::Msg(&LABEL_SELECTOR)),
        keep(5, "manualSelector", K::Bool),
        opt(6, "template", K::Msg(&POD_TEMPLATE_SPEC)),
        keep(8, "ttlSecondsAfterFinished", K::I32),
        keep(9, "completionMode", K::Str),
        keep(10, "suspend", K::Bool),
        keep(14, "podReplacementPolicy", K::Str),
        keep(15, "managedBy", K::Str),
    ],
};

static JOB_STATUS: Msg = Msg {
    name: "JobStatus",
    fields: &[
        opt(2, "startTime", K::Time),
        opt(3, "completionTime", K::Time),
        opt(4, "active", K::I32),
        opt(5, "succeeded", K::I32),
        opt(6, "failed", K::I32),
        keep(11, "terminating", K::I32),
        opt(7, "completedIndexes", K::Str),
        keep(10, "failedIndexes", K::Str),
        keep(9, "ready", K::I32),
    ],
};

static CRON_JOB: Msg = Msg {
    name: "CronJob",
    fields: &[
        META,
        opt(2, "spec", K::Msg(&CRON_JOB_SPEC)),
        opt(3, "status", K::Msg(&CRON_JOB_STATUS)),
    ],
};

static CRON_JOB_SPEC: Msg = Msg {
    name: "CronJobSpec",
    fields: &[
        keep(1, "schedule", K::Str),
        keep(8, "timeZone", K::Str),
        keep(2, "startingDeadlineSeconds", K::I64),
        opt(3, "concurrencyPolicy", K::Str),
        keep(4, "suspend", K::Bool),
        opt(5, "jobTemplate", K::Msg(&JOB_TEMPLATE_SPEC)),
        keep(6, "successfulJobsHistoryLimit", K::I32),
        keep(7, "failedJobsHistoryLimit", K::I32),
    ],
};

static JOB_TEMPLATE_SPEC: Msg =
    Msg { name: "JobTemplateSpec", fields: &[META, opt(2, "spec", K::Msg(&JOB_SPEC))] };

static CRON_JOB_STATUS: Msg = Msg {
    name: "CronJobStatus",
    fields: &[
        rep(1, "active", K::Msg(&OBJECT_REFERENCE)),
        opt(4, "lastScheduleTime", K::Time),
        opt(5, "lastSuccessfulTime", K::Time),
    ],
};

// policy/v1 ----------------------------------------------------------------------------------

static PDB: Msg = Msg {
    name: "PodDisruptionBudget",
    fields: &[META, opt(2, "spec", K::Msg(&PDB_SPEC)), opt(3, "status", K::Msg(&PDB_STATUS))],
};

static PDB_SPEC: Msg = Msg {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        opt(1, "minAvailable", K::IntOrStr),
        opt(2, "selector", K::Msg(&LABEL_SELECTOR)),
        opt(3, "maxUnavailable", K::IntOrStr),
        keep(4, "unhealthyPodEvictionPolicy", K::Str),
    ],
};

static PDB_STATUS: Msg = Msg {
    name: "PodDisruptionBudgetStatus",
    fields: &[
        opt(1, "observedGeneration", K::I64),
        opt(2, "disruptedPods", K::Map(Val::Time)),
        keep(3, "disruptionsAllowed", K::I32),
        keep(4, "currentHealthy", K::I32),
        keep(5, "desiredHealthy", K::I32),
        keep(6, "expectedPods", K::I32),
    ],
};

// networking.k8s.io/v1 ----------------------------------------------------------------------

static INGRESS: Msg = Msg {
    name: "Ingress",
    fields: &[
        META,
        opt(2, "spec", K::Msg(&INGRESS_SPEC)),
        opt(3, "status", K::Msg(&INGRESS_STATUS)),
    ],
};

static INGRESS_SPEC: Msg = Msg {
    name: "IngressSpec",
    fields: &[
        keep(4, "ingressClassName", K::Str),
        opt(1, "defaultBackend", K::Msg(&INGRESS_BACKEND)),
        rep(2, "tls", K::Msg(&INGRESS_TLS)),
        rep(3, "rules", K::Msg(&INGRESS_RULE)),
    ],
};

static INGRESS_RULE: Msg = Msg {
    name: "IngressRule",
    fields: &[opt(1, "host", K::Str), opt(2, "", K::Inline(&INGRESS_RULE_VALUE))],
};

static INGRESS_RULE_VALUE: Msg =
    Msg { name: "IngressRuleValue", fields: &[opt(1, "http", K::Msg(&HTTP_INGRESS_RULE_VALUE))] };

static HTTP_INGRESS_RULE_VALUE: Msg =
    Msg { name: "HTTPIngressRuleValue", fields: &[rep(1, "paths", K::Msg(&HTTP_INGRESS_PATH))] };

static HTTP_INGRESS_PATH: Msg = Msg {
    name: "HTTPIngressPath",
    fields: &[
        opt(1, "path", K::Str),
        keep(3, "pathType", K::Str),
        opt(2, "backend", K::Msg(&INGRESS_BACKEND)),
    ],
};

static INGRESS_BACKEND: Msg = Msg {
    name: "IngressBackend",
    fields: &[
        opt(4, "service", K::Msg(&INGRESS_SERVICE_BACKEND)),
        opt(3, "resource", K::Msg(&TYPED_LOCAL_OBJECT_REFERENCE)),
    ],
};

static INGRESS_SERVICE_BACKEND: Msg = Msg {
    name: "IngressServiceBackend",
    fields: &[keep(1, "name", K::Str), opt(2, "port", K::Msg(&SERVICE_BACKEND_PORT))],
};

static SERVICE_BACKEND_PORT: Msg =
    Msg { name: "ServiceBackendPort", fields: &[opt(1, "name", K::Str), opt(2, "number", K::I32)] };

static TYPED_LOCAL_OBJECT_REFERENCE: Msg = Msg {
    name: "TypedLocalObjectReference",
    fields: &[keep(1, "apiGroup", K::Str), keep(2, "kind", K::Str), keep(3, "name", K::Str)],
};

static INGRESS_TLS: Msg =
    Msg { name: "IngressTLS", fields: &[rep(1, "hosts", K::Str), opt(2, "secretName", K::Str)] };

static INGRESS_STATUS: Msg = Msg {
    name: "IngressStatus",
    fields: &[opt(1, "loadBalancer", K::Msg(&INGRESS_LOAD_BALANCER_STATUS))],
};

static INGRESS_LOAD_BALANCER_STATUS: Msg = Msg {
    name: "IngressLoadBalancerStatus",
    fields: &[rep(1, "ingress", K::Msg(&INGRESS_LOAD_BALANCER_INGRESS))],
};

static INGRESS_LOAD_BALANCER_INGRESS: Msg = Msg {
    name: "IngressLoadBalancerIngress",
    fields: &[
        opt(1, "ip", K::Str),
        opt(2, "hostname", K::Str),
        rep(4, "ports", K::Msg(&INGRESS_PORT_STATUS)),
    ],
};

static INGRESS_PORT_STATUS: Msg = Msg {
    name: "IngressPortStatus",
    fields: &[keep(1, "port", K::I32), keep(2, "protocol", K::Str), keep(3, "error", K::Str)],
};

static INGRESS_CLASS: Msg =
    Msg { name: "IngressClass", fields: &[META, opt(2, "spec", K::Msg(&INGRESS_CLASS_SPEC))] };

static INGRESS_CLASS_SPEC: Msg = Msg {
    name: "IngressClassSpec",
    fields: &[
        opt(1, "controller", K::Str),
        opt(2, "parameters", K::Msg(&INGRESS_CLASS_PARAMETERS_REFERENCE)),
    ],
};

static INGRESS_CLASS_PARAMETERS_REFERENCE: Msg = Msg {
    name: "IngressClassParametersReference",
    fields: &[
        keep(1, "apiGroup", K::Str),
        keep(2, "kind", K::Str),
        keep(3, "name", K::Str),
        keep(4, "scope", K::Str),
        keep(5, "namespace", K::Str),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// A varint field.
    fn vf(num: u32, v: u64) -> Vec<u8> {
        let mut out = varint(u64::from(num) << 3);
        out.extend(varint(v));
        out
    }

    /// A length-delimited field.
    fn ld(num: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = varint(u64::from(num) << 3 | 2);
        out.extend(varint(payload.len() as u64));
        out.extend_from_slice(payload);
        out
    }

    fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
        parts.concat()
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = cat(&[ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())]);
        cat(&[b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, raw), ld(3, b""), ld(4, b"")])
    }

    fn reader(buf: &[u8]) -> Reader<'_> {
        Reader { buf, pos: 0, base: 0 }
    }

    fn malformed(r: Result<Decoded, PbError>) -> (String, usize, String) {
        match r {
            Err(PbError::Malformed { path, offset, reason, .. }) => (path, offset, reason),
            other => panic!("expected a decode error, got {other:?}"),
        }
    }

    #[test]
    fn varints() {
        for v in [0u64, 1, 127, 128, 300, 1 << 31, u64::from(u32::MAX), i64::MAX as u64, u64::MAX] {
            let b = varint(v);
            let mut r = reader(&b);
            assert_eq!(r.varint(), Ok(v), "{v}");
            assert!(r.done());
        }
        assert_eq!(reader(&[0xac, 0x02]).varint(), Ok(300));
        // Eleven bytes, or a tenth byte above 1: overflow.
        let long = [0xff; 10].iter().copied().chain([0x01]).collect::<Vec<_>>();
        assert!(reader(&long).varint().is_err());
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(reader(&over).varint().expect_err("fails").reason.contains("overflow"));
        // Truncated.
        let e = reader(&[0x80, 0x80]).varint().expect_err("fails");
        assert_eq!(e.offset, 0);
        assert!(e.reason.contains("EOF"), "{e:?}");
    }

    #[test]
    fn length_delimited_and_fixed_fields() {
        let buf = cat(&[ld(1, b"abc"), vec![0x11], 7u64.to_le_bytes().to_vec(), vec![0x1d]])
            .into_iter()
            .chain(9u32.to_le_bytes())
            .collect::<Vec<_>>();
        let mut r = reader(&buf);
        assert_eq!(r.field(), Ok((1, Wire::Bytes(b"abc", 2))));
        assert_eq!(r.field(), Ok((2, Wire::Fixed64(7))));
        assert_eq!(r.field(), Ok((3, Wire::Fixed32(9))));
        assert!(r.done());
        // A length running past the end.
        let e = reader(&[0x0a, 0x05, b'a']).field().expect_err("fails");
        assert!(e.reason.contains("5 bytes, 1 left"), "{e:?}");
        // Field number 0 and wire types 6/7 are illegal; a stray end-group too.
        assert!(reader(&[0x00]).field().is_err());
        assert!(reader(&[0x0e]).field().expect_err("fails").reason.contains("wire type 6"));
        assert!(reader(&[0x0c]).field().expect_err("fails").reason.contains("end-group"));
        // Groups are skipped whole, nested ones included.
        let group = [0x0b, 0x10, 0x01, 0x1b, 0x22, 0x00, 0x1c, 0x0c, 0x28, 0x05];
        let mut r = reader(&group);
        assert_eq!(r.field(), Ok((1, Wire::Group)));
        assert_eq!(r.field(), Ok((5, Wire::Varint(5))));
        assert!(reader(&group[..6]).field().is_err());
    }

    #[test]
    fn namespace_from_kubectl() {
        // `kubectl create namespace prod` (kubectl v1.32).
        let body = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1c\x0a\x14\x0a\x04prod\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";
        let d = decode(body).expect("decodes");
        assert_eq!(
            d.object,
            json!({"kind": "Namespace", "apiVersion": "v1",
                "metadata": {"name": "prod", "creationTimestamp": null},
                "spec": {}, "status": {}})
        );
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    }

    #[test]
    fn configmap_and_secrets_from_kubectl() {
        let cm = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x1b\x0a\x11\x0a\x01c\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12\x06\x0a\x01a\x12\x01b\x1a\x00\x22\x00";
        assert_eq!(
            decode(cm).expect("decodes").object,
            json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "c", "creationTimestamp": null}, "data": {"a": "b"}})
        );
        let secret = b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret\x12\x1d\x0a\x11\x0a\x01s\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12\x06\x0a\x01a\x12\x01b\x1a\x00\x1a\x00\x22\x00";
        assert_eq!(
            decode(secret).expect("decodes").object,
            json!({"kind": "Secret", "apiVersion": "v1",
                "metadata": {"name": "s", "creationTimestamp": null}, "data": {"a": "Yg=="}})
        );
        let docker = b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret\x12\x87\x01\x0a\x11\x0a\x01d\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12R\x0a\x11.dockerconfigjson\x12={\x22auths\x22:{\x22x\x22:{\x22username\x22:\x22u\x22,\x22password\x22:\x22p\x22,\x22auth\x22:\x22dTpw\x22}}}\x1a\x1ekubernetes.io/dockerconfigjson\x1a\x00\x22\x00";
        assert_eq!(
            decode(docker).expect("decodes").object,
            json!({"kind": "Secret", "apiVersion": "v1",
                "metadata": {"name": "d", "creationTimestamp": null},
                "data": {".dockerconfigjson": "eyJhdXRocyI6eyJ4Ijp7InVzZXJuYW1lIjoidSIsInBhc3N3b3JkIjoicCIsImF1dGgiOiJkVHB3In19fQ=="},
                "type": "kubernetes.io/dockerconfigjson"})
        );
        let sa = b"k8s\x00\x0a\x14\x0a\x02v1\x12\x0eServiceAccount\x12\x14\x0a\x12\x0a\x02sa\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x1a\x00\x22\x00";
        assert_eq!(
            decode(sa).expect("decodes").object,
            json!({"kind": "ServiceAccount", "apiVersion": "v1",
                "metadata": {"name": "sa", "creationTimestamp": null}})
        );
    }

    /// `kubectl create deployment web --image=nginx --replicas=2 --port=80`.
    const DEPLOYMENT_BODY: &[u8] = b"k8s\x00\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment\x12\xb8\x01\x0a\x1f\x0a\x03web\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00Z\x0a\x0a\x03app\x12\x03web\x12\x86\x01\x08\x02\x12\x0c\x0a\x0a\x0a\x03app\x12\x03web\x1al\x0a\x1c\x0a\x00\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00Z\x0a\x0a\x03app\x12\x03web\x12L\x12.\x0a\x05nginx\x12\x05nginx*\x002\x0a\x0a\x00\x10\x00\x18P\x22\x00*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x22\x02\x0a\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 \x00(\x008\x00\x1a\x00\x22\x00";

    #[test]
    fn deployment_from_kubectl_matches_its_json() {
        // What `kubectl create deployment ... --dry-run=client -o json` prints.
        let want = json!({
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "creationTimestamp": null, "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx",
                        "ports": [{"containerPort": 80}], "resources": {}}]}
                },
                "strategy": {}
            },
            "status": {}
        });
        let d = decode(DEPLOYMENT_BODY).expect("decodes");
        assert_eq!(d.object, want);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        // --replicas=0 is sent (a pointer) and kept.
        let zero = b"k8s\x00\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment\x12\xaf\x01\x0a!\x0a\x04zero\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00Z\x0b\x0a\x03app\x12\x04zero\x12|\x08\x00\x12\x0d\x0a\x0b\x0a\x03app\x12\x04zero\x1aa\x0a\x1d\x0a\x00\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00Z\x0b\x0a\x03app\x12\x04zero\x12@\x12\x22\x0a\x05nginx\x12\x05nginx*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x22\x02\x0a\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 \x00(\x008\x00\x1a\x00\x22\x00";
        let d = decode(zero).expect("decodes");
        assert_eq!(d.object["spec"]["replicas"], json!(0));
        assert_eq!(d.object["spec"]["template"]["spec"]["containers"][0].get("ports"), None);
    }

    #[test]
    fn service_job_cronjob_pdb_from_kubectl() {
        let svc = b"k8s\x00\x0a\x0d\x0a\x02v1\x12\x07Service\x12i\x0a\x1f\x0a\x03svc\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00Z\x0a\x0a\x03app\x12\x03svc\x12B\x0a\x1b\x0a\x0780-8080\x12\x03TCP\x18P\x22\x07\x08\x00\x10\x90?\x1a\x00(\x00\x12\x0a\x0a\x03app\x12\x03svc\x1a\x00\x22\x09ClusterIP:\x00B\x00R\x00Z\x00`\x00h\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";
        assert_eq!(
            decode(svc).expect("decodes").object,
            json!({"kind": "Service", "apiVersion": "v1",
                "metadata": {"name": "svc", "creationTimestamp": null, "labels": {"app": "svc"}},
                "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80,
                    "targetPort": 8080}], "selector": {"app": "svc"}, "type": "ClusterIP"},
                "status": {"loadBalancer": {}}})
        );
        let job = b"k8s\x00\x0a\x0f\x0a\x08batch/v1\x12\x03Job\x12\x82\x01\x0a\x11\x0a\x01j\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12c2a\x0a\x10\x0a\x00\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12M\x12*\x0a\x01j\x12\x07busybox\x1a\x04echo\x1a\x02hi*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x05Never2\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x1a\x08 \x00(\x000\x00:\x00\x1a\x00\x22\x00";
        assert_eq!(
            decode(job).expect("decodes").object,
            json!({"kind": "Job", "apiVersion": "batch/v1",
                "metadata": {"name": "j", "creationTimestamp": null},
                "spec": {"template": {"metadata": {"creationTimestamp": null},
                    "spec": {"containers": [{"name": "j", "image": "busybox",
                        "command": ["echo", "hi"], "resources": {}}], "restartPolicy": "Never"}}},
                "status": {}})
        );
        let cron = b"k8s\x00\x0a\x13\x0a\x08batch/v1\x12\x07CronJob\x12\xa4\x01\x0a\x12\x0a\x02cj\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12\x8b\x01\x0a\x0b*/1 * * * *\x1a\x00*z\x0a\x12\x0a\x02cj\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12d2b\x0a\x10\x0a\x00\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12N\x12'\x0a\x02cj\x12\x07busybox\x1a\x04date*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x09OnFailure2\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x1a\x00\x1a\x00\x22\x00";
        assert_eq!(
            decode(cron).expect("decodes").object,
            json!({"kind": "CronJob", "apiVersion": "batch/v1",
                "metadata": {"name": "cj", "creationTimestamp": null},
                "spec": {"schedule": "*/1 * * * *", "jobTemplate": {
                    "metadata": {"name": "cj", "creationTimestamp": null},
                    "spec": {"template": {"metadata": {"creationTimestamp": null},
                        "spec": {"containers": [{"name": "cj", "image": "busybox",
                            "command": ["date"], "resources": {}}],
                            "restartPolicy": "OnFailure"}}}}},
                "status": {}})
        );
        let pdb = b"k8s\x00\x0a \x0a\x09policy/v1\x12\x13PodDisruptionBudget\x123\x0a\x11\x0a\x01p\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12\x12\x0a\x06\x08\x00\x10\x01\x1a\x00\x12\x08\x0a\x06\x0a\x01a\x12\x01b\x1a\x0a\x08\x00\x18\x00 \x00(\x000\x00\x1a\x00\x22\x00";
        assert_eq!(
            decode(pdb).expect("decodes").object,
            json!({"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
                "metadata": {"name": "p", "creationTimestamp": null},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}},
                "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                    "expectedPods": 0}})
        );
    }

    #[test]
    fn unknown_fields_are_skipped_by_wire_type() {
        let meta = cat(&[ld(1, b"c"), vf(99, 5), ld(98, b"")]);
        let mut raw = cat(&[ld(1, &meta), vf(50, 300), ld(51, b"junk")]);
        raw.extend([0xb1, 0x03]); // field 54, 64-bit
        raw.extend(1u64.to_le_bytes());
        raw.extend([0xbd, 0x03]); // field 55, 32-bit
        raw.extend(0u32.to_le_bytes());
        raw.extend([0xc3, 0x03, 0x08, 0x01, 0xc4, 0x03]); // field 56, a group
        raw.extend(ld(2, &cat(&[ld(1, b"a"), ld(2, b"b")])));
        let d = decode(&envelope("v1", "ConfigMap", &raw)).expect("decodes");
        assert_eq!(
            d.object,
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"},
                "data": {"a": "b"}})
        );
        // Fields with data are reported; zero or empty ones are not.
        let w = d.warnings.join("\n");
        for want in [
            "field 99 (varint) of ObjectMeta at metadata",
            "field 50 (varint)",
            "field 51 (length-delimited)",
            "field 54 (64-bit)",
            "field 56 (group)",
        ] {
            assert!(w.contains(want), "{want} missing from {w}");
        }
        assert!(!w.contains("field 55") && !w.contains("field 98"), "{w}");
        assert_eq!(d.warnings.len(), 5, "{w}");
    }

    #[test]
    fn scalars_times_and_special_messages() {
        let time = cat(&[vf(1, 1_700_000_000), vf(2, 5)]);
        let owner = cat(&[
            ld(1, b"ReplicaSet"),
            ld(3, b"rs"),
            ld(4, b"u1"),
            ld(5, b"apps/v1"),
            vf(6, 1),
            vf(7, 0),
        ]);
        let meta = cat(&[
            ld(1, b"p"),
            ld(8, &time),
            vf(10, 0),
            ld(13, &owner),
            ld(14, b"f1"),
            ld(14, b"f2"),
            ld(12, &cat(&[ld(1, b"k"), ld(2, b"")])),
        ]);
        let probe = cat(&[
            ld(1, &ld(2, &cat(&[ld(1, b"/healthz"), ld(2, &cat(&[vf(1, 1), ld(3, b"http")]))]))),
            vf(4, 10),
        ]);
        let res = ld(2, &cat(&[ld(1, b"cpu"), ld(2, &ld(1, b"100m"))]));
        let container = cat(&[
            ld(1, b"c"),
            ld(2, b"img"),
            ld(7, &cat(&[ld(1, b"A"), ld(2, b"1")])),
            ld(
                7,
                &cat(&[ld(1, b"B"), ld(3, &ld(1, &cat(&[ld(1, b"v1"), ld(2, b"metadata.name")])))]),
            ),
            ld(7, &cat(&[ld(1, b"C"), ld(3, &ld(3, &cat(&[ld(1, &ld(1, b"cm")), ld(2, b"k")])))])),
            ld(8, &res),
            ld(11, &probe),
        ]);
        // supplementalGroups packed, terminationGracePeriodSeconds -1 (ten-byte varint).
        let spec = cat(&[
            ld(2, &container),
            ld(14, &ld(4, &[0x01, 0x02])),
            vf(4, u64::MAX),
            ld(1, &cat(&[ld(1, b"v"), ld(2, &ld(19, &ld(1, &ld(1, b"cm"))))])),
        ]);
        let d =
            decode(&envelope("v1", "Pod", &cat(&[ld(1, &meta), ld(2, &spec)]))).expect("decodes");
        let o = &d.object;
        assert_eq!(o["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(o["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(o["metadata"]["annotations"], json!({"k": ""}));
        assert_eq!(o["metadata"]["finalizers"], json!(["f1", "f2"]));
        assert_eq!(
            o["metadata"]["ownerReferences"],
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
                "controller": true, "blockOwnerDeletion": false}])
        );
        let c = &o["spec"]["containers"][0];
        assert_eq!(c["env"][0], json!({"name": "A", "value": "1"}));
        assert_eq!(
            c["env"][1]["valueFrom"],
            json!({"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}})
        );
        assert_eq!(
            c["env"][2]["valueFrom"],
            json!({"configMapKeyRef": {"name": "cm", "key": "k"}})
        );
        assert_eq!(c["resources"], json!({"requests": {"cpu": "100m"}}));
        assert_eq!(
            c["readinessProbe"],
            json!({"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10})
        );
        assert_eq!(o["spec"]["securityContext"]["supplementalGroups"], json!([1, 2]));
        assert_eq!(o["spec"]["terminationGracePeriodSeconds"], -1);
        assert_eq!(o["spec"]["volumes"], json!([{"name": "v", "configMap": {"name": "cm"}}]));
        // A message sent twice merges, a scalar sent twice keeps the last value.
        let raw = cat(&[
            ld(1, &ld(1, b"a")),
            ld(1, &ld(11, &cat(&[ld(1, b"x"), ld(2, b"y")]))),
            ld(1, &ld(1, b"b")),
            ld(3, b"Opaque"),
        ]);
        let d = decode(&envelope("v1", "Secret", &raw)).expect("decodes");
        assert_eq!(d.object["metadata"], json!({"name": "b", "labels": {"x": "y"}}));
        assert_eq!(d.object["type"], "Opaque");
        // int32 is truncated from the sign-extended varint.
        let raw = cat(&[ld(2, &vf(1, (-3i64) as u64))]);
        let d = decode(&envelope("apps/v1", "Deployment", &raw)).expect("decodes");
        assert_eq!(d.object["spec"]["replicas"], -3);
    }

    #[test]
    fn envelope_errors() {
        assert_eq!(decode(b"{\"kind\":\"Pod\"}"), Err(PbError::NoMagic));
        assert_eq!(decode(b"k8s"), Err(PbError::NoMagic));
        assert_eq!(decode(b"k8s\0"), Err(PbError::MissingKind));
        let e = decode(&envelope("apps/v1", "StatefulSet", b"")).expect_err("fails");
        assert!(e.to_string().contains("StatefulSet (apps/v1)"), "{e}");
        let api = ApiError::from(e);
        assert_eq!((api.code, api.reason), (415, "UnsupportedMediaType"));
        let gz =
            cat(&[b"k8s\0".to_vec(), ld(1, &cat(&[ld(1, b"v1"), ld(2, b"Pod")])), ld(3, b"gzip")]);
        assert_eq!(decode(&gz), Err(PbError::ContentEncoding("gzip".into())));
        assert_eq!(ApiError::from(PbError::NoMagic).code, 400);
    }

    #[test]
    fn malformed_bodies_name_the_field_and_offset() {
        // The container name declared 100 bytes long, with 3 present.
        let mut spec = ld(2, &ld(1, b"abc"));
        let len_at = spec.len() - 4;
        spec[len_at] = 100;
        let raw = ld(2, &ld(3, &ld(2, &spec)));
        let body = envelope("apps/v1", "Deployment", &raw);
        let (path, offset, reason) = malformed(decode(&body));
        assert_eq!(path, "spec.template.spec.containers[0]");
        assert_eq!(body.get(offset), Some(&0x0a), "offset {offset} points at the name's tag");
        assert!(reason.contains("100 bytes, 3 left"), "{reason}");
        let api = ApiError::from(decode(&body).expect_err("fails"));
        assert_eq!(api.code, 400);
        assert!(api.message.contains("Deployment at spec.template.spec.containers[0]"), "{api:?}");
        // A known string field sent as a varint.
        let raw = ld(1, &vf(1, 7));
        let (path, _, reason) = malformed(decode(&envelope("v1", "ConfigMap", &raw)));
        assert_eq!(path, "metadata.name");
        assert!(reason.contains("wrong wire type varint"), "{reason}");
        // A truncated envelope.
        let (path, offset, _) = malformed(decode(b"k8s\0\x0a\x05\x0a"));
        assert_eq!((path.as_str(), offset), ("<root>", 4));
    }

    #[test]
    fn truncations_and_bit_flips_never_panic() {
        // Bytes 4..27 are the envelope's typeMeta; the object (field 2) follows, then
        // four bytes of empty contentEncoding and contentType.
        assert_eq!(DEPLOYMENT_BODY[27], 0x12);
        let end = DEPLOYMENT_BODY.len() - 4;
        for n in 0..=DEPLOYMENT_BODY.len() {
            let r = decode(&DEPLOYMENT_BODY[..n]);
            if n > 27 && n < end {
                assert!(r.is_err(), "prefix of {n} bytes cuts the object");
            }
        }
        let mut ok = 0;
        for i in 4..DEPLOYMENT_BODY.len() {
            for bit in 0..8 {
                let mut b = DEPLOYMENT_BODY.to_vec();
                b[i] ^= 1 << bit;
                ok += usize::from(decode(&b).is_ok());
            }
        }
        // Some flips only change text or numbers; many break the framing.
        assert!(ok > 0 && ok < (DEPLOYMENT_BODY.len() - 4) * 8, "{ok}");
    }

    #[test]
    fn random_bytes_never_panic() {
        // xorshift64*: deterministic, no extra crates.
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let kinds: [(&str, &str); 5] = [
            ("v1", "Pod"),
            ("apps/v1", "Deployment"),
            ("v1", "Service"),
            ("batch/v1", "CronJob"),
            ("v1", "Secret"),
        ];
        let mut errors = 0;
        for round in 0..20_000 {
            let len = (next() % 64) as usize;
            // Small field numbers and valid-looking tags are likelier to reach deep code.
            let raw: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 3 == 0 {
                        ((((r >> 8) % 16) << 3) | ((r >> 16) % 6)) as u8
                    } else {
                        (r >> 24) as u8
                    }
                })
                .collect();
            let (v, k) = kinds[round % kinds.len()];
            let body = if round % 2 == 0 {
                envelope(v, k, &raw)
            } else {
                [b"k8s\0".as_slice(), &raw].concat()
            };
            errors += usize::from(decode(&body).is_err());
            // Random overwrites of a real body reach the nested decoders.
            let mut body = DEPLOYMENT_BODY.to_vec();
            for _ in 0..=next() % 4 {
                let i = 4 + (next() as usize) % (body.len() - 4);
                body[i] = next() as u8;
            }
            errors += usize::from(decode(&body).is_err());
        }
        assert!(errors > 0);
    }
}
