//! `pods/exec` over WebSocket, as kube-apiserver serves it to kubectl 1.30+ and kube-rs:
//! `GET` (or `POST`) `/api/v1/namespaces/{ns}/pods/{name}/exec?command=…&container=…&stdin=…
//! &stdout=…&stderr=…&tty=…` upgraded to a WebSocket with subprotocol `v5.channel.k8s.io`
//! (or `v4.channel.k8s.io`). Binary messages carry a channel byte first: 0 stdin, 1 stdout,
//! 2 stderr, 3 the closing `metav1.Status`, 4 terminal resizes (ignored); v5's 255 closes
//! the channel in the next byte (kubectl closes stdin so).
//!
//! The command runs in the container's shell ([`crate::nodes::shell`]) on the simulated node
//! the pod is bound to, reached through [`crate::nodes::Kubelets`] as kube-apiserver reaches a
//! kubelet. What kube-apiserver answers, kruise-sim answers:
//!
//! - before the upgrade: `pods "x" not found` (404), `container c is not valid for pod p`
//!   (400), `a container name must be specified for pod p, choose one of: [a b]` (400), `pod p
//!   does not have a host assigned` (400), `nodes "n" not found` (404), a missing command or
//!   no stream (400), `Upgrade request required` (400). An SPDY upgrade (what kubectl falls
//!   back to when the WebSocket upgrade fails) gets 400 as well: only WebSocket is served.
//! - after the upgrade, on the error channel, as its WebSocket-to-SPDY translator relays the
//!   kubelet's answers: `{"status":"Success"}`; a non-zero exit as `NonZeroExitCode` with the
//!   code in the `ExitCode` cause; a container that is not running as `Internal error
//!   occurred: unable to upgrade connection: container not found ("c")`; a missing program as
//!   containerd's `executable file not found in $PATH` error; and a node no simulated kubelet
//!   serves (say, `kruise-sim serve` without nodes) as `error dialing backend: dial tcp
//!   IP:10250: connect: connection refused`.
//!
//! Authorization: `create` on `pods/exec`, and for a `GET` also `get` (the request's own
//! verb), as kube-apiserver 1.35+ checks with `AuthorizePodWebsocketUpgradeCreatePermission`.
//!
//! Not done: a terminal (with `tty` the command runs without one, stderr joins stdout and
//! resizes are ignored), interactive input (a command reading stdin sees it all once the
//! client closes it), `pods/attach` and `pods/portforward`.

use base64::Engine as _;
use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use http::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

use crate::error::ApiError;
use crate::http::{App, Body};
use crate::nodes::runtime::{ContainerState, hostname_of};
use crate::nodes::{NodeRuntime, shell};
use crate::rbac::Identity;

/// The subprotocols served, best first.
pub const PROTOCOLS: &[&str] = &["v5.channel.k8s.io", "v4.channel.k8s.io"];
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const CLOSE: u8 = 255;
/// The most standard input kept for a command.
const MAX_STDIN: usize = 16 << 20;

/// The exec request's options (`PodExecOptions`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    command: Vec<String>,
    container: Option<String>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

fn options(query: Option<&str>) -> Options {
    let mut o = Options::default();
    let truthy = |v: &str| matches!(v, "true" | "1" | "True" | "TRUE");
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "command" => o.command.push(v.into_owned()),
            "container" if !v.is_empty() => o.container = Some(v.into_owned()),
            "stdin" => o.stdin = truthy(&v),
            "stdout" => o.stdout = truthy(&v),
            "stderr" => o.stderr = truthy(&v),
            "tty" => o.tty = truthy(&v),
            _ => {}
        }
    }
    o
}

/// The container to exec in, as kube-apiserver's `validateContainer` picks it.
fn pick_container(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    let names = |key: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .map(|cs| cs.iter().filter_map(|c| c["name"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let containers = names("containers");
    let mut all = names("initContainers");
    all.extend(containers.iter().cloned());
    all.extend(names("ephemeralContainers"));
    match asked {
        Some(c) if all.iter().any(|n| n == c) => Ok(c.to_owned()),
        Some(c) => Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}"))),
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None if all.is_empty() => {
            Err(ApiError::bad_request(format!("a container name must be specified for pod {name}")))
        }
        None => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            all.join(" ")
        ))),
    }
}

