//! The REST layer: routing, content negotiation, bodies, and watch streams.

use crate::cluster::{
    Cluster, DeleteOptions, FieldValidation, ListOptions, PatchType, Sub, WriteOptions, present,
};
use crate::discovery;
use crate::error::ApiError;
use crate::faults::FaultAction;
use crate::rbac::Identity;
use crate::resources::ResourceDef;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{EncodedObject, Event, EventType, TooOld};
use crate::table::{self, IncludeObject};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

/// The response body type.
pub type Body = BoxBody<Bytes, Infallible>;

const MAX_BODY: usize = 3 * 1024 * 1024;

/// Shared state of the HTTP front end.
pub(crate) struct App {
    pub cluster: Arc<Cluster>,
    pub token: Option<String>,
    pub server_addr: String,
    pub bookmark_interval: Duration,
    pub shutdown: watch::Receiver<bool>,
    /// The simulated nodes `pods/exec` reaches.
    pub kubelets: crate::nodes::Kubelets,
}

/// An empty body.
pub(crate) fn empty_body() -> Body {
    full(Bytes::new())
}

struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(http_body::Frame::data(b))))
    }
}

fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).boxed()
}

fn respond(code: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

fn json_response(code: u16, v: &Value) -> Response<Body> {
    respond(code, "application/json", serde_json::to_vec(v).unwrap_or_default())
}

/// `/openapi/v2`, which kubectl reads only to validate the items of a `kind: List` file on the
/// client (every other request it validates through `/openapi/v3` and the server's field
/// validation). The document carries no definitions, so kubectl skips the client-side check of
/// the items; each item is still validated by this server when it is written. In protobuf
/// (gnostic's `openapi_v2.Document`: `swagger`, `info{title, version}`, empty `paths`) when
/// asked for, as kubectl asks, else JSON.
fn openapi_v2(accept: Option<&str>) -> Response<Body> {
    const TITLE: &str = "Kubernetes";
    const VERSION: &str = "v1.36.0";
    if accept.is_some_and(|a| a.contains("protobuf")) {
        let field = |tag: u8, bytes: &[u8]| {
            let mut out = vec![tag, bytes.len() as u8];
            out.extend_from_slice(bytes);
            out
        };
        let mut info = field(0x0a, TITLE.as_bytes());
        info.extend(field(0x12, VERSION.as_bytes()));
        let mut doc = field(0x0a, b"2.0");
        doc.extend(field(0x12, &info));
        doc.extend(field(0x42, &[]));
        // kube-openapi answers with the `@` of the asked type as a `.`.
        return respond(200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", doc);
    }
    json_response(
        200,
        &json!({"swagger": "2.0", "info": {"title": TITLE, "version": VERSION}, "paths": {}, "definitions": {}}),
    )
}

fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.to_status())
}

/// The representation a client asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Json,
    Yaml,
    Table,
    Meta,
}

fn negotiate(accept: Option<&str>) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else { return Ok(Output::Json) };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: HashMap<String, String> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let jsonish = matches!(media.as_str(), "application/json" | "*/*" | "application/*");
        match params.get("as").map(String::as_str) {
            Some("Table")
                if jsonish && params.get("g").map(String::as_str) == Some("meta.k8s.io") =>
            {
                return Ok(Output::Table);
            }
            Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                if jsonish && params.get("g").map(String::as_str) == Some("meta.k8s.io") =>
            {
                return Ok(Output::Meta);
            }
            Some(_) => continue,
            None => {}
        }
        if jsonish {
            return Ok(Output::Json);
        }
        if media == "application/yaml" {
            return Ok(Output::Yaml);
        }
    }
    Err(ApiError::not_acceptable())
}

fn render(code: u16, v: &Value, out: Output, warnings: &[String]) -> Response<Body> {
    let mut r = match out {
        Output::Yaml => {
            respond(code, "application/yaml", serde_yaml::to_string(v).unwrap_or_default())
        }
        _ => json_response(code, v),
    };
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(h) = header::HeaderValue::from_str(&text) {
            r.headers_mut().append(header::WARNING, h);
        }
    }
    r
}

fn query_map(q: Option<&str>) -> HashMap<String, String> {
    q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default()
}

fn truthy(v: Option<&String>) -> bool {
    matches!(v.map(String::as_str), Some("true" | "1"))
}

/// [`decode_body`], with warnings about protobuf fields the decoder dropped.
fn decode_body_warn(bytes: &[u8], content_type: &str) -> Result<(Value, Vec<String>), ApiError> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case(crate::protobuf::MEDIA_TYPE) {
        let decoded = crate::protobuf::decode(bytes)?;
        return Ok((decoded.object, decoded.warnings));
    }
    decode_body(bytes, content_type).map(|v| (v, Vec::new()))
}

