//! Shared helpers: a sim API server with the Kruise CRDs, objects, polling.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

pub const NODE: &str = "node-a";
pub const CONFIG_NS: &str = "kruise-daemon-config";

pub async fn sim() -> (kruise_sim::ServerHandle, kube::Client) {
    let config = kruise_sim::Config { install_kruise_crds: true, ..Default::default() };
    let server = kruise_sim::Server::start(config).await.unwrap();
    let client = kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": CONFIG_NS}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    (server, client)
}

/// A pod bound to `NODE` with these containers (name -> runtime ID), all ready, and the
/// SidecarSet annotation that makes containermeta report it.
pub async fn create_pod(
    client: &kube::Client,
    name: &str,
    image: &str,
    containers: &[(&str, &str)],
) -> Pod {
    let api = Api::<Pod>::namespaced(client.clone(), "default");
    let spec_containers: Vec<_> =
        containers.iter().map(|(n, _)| json!({"name": n, "image": image})).collect();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default",
                     "annotations": {"kruise.io/sidecarset-hash": "{}"}},
        "spec": {"nodeName": NODE, "containers": spec_containers, "terminationGracePeriodSeconds": 1},
    }))
    .unwrap();
    let pod = api.create(&PostParams::default(), &pod).await.unwrap();
    set_statuses(client, name, containers).await;
    pod
}

/// Sets the pod's container statuses: these runtime IDs, running and ready.
pub async fn set_statuses(client: &kube::Client, name: &str, containers: &[(&str, &str)]) {
    let api = Api::<Pod>::namespaced(client.clone(), "default");
    let statuses: Vec<_> = containers
        .iter()
        .map(|(n, id)| {
            json!({"name": n, "image": "img", "imageID": "", "ready": true, "restartCount": 0,
                   "containerID": format!("containerd://{id}"),
                   "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}})
        })
        .collect();
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "containerStatuses": statuses}})),
    )
    .await
    .unwrap();
}

/// A request to recreate `container` of `pod`, labelled for `NODE` as the webhook would.
pub async fn create_crr(
    client: &kube::Client,
    name: &str,
    pod: &Pod,
    container: &str,
    id: &str,
) -> ContainerRecreateRequest {
    let labels: BTreeMap<&str, String> = [
        ("crr.apps.kruise.io/node-name", NODE.to_owned()),
        ("crr.apps.kruise.io/active", "true".to_owned()),
        ("crr.apps.kruise.io/pod-uid", pod.metadata.uid.clone().unwrap()),
    ]
    .into();
    let crr: ContainerRecreateRequest = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ContainerRecreateRequest",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "podName": pod.metadata.name,
            "containers": [{"name": container,
                            "statusContext": {"containerID": format!("containerd://{id}"), "restartCount": 0}}],
            "strategy": {"terminationGracePeriodSeconds": 1, "failurePolicy": "Fail"},
        },
    }))
    .unwrap();
    Api::<ContainerRecreateRequest>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &crr)
        .await
        .unwrap()
}

/// Polls `check` every 100 ms until it returns `Some`, or panics naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// HTTP GET on loopback: (status, body).
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Some((status, body))
}

/// A child process killed (SIGTERM, then SIGKILL) when dropped.
pub struct Child(pub std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.0.try_wait() {
            return;
        }
        let _ = std::process::Command::new("kill").arg(self.0.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