fn header_values<B>(req: &Request<B>, name: header::HeaderName) -> Vec<String> {
    req.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

/// `Sec-WebSocket-Accept` for a key.
fn accept_key(key: &str) -> String {
    const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{GUID}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Serves `pods/{name}/exec` in `ns`; the request's own verb was authorized already.
pub(crate) async fn serve<B>(
    app: &App,
    mut req: Request<B>,
    identity: &Identity,
    ns: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let method = req.method().clone();
    if method != Method::GET && method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    if method == Method::GET {
        // The WebSocket upgrade is a GET: kube-apiserver also asks for `create`.
        let what = crate::rbac::Attributes {
            verb: "create".into(),
            group: String::new(),
            resource: "pods".into(),
            subresource: "exec".into(),
            namespace: ns.to_owned(),
            name: name.to_owned(),
        };
        if !crate::rbac::authorize(app.cluster.store(), identity, &what).0 {
            return Err(ApiError {
                code: 403,
                reason: "Forbidden",
                message: crate::rbac::forbidden_message(identity, &what),
                details: Some(json!({"name": name, "kind": "pods"})),
            });
        }
    }
    let opts = options(req.uri().query());
    let cluster = &app.cluster;
    let pods = cluster.resolve("", "v1", "pods").ok_or_else(ApiError::no_route)?;
    let pod = cluster.get(&pods, ns, name)?;
    let container = pick_container(&pod, name, opts.container.as_deref())?;
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default().to_owned();
    if node.is_empty() {
        return Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")));
    }
    if opts.command.is_empty() {
        return Err(ApiError::bad_request(
            "you must specify at least one command for the container",
        ));
    }
    if !opts.stdin && !opts.stdout && !opts.stderr {
        return Err(ApiError::bad_request("you must specify at least 1 of stdin, stdout, stderr"));
    }
    // The kubelet's address, from its Node (kube-apiserver's connection info): before the
    // upgrade, so that an SPDY retry gets the same answer.
    let nodes = cluster.resolve("", "v1", "nodes").ok_or_else(ApiError::no_route)?;
    let node_obj = cluster.get(&nodes, "", &node)?;
    let address = node_obj
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|a| a["type"] == "InternalIP"))
        .and_then(|a| a["address"].as_str())
        .unwrap_or(&node)
        .to_owned();
    let upgrade = header_values(&req, header::UPGRADE);
    if !upgrade.iter().any(|u| u.eq_ignore_ascii_case("websocket")) {
        if upgrade.iter().any(|u| u.to_ascii_uppercase().starts_with("SPDY")) {
            return Err(ApiError::bad_request(format!(
                "kruise-sim serves pods/exec over WebSocket only ({}), not SPDY",
                PROTOCOLS.join(", ")
            )));
        }
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let key = req
        .headers()
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request("missing Sec-WebSocket-Key"))?;
    let offered = header_values(&req, header::SEC_WEBSOCKET_PROTOCOL);
    let Some(protocol) = offered.iter().find(|p| PROTOCOLS.contains(&p.as_str())).cloned() else {
        return Err(ApiError::bad_request(format!(
            "requested protocol(s) are not supported: [{}]; supports [{}]",
            offered.join(" "),
            PROTOCOLS.join(" ")
        )));
    };
    let session = Session {
        runtime: app.kubelets.runtime(&node),
        address,
        pod_uid: pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        container,
        opts,
        v5: protocol == PROTOCOLS[0],
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        session.run(ws).await;
    });
    let mut r = Response::new(crate::http::empty_body());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, header::HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, header::HeaderValue::from_static("Upgrade"));
    if let Ok(v) = header::HeaderValue::from_str(&accept_key(&key)) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Ok(v) = header::HeaderValue::from_str(&protocol) {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
    }
    Ok(r)
}