fn decode_body(bytes: &[u8], content_type: &str) -> Result<Value, ApiError> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case(crate::protobuf::MEDIA_TYPE) {
        return Ok(crate::protobuf::decode(bytes)?.object);
    }
    if !matches!(media, "" | "application/json" | "application/yaml" | "*/*") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {} (kruise-sim does not decode {media})",
                crate::protobuf::MEDIA_TYPE
            ),
        ));
    }
    if content_type.contains("yaml") {
        let v: Value = serde_yaml::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(format!("error converting YAML to JSON: yaml: {e}"))
        })?;
        return Ok(v);
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

fn write_options(q: &HashMap<String, String>) -> Result<WriteOptions, ApiError> {
    let field_validation = match q.get("fieldValidation").map(String::as_str) {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}. Supported values: Ignore, Warn, Strict"
            )));
        }
    };
    let dry_run = match q.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            )));
        }
    };
    Ok(WriteOptions {
        dry_run,
        field_validation,
        field_manager: q.get("fieldManager").cloned(),
        force: truthy(q.get("force")),
        pod_subresource: false,
        patch: None,
        held_services: None,
    })
}

fn list_options(def: &ResourceDef, q: &HashMap<String, String>) -> Result<ListOptions, ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let mut fields = FieldSelector::parse(
        q.get("fieldSelector").map(String::as_str).unwrap_or(""),
        &def.field_selectors,
    )?;
    // Selectors are evaluated on stored objects: an alias's labels name its stored fields.
    if let Some(alias) = crate::builtin_conversion::of(def) {
        fields = fields.renamed(|f| alias.stored_field(f).unwrap_or(f).to_string());
    }
    let limit = match q.get("limit").map(String::as_str) {
        None | Some("") => 0,
        Some(l) => l
            .parse::<i64>()
            .map(|l| l.max(0) as usize)
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}")))?,
    };
    let continue_token = q.get("continue").filter(|c| !c.is_empty()).cloned();
    Ok(ListOptions { labels, fields, limit, continue_token })
}

fn include_object(q: &HashMap<String, String>) -> IncludeObject {
    match q.get("includeObject").map(String::as_str) {
        Some("None") => IncludeObject::None,
        Some("Object") => IncludeObject::Object,
        _ => IncludeObject::Metadata,
    }
}

fn format_one(def: &ResourceDef, obj: Value, out: Output, q: &HashMap<String, String>) -> Value {
    match out {
        Output::Table => table::table(
            def,
            std::slice::from_ref(&obj),
            include_object(q),
            json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))}),
            true,
        ),
        Output::Meta => table::partial_metadata(&obj),
        _ => obj,
    }
}

fn version_json() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-kruise-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// Handles one request; never fails (errors become Status bodies).
pub(crate) async fn handle<B>(app: Arc<App>, req: Request<B>) -> Result<Response<Body>, Infallible>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Ok(match route(app, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    })
}

/// Who sent the request: the admin (the server's token, or any request when it has none),
/// a service account (a token TokenRequest issued), or, for the admin, the user it
/// impersonates. `Err` answers the request: 401 without a known token, 403 for an
/// impersonation the caller may not make.
fn authenticate<B>(app: &App, req: &Request<B>) -> Result<Identity, ApiError> {
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim);
    let caller = match (&app.token, bearer) {
        (None, _) => Identity::admin(),
        (Some(token), Some(given)) if given == token => Identity::admin(),
        (_, Some(given)) => {
            app.cluster.tokens.identity(given).ok_or_else(ApiError::unauthorized)?
        }
        (Some(_), None) => return Err(ApiError::unauthorized()),
    };
    let Some(user) = req.headers().get("impersonate-user").and_then(|h| h.to_str().ok()) else {
        return Ok(caller);
    };
    if !caller.is_admin() {
        return Err(ApiError {
            code: 403,
            reason: "Forbidden",
            message: format!(
                "users {user:?} is forbidden: User {:?} cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
                caller.user
            ),
            details: Some(json!({"name": user, "kind": "users"})),
        });
    }
    let groups = req
        .headers()
        .get_all("impersonate-group")
        .iter()
        .filter_map(|h| h.to_str().ok().map(str::to_owned))
        .collect();
    Ok(Identity::impersonated(user, groups))
}

async fn route<B>(app: Arc<App>, req: Request<B>) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = req.uri().path().to_string();
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let method = req.method().clone();
    if let ["healthz" | "livez" | "readyz", ..] = segs.as_slice() {
        return Ok(respond(200, "text/plain; charset=utf-8", "ok"));
    }
    if segs.as_slice() == ["version"] {
        return Ok(json_response(200, &version_json()));
    }
    let identity = authenticate(&app, &req)?;
    let q = query_map(req.uri().query());
    let defs = app.cluster.all_defs();
    let accept =
        req.headers().get(header::ACCEPT).and_then(|h| h.to_str().ok()).map(str::to_string);
    let discovery_get = |v: Option<Value>| -> Result<Response<Body>, ApiError> {
        if method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        v.map(|v| json_response(200, &v)).ok_or_else(ApiError::no_route)
    };
    match segs.as_slice() {
        [] => {
            let mut paths = vec!["/api".to_string(), "/api/v1".into(), "/apis".into()];
            for (g, vs) in discovery::groups(&defs) {
                paths.push(format!("/apis/{g}"));
                paths.extend(vs.iter().map(|v| format!("/apis/{g}/{v}")));
            }
            paths.extend(
                ["/healthz", "/livez", "/openapi/v2", "/openapi/v3", "/readyz", "/version"]
                    .map(String::from),
            );
            discovery_get(Some(json!({"paths": paths})))
        }
        ["api"] => discovery_get(Some(discovery::core_versions(&app.server_addr))),
        ["apis"] => discovery_get(Some(discovery::group_list(&defs))),
        ["apis", g] => discovery_get(discovery::group(&defs, g)),
        ["openapi", "v2"] if method == Method::GET => Ok(openapi_v2(accept.as_deref())),
        ["openapi", "v3"] => discovery_get(Some(discovery::openapi_index(&defs))),
        ["openapi", "v3", "api", v] => discovery_get(discovery::openapi_gv(&defs, "", v)),
        ["openapi", "v3", "apis", g, v] => discovery_get(discovery::openapi_gv(&defs, g, v)),
        ["api", v, rest @ ..] => {
            let (g, v) = (String::new(), v.to_string());
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            resource_request(app, req, &identity, &g, &v, rest, q, accept).await
        }
        ["apis", g, v, rest @ ..] => {
            let (g, v) = (g.to_string(), v.to_string());
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            resource_request(app, req, &identity, &g, &v, rest, q, accept).await
        }
        _ => Err(ApiError::no_route()),
    }
}

async fn read_body<B>(req: Request<B>) -> Result<(Bytes, String), ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let body = http_body_util::Limited::new(req.into_body(), MAX_BODY);
    let bytes = body
        .collect()
        .await
        .map_err(|e| {
            if e.to_string().contains("length limit") {
                ApiError::new(
                    413,
                    "RequestEntityTooLarge",
                    format!("Request entity too large: limit is {MAX_BODY}"),
                )
            } else {
                ApiError::bad_request(format!("error reading the request body: {e}"))
            }
        })?
        .to_bytes();
    Ok((bytes, ct))
}