/// The `metav1.Status` a failure after the upgrade is reported with (kube-apiserver's
/// `NewInternalError`).
fn internal_error(message: &str) -> Value {
    json!({"metadata": {}, "status": "Failure", "message": format!("Internal error occurred: {message}"),
        "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500})
}

/// The `metav1.Status` of a command that exited with `code`.
fn exit_status(code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({"metadata": {}, "status": "Failure",
        "message": format!("command terminated with non-zero exit code: command terminated with exit code {code}"),
        "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
}

struct Session {
    runtime: Option<NodeRuntime>,
    address: String,
    pod_uid: String,
    container: String,
    opts: Options,
    v5: bool,
}

type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut b = Vec::with_capacity(data.len() + 1);
    b.push(channel);
    b.extend_from_slice(data);
    Message::Binary(Bytes::from(b))
}

impl Session {
    /// The running container to exec in, or the Status saying why there is none.
    fn target(&self) -> Result<shell::Container, Value> {
        let Some(node) = &self.runtime else {
            return Err(internal_error(&format!(
                "error dialing backend: dial tcp {}:10250: connect: connection refused",
                self.address
            )));
        };
        let runtime = node.runtime();
        let found = runtime
            .list_containers(Some(&self.pod_uid))
            .into_iter()
            .filter(|c| c.name == self.container && c.state == ContainerState::Running)
            .max_by_key(|c| c.created_at);
        let Some(c) = found else {
            return Err(internal_error(&format!(
                "unable to upgrade connection: container not found ({:?})",
                self.container
            )));
        };
        Ok(shell::Container {
            env: c.env.clone(),
            hostname: hostname_of(node.node(), &c.meta).to_owned(),
            fs: Arc::new(shell::RuntimeFs { runtime: runtime.clone(), id: c.id.clone() }),
        })
    }

    async fn run(self, ws: Ws) {
        let (mut tx, mut rx) = ws.split();
        // The lowest channel the client writes to: it knows the connection is up.
        let first = if self.opts.stdout {
            STDOUT
        } else if self.opts.stderr && !self.opts.tty {
            STDERR
        } else {
            ERROR
        };
        if tx.send(frame(first, &[])).await.is_err() {
            return;
        }
        let status = match self.target() {
            Err(status) => status,
            Ok(container) => match self.exec(container, &mut tx, &mut rx).await {
                Some(status) => status,
                // The client went away.
                None => return,
            },
        };
        let body = serde_json::to_vec(&status).unwrap_or_default();
        let _ = tx.send(frame(ERROR, &body)).await;
        let _ = tx
            .send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() })))
            .await;
        // Let the client answer the close, then drop the connection.
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(m)) = rx.next().await {
                if matches!(m, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }

    /// Runs the command, relaying the streams; its closing Status (`None` when the client
    /// went away first).
    async fn exec(
        &self,
        container: shell::Container,
        tx: &mut futures::stream::SplitSink<Ws, Message>,
        rx: &mut futures::stream::SplitStream<Ws>,
    ) -> Option<Value> {
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<(u8, Vec<u8>)>();
        let (in_tx, in_rx) = mpsc::channel::<Bytes>(64);
        let stdin =
            if self.opts.stdin { shell::Stdin::Stream(in_rx) } else { shell::Stdin::Closed };
        let mut in_tx = self.opts.stdin.then_some(in_tx);
        let mut stdin_bytes = 0usize;
        let command = self.opts.command.clone();
        let mut run =
            tokio::spawn(
                async move { shell::exec(&container, &command, stdin, Some(out_tx)).await },
            );
        let (tty, stdout, stderr) = (self.opts.tty, self.opts.stdout, self.opts.stderr);
        let relay = |fd: u8, data: &[u8]| -> Option<Message> {
            let channel = if tty { STDOUT } else { fd };
            let wanted = if channel == STDOUT { stdout } else { stderr };
            wanted.then(|| frame(channel, data))
        };
        let result = loop {
            tokio::select! {
                biased;
                Some((fd, data)) = out_rx.recv() => {
                    if let Some(m) = relay(fd, &data)
                        && tx.send(m).await.is_err()
                    {
                        run.abort();
                        return None;
                    }
                }
                msg = rx.next() => match msg {
                    Some(Ok(Message::Binary(b))) => match b.first() {
                        Some(&STDIN) => {
                            stdin_bytes += b.len() - 1;
                            if let Some(sender) = &in_tx
                                && stdin_bytes <= MAX_STDIN
                                && sender.try_send(b.slice(1..)).is_err()
                            {
                                // The command is not reading: wait for room, still relaying.
                                let _ = sender.send(b.slice(1..)).await;
                            }
                        }
                        Some(&CLOSE) if self.v5 && b.get(1) == Some(&STDIN) => in_tx = None,
                        _ => {}
                    },
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                        run.abort();
                        return None;
                    }
                    Some(Ok(_)) => {}
                },
                r = &mut run => break r,
            }
        };
        while let Ok((fd, data)) = out_rx.try_recv() {
            if let Some(m) = relay(fd, &data) {
                let _ = tx.send(m).await;
            }
        }
        Some(match result {
            Ok(Ok(out)) => exit_status(out.exit_code),
            Ok(Err(e)) => internal_error(&format!(
                "Internal error occurred: error executing command in container: {}",
                shell::exec_failure(&e)
            )),
            Err(e) => internal_error(&format!("error executing command in container: {e}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_repeated_commands() {
        let o = options(Some(
            "command=sh&command=-c&command=echo+%22a+b%22&container=app&stdout=true&stderr=1&tty=false",
        ));
        assert_eq!(o.command, ["sh", "-c", "echo \"a b\""]);
        assert_eq!(o.container.as_deref(), Some("app"));
        assert!(o.stdout && o.stderr && !o.stdin && !o.tty);
    }

    #[test]
    fn accept_key_is_rfc_6455s() {
        // RFC 6455's example.
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn containers_are_picked_as_kube_apiserver_does() {
        let pod = json!({"spec": {"containers": [{"name": "app"}], "initContainers": [{"name": "init"}]}});
        assert_eq!(pick_container(&pod, "p", None).ok().as_deref(), Some("app"));
        assert_eq!(pick_container(&pod, "p", Some("init")).ok().as_deref(), Some("init"));
        let e = pick_container(&pod, "p", Some("nope")).err().map(|e| (e.code, e.message));
        assert_eq!(e, Some((400, "container nope is not valid for pod p".to_owned())));
        let two = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let e = pick_container(&two, "p", None).err().map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some("a container name must be specified for pod p, choose one of: [a b]")
        );
    }

    #[test]
    fn statuses_read_as_kube_apiservers() {
        assert_eq!(exit_status(0), json!({"metadata": {}, "status": "Success"}));
        let s = exit_status(1);
        assert_eq!(s["reason"], "NonZeroExitCode");
        assert_eq!(s["details"]["causes"][0], json!({"reason": "ExitCode", "message": "1"}));
        assert_eq!(internal_error("x")["message"], "Internal error occurred: x");
    }
}