#[allow(clippy::too_many_arguments)]
async fn resource_request<B>(
    app: Arc<App>,
    req: Request<B>,
    identity: &Identity,
    group: &str,
    version: &str,
    mut rest: Vec<String>,
    mut q: HashMap<String, String>,
    accept: Option<String>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let method = req.method().clone();
    let defs = app.cluster.all_defs();
    if rest.is_empty() {
        if method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        return discovery::resource_list(&defs, group, version)
            .map(|v| json_response(200, &v))
            .ok_or_else(ApiError::no_route);
    }
    if rest[0] == "watch" {
        rest.remove(0);
        q.insert("watch".into(), "true".into());
    }
    let is_ns_sub = group.is_empty()
        && rest.len() == 3
        && rest[0] == "namespaces"
        && (rest[2] == "status" || rest[2] == "finalize");
    let (ns, plural, name, sub) = if rest[0] == "namespaces" && rest.len() >= 3 && !is_ns_sub {
        if rest.len() > 5 {
            return Err(ApiError::no_route());
        }
        (Some(rest[1].clone()), rest[2].clone(), rest.get(3).cloned(), rest.get(4).cloned())
    } else {
        if rest.len() > 3 {
            return Err(ApiError::no_route());
        }
        (None, rest[0].clone(), rest.get(1).cloned(), rest.get(2).cloned())
    };
    let def = app.cluster.resolve(group, version, &plural).ok_or_else(ApiError::no_route)?;
    if (!def.namespaced && ns.is_some()) || (def.namespaced && ns.is_none() && name.is_some()) {
        return Err(ApiError::no_route());
    }
    let ns_str = ns.clone().unwrap_or_default();
    let out = negotiate(accept.as_deref())?;
    let cluster = app.cluster.clone();
    let sub_kind = match sub.as_deref() {
        None => Sub::Main,
        Some("status") if def.status => Sub::Status,
        Some("scale") if def.scale.is_some() => Sub::Scale,
        Some(s) if def.extra_subresources.iter().any(|x| x == s) => Sub::Main,
        Some(_) => return Err(ApiError::no_route()),
    };
    let watching = truthy(q.get("watch")) && sub.is_none() && method == Method::GET;
    let verb = match (&method, name.is_some()) {
        _ if watching => "watch",
        (&Method::GET, true) => "get",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "",
    };
    // As kube-apiserver's RequestInfoFactory: a list or watch of one name (`fieldSelector`
    // `metadata.name=`) is authorized as a request for that name, so that `resourceNames`
    // rules allow it.
    let authorized_name = match (&name, verb) {
        (None, "list" | "watch") => {
            q.get("fieldSelector").and_then(|f| exact_name_in_selector(f)).unwrap_or_default()
        }
        _ => name.clone().unwrap_or_default(),
    };
    let attributes = crate::rbac::Attributes {
        verb: verb.to_owned(),
        group: def.group.clone(),
        resource: def.plural.clone(),
        subresource: sub.clone().unwrap_or_default(),
        namespace: ns.clone().unwrap_or_default(),
        name: authorized_name,
    };
    // Every authenticated user may ask what it may do and who it is (`system:basic-user`).
    if def.plural != "selfsubjectaccessreviews" && def.plural != "selfsubjectreviews" {
        let (allowed, _) = crate::rbac::authorize(cluster.store(), identity, &attributes);
        if !allowed {
            let mut details = json!({"kind": def.plural, "group": def.group});
            if let Some(name) = &name {
                details["name"] = json!(name);
            }
            return Err(ApiError {
                code: 403,
                reason: "Forbidden",
                message: crate::rbac::forbidden_message(identity, &attributes),
                details: Some(details),
            });
        }
    }
    let actions = cluster.faults().check(&crate::faults::RequestInfo {
        verb,
        resource: &def.plural,
        sub: sub.as_deref(),
        name: name.as_deref(),
        namespace: ns.as_deref(),
    });
    let mut drop_after = None;
    for a in actions {
        match a {
            FaultAction::Latency(d) => tokio::time::sleep(d).await,
            FaultAction::DropWatch { after_events } => drop_after = Some(after_events),
            FaultAction::Conflict => {
                let n = name.as_deref().unwrap_or_default();
                return Err(ApiError::stale(&def.group, &def.plural, n));
            }
            FaultAction::InternalError => {
                return Err(ApiError::internal("injected fault"));
            }
            FaultAction::TooManyRequests { retry_after_seconds } => {
                let e = ApiError {
                    code: 429,
                    reason: "TooManyRequests",
                    message: "Too many requests, please try again later.".into(),
                    details: Some(json!({"retryAfterSeconds": retry_after_seconds})),
                };
                let mut r = error_response(&e);
                if let Ok(v) = header::HeaderValue::from_str(&retry_after_seconds.to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                return Ok(r);
            }
        }
    }
    if let (Some(name), Some("exec"), true) =
        (name.as_deref(), sub.as_deref(), def.group.is_empty() && def.plural == "pods")
    {
        let name = name.to_owned();
        return crate::exec::serve(&app, req, identity, &ns_str, &name).await;
    }
    match (name.as_deref(), sub.as_deref(), &method) {
        // Answered from the caller's identity and the RBAC objects; never stored.
        (None, None, &Method::POST) if def.plural == "selfsubjectaccessreviews" => {
            let (bytes, ct) = read_body(req).await?;
            let review = decode_body(&bytes, &ct)?;
            let answer =
                crate::rbac::self_subject_access_review(cluster.store(), identity, &review);
            Ok(render(201, &answer, out, &[]))
        }
        (None, None, &Method::POST) if def.plural == "selfsubjectreviews" => {
            let (bytes, ct) = read_body(req).await?;
            decode_body(&bytes, &ct)?;
            let answer = json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": crate::util::now_rfc3339()},
                "status": {"userInfo": {"username": identity.user, "groups": identity.groups}}});
            Ok(render(201, &answer, out, &[]))
        }
        (None, None, &Method::POST) if def.plural == "tokenreviews" => {
            let (bytes, ct) = read_body(req).await?;
            let review = decode_body(&bytes, &ct)?;
            Ok(render(201, &cluster.token_review(&review), out, &[]))
        }
        (_, _, _)
            if matches!(
                def.plural.as_str(),
                "selfsubjectaccessreviews" | "selfsubjectreviews" | "tokenreviews"
            ) =>
        {
            Err(ApiError::method_not_allowed())
        }
        (Some(name), Some("token"), &Method::POST) => {
            let (bytes, ct) = read_body(req).await?;
            let request = decode_body(&bytes, &ct)?;
            let answer = cluster.token_request(&ns_str, name, &request)?;
            Ok(render(201, &answer, out, &[]))
        }
        (None, _, &Method::GET) => {
            if truthy(q.get("watch")) {
                return serve_watch(app, def, ns, q, out, drop_after).await;
            }
            let opts = list_options(&def, &q)?;
            let page = cluster.list(&def, ns.as_deref(), &opts)?;
            let mut meta = json!({"resourceVersion": page.rv.to_string()});
            if let Some(c) = &page.continue_token {
                meta["continue"] = json!(c);
            }
            if let Some(r) = page.remaining {
                meta["remainingItemCount"] = json!(r);
            }
            let items: Vec<Value> = cluster.served_arcs(&def, &page.items).await?;
            let v = match out {
                Output::Table => table::table(&def, &items, include_object(&q), meta, true),
                Output::Meta => json!({
                    "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                    "items": items.iter().map(table::partial_metadata).collect::<Vec<_>>(),
                }),
                _ => {
                    let items: Vec<Value> = if def.is_custom() {
                        items
                    } else {
                        items
                            .into_iter()
                            .map(|mut o| {
                                if let Some(m) = o.as_object_mut() {
                                    m.remove("apiVersion");
                                    m.remove("kind");
                                }
                                o
                            })
                            .collect()
                    };
                    json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": meta, "items": items})
                }
            };
            Ok(render(200, &v, out, &[]))
        }
        (None, None, &Method::POST) => {
            if def.namespaced && ns.is_none() {
                return Err(ApiError::method_not_allowed());
            }
            let opts = write_options(&q)?;
            let (bytes, ct) = read_body(req).await?;
            let (body, mut warnings) = decode_body_warn(&bytes, &ct)?;
            let (obj, admitted) = cluster.create_admitted(&def, &ns_str, body, &opts).await?;
            warnings.extend(admitted);
            Ok(render(201, &format_one(&def, obj, out, &q), out, &warnings))
        }
        (None, None, &Method::DELETE) => {
            let opts = list_options(&def, &q)?;
            let (bytes, _) = read_body(req).await?;
            let dopts = delete_options(&bytes, &q)?;
            let items =
                cluster.delete_collection_admitted(&def, ns.as_deref(), &opts, &dopts).await?;
            let items = cluster.served_all(&def, items).await?;
            let v = json!({"kind": def.list_kind, "apiVersion": def.api_version(),
                "metadata": {"resourceVersion": cluster.store().current_rv().to_string()}, "items": items});
            Ok(render(200, &v, out, &[]))
        }
        (None, _, _) => Err(ApiError::method_not_allowed()),
        (
            Some(name),
            Some(sub @ ("resize" | "ephemeralcontainers")),
            &Method::PATCH | &Method::PUT,
        ) if def.group.is_empty() && def.plural == "pods" => {
            let opts = write_options(&q)?;
            let (bytes, ct) = read_body(req).await?;
            let request = if method == Method::PUT {
                crate::resize::Request::Put(decode_body(&bytes, &ct)?)
            } else {
                let ptype = match ct.split(';').next().unwrap_or("").trim() {
                    "application/json-patch+json" => PatchType::Json,
                    "application/merge-patch+json" => PatchType::Merge,
                    "application/strategic-merge-patch+json" => PatchType::Strategic,
                    _ => PatchType::Apply,
                };
                crate::resize::Request::Patch(ptype, &bytes)
            };
            let apply = if sub == "resize" {
                crate::resize::resized
            } else {
                crate::resize::with_ephemeral_containers
            };
            let (obj, warnings) =
                crate::resize::update_through(&cluster, &def, &ns_str, name, request, &opts, apply)
                    .await?;
            Ok(render(200, &format_one(&def, obj, out, &q), out, &warnings))
        }
        (
            Some(name),
            None | Some("status" | "scale" | "resize" | "ephemeralcontainers"),
            &Method::GET,
        ) => {
            if truthy(q.get("watch")) && sub.is_none() {
                let fs = q.get("fieldSelector").cloned().unwrap_or_default();
                let pin = format!("metadata.name={name}");
                q.insert(
                    "fieldSelector".into(),
                    if fs.is_empty() { pin } else { format!("{fs},{pin}") },
                );
                return serve_watch(app, def, ns, q, out, drop_after).await;
            }
            let obj = cluster.get_served(&def, &ns_str, name).await?;
            if sub_kind == Sub::Scale {
                return Ok(render(200, &cluster.scale_of(&def, &obj)?, out, &[]));
            }
            Ok(render(200, &format_one(&def, obj, out, &q), out, &[]))
        }
        (Some(name), None | Some("status" | "scale" | "finalize"), &Method::PUT) => {
            let opts = write_options(&q)?;
            let (bytes, ct) = read_body(req).await?;
            let (body, mut warnings) = decode_body_warn(&bytes, &ct)?;
            let (obj, created, admitted) =
                cluster.update_admitted(&def, &ns_str, name, sub_kind, body, &opts).await?;
            warnings.extend(admitted);
            let obj = if sub_kind == Sub::Scale { obj } else { format_one(&def, obj, out, &q) };
            Ok(render(if created { 201 } else { 200 }, &obj, out, &warnings))
        }
        (Some(name), None | Some("status" | "scale"), &Method::PATCH) => {
            let opts = write_options(&q)?;
            let (bytes, ct) = read_body(req).await?;
            let ptype = match ct.split(';').next().unwrap_or("").trim() {
                "application/json-patch+json" => PatchType::Json,
                "application/merge-patch+json" => PatchType::Merge,
                "application/strategic-merge-patch+json" => PatchType::Strategic,
                "application/apply-patch+yaml" | "application/apply-patch+cbor" => PatchType::Apply,
                _ => {
                    let mut accepted =
                        vec!["application/json-patch+json", "application/merge-patch+json"];
                    if def.smp != crate::resources::SmpKind::Unsupported {
                        accepted.push("application/strategic-merge-patch+json");
                    }
                    accepted.push("application/apply-patch+yaml");
                    return Err(ApiError::unsupported_patch(&accepted));
                }
            };
            let (obj, created, warnings) =
                cluster.patch_admitted(&def, &ns_str, name, sub_kind, ptype, &bytes, &opts).await?;
            let obj = if sub_kind == Sub::Scale { obj } else { format_one(&def, obj, out, &q) };
            Ok(render(if created { 201 } else { 200 }, &obj, out, &warnings))
        }
        (Some(name), None, &Method::DELETE) => {
            let (bytes, _) = read_body(req).await?;
            let dopts = delete_options(&bytes, &q)?;
            let obj = cluster.delete_admitted(&def, &ns_str, name, &dopts).await?;
            Ok(render(200, &format_one(&def, obj, out, &q), out, &[]))
        }
        (Some(name), Some("binding"), &Method::POST) => {
            let opts = write_options(&q)?;
            let (bytes, ct) = read_body(req).await?;
            let body = decode_body(&bytes, &ct)?;
            let v = cluster.bind_admitted(&ns_str, name, body, &opts).await?;
            Ok(render(201, &v, out, &[]))
        }
        (Some(name), Some("eviction"), &Method::POST) => {
            let opts = write_options(&q)?;
            let (bytes, ct) = read_body(req).await?;
            let body = decode_body(&bytes, &ct)?;
            let v = cluster.evict_admitted(&ns_str, name, body, &opts).await?;
            Ok(render(201, &v, out, &[]))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn delete_options(bytes: &[u8], q: &HashMap<String, String>) -> Result<DeleteOptions, ApiError> {
    let body: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?
    };
    Ok(delete_options_of(&body, q))
}

/// DeleteOptions from a body (a delete's, or an Eviction's `deleteOptions`) and the query.
pub(crate) fn delete_options_of(body: &Value, q: &HashMap<String, String>) -> DeleteOptions {
    let s = |p: &str| body.pointer(p).and_then(Value::as_str).map(str::to_string);
    let dry_run =
        body.get("dryRun").and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v == "All"))
            || q.get("dryRun").map(String::as_str) == Some("All");
    DeleteOptions {
        uid: s("/preconditions/uid"),
        resource_version: s("/preconditions/resourceVersion"),
        dry_run,
        propagation: s("/propagationPolicy").or_else(|| q.get("propagationPolicy").cloned()),
        grace_period_seconds: body
            .get("gracePeriodSeconds")
            .and_then(Value::as_i64)
            .or_else(|| q.get("gracePeriodSeconds").and_then(|g| g.parse().ok())),
    }
}

/// A watch `ERROR` event carrying `e`'s Status.
fn error_line(e: &ApiError) -> Bytes {
    event_line("ERROR", &e.to_status())
}

/// One watch event, a line of JSON with `type` before `object`, as kube-apiserver writes it
/// (clients decode the object as it streams by only when they know its type first).
fn event_line(t: &str, object: &impl serde::Serialize) -> Bytes {
    let mut v = Vec::with_capacity(1024);
    v.extend_from_slice(b"{\"type\":\"");
    v.extend_from_slice(t.as_bytes());
    v.extend_from_slice(b"\",\"object\":");
    let start = v.len();
    // Writing JSON values into memory cannot fail; should it, the object reads as null.
    if serde_json::to_writer(&mut v, object).is_err() {
        v.truncate(start);
        v.extend_from_slice(b"null");
    }
    v.extend_from_slice(b"}\n");
    Bytes::from(v)
}

/// An object as served: `kind` and `apiVersion` (the served version) first, then its other
/// fields; serialized without copying the object.
struct Presented<'a> {
    kind: &'a str,
    api_version: &'a str,
    object: &'a Value,
}

impl serde::Serialize for Presented<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let Value::Object(fields) = self.object else {
            return self.object.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.kind)?;
        map.serialize_entry("apiVersion", self.api_version)?;
        for (key, value) in fields {
            if key != "kind" && key != "apiVersion" {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// The filters and rendering of one watch.
struct WatchCtx {
    def: Arc<ResourceDef>,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    out: Output,
    include: IncludeObject,
    columns_sent: bool,
}

impl WatchCtx {
    fn matches(&self, o: &Value) -> bool {
        if let Some(ns) = &self.ns
            && o.pointer("/metadata/namespace").and_then(Value::as_str) != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches_object(o) && self.fields.matches(o)
    }

    /// The event as this watcher sees it (selector transitions become ADDED/DELETED).
    fn filter(&self, ev: &Event) -> Option<(&'static str, Arc<Value>)> {
        let object = ev.object();
        let prev = ev.prev();
        let now = self.matches(&object);
        let before = prev.as_ref().map(|p| self.matches(p));
        let t = match (ev.type_, now, before) {
            (EventType::Deleted, _, Some(true)) => "DELETED",
            (EventType::Deleted, _, _) => return None,
            (EventType::Added, true, _) => "ADDED",
            (EventType::Modified, true, Some(true)) => "MODIFIED",
            (EventType::Modified, true, _) => "ADDED",
            (EventType::Modified, false, Some(true)) => "DELETED",
            _ => return None,
        };
        let object = if t == "DELETED" && ev.type_ == EventType::Deleted {
            prev.as_deref()
                .cloned()
                .map(|mut p| {
                    crate::store::set_rv(&mut p, ev.rv);
                    Arc::new(p)
                })
                .unwrap_or(object)
        } else {
            object
        };
        Some((t, object))
    }

    fn line(&mut self, t: &str, obj: &Value) -> Bytes {
        match self.out {
            Output::Table => {
                let obj = present(&self.def, obj);
                let with = !self.columns_sent;
                self.columns_sent = true;
                let rv = obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""));
                let rows = json!({"resourceVersion": rv});
                event_line(t, &table::table(&self.def, &[obj], self.include, rows, with))
            }
            Output::Meta => event_line(t, &table::partial_metadata(&present(&self.def, obj))),
            _ => {
                let api_version = self.def.api_version();
                let presented =
                    Presented { kind: &self.def.kind, api_version: &api_version, object: obj };
                event_line(t, &presented)
            }
        }
    }

    /// The line for the event `ev` whose object this watcher serves as `obj`. A JSON watcher
    /// sending the stored object itself shares its encoding with every other such watcher of
    /// the event; any other rendering is this watcher's own.
    fn event_line(&mut self, ev: &Event, t: &str, obj: &Arc<Value>) -> Bytes {
        // The event's object is decoded once while a watcher holds it, so the pointer says
        // whether `obj` is that object as stored.
        if matches!(self.out, Output::Json) && Arc::ptr_eq(obj, &ev.object()) {
            let api_version = self.def.api_version();
            let encoded = ev.encoded.get_or_init(|| {
                let presented =
                    Presented { kind: &self.def.kind, api_version: &api_version, object: obj };
                // Writing JSON values into memory cannot fail; should it, the object reads as
                // null, as in `event_line`.
                let json = serde_json::to_vec(&presented).unwrap_or_else(|_| b"null".to_vec());
                EncodedObject {
                    kind: self.def.kind.clone(),
                    api_version: api_version.clone(),
                    json: Bytes::from(json),
                }
            });
            if encoded.kind == self.def.kind && encoded.api_version == api_version {
                let mut v = Vec::with_capacity(encoded.json.len() + 32);
                v.extend_from_slice(b"{\"type\":\"");
                v.extend_from_slice(t.as_bytes());
                v.extend_from_slice(b"\",\"object\":");
                v.extend_from_slice(&encoded.json);
                v.extend_from_slice(b"}\n");
                return Bytes::from(v);
            }
        }
        self.line(t, obj)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj =
            json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": meta});
        event_line("BOOKMARK", &obj)
    }
}

async fn serve_watch(
    app: Arc<App>,
    def: Arc<ResourceDef>,
    ns: Option<String>,
    q: HashMap<String, String>,
    out: Output,
    drop_after: Option<usize>,
) -> Result<Response<Body>, ApiError> {
    let opts = list_options(&def, &q)?;
    let allow_bookmarks = truthy(q.get("allowWatchBookmarks"));
    let send_initial = q.get("sendInitialEvents").map(String::as_str) == Some("true");
    if q.contains_key("sendInitialEvents")
        && q.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan")
    {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![crate::error::Cause::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )],
        ));
    }
    let rv: Option<u64> = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") => None,
        Some(s) => Some(s.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resource version: strconv.ParseUint: parsing {s:?}: invalid syntax"
            ))
        })?),
    };
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let mut ctx = WatchCtx {
        def: def.clone(),
        ns: ns.clone(),
        labels: opts.labels,
        fields: opts.fields,
        out,
        include: include_object(&q),
        columns_sent: false,
    };
    let table = def.key();
    let store = &app.cluster.store;
    // Subscribed before the watch starts: a `drop_watches` while this request is being
    // answered ends it too, so no watch outlives a drop it could have seen.
    let mut drops = app.cluster.faults().subscribe_drops();
    let mut first: Vec<Bytes> = Vec::new();
    let snapshot = send_initial || rv.is_none() || rv == Some(0);
    let (start, mut last_rv) = if snapshot {
        let (items, start) = store.snapshot_and_watch(&table, ns.as_deref());
        let items: Vec<Arc<Value>> = items.into_iter().filter(|o| ctx.matches(o)).collect();
        for o in &app.cluster.served_arcs(&def, &items).await? {
            first.push(ctx.line("ADDED", o));
        }
        if send_initial && allow_bookmarks {
            first.push(ctx.bookmark(start.rv, true));
        }
        let r = start.rv;
        (Some(start), r)
    } else {
        let from = rv.unwrap_or(0);
        match store.watch(&table, Some(from)) {
            Ok(start) => {
                for ev in &start.replay {
                    if let Some((t, o)) = ctx.filter(ev) {
                        let o = app.cluster.served_shared(&def, o).await?;
                        first.push(ctx.event_line(ev, t, &o));
                    }
                }
                let r = start.replay.last().map(|e| e.rv).unwrap_or(from);
                (Some(start), r)
            }
            Err(TooOld(req, oldest)) => {
                app.cluster.faults().note_expired();
                let e = ApiError::gone(format!("too old resource version: {req} ({oldest})"));
                let mut v = serde_json::to_vec(&json!({"type": "ERROR", "object": e.to_status()}))
                    .unwrap_or_default();
                v.push(b'\n');
                first.push(Bytes::from(v));
                (None, 0)
            }
        }
    };
    let (tx, mut inner_rx) = mpsc::channel::<Bytes>(256);
    let (out_tx, rx) = mpsc::channel::<Bytes>(256);
    // Between the watch and the client: ends the stream on injected faults. `biased`, the
    // drop first: an event written after `drop_watches` returned is queued behind the drop,
    // and must never reach the client of a dropped watch (its resourceVersion would let the
    // client resume past a compaction without the 410 Gone it is owed).
    tokio::spawn(async move {
        let mut sent = 0usize;
        if drop_after == Some(0) {
            return;
        }
        loop {
            tokio::select! {
                biased;
                _ = drops.recv() => return,
                b = inner_rx.recv() => {
                    let Some(b) = b else { return };
                    if out_tx.send(b).await.is_err() {
                        return;
                    }
                    sent += 1;
                    if drop_after.is_some_and(|n| sent >= n) {
                        return;
                    }
                }
            }
        }
    });
    let mut shutdown = app.shutdown.clone();
    let bookmark_every = app.bookmark_interval;
    let cluster = app.cluster.clone();
    tokio::spawn(async move {
        for b in first {
            if tx.send(b).await.is_err() {
                return;
            }
        }
        let Some(start) = start else { return };
        let mut live = start.rx;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(bookmark_every);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => break,
                _ = shutdown.changed() => break,
                _ = tx.closed() => break,
                r = live.recv() => match r {
                    Ok(ev) => {
                        if ev.rv <= last_rv { continue; }
                        last_rv = ev.rv;
                        if let Some((t, o)) = ctx.filter(&ev) {
                            let line = match cluster.served_shared(&ctx.def, o).await {
                                Ok(o) => ctx.event_line(&ev, t, &o),
                                Err(e) => {
                                    let _ = tx.send(error_line(&e)).await;
                                    break;
                                }
                            };
                            if tx.send(line).await.is_err() { break; }
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = ticker.tick(), if allow_bookmarks => {
                    let now = cluster.store.current_rv();
                    let mut held = None;
                    while let Ok(ev) = live.try_recv() {
                        if ev.rv <= last_rv { continue; }
                        if ev.rv > now { held = Some(ev); break; }
                        last_rv = ev.rv;
                        if let Some((t, o)) = ctx.filter(&ev) {
                            let line = match cluster.served_shared(&ctx.def, o).await {
                                Ok(o) => ctx.event_line(&ev, t, &o),
                                Err(e) => error_line(&e),
                            };
                            if tx.send(line).await.is_err() { return; }
                        }
                    }
                    if now > last_rv { last_rv = now; }
                    if tx.send(ctx.bookmark(last_rv, false)).await.is_err() { return; }
                    if let Some(ev) = held {
                        last_rv = ev.rv;
                        if let Some((t, o)) = ctx.filter(&ev) {
                            let line = match cluster.served_shared(&ctx.def, o).await {
                                Ok(o) => ctx.event_line(&ev, t, &o),
                                Err(e) => error_line(&e),
                            };
                            if tx.send(line).await.is_err() { return; }
                        }
                    }
                }
            }
        }
    });
    let mut r = Response::new(ChannelBody(rx).boxed());
    r.headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache, private"));
    Ok(r)
}

/// The name a field selector requires exactly (`metadata.name=x` or `metadata.name==x` among
/// its terms), when it is a valid path segment, as kube-apiserver reads it for authorization.
fn exact_name_in_selector(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        let valid = !value.is_empty()
            && value != "."
            && value != ".."
            && !value.contains('/')
            && !value.contains('%')
            && !field.ends_with('!');
        (field.trim() == "metadata.name" && valid).then(|| value.to_owned())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_selector_of_one_name_names_the_request() {
        use super::exact_name_in_selector as name;
        assert_eq!(name("metadata.name=cfg").as_deref(), Some("cfg"));
        assert_eq!(name("metadata.namespace=a,metadata.name==cfg").as_deref(), Some("cfg"));
        assert_eq!(name("metadata.name!=cfg"), None);
        assert_eq!(name("status.phase=Running"), None);
        assert_eq!(name("metadata.name=a/b"), None);
        assert_eq!(name("metadata.name="), None);
    }
}
